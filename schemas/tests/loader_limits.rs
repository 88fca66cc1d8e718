//! Inputs built to be expensive — what the loader property tests found or a fuzzer
//! would take too long to reach: deep and exponential cell hierarchies, and files near the
//! size limit whose checks would be quadratic. Each loads in bounded time and stack, with
//! a message that names the file and the place.

use std::time::{Duration, Instant};

use centroid_schemas::netlist::{MAX_FLAT_DEVICES, MAX_HIERARCHY_DEPTH};
use centroid_schemas::{InputFile, load_drc_rules, load_netlist};
use serde_json::{Value, json};

fn file(label: &str, document: &Value) -> InputFile {
    InputFile {
        label: label.to_owned(),
        bytes: serde_json::to_vec(document).unwrap(),
    }
}

fn device(id: &str) -> Value {
    json!({"id": id, "type": "nmos", "w": 1e-6, "l": 1e-6,
           "terminals": {"d": "a", "g": "a", "s": "a", "b": "a"}})
}

/// Cells `c0` (the top) … `c{levels}`: each instantiates the next `fan_out` times, the
/// last holds one device.
fn hierarchy(levels: usize, fan_out: usize) -> Value {
    let mut cells = Vec::new();
    for level in 0..levels {
        let subcells: Vec<Value> = (0..fan_out)
            .map(|copy| {
                json!({"name": format!("X{copy}"), "cell": format!("c{}", level + 1),
                               "connections": {"a": "a"}})
            })
            .collect();
        cells.push(
            json!({"name": format!("c{level}"), "ports": ["a"], "devices": [],
                          "subcells": subcells}),
        );
    }
    cells.push(json!({"name": format!("c{levels}"), "ports": ["a"], "devices": [device("M1")]}));
    json!({"schema_version": "1.1.0", "top": "c0", "cells": cells})
}

fn single_message(result: Result<impl Sized, centroid_schemas::InputErrors>) -> (String, String) {
    let errors = result.err().expect("refused");
    assert_eq!(errors.issues.len(), 1, "{errors}");
    let issue = &errors.issues[0];
    assert_eq!(issue.file, "netlist.json");
    (issue.pointer.clone(), issue.message.clone())
}

#[test]
fn a_hierarchy_deeper_than_the_limit_is_refused_without_overflowing_the_stack() {
    // Before: the cycle check and the flattening recursed once per level (a stack overflow
    // aborts the process — no error, no message).
    for levels in [MAX_HIERARCHY_DEPTH + 1, 20_000] {
        let (pointer, message) =
            single_message(load_netlist(&file("netlist.json", &hierarchy(levels, 1))));
        assert_eq!(pointer, "/top");
        assert!(
            message.contains(&format!("{levels} levels deep")),
            "{message}"
        );
    }
    let loaded = load_netlist(&file("netlist.json", &hierarchy(MAX_HIERARCHY_DEPTH, 1))).unwrap();
    assert_eq!(loaded.value.devices.len(), 1);
}

#[test]
fn a_flat_netlist_over_the_device_limit_is_refused() {
    let count = MAX_FLAT_DEVICES as usize + 1;
    let devices: Vec<Value> = (0..count)
        .map(|index| device(&format!("M{index}")))
        .collect();
    let document = json!({"top": "big", "cells": [{"name": "big", "devices": devices}]});
    let (pointer, message) = single_message(load_netlist(&file("netlist.json", &document)));
    assert_eq!(pointer, "/top");
    assert!(
        message.contains(&format!("flattens to {count} devices")),
        "{message}"
    );
}

#[test]
fn a_cycle_deep_in_a_long_chain_is_reported_at_the_instance_that_closes_it() {
    let mut document = hierarchy(20_000, 1);
    document["cells"][20_000]["subcells"] =
        json!([{"name": "back", "cell": "c7", "connections": {"a": "a"}}]);
    let (pointer, message) = single_message(load_netlist(&file("netlist.json", &document)));
    assert_eq!(pointer, "/cells/20000/subcells/0/cell");
    assert!(
        message.starts_with("the cell hierarchy has a cycle: c7 → c8"),
        "{message}"
    );
}

#[test]
fn an_exponential_hierarchy_is_refused_before_it_is_flattened() {
    // 2^60 devices once flattened: before, the loader never returned.
    let started = Instant::now();
    let (pointer, message) = single_message(load_netlist(&file("netlist.json", &hierarchy(60, 2))));
    assert_eq!(pointer, "/top");
    assert!(
        message.contains(&format!("flattens to {} devices", 1u64 << 60)),
        "{message}"
    );
    assert!(message.contains(&MAX_FLAT_DEVICES.to_string()), "{message}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // 2^10 devices are within the limit.
    let loaded = load_netlist(&file("netlist.json", &hierarchy(10, 2))).unwrap();
    assert_eq!(loaded.value.devices.len(), 1 << 10);
}

/// Loads `document` with `load`, within `limit` (generous: the quadratic checks these
/// inputs were built against took many minutes).
fn load_within<T>(
    limit: Duration,
    document: &Value,
    label: &str,
    load: fn(&InputFile) -> Result<T, centroid_schemas::InputErrors>,
) -> Result<T, centroid_schemas::InputErrors> {
    let input = file(label, document);
    assert!(input.bytes.len() < 16 << 20, "{} bytes", input.bytes.len());
    let started = Instant::now();
    let result = load(&input);
    assert!(
        started.elapsed() < limit,
        "{label}: {:?}",
        started.elapsed()
    );
    result
}

#[test]
fn a_rule_set_with_a_hundred_thousand_layers_and_rules_loads_in_linear_time() {
    const COUNT: usize = 100_000;
    let layers: serde_json::Map<String, Value> = (0..COUNT)
        .map(|index| {
            let gds = json!({"layer": index % 65_536, "datatype": index / 65_536});
            (format!("L{index}"), gds)
        })
        .collect();
    let rules: Vec<Value> = (0..COUNT)
        .map(|index| json!({"id": format!("R{index}"), "type": "width", "layer": format!("L{index}"), "min": 1e-7}))
        .collect();
    let derived: serde_json::Map<String, Value> = (0..2_000)
        .map(|index| {
            (
                format!("D{index}"),
                json!({"op": "and", "a": format!("D{}", index + 1), "b": "nowhere"}),
            )
        })
        .collect();
    let document = json!({"schema_version": "1.1.0", "tech": "big", "layers": layers,
                          "derived_layers": derived, "rules": rules});
    let errors = load_within(
        Duration::from_secs(60),
        &document,
        "drc_rules.json",
        load_drc_rules,
    )
    .unwrap_err();
    assert!(
        errors
            .issues
            .iter()
            .all(|issue| issue.file == "drc_rules.json")
    );
    // The rules are sound; the roles the generators need are missing, and there are
    // too many derived layers.
    assert!(
        errors
            .issues
            .iter()
            .all(|issue| !issue.pointer.starts_with("/rules"))
    );
    assert!(
        errors
            .issues
            .iter()
            .any(|issue| issue.pointer == "/derived_layers"
                && issue.message == "2000 derived layers; a rule set may define at most 1000")
    );
}

#[test]
fn a_problem_on_every_device_of_a_large_netlist_is_reported_in_linear_time() {
    // Each w is refused by the schema and again by the semantic check, which must not
    // compare its pointer with every schema problem before it.
    const COUNT: usize = 100_000;
    let devices: Vec<Value> = (0..COUNT)
        .map(|index| {
            let mut device = device(&format!("M{index}"));
            device["w"] = json!(-1.0);
            device
        })
        .collect();
    let document = json!({"top": "big", "cells": [{"name": "big", "devices": devices}]});
    let errors = load_within(
        Duration::from_secs(60),
        &document,
        "netlist.json",
        load_netlist,
    )
    .unwrap_err();
    // One problem per device (the schema's), and the device limit.
    assert_eq!(errors.issues.len(), COUNT + 1);
    assert_eq!(errors.issues[7].pointer, "/cells/0/devices/7/w");
    assert!(errors.issues.iter().any(|issue| issue.pointer == "/top"));
}

#[test]
fn a_layer_object_in_a_file_without_schema_version_says_which_version_it_needs() {
    // Found by the loader property tests (schema_version deleted from a 1.1.0+ rule set):
    // each layer was reported as "{…the whole object…} is not of type \"integer\"".
    let document = json!({"tech": "t", "layers": {"metal1": {"layer": 8, "role": "metal1"}},
                          "rules": []});
    let errors = load_drc_rules(&file("drc_rules.json", &document)).unwrap_err();
    let issue = errors
        .issues
        .iter()
        .find(|issue| issue.pointer == "/layers/metal1")
        .expect("the layer is named");
    assert!(
        issue.message.contains("needs schema_version 1.1.0")
            && issue.message.contains("read as 1.0.0"),
        "{issue}"
    );
}
