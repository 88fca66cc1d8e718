//! What is and is not a differential pair: two equal MOS on a common source net that no
//! other MOS of their type feeds from.

use centroid_schemas::{InputFile, ModuleType, load_netlist, recognize_modules};
use serde_json::{Value, json};

fn mos(id: &str, kind: &str, d: &str, g: &str, s: &str, b: &str) -> Value {
    json!({"id": id, "type": kind, "w": 1e-6, "l": 5e-7,
           "terminals": {"d": d, "g": g, "s": s, "b": b}})
}

fn pairs(devices: Vec<Value>) -> Vec<Vec<String>> {
    let netlist = json!({"top": "t", "cells": [{"name": "t", "devices": devices}]});
    let file = InputFile {
        label: "netlist.json".into(),
        bytes: serde_json::to_vec(&netlist).unwrap(),
    };
    let circuit = load_netlist(&file).unwrap().value;
    recognize_modules(&circuit)
        .into_iter()
        .filter(|module| module.module_type == ModuleType::DifferentialPair)
        .map(|module| {
            module
                .devices
                .into_iter()
                .map(|member| member.device_id)
                .collect()
        })
        .collect()
}

#[test]
fn an_input_pair_on_its_tail_is_a_pair() {
    let found = pairs(vec![
        mos("M1", "nmos", "o1", "inp", "tail", "vss"),
        mos("M2", "nmos", "o2", "inn", "tail", "vss"),
        mos("M5", "nmos", "tail", "vb", "vss", "vss"),
    ]);
    assert_eq!(found, vec![vec!["M1".to_string(), "M2".to_string()]]);
}

#[test]
fn drivers_fed_from_one_reference_net_are_not_pairs() {
    // a capacitor DAC's bottom-plate drivers: every bit's PMOS on the reference vrefp
    let found = pairs(vec![
        mos("D0", "pmos", "b0", "d0", "vrefp", "vdd"),
        mos("D1", "pmos", "b1", "d1", "vrefp", "vdd"),
        mos("D2", "pmos", "b2", "d2", "vrefp", "vdd"),
        mos("D3", "pmos", "b3", "d3", "vrefp", "vdd"),
    ]);
    assert!(found.is_empty(), "{found:?}");
}
