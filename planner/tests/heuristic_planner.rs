//! The rule-based planner on the ota5 example: matched modules, advertised
//! skills only, routing once the pitch is known, ReAct adjustments by reason.

use centroid_schemas::{InputFile, TaskContext, TaskInputs};
use serde_json::{Value, json};

use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::placement_order::default_kinds;
use centroid_planner::plan::Plan;
use centroid_planner::plan_builder::{cell_name, fit_to_schema};
use centroid_planner::planner::Planner;
use centroid_planner::random::SplitMix64;
use centroid_planner::react::reasons;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_planner::step_failure::{StepFailure, codes};

fn ota5() -> (TaskContext, RawInputs) {
    load(
        include_str!("../../examples/ota5/netlist.json"),
        include_str!("../../examples/ota5/drc_rules.json"),
        include_str!("../../examples/ota5/objectives.json"),
    )
}

fn load(netlist: &str, rules: &str, objectives: &str) -> (TaskContext, RawInputs) {
    let file = |label: &str, text: &str| InputFile {
        label: label.into(),
        bytes: text.as_bytes().to_vec(),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json", netlist),
        drc_rules: file("drc_rules.json", rules),
        objectives: file("objectives.json", objectives),
    };
    let context = TaskContext::load(&inputs, "t").unwrap();
    (
        context,
        RawInputs {
            drc_rules: serde_json::from_str(rules).unwrap(),
            netlist: serde_json::from_str(netlist).unwrap(),
        },
    )
}

fn skills(names: &[&str]) -> SkillCatalog {
    names
        .iter()
        .map(|name| (name.to_string(), Value::Null))
        .collect()
}

const BASIC: &[&str] = &[
    "tech.load",
    "layout.create_device",
    "layout.create_common_centroid_pair",
    "layout.add_dummies",
    "layout.place",
    "drc.run",
    "layout.metrics",
    "layout.export",
];

#[test]
fn ota5_plan_matches_the_pair_and_the_mirror_and_uses_only_advertised_skills() {
    let (context, raw) = ota5();
    let planner = HeuristicPlanner::new(raw);
    let catalog = skills(BASIC);
    let space = planner.design_space(&context, &catalog);
    let plan = planner
        .plan(&context, &space.default_point(), &catalog)
        .unwrap();
    let skills_used: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
    assert_eq!(
        skills_used
            .iter()
            .filter(|skill| **skill == "layout.create_common_centroid_pair")
            .count(),
        2,
        "{skills_used:?}"
    );
    assert!(
        skills_used.contains(&"layout.create_device"),
        "the tail device"
    );
    assert!(
        !skills_used.contains(&"lvs.run") && !skills_used.contains(&"route.nets"),
        "not advertised: not planned"
    );
    assert!(
        plan.steps
            .iter()
            .all(|step| catalog.contains_key(&step.skill))
    );
    let pair = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.create_common_centroid_pair")
        .unwrap();
    assert_eq!(pair.arguments["arrangement"], "ABBA");
    assert_eq!(
        pair.arguments["device_a"]["m"], 2,
        "nf=2 split into two units"
    );
    // the mirror (one gate, one source) shares diffusion; the differential pair not
    let share_of = |device: &str| {
        plan.steps
            .iter()
            .find(|step| {
                step.skill == "layout.create_common_centroid_pair"
                    && [&step.arguments["device_a"], &step.arguments["device_b"]]
                        .iter()
                        .any(|spec| spec["device_id"] == device)
            })
            .map(|step| step.arguments["share_diffusion"].clone())
    };
    assert_eq!(share_of("M3"), Some(serde_json::Value::Bool(true)));
    assert_eq!(share_of("M1"), Some(serde_json::Value::Bool(false)));
}

#[test]
fn routing_and_lvs_are_planned_once_advertised_and_the_pitch_is_known() {
    let (context, raw) = ota5();
    let mut names = BASIC.to_vec();
    names.extend(["route.info", "route.nets", "lvs.run"]);
    let catalog = skills(&names);
    let point = HeuristicPlanner::new(raw.clone())
        .design_space(&context, &catalog)
        .default_point();
    let without_pitch = HeuristicPlanner::new(raw.clone())
        .plan(&context, &point, &catalog)
        .unwrap();
    assert!(
        !without_pitch
            .steps
            .iter()
            .any(|step| step.skill == "route.nets")
    );
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    let skills_used: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
    let route = skills_used
        .iter()
        .position(|skill| *skill == "route.nets")
        .expect("routed");
    let lvs = skills_used
        .iter()
        .position(|skill| *skill == "lvs.run")
        .expect("lvs");
    let drc = skills_used
        .iter()
        .position(|skill| *skill == "drc.run")
        .unwrap();
    assert!(route < lvs && route < drc);
    assert_eq!(
        plan.steps[lvs].arguments["devices"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

/// The value of a future that is ready when first polled (the rule-based planner
/// decides at once); panics otherwise.
fn at_once<T>(future: impl std::future::Future<Output = T>) -> T {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("the rule-based planner never waits"),
    }
}

#[test]
fn adjust_falls_back_to_abab_and_fit_drops_undeclared_arguments() {
    let (context, raw) = ota5();
    let planner = HeuristicPlanner::new(raw);
    let catalog = skills(BASIC);
    let plan = planner
        .plan(
            &context,
            &planner.design_space(&context, &catalog).default_point(),
            &catalog,
        )
        .unwrap();
    let pair = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.create_common_centroid_pair")
        .unwrap();
    let failure = StepFailure {
        code: codes::INVALID_PARAM.into(),
        message: "ABBA needs an even m per device".into(),
        details: json!({"reason": reasons::ODD_UNIT_COUNT}),
    };
    let adjusted = at_once(planner.adjust(&plan, &pair.step_id, &failure, &catalog))
        .adjustment
        .unwrap();
    let new_pair = adjusted
        .plan
        .steps
        .iter()
        .find(|step| step.step_id == pair.step_id)
        .unwrap();
    assert_eq!(new_pair.arguments["arrangement"], "ABAB");
    let schema = json!({"type": "object", "properties": {"cell": {}}, "required": ["cell"], "additionalProperties": false});
    assert_eq!(
        fit_to_schema(json!({"cell": "a", "extra": 1}), &schema),
        Some(json!({"cell": "a"}))
    );
    assert_eq!(fit_to_schema(json!({"extra": 1}), &schema), None);
}

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

#[test]
fn every_matched_cell_of_every_plan_is_a_group_of_the_space() {
    // the folding of per-module dummies and rings into one spelling relies on it
    let examples = [
        "ota5",
        "miller_ota",
        "mirror_bank",
        "strongarm_comparator",
        "folded_cascode",
    ];
    for example in examples {
        let text = |file: &str| {
            let path = format!(
                "{}/../examples/{example}/{file}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read_to_string(path).unwrap()
        };
        let (netlist, rules, objectives) = (
            text("netlist.json"),
            text("drc_rules.json"),
            text("objectives.json"),
        );
        let (context, raw) = load(&netlist, &rules, &objectives);
        let mut names = BASIC.to_vec();
        names.extend([
            "layout.create_interdigitated_group",
            "layout.add_guard_ring",
        ]);
        let catalog = skills(&names);
        let planner = HeuristicPlanner::new(raw);
        let space = planner.design_space(&context, &catalog);
        let groups: Vec<String> = space
            .groups
            .iter()
            .map(|module| cell_name("mod", module))
            .collect();
        let mut rng = SplitMix64::new(7);
        let mut points = vec![space.default_point()];
        points.extend((0..20).map(|_| space.random_point(&mut rng)));
        for point in points {
            let plan = planner
                .plan(&context, &space.canonical(&point), &catalog)
                .unwrap();
            for step in plan.steps.iter().filter(|step| {
                step.skill == "layout.create_common_centroid_pair"
                    || step.skill == "layout.create_interdigitated_group"
            }) {
                let cell = step.arguments["cell_name"].as_str().unwrap().to_string();
                assert!(
                    groups.contains(&cell),
                    "{example}: {cell} not in {groups:?}"
                );
            }
        }
    }
}

#[test]
fn a_pair_takes_an_arrangement_gene_only_when_drawn_as_two_devices() {
    let catalog = skills(BASIC);
    // per module: (whether it has an arrangement gene, type, members, devices)
    let modules = |netlist: &str| {
        let (context, raw) = load(
            netlist,
            include_str!("../../examples/ota5/drc_rules.json"),
            include_str!("../../examples/ota5/objectives.json"),
        );
        let space = HeuristicPlanner::new(raw).design_space(&context, &catalog);
        context
            .circuit
            .modules
            .iter()
            .map(|module| {
                let members = module.members().count();
                (
                    space.modules.contains(&module.id),
                    module.module_type.as_str().to_owned(),
                    members,
                    module.devices.len(),
                )
            })
            .collect::<Vec<(bool, String, usize, usize)>>()
    };
    let ota5 = include_str!("../../examples/ota5/netlist.json");
    let plain = modules(ota5);
    assert!(
        plain.contains(&(true, "differential_pair".into(), 2, 2))
            && plain.contains(&(true, "current_mirror".into(), 2, 2)),
        "{plain:?}"
    );
    // the pair's halves each written out as two devices on the same nets: two members of
    // two parallel units each, drawn as one interdigitated group of four devices
    let mut netlist: Value = serde_json::from_str(ota5).unwrap();
    let devices = netlist["cells"][0]["devices"].as_array_mut().unwrap();
    for half in ["M1", "M2"] {
        let mut copy = devices
            .iter()
            .find(|device| device["id"] == half)
            .unwrap()
            .clone();
        copy["id"] = json!(format!("{half}B"));
        devices.push(copy);
    }
    let copies = modules(&netlist.to_string());
    assert!(
        copies.contains(&(false, "differential_pair".into(), 2, 4))
            && copies.contains(&(true, "current_mirror".into(), 2, 2)),
        "{copies:?}"
    );
}
