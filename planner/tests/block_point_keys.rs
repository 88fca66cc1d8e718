//! One key per layout of a hierarchical circuit laid out as blocks (issue 26): the
//! top's order arranges only the top's own devices (each block is drawn in its own
//! point's order or its own default), so two points whose top orders differ only in
//! the devices drawn inside blocks are one layout, one key, one candidate.

use std::collections::HashMap;

use centroid_planner::evaluation::Evaluation;
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::plan::Plan;
use centroid_planner::planner::Planner;
use centroid_planner::search::Journal;
use centroid_planner::{CandidateRecord, DesignPoint, Origin};

mod support;
use support::{load, netlist, skills};

fn plan_json(plan: &Plan) -> String {
    serde_json::to_string(plan).unwrap()
}

#[test]
fn top_orders_that_differ_only_inside_blocks_draw_one_plan_under_one_key() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    let point = space.default_point();
    assert!(point.builds_blocks());
    // the top's own devices (MC, XS/MS) are drawn in blocks of their own
    assert!(space.top_devices.is_empty(), "{:?}", space.top_devices);
    // the devices drawn inside blocks, reversed among themselves
    let order = space.full_order(&point);
    let inside: Vec<usize> = (0..order.len())
        .filter(|at| !space.top_devices.contains(&order[*at]))
        .collect();
    assert!(inside.len() > 2, "{order:?}");
    let mut reordered = order.clone();
    for (at, from) in inside.iter().zip(inside.iter().rev()) {
        reordered[*at] = order[*from].clone();
    }
    assert_ne!(reordered, order);
    let other = DesignPoint {
        order: reordered,
        ..point.clone()
    };
    let drawn = |point: &DesignPoint| plan_json(&planner.plan(&context, point, &catalog).unwrap());
    assert_eq!(drawn(&point), drawn(&other), "one layout");
    assert_eq!(
        space.canonical(&point).key(),
        space.canonical(&other).key(),
        "one key"
    );
    // the canonical point draws that layout too
    assert_eq!(drawn(&space.canonical(&other)), drawn(&point));
    // laid out flat, the same orders are two layouts and two keys
    let flat = |point: &DesignPoint| DesignPoint {
        hierarchy: String::new(),
        ..point.clone()
    };
    assert_ne!(drawn(&flat(&point)), drawn(&flat(&other)));
    assert_ne!(
        space.canonical(&flat(&point)).key(),
        space.canonical(&flat(&other)).key()
    );
}

fn evaluated(point: DesignPoint) -> CandidateRecord {
    CandidateRecord {
        candidate_id: "c1".into(),
        job_id: "j".into(),
        iteration: 0,
        parent_id: String::new(),
        origin: Origin::Draft,
        design_point: point,
        plan: Plan::default(),
        required_skills: vec![],
        evaluation: Some(Evaluation {
            score: 0.5,
            passed: true,
            area_um2: 1.0,
            area_score: 1.0,
            matching_score: 1.0,
            ..Evaluation::default()
        }),
    }
}

/// A knob a block's space offers one value of draws nothing different whatever its
/// value (a block without matched cells has no finger split, dummies or arrangement to
/// choose; a block of one device no spacing or aspect): the block's own point that
/// differs from the inherited one only there is the inherited layout, under its key.
#[test]
fn a_block_knob_offered_one_value_changes_neither_the_plan_nor_the_key() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    let default = space.default_point();
    let drawn = |point: &DesignPoint| plan_json(&planner.plan(&context, point, &catalog).unwrap());
    let default_plan = drawn(&default);
    let default_key = space.canonical(&default).key();
    // what the top offers: the values a block inherits
    type Knob = fn(&mut DesignPoint, usize);
    let knobs: [(&str, usize, Knob); 5] = [
        ("arrangement", 2, |p, v| {
            p.arrangement = ["ABBA", "ABAB"][v].into()
        }),
        ("dummies", 3, |p, v| p.dummies = v as u32),
        ("finger_split", 2, |p, v| p.finger_split = [1, 2][v]),
        ("spacing_nm", 3, |p, v| p.spacing_nm = [0, 200, 500][v]),
        ("aspect_ratio_pct", 2, |p, v| {
            p.aspect_ratio_pct = [100, 50][v]
        }),
    ];
    let mut single = 0;
    let mut several = 0;
    for (subcircuit, block) in &space.blocks {
        let offered = [
            block.space.arrangements.len(),
            block.space.dummies.len(),
            block.space.finger_splits.len(),
            block.space.spacings_nm.len(),
            block.space.aspect_ratios_pct.len(),
        ];
        for ((name, values, set), offered) in knobs.iter().zip(offered) {
            if offered > 1 {
                several += 1;
                continue;
            }
            single += 1;
            for value in 0..*values {
                let mut own = space.inherited(&default, subcircuit).unwrap();
                set(&mut own, value);
                let mut point = default.clone();
                point.blocks.insert(subcircuit.clone(), own);
                assert_eq!(
                    drawn(&point),
                    default_plan,
                    "{subcircuit} {name} {value}: the plan"
                );
                assert_eq!(
                    space.canonical(&point).key(),
                    default_key,
                    "{subcircuit} {name} {value}: the key"
                );
            }
        }
    }
    assert!(
        single > 0 && several > 0,
        "{single} knobs offered once, {several} several times"
    );
}

/// No two proposals of an iteration draw one plan — not for the top's order of devices
/// drawn inside blocks, nor for a knob that draws nothing where it is set: a proposal
/// whose plan was drafted already is a slot spent on a layout the journal has.
#[test]
fn an_iteration_of_a_blocks_layout_drafts_no_plan_twice() {
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    let tried = space.canonical(&space.default_point());
    let journal = Journal::from_candidates(&[evaluated(tried.clone())]);
    let drawn = |point: &DesignPoint| plan_json(&planner.plan(&context, point, &catalog).unwrap());
    for seed in 1..=3 {
        let proposals = journal.propose(&space, 24, seed, 1, vec![], &[]);
        let mut plans = HashMap::from([(drawn(&tried), tried.clone())]);
        for proposal in &proposals {
            let earlier = plans.insert(drawn(&proposal.point), proposal.point.clone());
            assert!(
                earlier.is_none(),
                "seed {seed}: {:?} {} draws the plan of {}",
                proposal.origin,
                serde_json::to_string(&proposal.point).unwrap(),
                serde_json::to_string(&earlier).unwrap()
            );
        }
    }
}

/// One spelling per layout never changes the layout: every point the search can draw,
/// random or mutated, flat or as blocks, draws the plan its canonical spelling draws.
#[test]
fn the_canonical_spelling_of_a_point_draws_its_plan() {
    use centroid_planner::random::SplitMix64;
    let (context, raw) = load(&netlist());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let catalog = skills(true);
    let space = planner.design_space(&context, &catalog);
    // the skill calls (the summary names the point's knobs as spelled)
    let drawn = |point: &DesignPoint| {
        serde_json::to_string(&planner.plan(&context, point, &catalog).unwrap().steps).unwrap()
    };
    let mut rng = SplitMix64::new(7);
    let mut point = space.default_point();
    let mut spelled_otherwise = 0;
    for _ in 0..300 {
        point = if rng.below(4) == 0 {
            space.random_point(&mut rng)
        } else {
            // a raw mutation (the canonical spelling is what is compared)
            let mut mutated = space.mutate(&point, &mut rng);
            if rng.below(2) == 0 {
                mutated.rows.insert("nmos".into(), 2);
            }
            mutated
        };
        let canonical = space.canonical(&point);
        spelled_otherwise += usize::from(canonical != point);
        assert_eq!(
            drawn(&point),
            drawn(&canonical),
            "{}\ncanonical {}",
            serde_json::to_string(&point).unwrap(),
            serde_json::to_string(&canonical).unwrap()
        );
    }
    assert!(spelled_otherwise > 0, "some points are spelled otherwise");
}
