//! The row counts the planner leaves to the workers (issue 26): with the default point
//! (no count for any kind, not one row per cell) `route.nets` is asked to fold each
//! kind's rows by the cells' real widths and the channels' tracks (`fold_device_rows`,
//! with the rows' gap), in every block and in the top; a point that counts rows, or
//! one row per cell, keeps its rows; workers whose `route.nets` does not take it get the
//! plan as before.

use serde_json::{Value, json};

use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;

mod support;
use support::{load, netlist, skills, steps};

/// The skills of a worker laying blocks out whose `route.nets` folds rows.
fn folding_skills() -> SkillCatalog {
    let mut catalog = skills(true);
    catalog.insert(
        "route.nets".into(),
        json!({"type": "object", "properties": {
            "ports": {"type": "array"}, "fold_device_rows": {"type": "object"}}}),
    );
    catalog
}

fn folds(arguments: &Value) -> Option<f64> {
    arguments
        .get("fold_device_rows")
        .map(|fold| fold["gap"].as_f64().unwrap())
}

#[test]
fn the_default_point_leaves_each_cells_row_count_to_the_workers() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = folding_skills();
    let space = planner.design_space(&context, &catalog);
    let default = space.default_point();
    let plan = planner.plan(&context, &default, &catalog).unwrap();
    let routes = steps(&plan, "route.nets");
    // the blocks with two cells or more (ota, bias) and the top; the rows' gap as given
    let gaps: Vec<Option<f64>> = routes.iter().map(|arguments| folds(arguments)).collect();
    assert!(
        gaps.iter().filter(|gap| gap.is_some()).count() >= 2,
        "{gaps:?}"
    );
    let placed_gap = steps(&plan, "layout.place")[0]["rows"][0]["gap"]
        .as_f64()
        .unwrap();
    assert!(
        gaps.iter()
            .flatten()
            .all(|gap| (gap - placed_gap).abs() < 1e-9)
    );

    // a count of rows for a kind, or one row per cell: the point's rows are kept
    let mut counted = default.clone();
    counted.rows.insert("nmos".into(), 2);
    counted.blocks.clear();
    let flat_counted = flat(&counted);
    let plan = planner.plan(&context, &flat_counted, &catalog).unwrap();
    assert!(
        steps(&plan, "route.nets")
            .iter()
            .all(|arguments| folds(arguments).is_none())
    );
    let mut tall = flat(&default);
    tall.aspect_ratio_pct = 50;
    let plan = planner.plan(&context, &tall, &catalog).unwrap();
    assert!(
        steps(&plan, "route.nets")
            .iter()
            .all(|arguments| folds(arguments).is_none())
    );

    // the flat default point folds its one route
    let plan = planner.plan(&context, &flat(&default), &catalog).unwrap();
    let routes = steps(&plan, "route.nets");
    assert_eq!(routes.len(), 1);
    assert!(folds(routes[0]).is_some());

    // a worker without it: no such argument
    let plan = planner.plan(&context, &default, &skills(true)).unwrap();
    assert!(
        steps(&plan, "route.nets")
            .iter()
            .all(|arguments| folds(arguments).is_none())
    );
}

fn flat(
    point: &centroid_planner::design_point::DesignPoint,
) -> centroid_planner::design_point::DesignPoint {
    let mut flat = point.clone();
    flat.hierarchy.clear();
    flat.blocks.clear();
    flat
}
