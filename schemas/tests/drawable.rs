//! What the rule set cannot draw is refused when the inputs load — the one pipeline of
//! `validate`, `run` and SubmitJob —, naming the devices, the size and the rule: gates
//! shorter than the poly width rule (on a derived gate layer too), fingers narrower than
//! the diffusion or one contact, resistor bars and capacitor plates too narrow, more
//! fingers or instances than a device cell holds, nmos bulks on several nets, pmos bulks
//! on several nets without an n-well spacing rule.

use centroid_schemas::{InputErrors, InputFile, InputPaths, TaskContext, TaskInputs};
use serde_json::{Value, json};

fn example(path: &str) -> Value {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    serde_json::from_slice(&std::fs::read(root.join(path)).unwrap()).unwrap()
}

fn input(label: &str, value: &Value) -> InputFile {
    InputFile {
        label: label.to_owned(),
        bytes: serde_json::to_vec(value).unwrap(),
    }
}

/// A one-cell netlist of these devices; (id, type, w, l, nf, m, bulk).
fn netlist(devices: &[(&str, &str, f64, f64, u32, u32, &str)]) -> Value {
    let devices: Vec<Value> = devices
        .iter()
        .map(|(id, kind, w, l, nf, m, bulk)| {
            let terminals = if kind.ends_with("mos") {
                json!({"d": format!("{id}_d"), "g": "g", "s": "s", "b": bulk})
            } else {
                json!({"p": format!("{id}_p"), "n": "s"})
            };
            let mut device =
                json!({"id": id, "type": kind, "w": w, "l": l, "m": m, "terminals": terminals});
            if kind.ends_with("mos") {
                device["nf"] = json!(nf);
            }
            device
        })
        .collect();
    json!({"schema_version": "1.1.0", "top": "t", "cells": [{"name": "t", "devices": devices}]})
}

fn load(netlist: &Value, rules: &Value) -> Result<TaskContext, InputErrors> {
    let inputs = TaskInputs {
        netlist: input("netlist.json", netlist),
        drc_rules: input("drc_rules.json", rules),
        objectives: input("objectives.json", &example("examples/ota5/objectives.json")),
    };
    TaskContext::load(&inputs, "test")
}

fn problems(netlist: &Value, rules: &Value) -> Vec<String> {
    match load(netlist, rules) {
        Ok(_) => panic!("accepted: {netlist:#}"),
        Err(errors) => errors.issues.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn sizes_the_generators_cannot_draw_are_refused_with_the_rule() {
    let sky130 = example("examples/pdk/sky130.json");
    let netlist = netlist(&[
        ("M1", "nmos", 1e-6, 0.02e-6, 1, 1, "vss"),
        ("M2", "nmos", 1e-6, 0.02e-6, 1, 1, "vss"),
        ("M3", "pmos", 0.1e-6, 0.15e-6, 1, 1, "vdd"),
        ("M4", "pmos", 0.44e-6, 0.15e-6, 2, 1, "vdd"),
        ("M5", "nmos", 300e-6, 0.15e-6, 300, 1, "vss"), // drawable: one cell holds 1024 fingers
        ("M6", "nmos", 64e-6, 0.15e-6, 64, 32, "vss"),
        ("M7", "nmos", 1e-6, 0.15e-6, 1, 1100, "vss"),
        ("M8", "nmos", 0.25e-6, 0.15e-6, 1, 1, "vss"),
        ("R1", "resistor", 0.3e-6, 10e-6, 1, 1, ""),
        ("C1", "capacitor", 0.1e-6, 10e-6, 1, 1, ""),
    ]);
    assert_eq!(
        problems(&netlist, &sky130),
        [
            "netlist.json: /cells/0/devices/0: M1 (and M2 likewise): l = 0.02 µm is below the minimum gate length 0.15 µm (rule poly.1a); the rule set cannot draw it",
            "netlist.json: /cells/0/devices/2: M3: finger width w/nf = 0.1 µm is below 0.25 µm (rule difftap.1); the rule set cannot draw it",
            "netlist.json: /cells/0/devices/3: M4: finger width w/nf = 0.22 µm is below 0.25 µm (one contact with its diffusion enclosure); the rule set cannot draw it",
            "netlist.json: /cells/0/devices/5: M6: nf × m = 2048 gate fingers are more than the 1024 one transistor cell holds; the rule set cannot draw it",
            "netlist.json: /cells/0/devices/6: M7: m = 1100 parallel instances are more than the 1024 one device cell is drawn with; the rule set cannot draw it",
            "netlist.json: /cells/0/devices/8: R1: resistor width 0.3 µm is below the minimum 0.33 µm (rule poly.3); the rule set cannot draw it",
            "netlist.json: /cells/0/devices/9: C1: capacitor plate 0.1 × 10 µm is narrower than the metal width 0.17 µm; the rule set cannot draw it",
        ]
    );
}

#[test]
fn a_power_switch_of_hundreds_of_fingers_is_drawable() {
    // ALIGN's sc_dc_dc_converter: 832 fingers of one switch (and 4 × 208 alike)
    let sky130 = example("examples/pdk/sky130.json");
    let netlist = netlist(&[
        ("M1", "nmos", 349.44e-6, 0.15e-6, 832, 1, "vss"),
        ("M2", "nmos", 87.36e-6, 0.15e-6, 208, 4, "vss"),
    ]);
    if let Err(errors) = load(&netlist, &sky130) {
        panic!("refused: {errors}");
    }
}

#[test]
fn a_gate_rule_on_a_derived_layer_counts_for_the_poly() {
    // GF180: PL.2_LV, 0.28 µm on gate = Poly2 AND COMP, is stricter than PL.1_LV on Poly2
    let gf180 = example("examples/pdk/gf180mcu.json");
    let netlist = netlist(&[("M1", "nmos", 1e-6, 0.2e-6, 1, 1, "vss")]);
    assert_eq!(
        problems(&netlist, &gf180),
        [
            "netlist.json: /cells/0/devices/0: M1: l = 0.2 µm is below the minimum gate length 0.28 µm (rule PL.2_LV); the rule set cannot draw it"
        ]
    );
}

#[test]
fn nmos_bulks_on_several_nets_cannot_be_isolated() {
    let sky130 = example("examples/pdk/sky130.json");
    let netlist = netlist(&[
        ("M1", "nmos", 1e-6, 0.15e-6, 1, 1, "vss"),
        ("M2", "nmos", 1e-6, 0.15e-6, 1, 1, "vss"),
        ("M3", "nmos", 1e-6, 0.15e-6, 1, 1, "s"),
    ]);
    assert_eq!(
        problems(&netlist, &sky130),
        [
            "netlist.json: /cells/0/devices/2: nmos bulks are on 2 nets — vss (M1, M2), s (M3) —: every nmos stands in the one p-type substrate and the rule set has no layer that isolates a p-well from it, so these nets would be shorted; connect every nmos bulk to one net"
        ]
    );
}

#[test]
fn pmos_bulks_on_several_nets_need_the_n_well_spacing_rule() {
    let mut sky130 = example("examples/pdk/sky130.json");
    let netlist = netlist(&[
        ("M1", "pmos", 1e-6, 0.15e-6, 1, 1, "vdd"),
        ("M2", "pmos", 1e-6, 0.15e-6, 1, 1, "vdda"),
    ]);
    // SKY130 keeps n-wells apart by nwell.2a: two wells can be drawn
    load(&netlist, &sky130).unwrap();
    sky130["rules"]
        .as_array_mut()
        .unwrap()
        .retain(|rule| !(rule["type"] == "spacing" && rule["layer"] == "nwell"));
    assert_eq!(
        problems(&netlist, &sky130),
        [
            "drc_rules.json: /rules: pmos bulks are on 2 nets — vdd (M1), vdda (M2) — of netlist.json: each needs an n-well of its own, kept apart by the n-well spacing rule, which the rule set lacks; add a spacing rule on layer \"nwell\""
        ]
    );
}

#[test]
fn every_example_circuit_is_drawable_by_its_rule_set() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut dirs: Vec<std::path::PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        dirs.extend(
            std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.is_dir()),
        );
        dirs.push(dir);
    }
    let mut checked = 0;
    for dir in dirs {
        if !dir.join("objectives.json").is_file() {
            continue;
        }
        let paths = InputPaths::in_dir(&dir);
        if let Err(errors) = TaskContext::load_paths(&paths, "test") {
            panic!("{}: {errors}", dir.display());
        }
        checked += 1;
    }
    assert!(checked >= 10, "{checked} examples");
}
