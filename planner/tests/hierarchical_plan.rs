//! The plan of a hierarchical circuit laid out as blocks (issue 26): each distinct
//! subcircuit laid out once into its own routed cell with ports, one
//! `layout.instantiate_block` per instance, the top placing the instances (its own
//! devices among them, as a block of their own) and routing them with block
//! pseudo-devices, LVS on the flat devices; and the flat point's plan as before.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;
use centroid_planner::point_from_json::design_point;

mod support;
use support::{load, netlist, skills, steps, strings};

#[test]
fn the_hierarchy_is_a_choice_and_blocks_are_the_default_for_repeated_subcircuits() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let space = planner.design_space(&context, &skills(true));
    assert_eq!(space.hierarchies, ["blocks", "flat"]);
    assert_eq!(space.default_point().hierarchy, "blocks");
    // a written point names it; flat is spelled empty
    let written = |hierarchy: &str| design_point(&json!({"hierarchy": hierarchy}), &space);
    assert_eq!(written("flat").unwrap().hierarchy, "");
    assert_eq!(written("blocks").unwrap().hierarchy, "blocks");
    assert!(written("nested").unwrap_err()[0].starts_with("hierarchy:"));
    // workers without layout.instantiate_block: flat only
    let flat_space = planner.design_space(&context, &skills(false));
    assert!(flat_space.hierarchies.is_empty());
    assert_eq!(flat_space.default_point().hierarchy, "");
}

#[test]
fn a_large_circuit_is_offered_blocks_alone() {
    // 21 buffers of five devices and the rest: above FLAT_OFFERED_UP_TO devices flat rows
    // are not offered (the farm would spend its slots on layouts no search keeps)
    let mut large = netlist();
    let chain = &mut large["cells"][0]["subcells"];
    for k in 4..=21 {
        chain.as_array_mut().unwrap().push(support::buffer(
            &format!("X{k}"),
            "o2",
            &format!("q{k}"),
        ));
    }
    let (context, raw) = load(&large);
    assert!(
        context.circuit.devices.len() > centroid_planner::hierarchy::FLAT_OFFERED_UP_TO,
        "{}",
        context.circuit.devices.len()
    );
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let space = planner.design_space(&context, &skills(true));
    assert_eq!(space.hierarchies, ["blocks"]);
    let mut rng = centroid_planner::random::SplitMix64::new(7);
    for _ in 0..20 {
        assert_eq!(space.random_point(&mut rng).hierarchy, "blocks");
    }
}

#[test]
fn blocks_are_laid_out_once_and_instanced_per_instance() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let point = planner.design_space(&context, &catalog).default_point();
    let plan = planner.plan(&context, &point, &catalog).unwrap();

    // each distinct block's devices drawn once, under local ids
    let created: Vec<String> = steps(&plan, "layout.create_device")
        .iter()
        .map(|arguments| arguments["device_id"].as_str().unwrap().to_string())
        .collect();
    let pairs = steps(&plan, "layout.create_common_centroid_pair");
    let in_pairs: Vec<String> = pairs
        .iter()
        .flat_map(|arguments| {
            [
                arguments["device_a"]["device_id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                arguments["device_b"]["device_id"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            ]
        })
        .collect();
    let mut drawn: Vec<&String> = created.iter().chain(&in_pairs).collect();
    drawn.sort();
    // ota: M1..M5 once; bias: MB1, MB2; top: MC and the one-device subcircuit's MS
    assert_eq!(
        drawn,
        ["M1", "M2", "M3", "M4", "M5", "MB1", "MB2", "MC", "XS_MS"],
        "{}",
        plan.summary
    );

    // every cell name drawn is unique
    let cells: Vec<&str> = plan
        .steps
        .iter()
        .filter_map(|step| step.arguments.get("cell_name").and_then(Value::as_str))
        .collect();
    let unique: BTreeSet<&str> = cells.iter().copied().collect();
    assert_eq!(unique.len(), cells.len(), "{cells:?}");

    // the blocks routed with their ports, bottom up, before any instance
    let routes = steps(&plan, "route.nets");
    let routed: Vec<&str> = routes
        .iter()
        .map(|arguments| arguments["cell_name"].as_str().unwrap())
        .collect();
    // the top's own devices (MC, and XS/MS of a one-device subcircuit): one more
    // block, its ports the nets it shares with the top's ports and blocks
    assert_eq!(routed, ["BLK_ota", "BLK_bias", "BLK_chain_own_nmos", "TOP"]);
    assert_eq!(
        strings(&routes[0]["ports"]),
        ["inp", "inn", "out", "vbias", "vdd", "vss"]
    );
    assert_eq!(strings(&routes[1]["ports"]), ["vb", "vdd", "vss"]);
    assert_eq!(strings(&routes[2]["ports"]), ["o1", "out", "vb", "vss"]);
    assert!(routes[3].get("ports").is_none());
    let ota_devices: Vec<&str> = routes[0]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|device| device["id"].as_str().unwrap())
        .collect();
    assert_eq!(ota_devices.len(), 5);
    assert!(
        ota_devices.iter().all(|id| !id.contains('X')),
        "{ota_devices:?}"
    );

    // one instance per subcircuit instance, named by its path
    let instances: Vec<(String, String, String)> = steps(&plan, "layout.instantiate_block")
        .iter()
        .map(|arguments| {
            let text = |key: &str| arguments[key].as_str().unwrap().to_string();
            (text("block"), text("device_id"), text("cell_name"))
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("BLK_ota", "X1"),
        ("BLK_ota", "X2"),
        ("BLK_ota", "X3"),
        ("BLK_bias", "XB"),
        ("BLK_chain_own_nmos", "own_nmos"),
    ]
    .iter()
    .map(|(block, id)| (block.to_string(), id.to_string(), format!("I_{id}")))
    .collect();
    assert_eq!(instances, expected);
    let first_instance = plan
        .steps
        .iter()
        .position(|step| step.skill == "layout.instantiate_block")
        .unwrap();
    let bias_routed = plan
        .steps
        .iter()
        .position(|step| step.arguments["cell_name"] == "BLK_bias")
        .unwrap();
    assert!(bias_routed < first_instance);

    // the top routes one block pseudo-device per instance, its own devices' block too
    let top_devices: BTreeMap<String, (String, Value)> = routes[3]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|device| {
            (
                device["id"].as_str().unwrap().to_string(),
                (
                    device["type"].as_str().unwrap().to_string(),
                    device["terminals"].clone(),
                ),
            )
        })
        .collect();
    let ids: Vec<&String> = top_devices.keys().collect();
    assert_eq!(ids, ["X1", "X2", "X3", "XB", "own_nmos"]);
    assert!(top_devices.values().all(|(kind, _)| kind == "block"));
    assert_eq!(
        top_devices["X2"].1,
        json!({"inp": "o1", "inn": "o2", "out": "o2", "vbias": "vb", "vdd": "vdd", "vss": "vss"})
    );
    // a block's rows hold only instances: no row mixes blocks and devices
    let places = steps(&plan, "layout.place");
    for place in &places {
        let row = strings(&place["rows"][0]["cells"]);
        let instances = row.iter().filter(|cell| cell.starts_with("I_")).count();
        assert!(instances == 0 || instances == row.len(), "{row:?}");
    }

    // LVS on TOP against every flat device
    let lvs = steps(&plan, "lvs.run");
    assert_eq!(lvs.len(), 1);
    assert_eq!(lvs[0]["cell"], "TOP");
    assert_eq!(lvs[0]["devices"].as_array().unwrap().len(), 19);
    assert!(
        plan.summary.contains("hierarchy blocks"),
        "{}",
        plan.summary
    );
    // the summary counts the cells drawn inside the blocks: ota 4 + bias 2 + top 2
    assert!(plan.summary.contains(", 8 cells;"), "{}", plan.summary);
}

#[test]
fn the_rows_of_blocks_are_packed_again_by_the_workers_unless_the_aspect_is_tall() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let point = planner.design_space(&context, &catalog).default_point();
    let packing = |point: &DesignPoint| -> Vec<Option<Value>> {
        let plan = planner.plan(&context, point, &catalog).unwrap();
        steps(&plan, "route.nets")
            .iter()
            .map(|arguments| arguments.get("pack_block_rows").cloned())
            .collect()
    };
    // the blocks place no blocks; the top packs its rows of blocks with the row gap
    let gap = 0.5 + f64::from(point.spacing_nm) / 1000.0;
    assert_eq!(
        packing(&point),
        [None, None, None, Some(json!({"gap": gap}))]
    );
    // one instance a row is the tall point's own choice: kept
    let tall = DesignPoint {
        aspect_ratio_pct: 50,
        ..point.clone()
    };
    assert_eq!(packing(&tall), [None, None, None, None]);
}

#[test]
fn the_flat_point_of_a_hierarchical_circuit_is_planned_as_before() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    let flat = DesignPoint {
        hierarchy: String::new(),
        ..space.default_point()
    };
    let plan = planner.plan(&context, &flat, &catalog).unwrap();
    assert!(steps(&plan, "layout.instantiate_block").is_empty());
    let routes = steps(&plan, "route.nets");
    assert_eq!(routes.len(), 1);
    assert!(routes[0].get("ports").is_none());
    assert!(
        plan.summary.contains("; hierarchy flat"),
        "{}",
        plan.summary
    );
    // the same plan as workers without blocks draw
    let without = planner.plan(&context, &flat, &skills(false)).unwrap();
    assert_eq!(plan.steps, without.steps);
    assert!(flat.key() != space.default_point().key());
}

#[test]
fn one_instance_wrapping_the_whole_circuit_offers_no_blocks() {
    let (context, raw) = load(
        &serde_json::from_str(include_str!("../../examples/folded_cascode/netlist.json")).unwrap(),
    );
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let space = planner.design_space(&context, &skills(true));
    assert!(space.hierarchies.is_empty());
    // a point asking for blocks anyway is laid out flat
    let point = DesignPoint {
        hierarchy: "blocks".into(),
        ..space.default_point()
    };
    let plan = planner.plan(&context, &point, &skills(true)).unwrap();
    assert!(steps(&plan, "layout.instantiate_block").is_empty());
}

#[test]
fn a_block_of_blocks_is_laid_out_after_the_blocks_it_places() {
    // a two-stage buffer (two OTAs and a one-device subcircuit left flat in it),
    // instanced twice by the top
    let mut netlist = netlist();
    let cells = netlist["cells"].as_array_mut().unwrap();
    cells[0]["subcells"] = json!([
        {"name": "Y1", "cell": "pair", "connections": {"in": "in", "out": "mid", "vb": "vb", "vdd": "vdd", "vss": "vss"}},
        {"name": "Y2", "cell": "pair", "connections": {"in": "mid", "out": "out", "vb": "vb", "vdd": "vdd", "vss": "vss"}}
    ]);
    cells.push(json!({"name": "pair", "ports": ["in", "out", "vb", "vdd", "vss"], "devices": [],
        "subcells": [
            {"name": "X1", "cell": "ota", "connections": {"inp": "in", "inn": "m", "out": "m", "vbias": "vb", "vdd": "vdd", "vss": "vss"}},
            {"name": "X2", "cell": "ota", "connections": {"inp": "m", "inn": "out", "out": "out", "vbias": "vb", "vdd": "vdd", "vss": "vss"}},
            {"name": "XS", "cell": "switch", "connections": {"a": "m", "en": "vb", "vss": "vss"}}]}));
    let (context, raw) = load(&netlist);
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let point = planner.design_space(&context, &catalog).default_point();
    assert_eq!(point.hierarchy, "blocks");
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    let routes = steps(&plan, "route.nets");
    let routed: Vec<&str> = routes
        .iter()
        .map(|arguments| arguments["cell_name"].as_str().unwrap())
        .collect();
    assert_eq!(routed, ["BLK_ota", "BLK_pair", "TOP"]);
    // the pair routes its flat switch and its two OTA instances, with its ports
    let pair_devices: Vec<(&str, &str)> = routes[1]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|device| {
            (
                device["id"].as_str().unwrap(),
                device["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        pair_devices,
        [("XS_MS", "nmos"), ("X1", "block"), ("X2", "block")]
    );
    assert_eq!(
        strings(&routes[1]["ports"]),
        ["in", "out", "vb", "vdd", "vss"]
    );
    let instances: Vec<(String, String)> = steps(&plan, "layout.instantiate_block")
        .iter()
        .map(|arguments| {
            (
                arguments["block"].as_str().unwrap().to_string(),
                arguments["cell_name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(instances.len(), 4, "{instances:?}");
    assert_eq!(instances[0].0, "BLK_ota");
    assert!(instances[0].1.ends_with("_I_X1"), "{instances:?}");
    assert_eq!(instances[2], ("BLK_pair".to_string(), "I_Y1".to_string()));
    // LVS: 2 pairs × (2 OTAs × 5 + 1) + the top's MC
    let lvs = steps(&plan, "lvs.run");
    assert_eq!(lvs[0]["devices"].as_array().unwrap().len(), 23);
}
