//! The evaluator's verdict on runs with scripted step results: the weighted score,
//! what fails a candidate (violations, mismatch, constraints, a foundry deck, a
//! run that stopped), and what reaches the evaluation.

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
