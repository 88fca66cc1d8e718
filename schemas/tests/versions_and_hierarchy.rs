//! Schema versions (seed 001 §5.6), 1.0.0 ↔ 1.1.0 compatibility, and hierarchy flattening.

use centroid_schemas::{InputFile, load_drc_rules, load_netlist};
use serde_json::{Value, json};

fn file(label: &str, value: &Value) -> InputFile {
    InputFile {
        label: label.to_owned(),
        bytes: serde_json::to_vec(value).unwrap(),
    }
}

fn minimal_rules(version: &str) -> Value {
    json!({
        "schema_version": version,
        "tech": "t",
        "layers": {"Activ": 1, "GatPoly": 5, "Cont": 6, "Metal1": 8, "Via1": 19, "Metal2": 10, "NWell": 31, "pSD": 14},
        "rules": [{"id": "M1.a", "type": "width", "layer": "Metal1", "min": 1.6e-7}]
    })
}

#[test]
fn a_1_0_0_rule_set_loads_with_inferred_roles_and_datatype_0() {
    let loaded = load_drc_rules(&file("r.json", &minimal_rules("1.0.0"))).unwrap();
    let metal1 = loaded.value.layer("Metal1").unwrap();
    assert_eq!((metal1.gds_layer, metal1.gds_datatype), (8, 0));
    assert_eq!(metal1.role.as_deref(), Some("metal1"));
    assert!(!metal1.role_is_explicit);
    assert_eq!(loaded.value.grid, 1e-9);
    // Without a grid, coordinates fall on 1 nm: a foundry deck's grid check would flag them.
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_eq!(loaded.warnings[0].pointer, "/grid");
    assert!(loaded.warnings[0].message.contains("manufacturing grid"));
}

#[test]
fn a_newer_minor_is_read_as_the_newest_known_minor_with_a_warning() {
    let mut rules = minimal_rules("1.5.0");
    rules["grid"] = json!(5e-9);
    rules["layers"]["Metal1"] =
        json!({"layer": 8, "datatype": 0, "role": "metal1", "future_field": true});
    let loaded = load_drc_rules(&file("r.json", &rules)).unwrap();
    assert_eq!(loaded.version.read_as.to_string(), "1.4.0");
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].message.contains("newer"),
        "{:?}",
        loaded.warnings
    );
}

#[test]
fn explicit_roles_and_derived_layers_of_1_1_0() {
    let rules = json!({
        "schema_version": "1.1.0", "tech": "t", "grid": 5e-9,
        "layers": {
            "diff": {"layer": 65, "datatype": 20, "role": "active"},
            "poly": {"layer": 66, "datatype": 20},
            "licon1": {"layer": 66, "datatype": 44, "role": "contact"},
            "li1": {"layer": 67, "datatype": 20, "role": "metal1"},
            "mcon": {"layer": 67, "datatype": 44, "role": "via1"},
            "met1": {"layer": 68, "datatype": 20, "role": "metal2"},
            "psdm": {"layer": 94, "datatype": 20}
        },
        "derived_layers": {"gate": {"op": "and", "a": "poly", "b": "diff"}},
        "rules": [{"id": "poly.1a", "type": "width", "layer": "gate", "min": 1.5e-7}]
    });
    let loaded = load_drc_rules(&file("r.json", &rules)).unwrap();
    // met1 is metal2 here (sky130's li1 is the first routing layer), not inferred as metal1.
    assert_eq!(loaded.value.layer_for_role("metal1").unwrap().name, "li1");
    assert_eq!(loaded.value.layer_for_role("metal2").unwrap().name, "met1");
    assert_eq!(loaded.value.layer_for_role("pplus").unwrap().name, "psdm");
    assert_eq!(loaded.value.derived_layers[0].name, "gate");
}

#[test]
fn nested_hierarchy_flattens_with_stable_ids_and_mapped_nets() {
    let netlist = json!({
        "schema_version": "1.1.0",
        "top": "top",
        "cells": [
            {"name": "top", "devices": [], "nets": ["a", "b", "vss"],
             "subcells": [
                {"name": "X1", "cell": "stage", "connections": {"in": "a", "out": "mid", "gnd": "vss"}},
                {"name": "X2", "cell": "stage", "connections": {"in": "mid", "out": "b", "gnd": "vss"}}]},
            {"name": "stage", "ports": ["in", "out", "gnd"], "devices": [
                {"id": "M1", "type": "nmos", "w": 1e-6, "l": 1.5e-7, "terminals": {"g": "in", "d": "x", "s": "gnd", "b": "gnd"}}],
             "subcells": [{"name": "XL", "cell": "load", "connections": {"p": "x", "n": "out"}}]},
            {"name": "load", "devices": [
                {"id": "R1", "type": "resistor", "w": 1e-6, "l": 5e-6, "terminals": {"p": "p", "n": "n"}}]}
        ]
    });
    let circuit = load_netlist(&file("n.json", &netlist)).unwrap().value;
    let ids: Vec<&str> = circuit
        .devices
        .iter()
        .map(|device| device.id.as_str())
        .collect();
    assert_eq!(ids, ["X1/M1", "X1/XL/R1", "X2/M1", "X2/XL/R1"]);
    assert_eq!(circuit.device("X1/M1").unwrap().terminals["d"], "X1/x");
    assert_eq!(circuit.device("X1/XL/R1").unwrap().terminals["p"], "X1/x");
    assert_eq!(circuit.device("X1/XL/R1").unwrap().terminals["n"], "mid");
    assert_eq!(circuit.device("X2/M1").unwrap().terminals["g"], "mid");
    assert_eq!(circuit.net("mid").unwrap().connections.len(), 2);
    assert_eq!(circuit.net("vss").unwrap().connections.len(), 4);
}

#[test]
fn all_problems_of_a_file_are_reported_together() {
    let netlist = json!({
        "top": "amp",
        "cells": [{"name": "amp", "devices": [
            {"id": "M1", "type": "nmos", "w": 0, "l": 1e-7, "terminals": {"g": "a", "d": "b", "s": "c"}},
            {"id": "M1", "type": "pmos", "w": 1e-6, "l": 3, "terminals": {"g": "a", "d": "b", "s": "c", "b": "d"}}
        ]}]
    });
    let errors = load_netlist(&file("n.json", &netlist)).unwrap_err();
    let pointers: Vec<&str> = errors
        .issues
        .iter()
        .map(|issue| issue.pointer.as_str())
        .collect();
    assert!(pointers.contains(&"/cells/0/devices/0/w"), "{errors}");
    assert!(
        pointers.contains(&"/cells/0/devices/0/terminals"),
        "{errors}"
    );
    assert!(pointers.contains(&"/cells/0/devices/1/id"), "{errors}");
    assert!(pointers.contains(&"/cells/0/devices/1/l"), "{errors}");
    assert_eq!(errors.issues.len(), 4, "{errors}");
}

#[test]
fn schema_problems_and_semantic_problems_come_in_one_report() {
    let netlist = json!({
        "top": "amp",
        "cells": [{"name": "amp", "devices": [
            {"id": "M1", "type": "nmos", "w": 4, "l": -1e-7, "terminals": {"g": "a", "d": "b", "s": "c"}}
        ]}]
    });
    let errors = load_netlist(&file("n.json", &netlist)).unwrap_err();
    let found: Vec<(&str, &str)> = errors
        .issues
        .iter()
        .map(|issue| (issue.pointer.as_str(), issue.message.as_str()))
        .collect();
    // l is flagged once (by the schema), w and the missing terminal by the semantic checks.
    assert_eq!(
        found
            .iter()
            .filter(|(pointer, _)| *pointer == "/cells/0/devices/0/l")
            .count(),
        1,
        "{errors}"
    );
    assert!(
        found
            .iter()
            .any(|(pointer, message)| *pointer == "/cells/0/devices/0/w"
                && message.contains("absurdly large")),
        "{errors}"
    );
    assert!(
        found
            .iter()
            .any(|(_, message)| message.contains("missing terminal \"b\"")),
        "{errors}"
    );
}

#[test]
fn a_finger_wider_than_a_millimetre_is_refused_naming_the_fingers_to_give() {
    // an 8 mm pass device written in one finger (its total width is sound)
    let netlist = json!({
        "top": "ldo",
        "cells": [{"name": "ldo", "devices": [
            {"id": "M9", "type": "pmos", "w": 8e-3, "l": 5e-7, "nf": 1,
             "terminals": {"g": "g", "d": "out", "s": "in", "b": "in"}}
        ]}]
    });
    let errors = load_netlist(&file("n.json", &netlist)).unwrap_err();
    let found: Vec<String> = errors.issues.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        [
            "n.json: /cells/0/devices/0/nf: M9: w = 0.008 m over nf = 1 is a finger 8000 µm wide, more than the 1 mm a finger may be; give nf = 8 fingers or more, or m parallel devices"
        ]
    );
    // over 16 fingers of 500 µm it loads
    let mut folded = netlist.clone();
    folded["cells"][0]["devices"][0]["nf"] = json!(16);
    assert!(load_netlist(&file("n.json", &folded)).is_ok());
}

#[test]
fn unknown_fields_are_reported_as_warnings() {
    let netlist = json!({
        "top": "amp",
        "cells": [{"name": "amp", "devices": [
            {"id": "M1", "type": "nmos", "w": 1e-6, "l": 1.5e-7, "NF": 4, "terminals": {"g": "a", "d": "b", "s": "c", "b": "vss"}}
        ]}]
    });
    let loaded = load_netlist(&file("n.json", &netlist)).unwrap();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_eq!(loaded.warnings[0].pointer, "/cells/0/devices/0/NF");
    assert!(
        loaded.warnings[0].message.contains("unknown field \"NF\""),
        "{:?}",
        loaded.warnings
    );
    // Terminal names are free-form keys (checked elsewhere), not unknown fields; a layer
    // object's fields are known through the schema's oneOf branch.
    let mut rules = minimal_rules("1.1.0");
    rules["grid"] = json!(5e-9);
    rules["layers"]["Metal1"] = json!({"layer": 8, "role": "metal1", "colour": "blue"});
    let loaded = load_drc_rules(&file("r.json", &rules)).unwrap();
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_eq!(loaded.warnings[0].pointer, "/layers/Metal1/colour");
}
