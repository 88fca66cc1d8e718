//! The parent's next-best packings of its block instances (issue 26): where the top
//! packs its rows of blocks and the workers' `route.nets` takes `pack_block_rows`'
//! `rank`, the design space offers ranks 0–2; a point's rank reaches the top's
//! `route.nets` (never a block's) when it is not 0, and random points and mutations
//! vary it. Workers without a rank get main's plan whatever the point.

use serde_json::{Value, json};

use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;
use centroid_planner::random::SplitMix64;
use centroid_planner::skill_catalog::SkillCatalog;

mod support;
use support::{load, skills, steps};

fn mos(id: &str, kind: &str, d: &str, g: &str, s: &str, b: &str) -> Value {
    json!({"id": id, "type": kind, "w": 1e-6, "l": 5e-7, "nf": 1,
           "terminals": {"d": d, "g": g, "s": s, "b": b}})
}

/// A top of four instances of a stage (two inverters: a block of blocks), chained,
/// and one device of its own.
fn chain() -> Value {
    let stage = |k: usize| {
        json!({"name": format!("X{k}"), "cell": "stage",
        "connections": {"a": format!("n{k}"), "y": format!("n{}", k + 1), "vdd": "vdd", "vss": "vss"}})
    };
    json!({
        "schema_version": "1.1.0",
        "top": "chain",
        "cells": [
            {"name": "chain", "ports": ["n0", "n4", "vb", "vdd", "vss"],
             "devices": [mos("M9", "nmos", "n4", "vb", "vss", "vss")],
             "subcells": (0..4).map(stage).collect::<Vec<_>>()},
            {"name": "stage", "ports": ["a", "y", "vdd", "vss"], "devices": [],
             "subcells": [
                {"name": "XI1", "cell": "inv", "connections": {"a": "a", "y": "m", "vdd": "vdd", "vss": "vss"}},
                {"name": "XI2", "cell": "inv", "connections": {"a": "m", "y": "y", "vdd": "vdd", "vss": "vss"}}]},
            {"name": "inv", "ports": ["a", "y", "vdd", "vss"], "devices": [
                mos("MN", "nmos", "y", "a", "vss", "vss"),
                mos("MP", "pmos", "y", "a", "vdd", "vdd")]}
        ]
    })
}

/// The blocks' workers; with `rank`, their `route.nets` takes a packing's rank.
fn catalog(rank: bool) -> SkillCatalog {
    let mut catalog = skills(true);
    let mut pack = json!({"type": "object", "properties": {"gap": {"type": "number"}}});
    if rank {
        pack["properties"]["rank"] = json!({"type": "integer", "minimum": 0});
    }
    catalog.insert(
        "route.nets".into(),
        json!({"type": "object", "properties": {"ports": {"type": "array"}, "pack_block_rows": pack}}),
    );
    catalog
}

/// The `pack_block_rows` argument of every `route.nets` of `point`'s plan, the top's last.
fn packings(planner: &HeuristicPlanner, point: &DesignPoint, catalog: &SkillCatalog) -> Vec<Value> {
    let (context, _raw) = load(&chain());
    let plan = planner.plan(&context, point, catalog).unwrap();
    steps(&plan, "route.nets")
        .iter()
        .map(|step| step.get("pack_block_rows").cloned().unwrap_or(Value::Null))
        .collect()
}

#[test]
fn a_point_of_rank_one_asks_the_top_for_the_next_packing() {
    let (context, raw) = load(&chain());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let with_rank = catalog(true);
    let space = planner.design_space(&context, &with_rank);
    assert_eq!(space.pack_ranks, [0, 1, 2]);
    let default = space.default_point();
    assert!(default.builds_blocks());
    assert_eq!(default.pack_rank, 0);

    // rank 0: main's plan, no rank sent
    let first = packings(&planner, &default, &with_rank);
    let top = first.last().unwrap();
    assert!(top.is_object(), "{first:?}");
    assert!(top.get("rank").is_none(), "{top}");
    let plan = |point: &DesignPoint, catalog: &SkillCatalog| {
        format!(
            "{:?}",
            planner.plan(&context, point, catalog).unwrap().steps
        )
    };
    assert_eq!(plan(&default, &with_rank), plan(&default, &catalog(false)));

    // rank 1: the top's route.nets only
    let next = space.canonical(&DesignPoint {
        pack_rank: 1,
        ..default.clone()
    });
    assert_eq!(next.pack_rank, 1);
    assert_ne!(next.key(), default.key());
    let second = packings(&planner, &next, &with_rank);
    assert_eq!(second.last().unwrap()["rank"], 1, "{second:?}");
    // the stage block packs its inverters as it would alone: no rank
    let blocks = &second[..second.len() - 1];
    assert!(blocks.iter().any(Value::is_object), "{second:?}");
    assert!(
        blocks.iter().all(|pack| pack.get("rank").is_none()),
        "{second:?}"
    );

    // workers without a rank: none offered, none sent
    let without = planner.design_space(&context, &catalog(false));
    assert!(without.pack_ranks.is_empty());
    assert_eq!(without.canonical(&next).pack_rank, 0);
    assert!(
        packings(&planner, &next, &catalog(false))
            .iter()
            .all(|pack| pack.get("rank").is_none())
    );
    // a flat point packs nothing: its rank is no choice
    let flat = DesignPoint {
        hierarchy: String::new(),
        ..next.clone()
    };
    assert_eq!(space.canonical(&flat).pack_rank, 0);
    // nor does a tall point, one instance a row, whose rows are not packed again
    let tall = DesignPoint {
        aspect_ratio_pct: 50,
        ..next.clone()
    };
    assert_eq!(space.canonical(&tall).pack_rank, 0);
}

#[test]
fn random_points_and_mutations_vary_the_rank_deterministically() {
    let (context, raw) = load(&chain());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let space = planner.design_space(&context, &catalog(true));
    let ranks = |seed: u64| -> Vec<u32> {
        let mut rng = SplitMix64::new(seed);
        let mut ranks: Vec<u32> = (0..40)
            .map(|_| space.canonical(&space.random_point(&mut rng)).pack_rank)
            .collect();
        let mut point = space.canonical(&space.default_point());
        for _ in 0..200 {
            point = space.mutate(&point, &mut rng);
            ranks.push(point.pack_rank);
        }
        ranks
    };
    let drawn = ranks(5);
    assert_eq!(drawn, ranks(5), "deterministic for a seed");
    for rank in [0, 1, 2] {
        assert!(drawn.contains(&rank), "{drawn:?}");
    }
    let without = planner.design_space(&context, &catalog(false));
    let mut rng = SplitMix64::new(5);
    assert!((0..40).all(|_| without.random_point(&mut rng).pack_rank == 0));
}
