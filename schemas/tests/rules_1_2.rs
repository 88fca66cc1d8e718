//! Rule set 1.2.0: line-end and adjacent-side enclosures, minimum areas, wide-metal
//! spacing; every misuse reported with its pointer and what would be valid. And the early
//! refusal of a circuit whose devices the rule set cannot draw.

use centroid_schemas::{InputFile, InputPaths, RuleType, TaskContext, TaskInputs, load_drc_rules};
use serde_json::{Value, json};

fn file(label: &str, value: &Value) -> InputFile {
    InputFile {
        label: label.to_owned(),
        bytes: serde_json::to_vec(value).unwrap(),
    }
}

fn rules_with(extra: Value) -> Value {
    let mut rules = json!({
        "schema_version": "1.2.0",
        "tech": "t",
        "grid": 5e-9,
        "layers": {"Activ": 1, "GatPoly": 5, "Cont": 6, "Metal1": 8, "Via1": 19, "Metal2": 10, "NWell": 31, "pSD": 14,
                   "RES": {"layer": 24, "role": "poly_res"}},
        "rules": [{"id": "M1.a", "type": "width", "layer": "Metal1", "min": 1.6e-7}]
    });
    rules["rules"].as_array_mut().unwrap().push(extra);
    rules
}

/// (pointer, message) of every problem.
fn problems(rules: &Value) -> Vec<(String, String)> {
    let errors = load_drc_rules(&file("r.json", rules)).unwrap_err();
    errors
        .issues
        .into_iter()
        .map(|issue| (issue.pointer, issue.message))
        .collect()
}

fn assert_problem(rule: Value, pointer: &str, text: &str) {
    let found = problems(&rules_with(rule.clone()));
    assert!(
        found
            .iter()
            .any(|(at, message)| at == pointer && message.contains(text)),
        "{rule}: expected {pointer} with {text:?}, got {found:?}"
    );
}

#[test]
fn the_four_additions_load_into_the_model() {
    let rules = json!({
        "schema_version": "1.2.0", "tech": "t", "grid": 5e-9,
        "layers": {"Activ": 1, "GatPoly": 5, "Cont": 6, "Metal1": 8, "Via1": 19, "Metal2": 10, "pSD": 14},
        "rules": [
            {"id": "CO.6", "type": "enclosure", "layer": "Metal1", "layer2": "Cont", "min": 5e-9},
            {"id": "CO.6a", "type": "enclosure", "layer": "Metal1", "layer2": "Cont", "end_min": 6e-8, "end_width": 3.4e-7},
            {"id": "CO.6b", "type": "enclosure", "layer": "Metal1", "layer2": "Cont", "adjacent_min": 6e-8, "adjacent_below": 4e-8},
            {"id": "M1.3", "type": "area", "layer": "Metal1", "min": 1.444e-13},
            {"id": "M1.2b", "type": "spacing", "layer": "Metal1", "min": 3e-7, "width_over": 1e-5}
        ]
    });
    let loaded =
        load_drc_rules(&file("r.json", &rules)).unwrap_or_else(|errors| panic!("{errors}"));
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let set = loaded.value;
    let end = set.rule("CO.6a").unwrap();
    assert_eq!(
        (end.min, end.end_min, end.end_width),
        (None, Some(6e-8), Some(3.4e-7))
    );
    let adjacent = set.rule("CO.6b").unwrap();
    assert_eq!(
        (adjacent.adjacent_min, adjacent.adjacent_below),
        (Some(6e-8), Some(4e-8))
    );
    let area = set.rule("M1.3").unwrap();
    assert_eq!(
        (area.rule_type, area.min),
        (RuleType::Area, Some(1.444e-13))
    );
    assert_eq!(set.rule("M1.2b").unwrap().width_over, Some(1e-5));
    let text = set.summarize();
    for line in [
        "CO.6a: enclosure Metal1/Cont end_min=0.06um end_width=0.34um",
        "CO.6b: enclosure Metal1/Cont adjacent_min=0.06um adjacent_below=0.04um",
        "M1.3: area Metal1 min=0.1444um2",
        "M1.2b: spacing Metal1 min=0.3um width_over=10um",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[test]
fn files_of_1_0_0_and_1_1_0_stay_valid_as_1_2_0() {
    for pdk in ["ihp_sg13g2", "sky130"] {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../examples/pdk/{pdk}.json"));
        let mut document: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        // The example without any 1.2.0 field (nor the 1.4.0 parasitics), declared as 1.1.0
        // and as 1.2.0: both load.
        document.as_object_mut().unwrap().remove("parasitics");
        for layer in document["layers"].as_object_mut().unwrap().values_mut() {
            if let Some(layer) = layer.as_object_mut() {
                layer.remove("max_current_density"); // a 1.4.0 field
            }
        }
        let rules = document["rules"].as_array_mut().unwrap();
        rules.retain(|rule| rule["type"] != "area");
        for rule in rules.iter_mut() {
            let rule = rule.as_object_mut().unwrap();
            for field in [
                "end_min",
                "end_width",
                "adjacent_min",
                "adjacent_below",
                "width_over",
            ] {
                rule.remove(field);
            }
            if rule.get("type") == Some(&json!("enclosure")) && !rule.contains_key("min") {
                rule.insert("min".into(), json!(0.0));
            }
        }
        for version in ["1.1.0", "1.2.0"] {
            document["schema_version"] = json!(version);
            let loaded = load_drc_rules(&file(pdk, &document))
                .unwrap_or_else(|errors| panic!("{pdk} as {version}: {errors}"));
            assert_eq!(loaded.version.read_as.to_string(), version);
        }
    }
    let minimal = json!({"tech": "t", "layers": {"Activ": 1, "GatPoly": 5, "Cont": 6, "Metal1": 8, "Via1": 19, "Metal2": 10, "pSD": 14},
                         "rules": [{"id": "M1.a", "type": "width", "layer": "Metal1", "min": 1.6e-7}]});
    assert!(load_drc_rules(&file("r.json", &minimal)).is_ok());
}

#[test]
fn pairs_must_come_together() {
    let encl = |fields: Value| {
        let mut rule =
            json!({"id": "X.1", "type": "enclosure", "layer": "Metal1", "layer2": "Cont"});
        rule.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        rule
    };
    assert_problem(
        encl(json!({"end_min": 6e-8})),
        "/rules/1/end_min",
        "\"end_min\" needs \"end_width\"",
    );
    assert_problem(
        encl(json!({"min": 0, "end_width": 3.4e-7})),
        "/rules/1/end_width",
        "\"end_width\" needs \"end_min\"",
    );
    assert_problem(
        encl(json!({"adjacent_min": 6e-8})),
        "/rules/1/adjacent_min",
        "\"adjacent_min\" needs \"adjacent_below\"",
    );
    assert_problem(
        encl(json!({"min": 0, "adjacent_below": 4e-8})),
        "/rules/1/adjacent_below",
        "\"adjacent_below\" needs \"adjacent_min\"",
    );
    assert_problem(
        encl(json!({})),
        "/rules/1",
        "an enclosure rule needs \"min\" (metres), or \"end_min\" with \"end_width\"",
    );
}

#[test]
fn area_rules_need_min_in_square_metres_on_one_layer() {
    assert_problem(
        json!({"id": "A.1", "type": "area", "layer": "Metal1"}),
        "/rules/1",
        "an area rule needs \"min\" (square metres",
    );
    assert_problem(
        json!({"id": "A.2", "type": "area", "layer": "Metal1", "layer2": "Metal2", "min": 9e-14}),
        "/rules/1/layer2",
        "an area rule is on one layer",
    );
    assert_problem(
        json!({"id": "A.3", "type": "area", "layer": "Metal1", "min": 9e-14, "max": 1e-12}),
        "/rules/1/max",
        "an area rule has only \"min\"",
    );
    assert_problem(
        json!({"id": "A.4", "type": "area", "layer": "Metal1", "min": 0.09}),
        "/rules/1/min",
        "areas are in square metres (0.09 µm² is 9e-14)",
    );
    assert_problem(
        json!({"id": "A.5", "type": "area", "layer": "Metal1", "min": -1e-13}),
        "/rules/1/min",
        "must not be negative",
    );
}

#[test]
fn new_fields_only_on_their_rule_type() {
    assert_problem(
        json!({"id": "S.1", "type": "spacing", "layer": "Metal1", "min": 1.8e-7, "end_min": 6e-8, "end_width": 3.4e-7}),
        "/rules/1/end_min",
        "\"end_min\" belongs to enclosure rules",
    );
    assert_problem(
        json!({"id": "W.1", "type": "width", "layer": "Metal1", "min": 1.6e-7, "adjacent_below": 4e-8}),
        "/rules/1/adjacent_below",
        "belongs to enclosure rules",
    );
    assert_problem(
        json!({"id": "E.1", "type": "enclosure", "layer": "Metal1", "layer2": "Cont", "min": 0, "width_over": 1e-5}),
        "/rules/1/width_over",
        "\"width_over\" belongs to same-layer spacing rules",
    );
    assert_problem(
        json!({"id": "S.2", "type": "spacing", "layer": "Metal1", "layer2": "Metal2", "min": 3e-7, "width_over": 1e-5}),
        "/rules/1/width_over",
        "remove \"layer2\" or \"width_over\"",
    );
}

#[test]
fn new_lengths_are_checked() {
    let encl = json!({"id": "E.2", "type": "enclosure", "layer": "Metal1", "layer2": "Cont", "end_min": -6e-8, "end_width": 0.0});
    let found = problems(&rules_with(encl));
    assert!(
        found
            .iter()
            .any(|(at, m)| at == "/rules/1/end_min" && m.contains("must not be negative")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|(at, m)| at == "/rules/1/end_width" && m.contains("greater than 0")),
        "{found:?}"
    );
    assert_problem(
        json!({"id": "S.3", "type": "spacing", "layer": "Metal1", "min": 3e-7, "width_over": 10}),
        "/rules/1/width_over",
        "absurdly large",
    );
}

#[test]
fn a_1_1_0_file_cannot_use_1_2_0_fields_or_the_area_type() {
    let mut rules = rules_with(
        json!({"id": "E.3", "type": "enclosure", "layer": "Metal1", "layer2": "Cont", "min": 0,
                                      "adjacent_min": 6e-8, "adjacent_below": 4e-8}),
    );
    rules["schema_version"] = json!("1.1.0");
    let found = problems(&rules);
    assert!(
        found.iter().any(|(at, m)| at == "/rules/1/adjacent_min"
            && m.contains("schema_version 1.2.0 field")
            && m.contains("declare \"schema_version\": \"1.2.0\"")),
        "{found:?}"
    );
    let mut area =
        rules_with(json!({"id": "A.6", "type": "area", "layer": "Metal1", "min": 9e-14}));
    area["schema_version"] = json!("1.1.0");
    let found = problems(&area);
    assert!(
        found
            .iter()
            .any(|(at, m)| at == "/rules/1/type" && m.contains("expected one of")),
        "{found:?}"
    );
}

fn context(netlist: Value, rules: Value) -> Result<TaskContext, centroid_schemas::InputErrors> {
    let objectives = json!({"objectives": [{"name": "area_min", "weight": 1.0}], "constraints": {"max_iterations": 3}});
    let inputs = TaskInputs {
        netlist: file("netlist.json", &netlist),
        drc_rules: file("drc_rules.json", &rules),
        objectives: file("objectives.json", &objectives),
    };
    TaskContext::load(&inputs, "test")
}

fn netlist_with(devices: Value) -> Value {
    json!({"top": "c", "cells": [{"name": "c", "devices": devices}]})
}

#[test]
fn a_device_the_rule_set_cannot_draw_is_refused_naming_device_type_and_role() {
    let mut no_marker =
        rules_with(json!({"id": "M1.b", "type": "spacing", "layer": "Metal1", "min": 1.8e-7}));
    no_marker["layers"].as_object_mut().unwrap().remove("RES");
    let resistors = netlist_with(json!([
        {"id": "M1", "type": "nmos", "w": 1e-6, "l": 1.3e-7, "terminals": {"g": "a", "d": "b", "s": "vss", "b": "vss"}},
        {"id": "R1", "type": "resistor", "w": 1e-6, "l": 5e-6, "terminals": {"p": "b", "n": "c"}},
        {"id": "R2", "type": "resistor", "w": 1e-6, "l": 5e-6, "terminals": {"p": "c", "n": "vss"}}
    ]));
    let errors = context(resistors.clone(), no_marker.clone()).unwrap_err();
    assert_eq!(errors.issues.len(), 1, "{errors}");
    let issue = &errors.issues[0];
    assert_eq!(
        (issue.file.as_str(), issue.pointer.as_str()),
        ("drc_rules.json", "/layers")
    );
    for text in [
        "no layer has the role \"poly_res\"",
        "device R1 (resistor)",
        "R2",
        "a short",
    ] {
        assert!(
            issue.message.contains(text),
            "missing {text:?} in {}",
            issue.message
        );
    }
    // With the marker declared the same circuit loads.
    assert!(
        context(
            resistors,
            rules_with(json!({"id": "M1.b", "type": "spacing", "layer": "Metal1", "min": 1.8e-7}))
        )
        .is_ok()
    );

    let mut no_well = no_marker;
    no_well["layers"].as_object_mut().unwrap().remove("NWell");
    let pmos = netlist_with(json!([
        {"id": "MP", "type": "pmos", "w": 1e-6, "l": 1.3e-7, "terminals": {"g": "a", "d": "b", "s": "vdd", "b": "vdd"}},
        {"id": "C1", "type": "capacitor", "w": 5e-6, "l": 5e-6, "terminals": {"p": "b", "n": "vdd"}}
    ]));
    let errors = context(pmos, no_well).unwrap_err();
    assert_eq!(errors.issues.len(), 1, "{errors}");
    assert!(
        errors.issues[0]
            .message
            .contains("no layer has the role \"nwell\""),
        "{errors}"
    );
    assert!(
        errors.issues[0].message.contains("device MP (pmos)"),
        "{errors}"
    );
}

#[test]
fn every_example_circuit_is_drawable_on_its_rule_set() {
    for example in [
        "ota5",
        "miller_ota",
        "mirror_bank",
        "strongarm_comparator",
        "folded_cascode",
    ] {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(example);
        TaskContext::load_paths(&InputPaths::in_dir(&dir), "t")
            .unwrap_or_else(|errors| panic!("{example}: {errors}"));
    }
}

#[test]
fn the_real_rule_sets_use_all_four_additions() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for path in [
        "examples/pdk/ihp_sg13g2.json",
        "examples/pdk/sky130.json",
        "examples/pdk/gf180mcu.json",
        "examples/pdk/gf180mcu_m3.json",
    ] {
        let bytes = std::fs::read(root.join(path)).unwrap();
        let loaded = load_drc_rules(&InputFile {
            label: path.to_owned(),
            bytes,
        })
        .unwrap_or_else(|errors| panic!("{errors}"));
        assert!(loaded.warnings.is_empty(), "{path}: {:?}", loaded.warnings);
        assert_eq!(loaded.version.read_as.to_string(), "1.4.0", "{path}");
        let rules = &loaded.value.rules;
        assert!(
            rules.iter().any(|rule| rule.adjacent_min.is_some()),
            "{path}: no adjacent-side enclosure"
        );
        assert!(
            rules.iter().any(|rule| rule.rule_type == RuleType::Area),
            "{path}: no area rule"
        );
        assert!(
            rules.iter().any(|rule| rule.width_over.is_some()),
            "{path}: no wide-metal spacing"
        );
        if path.contains("gf180") {
            assert!(
                rules.iter().any(|rule| rule.end_min.is_some()),
                "{path}: no line-end enclosure"
            );
        }
        for rule in rules {
            let description = rule.description.as_deref().unwrap_or_default();
            assert!(
                description.starts_with(rule.id.as_str()) || description.contains(':'),
                "{path}: {} {description}",
                rule.id
            );
        }
    }
}
