//! A parent whose block instances draw a matched module (issue 26): the halves of a
//! differential pair, each four copies of a two-device stack. Their instances stand
//! interleaved in rows of their own; a worker that keeps such rows whole
//! (`pack_block_rows`' `whole_rows`) is asked to pack the parent's rows with those rows
//! named as one group, a worker without it keeps the planner's rows (no packing, as
//! before: a packing would scatter the copies). A block without a point of its own is
//! drawn in its own default order: a four-device stack in chain order.

use serde_json::{Value, json};

use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;

mod support;
use support::{load, skills, steps, strings};

fn mos(id: &str, kind: &str, d: &str, g: &str, s: &str, b: &str) -> Value {
    json!({"id": id, "type": kind, "w": 1e-6, "l": 5e-7, "nf": 1,
           "terminals": {"d": d, "g": g, "s": s, "b": b}})
}

/// The pair: halves `XA*` and `XB*`, four copies each of a four-device stack.
fn pair() -> Value {
    let copy = |name: &str, d: &str, g: &str| json!({"name": name, "cell": "stack", "connections": {"d": d, "g": g, "s": "tail", "b": "vss"}});
    let mut subcells: Vec<Value> = (1..=4)
        .map(|k| copy(&format!("XA{k}"), "n1", "inp"))
        .collect();
    subcells.extend((1..=4).map(|k| copy(&format!("XB{k}"), "out", "inn")));
    json!({
        "schema_version": "1.1.0",
        "top": "pair",
        "cells": [
            {"name": "pair", "ports": ["inp", "inn", "out", "vb", "vdd", "vss"],
             "devices": [
                mos("M3", "pmos", "n1", "n1", "vdd", "vdd"),
                mos("M4", "pmos", "out", "n1", "vdd", "vdd"),
                mos("M5", "nmos", "tail", "vb", "vss", "vss")],
             "subcells": subcells},
            {"name": "stack", "ports": ["d", "g", "s", "b"], "devices": [
                mos("M1", "nmos", "d", "g", "i1", "b"),
                mos("M2", "nmos", "i1", "g", "i2", "b"),
                mos("M3", "nmos", "i2", "g", "i3", "b"),
                mos("M4", "nmos", "i3", "g", "s", "b")]}
        ]
    })
}

/// The blocks' workers; with `whole`, their `route.nets` keeps rows whole.
fn catalog(whole: bool) -> SkillCatalog {
    let mut catalog = skills(true);
    let mut pack = json!({"type": "object", "properties": {"gap": {"type": "number"}}});
    if whole {
        pack["properties"]["whole_rows"] = json!({"type": "array"});
    }
    catalog.insert(
        "route.nets".into(),
        json!({"type": "object", "properties": {"ports": {"type": "array"}, "pack_block_rows": pack}}),
    );
    catalog
}

#[test]
fn a_matched_modules_rows_of_blocks_are_packed_whole_by_workers_that_keep_them() {
    let (context, raw) = load(&pair());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = catalog(true);
    let point = planner.design_space(&context, &catalog).default_point();
    let plan = planner.plan(&context, &point, &catalog).unwrap();

    let routes = steps(&plan, "route.nets");
    let top = routes.last().unwrap();
    assert_eq!(top["cell_name"], "TOP");
    let groups = top["pack_block_rows"]["whole_rows"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{top}");
    // the group names the rows holding the module's eight instances, and nothing else
    let rows_of: Vec<Vec<String>> = steps(&plan, "layout.place")
        .iter()
        .filter(|place| groups[0].as_array().unwrap().contains(&place["cell_name"]))
        .map(|place| strings(&place["rows"][0]["cells"]))
        .collect();
    let mut instances: Vec<String> = rows_of.concat();
    instances.sort();
    let expected: Vec<String> = ["XA1", "XA2", "XA3", "XA4", "XB1", "XB2", "XB3", "XB4"]
        .iter()
        .map(|name| format!("I_{name}"))
        .collect();
    assert_eq!(instances, expected, "{rows_of:?}");
    // each of those rows holds as many copies of either half (their centroids meet)
    for row in &rows_of {
        let halves = |prefix: &str| row.iter().filter(|cell| cell.starts_with(prefix)).count();
        assert_eq!(halves("I_XA"), halves("I_XB"), "{row:?}");
    }

    // the stack block, drawn without a point of its own: its devices in chain order
    let block_row = steps(&plan, "layout.place")
        .into_iter()
        .find(|place| place["cell_name"].as_str().unwrap().contains("stack_ROW"))
        .unwrap();
    let order: Vec<String> = strings(&block_row["rows"][0]["cells"])
        .iter()
        .map(|cell| cell.rsplit('_').next().unwrap().to_string())
        .collect();
    let chain = ["M1", "M2", "M3", "M4"];
    let reversed: Vec<&str> = chain.iter().rev().copied().collect();
    assert!(order == chain || order == reversed, "{order:?}");
}

#[test]
fn workers_that_would_scatter_a_matched_module_keep_the_planners_rows() {
    let (context, raw) = load(&pair());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = catalog(false);
    let point = planner.design_space(&context, &catalog).default_point();
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    let routes = steps(&plan, "route.nets");
    assert!(routes.last().unwrap().get("pack_block_rows").is_none());
}
