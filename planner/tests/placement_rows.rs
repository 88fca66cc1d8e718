//! The rule-based planner's rows: the placement genes order and fold them, a ratioed
//! mirror is one group of equal units, branches stand together, PMOS above the NMOS it
//! is wired to, each matched module with its own dummies and guard ring.

mod support;

use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::placement_order::default_kinds;
use centroid_planner::plan::Plan;
use centroid_planner::plan_builder::cell_name;
use centroid_planner::planner::Planner;
use serde_json::{Value, json};
use support::ota5::{BASIC, load, ota5, skills};

/// The cells of every `layout.place` row step, in order.
fn placed_rows(plan: &Plan) -> Vec<Vec<String>> {
    plan.steps
        .iter()
        .filter(|step| step.skill == "layout.place")
        .flat_map(|step| {
            step.arguments["rows"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|row| {
            row["cells"]
                .as_array()
                .unwrap()
                .iter()
                .map(|cell| cell.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn the_placement_genes_order_and_fold_the_rows_and_every_matched_group_is_measured() {
    let (context, raw) = ota5();
    let mut names = BASIC.to_vec();
    names.extend(["route.info", "route.nets", "lvs.run"]);
    let catalog = skills(&names);
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let space = planner.design_space(&context, &catalog);
    let default = space.default_point();
    let rows = placed_rows(&planner.plan(&context, &default, &catalog).unwrap());
    let nmos_kind = space.kinds.iter().find(|kind| kind.kind == "nmos").unwrap();
    let nmos_row = rows
        .iter()
        .find(|row| row.iter().any(|cell| cell.contains("M5")))
        .unwrap()
        .clone();
    assert!(nmos_row.len() >= 2, "{rows:?}");

    // the order reversed: the nmos row comes out reversed
    let mut reversed = default.clone();
    reversed.order = default.order.iter().rev().cloned().collect();
    let reversed_rows = placed_rows(&planner.plan(&context, &reversed, &catalog).unwrap());
    let mut expected = nmos_row.clone();
    expected.reverse();
    assert!(reversed_rows.contains(&expected), "{reversed_rows:?}");

    // folded into two rows: the same cells, in two rows, in order
    let mut folded = default.clone();
    folded.rows.insert("nmos".into(), nmos_kind.max_rows.max(2));
    let folded_rows = placed_rows(&planner.plan(&context, &folded, &catalog).unwrap());
    assert_eq!(folded_rows.len(), rows.len() + 1, "{folded_rows:?}");
    let rejoined: Vec<String> = folded_rows
        .iter()
        .filter(|row| row.iter().all(|cell| nmos_row.contains(cell)))
        .flatten()
        .cloned()
        .collect();
    assert_eq!(rejoined, nmos_row);

    // layout.metrics gets every recognised matched module with its drawn devices
    let plan = planner.plan(&context, &default, &catalog).unwrap();
    let metrics = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.metrics")
        .unwrap();
    let matched = metrics.arguments["matched"].as_array().unwrap();
    let recognised = context
        .circuit
        .modules
        .iter()
        .filter(|module| module.module_type.is_matched())
        .count();
    assert_eq!(matched.len(), recognised);
    assert!(
        matched
            .iter()
            .all(|group| group["devices"].as_array().unwrap().len() >= 2)
    );
}

#[test]
fn a_ratioed_mirror_is_one_interdigitated_group_of_equal_units() {
    let (context, raw) = load(
        include_str!("../../examples/mirror_bank/netlist.json"),
        include_str!("../../examples/mirror_bank/drc_rules.json"),
        include_str!("../../examples/mirror_bank/objectives.json"),
    );
    let planner = HeuristicPlanner::new(raw);
    let mut names = BASIC.to_vec();
    names.push("layout.create_interdigitated_group");
    let catalog = skills(&names);
    let space = planner.design_space(&context, &catalog);
    for split in &space.finger_splits {
        let point = DesignPoint {
            finger_split: *split,
            ..space.default_point()
        };
        let plan = planner.plan(&context, &point, &catalog).unwrap();
        let group = plan
            .steps
            .iter()
            .find(|step| step.skill == "layout.create_interdigitated_group")
            .expect("the 1:1:2:4 mirror is one matched structure");
        let units: Vec<(String, u64, f64, u64)> = group.arguments["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|device| {
                (
                    device["device_id"].as_str().unwrap().to_owned(),
                    device["units"].as_u64().unwrap(),
                    device["w"].as_f64().unwrap(),
                    device["nf"].as_u64().unwrap(),
                )
            })
            .collect();
        let counts: Vec<u64> = units.iter().map(|unit| unit.1).collect();
        assert_eq!(counts, [1, 1, 2, 4], "{units:?}");
        assert!(
            units
                .iter()
                .all(|unit| (unit.2 - 2e-6).abs() < 1e-12 && unit.3 == 1),
            "every unit is the 2 µm one-finger unit: {units:?}"
        );
        assert!(
            !plan
                .steps
                .iter()
                .any(|step| step.skill == "layout.create_device"),
            "no device is left out of the matched structure"
        );
    }
}

#[test]
fn the_default_order_puts_the_devices_of_one_branch_next_to_each_other() {
    // a stack MA–MB–MC–MD (each drain the next one's source), listed out of order;
    // every gate its own net, every source of MA and bulk on the ground
    let device = |id: &str, d: &str, g: &str, s: &str| {
        json!({"id": id, "type": "nmos", "w": 2e-6, "l": 5e-7, "nf": 1, "m": 1,
               "terminals": {"d": d, "g": g, "s": s, "b": "vss"}})
    };
    let netlist = json!({
        "schema_version": "1.0.0",
        "top": "stack",
        "cells": [{
            "name": "stack",
            "nets": ["n1", "n2", "n3", "out", "ga", "gb", "gc", "gd", "vss"],
            "devices": [
                device("MC", "n3", "gc", "n2"),
                device("MA", "n1", "ga", "vss"),
                device("MD", "out", "gd", "n3"),
                device("MB", "n2", "gb", "n1"),
            ],
        }],
    });
    let (context, _) = load(
        &netlist.to_string(),
        include_str!("../../examples/ota5/drc_rules.json"),
        include_str!("../../examples/ota5/objectives.json"),
    );
    let kinds = default_kinds(&context.circuit);
    let nmos = kinds.iter().find(|kind| kind.kind == "nmos").unwrap();
    // alternating around the middle alone would give MB MA MC MD; the branch is
    // drawn as it is wired (of its two directions, the one nearer the listing)
    assert_eq!(nmos.devices, ["MA", "MB", "MC", "MD"]);
}

#[test]
fn the_pmos_row_stands_above_the_nmos_devices_it_is_wired_to() {
    // three branches side by side: Ni pulls net ai down, Pi pulls it up; the
    // devices of a row share no signal net (every order of a row spans alike) and
    // no two devices are matched. The
    // pmos are listed in another order than the nmos, and every order of the
    // nmos listing must give the pmos row the nmos row's sequence of branches.
    let device = |id: &str, kind: &str, d: &str, g: &str, s: &str, w: f64| {
        let bulk = if kind == "nmos" { "vss" } else { "vdd" };
        json!({"id": id, "type": kind, "w": w, "l": 5e-7, "nf": 1, "m": 1,
               "terminals": {"d": d, "g": g, "s": s, "b": bulk}})
    };
    let listings = [["N1", "N2", "N3"], ["N3", "N1", "N2"], ["N2", "N3", "N1"]];
    for listing in listings {
        let mut devices: Vec<Value> = ["P3", "P1", "P2"]
            .iter()
            .map(|id| {
                let branch = &id[1..];
                let w = 2e-6 + branch.parse::<f64>().unwrap() * 1e-6;
                device(
                    id,
                    "pmos",
                    &format!("a{branch}"),
                    &format!("p{branch}"),
                    "vdd",
                    w,
                )
            })
            .collect();
        devices.extend(listing.iter().map(|id| {
            let branch = &id[1..];
            let w = 6e-6 + branch.parse::<f64>().unwrap() * 1e-6;
            device(
                id,
                "nmos",
                &format!("a{branch}"),
                &format!("g{branch}"),
                "vss",
                w,
            )
        }));
        let netlist = json!({
            "schema_version": "1.0.0",
            "top": "branches",
            "cells": [{
                "name": "branches",
                "nets": ["a1", "a2", "a3", "g1", "g2", "g3", "p1", "p2", "p3", "vdd", "vss"],
                "devices": devices,
            }],
        });
        let (context, _) = load(
            &netlist.to_string(),
            include_str!("../../examples/ota5/drc_rules.json"),
            include_str!("../../examples/ota5/objectives.json"),
        );
        assert!(
            context
                .circuit
                .modules
                .iter()
                .all(|module| !module.module_type.is_matched())
        );
        let kinds = default_kinds(&context.circuit);
        let branches = |kind: &str| -> Vec<String> {
            let row = kinds.iter().find(|row| row.kind == kind).unwrap();
            row.devices.iter().map(|id| id[1..].to_string()).collect()
        };
        assert_eq!(
            branches("pmos"),
            branches("nmos"),
            "listed {listing:?}: {kinds:?}"
        );
    }
}

#[test]
fn each_matched_module_takes_its_own_dummies_and_guard_ring() {
    let (context, raw) = ota5();
    let mut names = BASIC.to_vec();
    names.push("layout.add_guard_ring");
    let catalog = skills(&names);
    // not routed: guard rings are in the space
    let planner = HeuristicPlanner::new(raw);
    let space = planner.design_space(&context, &catalog);
    assert_eq!(space.groups.len(), 2, "the pair and the mirror: {space:?}");
    let (first, second) = (&space.groups[0], &space.groups[1]);
    let mut point = space.default_point();
    point.dummies = 2;
    point.module_dummies = [(first.clone(), 0)].into();
    point.module_rings = [(second.clone(), true)].into();
    let plan = planner
        .plan(&context, &space.canonical(&point), &catalog)
        .unwrap();
    let calls = |skill: &str| -> Vec<Value> {
        plan.steps
            .iter()
            .filter(|step| step.skill == skill)
            .map(|step| step.arguments.clone())
            .collect()
    };
    let second_cell = cell_name("mod", second);
    assert_eq!(
        calls("layout.add_dummies"),
        [json!({"cell": second_cell, "count": 2})],
        "no dummies at {first}, two at {second}"
    );
    let rings = calls("layout.add_guard_ring");
    assert_eq!(rings.len(), 1, "{rings:?}");
    assert_eq!(rings[0]["cell"], json!(second_cell));
    // the ring wraps the module's cell: the placement places the ring
    let placed: Vec<String> = plan
        .steps
        .iter()
        .filter(|step| step.skill == "layout.place")
        .flat_map(|step| serde_json::to_string(&step.arguments))
        .collect();
    assert!(
        placed[0].contains(&format!("gr_{second_cell}")),
        "{placed:?}"
    );
    // the summary names the groups that differ from the first (whose count is global)
    for said in [
        format!("{second}: 2 dummies"),
        format!("{second}: guard ring on"),
    ] {
        assert!(plan.summary.contains(&said), "{}", plan.summary);
    }
}
