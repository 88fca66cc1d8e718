//! Rule set 1.4.0: the `parasitics` section (coefficients for parasitic extraction, each
//! with its source) loads into the model; misuse is reported with its pointer; the three
//! example rule sets carry it.

use centroid_schemas::{InputFile, load_drc_rules};
use serde_json::{Value, json};

fn file(label: &str, value: &Value) -> InputFile {
    InputFile {
        label: label.to_owned(),
        bytes: serde_json::to_vec(value).unwrap(),
    }
}

fn rules(version: &str, parasitics: Value) -> Value {
    json!({
        "schema_version": version, "tech": "t", "grid": 5e-9,
        "layers": {"Activ": 1, "GatPoly": 5, "Cont": 6, "Metal1": 8, "Via1": 19, "Metal2": 10, "pSD": 14},
        "rules": [{"id": "M1.b", "type": "spacing", "layer": "Metal1", "min": 1.8e-7}],
        "parasitics": parasitics
    })
}

fn metal(source: &str) -> Value {
    json!({"sheet_resistance_ohm": 0.11, "area_cap_af_um2": 35.0, "fringe_cap_af_um": 39.6,
           "coupling_af_um": 233.6, "coupling_spacing_m": 1.8e-7, "coupling_offset_m": -5.7e-8,
           "source": source})
}

fn problems(document: &Value) -> Vec<(String, String)> {
    load_drc_rules(&file("r.json", document))
        .unwrap_err()
        .issues
        .into_iter()
        .map(|issue| (issue.pointer, issue.message))
        .collect()
}

fn has(found: &[(String, String)], pointer: &str, text: &str) -> bool {
    found
        .iter()
        .any(|(at, message)| at == pointer && message.contains(text))
}

#[test]
fn the_section_loads_into_the_model() {
    let document = rules(
        "1.4.0",
        json!({
            "layers": {"Metal1": metal("tech file line 1"), "Metal2": metal("line 2")},
            "overlaps": [{"layer": "Metal2", "layer2": "Metal1", "area_cap_af_um2": 67.2, "source": "line 3"}],
            "cuts": {"Via1": {"resistance_ohm": 9.0, "source": "line 4"}}
        }),
    );
    let loaded = load_drc_rules(&file("r.json", &document)).unwrap();
    let parasitics = loaded.value.parasitics.expect("parasitics");
    let metal1 = &parasitics.layers["Metal1"];
    assert_eq!(metal1.sheet_resistance_ohm, 0.11);
    assert_eq!(metal1.coupling_offset_m, Some(-5.7e-8));
    assert_eq!(parasitics.overlaps[0].layer2, "Metal1");
    assert_eq!(parasitics.cuts["Via1"].resistance_ohm, 9.0);
}

#[test]
fn parasitics_need_1_4_0() {
    let found = problems(&rules("1.3.0", json!({"layers": {"Metal1": metal("s")}})));
    assert!(
        found
            .iter()
            .any(|(at, message)| at == "/parasitics" && message.contains("1.4.0")),
        "{found:?}"
    );
}

#[test]
fn unknown_layers_sources_and_repeated_overlaps_are_named() {
    let mut no_source = metal("s");
    no_source.as_object_mut().unwrap().remove("source");
    let found = problems(&rules(
        "1.4.0",
        json!({
            "layers": {"Metal9": metal("s"), "Metal2": no_source},
            "overlaps": [
                {"layer": "Metal2", "layer2": "Metal1", "area_cap_af_um2": 1.0, "source": "s"},
                {"layer": "Metal1", "layer2": "Metal2", "area_cap_af_um2": 1.0, "source": "s"},
                {"layer": "Metal1", "layer2": "Metal1", "area_cap_af_um2": 1.0, "source": "s"}
            ],
            "cuts": {"Via7": {"resistance_ohm": 1.0, "source": "s"}}
        }),
    ));
    assert!(
        found
            .iter()
            .any(|(at, _)| at == "/parasitics/layers/Metal2"),
        "missing source: {found:?}"
    );
    // the schema problem stops the semantic checks; without it they run
    let found = problems(&rules(
        "1.4.0",
        json!({
            "layers": {"Metal9": metal("s")},
            "overlaps": [
                {"layer": "Metal2", "layer2": "Metal1", "area_cap_af_um2": 1.0, "source": "s"},
                {"layer": "Metal1", "layer2": "Metal2", "area_cap_af_um2": 1.0, "source": "s"},
                {"layer": "Metal1", "layer2": "Metal1", "area_cap_af_um2": 1.0, "source": "s"}
            ],
            "cuts": {"Via7": {"resistance_ohm": 1.0, "source": "s"}}
        }),
    ));
    assert!(
        has(&found, "/parasitics/layers/Metal9", "not a declared layer"),
        "{found:?}"
    );
    assert!(
        has(&found, "/parasitics/cuts/Via7", "not a declared layer"),
        "{found:?}"
    );
    assert!(
        has(&found, "/parasitics/overlaps/1", "given twice"),
        "{found:?}"
    );
    assert!(
        has(&found, "/parasitics/overlaps/2", "two different layers"),
        "{found:?}"
    );
}

#[test]
fn coupling_needs_the_spacing_it_is_given_at() {
    let mut layer = metal("s");
    layer.as_object_mut().unwrap().remove("coupling_spacing_m");
    let found = problems(&rules("1.4.0", json!({"layers": {"Metal1": layer}})));
    assert!(
        found
            .iter()
            .any(|(at, _)| at == "/parasitics/layers/Metal1"),
        "{found:?}"
    );
}

#[test]
fn every_example_rule_set_has_sourced_parasitics_for_its_routing_layers() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/pdk");
    for name in [
        "sky130.json",
        "gf180mcu.json",
        "gf180mcu_m3.json",
        "ihp_sg13g2.json",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let loaded = load_drc_rules(&InputFile {
            label: name.to_owned(),
            bytes,
        })
        .unwrap_or_else(|errors| panic!("{name}: {errors}"));
        let rule_set = loaded.value;
        let parasitics = rule_set.parasitics.as_ref().expect(name);
        for role in ["poly", "metal1", "metal2", "metal3"] {
            let Some(layer) = rule_set.layer_for_role(role) else {
                continue;
            };
            let coefficients = parasitics
                .layers
                .get(&layer.name)
                .unwrap_or_else(|| panic!("{name}: no parasitics for {}", layer.name));
            assert!(!coefficients.source.trim().is_empty(), "{name}");
            assert!(
                coefficients.coupling_af_um.is_some(),
                "{name} {}",
                layer.name
            );
        }
        for role in ["contact", "via1", "via2"] {
            if let Some(layer) = rule_set.layer_for_role(role) {
                assert!(parasitics.cuts.contains_key(&layer.name), "{name}: {role}");
            }
        }
    }
}
