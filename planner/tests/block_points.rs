//! Each block of a hierarchical circuit drawn from its own design point (issue 26):
//! the block's knobs in its own cell, the top's knobs for the parent's floorplan,
//! a written `blocks` object checked against each block's space, and old points
//! keeping their spelling and key.

use serde_json::{Value, json};

use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::plan::Plan;
use centroid_planner::planner::Planner;
use centroid_planner::point_from_json::design_point;

mod support;
use support::{load, netlist, skills, steps, strings};

/// The rows `layout.place` draws into the cells named `prefix…ROW…`: their cells
/// and gap.
fn rows(plan: &Plan, prefix: &str) -> Vec<(Vec<String>, f64)> {
    steps(plan, "layout.place")
        .iter()
        .filter(|arguments| {
            let cell = arguments["cell_name"].as_str().unwrap();
            cell.starts_with(prefix) && cell[prefix.len()..].starts_with("ROW")
        })
        .map(|arguments| {
            let row = &arguments["rows"][0];
            (strings(&row["cells"]), row["gap"].as_f64().unwrap())
        })
        .collect()
}

#[test]
fn each_block_is_drawn_from_its_own_point_and_the_top_from_the_top_knobs() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    // (the top's own devices MC and XS/MS: a block of their own, at the top's path)
    assert_eq!(
        space.blocks.keys().collect::<Vec<_>>(),
        ["bias", "chain_own_nmos", "ota"]
    );
    assert_eq!(space.blocks["ota"].path, "X1");
    assert_eq!(space.blocks["chain_own_nmos"].path, "");
    // each block's space is its subcircuit's, by local ids
    let ota_devices: Vec<&String> = space.blocks["ota"]
        .space
        .kinds
        .iter()
        .flat_map(|kind| &kind.devices)
        .collect();
    assert_eq!(ota_devices.len(), 5);
    assert!(
        ota_devices.iter().all(|id| !id.contains('/')),
        "{ota_devices:?}"
    );
    assert!(space.blocks["ota"].space.blocks.is_empty());

    let default = space.default_point();
    let before = planner.plan(&context, &default, &catalog).unwrap();
    // ota tall (one cell a row) and spaced, bias square and less spaced, top as before
    let tall = DesignPoint {
        aspect_ratio_pct: 50,
        spacing_nm: 500,
        ..space.blocks["ota"].space.default_point()
    };
    let square = DesignPoint {
        aspect_ratio_pct: 100,
        spacing_nm: 200,
        ..space.blocks["bias"].space.default_point()
    };
    let point = DesignPoint {
        blocks: [("ota".to_string(), tall), ("bias".to_string(), square)].into(),
        ..default.clone()
    };
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    let ota = rows(&plan, "B0_ota_");
    let ota_before = rows(&before, "B0_ota_");
    assert!(
        ota.iter()
            .all(|(cells, gap)| cells.len() == 1 && *gap == 1.0),
        "{ota:?}"
    );
    assert!(ota.len() > ota_before.len(), "{ota:?} vs {ota_before:?}");
    let bias = rows(&plan, "B1_bias_");
    assert!(!bias.is_empty() && bias.iter().all(|(_, gap)| (*gap - 0.7).abs() < 1e-9));
    assert_eq!(
        rows(&plan, ""),
        rows(&before, ""),
        "the top's floorplan is the top's"
    );
    // the same instances, the same LVS
    assert_eq!(
        steps(&plan, "layout.instantiate_block"),
        steps(&before, "layout.instantiate_block")
    );
    assert_eq!(steps(&plan, "lvs.run"), steps(&before, "lvs.run"));
}

#[test]
fn a_written_point_names_each_blocks_point_checked_against_its_space() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let space = planner.design_space(&context, &skills(true));
    let written = json!({"hierarchy": "blocks",
                         "blocks": {"ota": {"aspect_ratio_pct": 50, "order": ["M2", "M1"]}}});
    let point = design_point(&written, &space).unwrap();
    assert_eq!(point.blocks["ota"].aspect_ratio_pct, 50);
    assert_eq!(point.blocks["ota"].order, ["M2", "M1"]);
    let wrong = json!({"blocks": {"ota": {"aspect_ratio_pct": 7, "order": ["X1/M1"]},
                                  "nope": {}}});
    let problems = design_point(&wrong, &space).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("blocks.ota.aspect_ratio_pct: 7")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("blocks.ota.order[0]:")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("blocks.nope: not a block")),
        "{problems:?}"
    );
    let round_trip: DesignPoint =
        serde_json::from_value(serde_json::to_value(&point).unwrap()).unwrap();
    assert_eq!(round_trip, point);
    // a knob the block's space offers one value of (the bias block has no pair, one
    // device of each kind) draws the same whatever a model sets it to: taken, at that
    // value; a value of the wrong type is still a problem
    let bias = &space.blocks["bias"].space;
    assert_eq!(bias.arrangements.len(), 1, "{:?}", bias.arrangements);
    assert_eq!(
        bias.aspect_ratios_pct.len(),
        1,
        "{:?}",
        bias.aspect_ratios_pct
    );
    let inert = json!({"hierarchy": "blocks",
                       "blocks": {"bias": {"arrangement": "ABAB", "aspect_ratio_pct": 50}}});
    let point = design_point(&inert, &space).unwrap();
    assert_eq!(point.blocks["bias"].arrangement, bias.arrangements[0]);
    assert_eq!(
        point.blocks["bias"].aspect_ratio_pct,
        bias.aspect_ratios_pct[0]
    );
    let mistyped = json!({"blocks": {"bias": {"arrangement": 2}}});
    let problems = design_point(&mistyped, &space).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("blocks.bias.arrangement: 2")),
        "{problems:?}"
    );
}

#[test]
fn an_old_point_without_blocks_keeps_its_spelling_and_key() {
    let written = json!({"arrangement": "ABBA", "finger_split": 2, "dummies": 1,
                         "guard_ring": false, "row_order": 0, "spacing_nm": 0,
                         "aspect_ratio_pct": 100, "hierarchy": "blocks"});
    let point: DesignPoint = serde_json::from_value(written.clone()).unwrap();
    assert!(point.blocks.is_empty());
    assert_eq!(serde_json::to_value(&point).unwrap(), written);
    assert_eq!(point.key(), "ABBA/s2/d1/g0/r0/sp0/ar100/hblocks");
    // with genes: the digest as before (FNV-1a of "M2,M1||")
    let ordered = DesignPoint {
        order: vec!["M2".into(), "M1".into()],
        ..point.clone()
    };
    let genes = "M2,M1||"
        .bytes()
        .fold(0xCBF2_9CE4_8422_2325_u64, |digest, byte| {
            (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3)
        });
    assert_eq!(
        ordered.key(),
        format!("ABBA/s2/d1/g0/r0/sp0/ar100/hblocks/p{genes:016x}")
    );
    // a block's own point lengthens the key
    let with_block = DesignPoint {
        blocks: [("ota".to_string(), point.clone())].into(),
        ..ordered.clone()
    };
    assert!(
        with_block
            .key()
            .starts_with(&format!("{}/b", ordered.key()))
    );
    let spelled: Value = serde_json::to_value(&with_block).unwrap();
    assert_eq!(spelled["blocks"]["ota"]["aspect_ratio_pct"], 100);
}
