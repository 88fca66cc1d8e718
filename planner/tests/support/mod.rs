//! The hierarchical circuit, its inputs and the skills of a worker laying blocks
//! out, shared by the tests of blocks plans (`hierarchical_plan.rs`, `block_points.rs`).
#![allow(dead_code)] // each test binary uses its own part

pub mod ota5;

use centroid_schemas::{InputFile, TaskContext, TaskInputs};
use serde_json::{Value, json};

use centroid_planner::heuristic::RawInputs;
use centroid_planner::plan::Plan;
use centroid_planner::skill_catalog::SkillCatalog;

/// A MOS device of the test netlists (2 µm / 0.5 µm, two fingers).
pub fn mos(id: &str, kind: &str, d: &str, g: &str, s: &str, b: &str) -> Value {
    json!({"id": id, "type": kind, "w": 2e-6, "l": 5e-7, "nf": 2,
           "terminals": {"d": d, "g": g, "s": s, "b": b}})
}

/// An instance `name` of the `ota` cell as a unity buffer from `input` to `output`.
pub fn buffer(name: &str, input: &str, output: &str) -> Value {
    json!({"name": name, "cell": "ota", "connections":
           {"inp": input, "inn": output, "out": output, "vbias": "vb", "vdd": "vdd", "vss": "vss"}})
}

/// A five-transistor OTA instanced three times as a chain of buffers, a two-device
/// bias subcircuit once, a one-device subcircuit (stays flat) and a loose device.
pub fn netlist() -> Value {
    json!({
        "schema_version": "1.1.0",
        "top": "chain",
        "cells": [
            {"name": "chain", "ports": ["in", "out", "vdd", "vss"],
             "devices": [mos("MC", "nmos", "out", "vb", "vss", "vss")],
             "subcells": [
                buffer("X1", "in", "o1"), buffer("X2", "o1", "o2"), buffer("X3", "o2", "out"),
                {"name": "XB", "cell": "bias", "connections": {"vb": "vb", "vdd": "vdd", "vss": "vss"}},
                {"name": "XS", "cell": "switch", "connections": {"a": "o1", "en": "vb", "vss": "vss"}}]},
            {"name": "ota", "ports": ["inp", "inn", "out", "vbias", "vdd", "vss"], "devices": [
                mos("M1", "nmos", "n1", "inp", "tail", "vss"),
                mos("M2", "nmos", "out", "inn", "tail", "vss"),
                mos("M5", "nmos", "tail", "vbias", "vss", "vss"),
                mos("M3", "pmos", "n1", "n1", "vdd", "vdd"),
                mos("M4", "pmos", "out", "n1", "vdd", "vdd")]},
            {"name": "bias", "ports": ["vb", "vdd", "vss"], "devices": [
                mos("MB1", "nmos", "vb", "vb", "vss", "vss"),
                mos("MB2", "pmos", "vb", "vss", "vdd", "vdd")]},
            {"name": "switch", "ports": ["a", "en", "vss"], "devices": [
                mos("MS", "nmos", "a", "en", "vss", "vss")]}
        ]
    })
}

pub fn load(netlist: &Value) -> (TaskContext, RawInputs) {
    let rules = include_str!("../../../examples/ota5/drc_rules.json");
    let objectives = include_str!("../../../examples/ota5/objectives.json");
    let file = |label: &str, bytes: Vec<u8>| InputFile {
        label: label.into(),
        bytes,
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json", serde_json::to_vec(netlist).unwrap()),
        drc_rules: file("drc_rules.json", rules.as_bytes().to_vec()),
        objectives: file("objectives.json", objectives.as_bytes().to_vec()),
    };
    let context = TaskContext::load(&inputs, "t").unwrap();
    let raw = RawInputs {
        drc_rules: serde_json::from_str(rules).unwrap(),
        netlist: netlist.clone(),
    };
    (context, raw)
}

/// The skills of a worker that routes and lays blocks out (`route.nets` with `ports`).
pub fn skills(blocks: bool) -> SkillCatalog {
    let mut catalog: SkillCatalog = [
        "tech.load",
        "layout.create_device",
        "layout.create_common_centroid_pair",
        "layout.add_dummies",
        "layout.place",
        "route.info",
        "lvs.run",
        "drc.run",
        "layout.metrics",
        "layout.export",
    ]
    .iter()
    .map(|name| (name.to_string(), Value::Null))
    .collect();
    let route_schema = if blocks {
        json!({"type": "object", "properties": {"ports": {"type": "array"}}})
    } else {
        Value::Null
    };
    catalog.insert("route.nets".into(), route_schema);
    if blocks {
        catalog.insert("layout.instantiate_block".into(), Value::Null);
    }
    catalog
}

pub fn steps<'p>(plan: &'p Plan, skill: &str) -> Vec<&'p Value> {
    plan.steps
        .iter()
        .filter(|step| step.skill == skill)
        .map(|step| &step.arguments)
        .collect()
}

pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item.as_str().unwrap().to_string())
        .collect()
}
