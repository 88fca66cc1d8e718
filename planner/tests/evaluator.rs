//! The evaluator's verdict on runs with scripted step results: the weighted score,
//! what fails a candidate (violations, mismatch, constraints, a foundry deck, a
//! run that stopped, a missed performance spec, a failed simulation), and what reaches
//! the evaluation.

use centroid_planner::evaluator::evaluate;
use centroid_planner::run_report::{RunReport, StepOutcome};
use centroid_schemas::{DesignConstraints, DesignObjectives, Objective, ObjectiveName};
use serde_json::{Value, json};

fn step(skill: &str, data: Value) -> StepOutcome {
    StepOutcome {
        step_id: skill.into(),
        skill: skill.into(),
        ok: true,
        error_code: String::new(),
        error_message: String::new(),
        data,
        duration_ms: 1,
    }
}

/// A run with `steps`, stopped by `failure` (code, message) when there is one.
struct Ran {
    failure: Option<(String, String)>,
    steps: Vec<StepOutcome>,
}

impl RunReport for Ran {
    fn failure(&self) -> Option<(&str, &str)> {
        self.failure
            .as_ref()
            .map(|(code, message)| (code.as_str(), message.as_str()))
    }
    fn steps(&self) -> &[StepOutcome] {
        &self.steps
    }
}

/// A run that went to the end with `steps`.
fn result(steps: Vec<StepOutcome>) -> Ran {
    Ran {
        failure: None,
        steps,
    }
}

#[test]
fn a_run_that_stopped_scores_zero_and_fails_whatever_its_steps_measured() {
    let clean = || {
        vec![
            step("drc.run", json!({"total": 0})),
            step("lvs.run", json!({"match": true})),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0}),
            ),
        ]
    };
    let stopped = Ran {
        failure: Some(("TIMEOUT".into(), "the candidate deadline passed".into())),
        steps: clean(),
    };
    let evaluation = evaluate(&objectives(), &stopped);
    assert!(!evaluation.passed);
    assert_eq!(evaluation.score, 0.0);
    assert_eq!(
        evaluation.reasons,
        vec!["did not run to the end: TIMEOUT the candidate deadline passed"]
    );
    assert!(evaluate(&objectives(), &result(clean())).passed);
}

fn objectives() -> DesignObjectives {
    DesignObjectives {
        objectives: vec![
            Objective {
                name: ObjectiveName::AreaMin,
                weight: 0.4,
                target: None,
            },
            Objective {
                name: ObjectiveName::MatchingMax,
                weight: 0.6,
                target: None,
            },
        ],
        constraints: DesignConstraints {
            max_iterations: 5,
            max_area: Some(400.0),
            min_matching_score: Some(0.8),
            ..Default::default()
        },
        performance: Default::default(),
    }
}

#[test]
fn clean_layout_passes_with_the_weighted_score() {
    let evaluation = evaluate(
        &objectives(),
        &result(vec![
            step("drc.run", json!({"total": 0})),
            step("lvs.run", json!({"match": true})),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0}),
            ),
        ]),
    );
    assert!(evaluation.passed, "{evaluation:?}");
    assert!((evaluation.score - (0.4 * 0.5 + 0.6 * 1.0)).abs() < 1e-9);
    assert_eq!(evaluation.lvs, "match");
}

#[test]
fn the_matching_objectives_geometric_half_reaches_the_evaluation() {
    // a pair drawn as a common-centroid structure (score 1.0) whose gates' centroids
    // are a device scale apart: the geometric score 1/(1 + 2/2) = 0.5 halves what the
    // structure alone would give, and the evaluation says so
    let evaluation = evaluate(
        &objectives(),
        &result(vec![
            step("drc.run", json!({"total": 0})),
            step("lvs.run", json!({"match": true})),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0,
                       "device_instances": 25,
                       "matched_groups": [{"module": "dp", "devices": ["M1", "M2"],
                                           "structure": "common_centroid", "centroid_error_um": 2.0}]}),
            ),
        ]),
    );
    let layout = evaluation
        .layout
        .as_ref()
        .expect("the groups were measured");
    assert_eq!(layout.geometric_matching_score, Some(0.5));
    assert!((evaluation.score - (0.4 * 0.5 + 0.6 * (0.5 * 1.0 + 0.5 * 0.5))).abs() < 1e-9);
    let written = serde_json::to_value(&evaluation).unwrap();
    assert_eq!(written["layout"]["geometric_matching_score"], 0.5);
}

#[test]
fn violations_mismatch_and_constraints_fail_it() {
    let evaluation = evaluate(
        &objectives(),
        &result(vec![
            step("drc.run", json!({"total": 3})),
            step("lvs.run", json!({"match": false})),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 500.0, "device_area_um2": 100.0, "matching_score": 0.5}),
            ),
        ]),
    );
    assert!(!evaluation.passed);
    assert_eq!(evaluation.drc_violations, 3);
    assert_eq!(evaluation.reasons.len(), 4, "{:?}", evaluation.reasons);
    let no_drc = evaluate(
        &objectives(),
        &result(vec![step(
            "layout.metrics",
            json!({"bbox_area_um2": 1.0, "device_area_um2": 1.0, "matching_score": 1.0}),
        )]),
    );
    assert!(!no_drc.passed, "no DRC, no pass");
    let no_lvs = evaluate(
        &objectives(),
        &result(vec![
            step("drc.run", json!({"total": 0})),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0}),
            ),
        ]),
    );
    assert!(
        !no_lvs.passed,
        "an unrouted layout that LVS never saw does not pass"
    );
    assert!(
        no_lvs
            .reasons
            .iter()
            .any(|reason| reason == "LVS did not run"),
        "{:?}",
        no_lvs.reasons
    );
    assert_eq!(no_lvs.lvs, "", "the report says LVS did not run");
}

#[test]
fn a_foundry_deck_that_finds_violations_fails_the_candidate() {
    let clean_steps = || {
        vec![
            step("drc.run", json!({"total": 0})),
            step("lvs.run", json!({"match": true})),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0}),
            ),
        ]
    };
    let mut flagged = clean_steps();
    flagged.push(step(
        "signoff.run",
        json!({"ran": true, "deck": "sky130A_mr.drc", "violations": 2, "by_rule": {"m1.6": 2}}),
    ));
    let evaluation = evaluate(&objectives(), &result(flagged));
    assert!(!evaluation.passed);
    let signoff = evaluation.signoff.expect("the deck's verdict is kept");
    assert_eq!(signoff.by_rule.get("m1.6"), Some(&2));
    let mut clean = clean_steps();
    clean.push(step(
        "signoff.run",
        json!({"ran": true, "deck": "sky130A_mr.drc", "violations": 0, "by_rule": {}}),
    ));
    assert!(evaluate(&objectives(), &result(clean)).passed);
}

#[test]
fn drc_counts_per_rule_and_lvs_differences_reach_the_evaluation() {
    let evaluation = evaluate(
        &objectives(),
        &result(vec![
            step(
                "drc.run",
                json!({"total": 3, "violations": [{"id": "M1.b", "count": 2}, {"id": "Cnt.a", "count": 1}]}),
            ),
            step(
                "lvs.run",
                json!({"match": false, "unmatched_nets_layout": ["tail"], "parameter_mismatches": [{"layout": "M5", "param": "W"}]}),
            ),
            step(
                "layout.metrics",
                json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0}),
            ),
        ]),
    );
    assert_eq!(evaluation.drc_violations, 3);
    assert_eq!(evaluation.drc_by_rule.get("M1.b"), Some(&2));
    assert_eq!(evaluation.drc_by_rule.get("Cnt.a"), Some(&1));
    assert_eq!(evaluation.lvs, "mismatch");
    assert_eq!(
        evaluation.lvs_mismatches.len(),
        2,
        "{:?}",
        evaluation.lvs_mismatches
    );
    assert!(
        evaluation.lvs_mismatches[0].contains("tail")
            || evaluation.lvs_mismatches[1].contains("tail")
    );
    assert!(!evaluation.passed);
}

/// The objectives with `performance_max` (0.5) and a spec on the UGBW.
fn performance_objectives() -> DesignObjectives {
    let mut objectives = objectives();
    objectives.objectives.push(Objective {
        name: ObjectiveName::PerformanceMax,
        weight: 0.5,
        target: None,
    });
    objectives.performance.specs = vec![centroid_schemas::PerformanceSpec {
        measure: "ugbw_hz".into(),
        min: Some(9e6),
        max: None,
    }];
    objectives
}

fn layout_steps() -> Vec<StepOutcome> {
    vec![
        step("drc.run", json!({"total": 0})),
        step("lvs.run", json!({"match": true})),
        step(
            "layout.metrics",
            json!({"bbox_area_um2": 200.0, "device_area_um2": 100.0, "matching_score": 1.0}),
        ),
    ]
}

#[test]
fn post_layout_measures_weigh_against_the_schematic_and_a_missed_spec_fails() {
    use centroid_planner::evaluator::evaluate_against;
    use centroid_planner::performance::{SchematicSimulation, Simulated};
    let schematic = SchematicSimulation::Measured(Simulated {
        measures: [("ugbw_hz".to_owned(), 1e7)].into(),
        sweep: None,
    });
    let simulated = |ugbw: f64| {
        let mut steps = layout_steps();
        steps.push(step("sim.run", json!({"measures": {"ugbw_hz": ugbw}})));
        result(steps)
    };
    let objectives = performance_objectives();
    // 5 % below the schematic: performance_max 1/(1 + 0.5) = 2/3, the spec met
    let close = evaluate_against(&objectives, &simulated(9.5e6), Some(&schematic));
    assert!(close.passed, "{:?}", close.reasons);
    let verdict = close.performance.as_ref().unwrap();
    assert!((verdict.value.unwrap() - 2.0 / 3.0).abs() < 1e-9);
    assert!((verdict.measures["ugbw_hz"].degradation_pct.unwrap() - 5.0).abs() < 1e-9);
    // as fast as the schematic scores higher
    let equal = evaluate_against(&objectives, &simulated(1e7), Some(&schematic));
    assert!(equal.score > close.score);
    // 20 % below: under the spec, the candidate fails naming the measure
    let slow = evaluate_against(&objectives, &simulated(8e6), Some(&schematic));
    assert!(!slow.passed);
    assert!(
        slow.reasons
            .iter()
            .any(|reason| reason.starts_with("performance spec: ugbw_hz = 8.0000e6 below min")),
        "{:?}",
        slow.reasons
    );
    assert!(
        slow.reasons
            .iter()
            .any(|reason| reason.starts_with("performance_max: ugbw_hz 20.0 % worse")),
        "warned past 10 %: {:?}",
        slow.reasons
    );
}

#[test]
fn a_failed_simulation_fails_the_candidate_with_its_reason_and_scores_performance_zero() {
    let mut steps = layout_steps();
    steps.push(StepOutcome {
        ok: false,
        error_code: "INVALID_PARAM".into(),
        error_message: "ngspice refused the deck (testbench.sp line 11)".into(),
        data: Value::Null,
        ..step("sim.run", Value::Null)
    });
    let evaluation = evaluate(&performance_objectives(), &result(steps));
    assert!(!evaluation.passed);
    assert_eq!(
        evaluation.reasons,
        [
            "simulation failed: sim.run INVALID_PARAM: ngspice refused the deck (testbench.sp line 11)"
        ]
    );
    // area 0.5 × 0.4 + matching 1 × 0.6 + performance 0 × 0.5, over 1.5
    let without = evaluate(&objectives(), &result(layout_steps()));
    assert!(evaluation.score < without.score);

    // no simulation in the plan: left out of the score, said, the candidate passes
    let unmeasured = evaluate(&performance_objectives(), &result(layout_steps()));
    assert!(unmeasured.passed, "{:?}", unmeasured.reasons);
    assert!((unmeasured.score - without.score).abs() < 1e-12);
    assert!(unmeasured.reasons[0].starts_with("performance_max is not measured"));
}
