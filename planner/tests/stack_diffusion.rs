//! A series stack's row on one diffusion (issue 26): a worker whose `layout.place` takes
//! `devices` is given, for a row of single MOS devices, their terminals (it puts
//! neighbours facing one net on one diffusion); a worker without it gets the row as
//! before; a row of block instances never carries devices.

use serde_json::{Value, json};

use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;

mod support;
use support::{load, skills, steps, strings};

fn mos(id: &str, d: &str, s: &str) -> Value {
    json!({"id": id, "type": "nmos", "w": 1e-6, "l": 5e-7, "nf": 2,
           "terminals": {"d": d, "g": "g", "s": s, "b": "b"}})
}

/// Two copies of a four-device stack under one gate.
fn stacks() -> Value {
    let copy = |name: &str, d: &str| json!({"name": name, "cell": "stack", "connections": {"d": d, "g": "vb", "s": "vss", "b": "vss"}});
    json!({
        "schema_version": "1.1.0",
        "top": "bias",
        "cells": [
            {"name": "bias", "ports": ["o1", "o2", "vb", "vss"],
             "devices": [], "subcells": [copy("XS1", "o1"), copy("XS2", "o2")]},
            {"name": "stack", "ports": ["d", "g", "s", "b"], "devices": [
                mos("M1", "d", "i1"), mos("M2", "i1", "i2"), mos("M3", "i2", "i3"), mos("M4", "i3", "s")]}
        ]
    })
}

fn catalog(shares: bool) -> SkillCatalog {
    let mut catalog = skills(true);
    if shares {
        catalog.insert(
            "layout.place".into(),
            json!({"type": "object", "properties": {"rows": {"type": "array"}, "devices": {"type": "array"}}}),
        );
    }
    catalog
}

fn places(shares: bool) -> Vec<Value> {
    let (context, raw) = load(&stacks());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = catalog(shares);
    let point = planner.design_space(&context, &catalog).default_point();
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    steps(&plan, "layout.place").into_iter().cloned().collect()
}

#[test]
fn a_stacks_row_carries_its_devices_terminals_for_workers_that_share_diffusion() {
    let places = places(true);
    let row = places
        .iter()
        .find(|place| place["cell_name"].as_str().unwrap().contains("stack_ROW"))
        .unwrap();
    let cells = strings(&row["rows"][0]["cells"]);
    assert_eq!(cells.len(), 4, "{row}");
    let devices = row["devices"].as_array().expect("the row's devices");
    let mut ids: Vec<&str> = devices.iter().map(|d| d["id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["M1", "M2", "M3", "M4"]);
    let m2 = devices.iter().find(|d| d["id"] == "M2").unwrap();
    assert_eq!(
        m2["terminals"],
        json!({"d": "i1", "g": "g", "s": "i2", "b": "b"})
    );
    // the parent's rows hold block instances: no devices
    for place in places
        .iter()
        .filter(|place| !place["cell_name"].as_str().unwrap().contains("stack"))
    {
        assert!(place.get("devices").is_none(), "{place}");
    }
}

#[test]
fn workers_without_it_get_the_row_as_before() {
    for place in places(false) {
        assert!(place.get("devices").is_none(), "{place}");
    }
}
