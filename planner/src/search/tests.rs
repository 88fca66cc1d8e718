//! The journal as a search tree: repairs, children of the elite, new drafts; determinism.

use super::*;
use crate::plan::Plan;

fn space() -> DesignSpace {
    DesignSpace {
        arrangements: vec!["ABBA".into(), "2D".into(), "ABAB".into()],
        finger_splits: vec![1, 2],
        dummies: vec![0, 1, 2],
        guard_rings: vec![false, true],
        row_orders: 2,
        spacings_nm: vec![0, 200, 500],
        aspect_ratios_pct: vec![100, 50],
        kinds: vec![],
        modules: vec![],
        bound: vec![],
        groups: vec![],
        hierarchies: Vec::new(),
        blocks: Default::default(),
    }
}

fn record(
    id: &str,
    parent: &str,
    point: DesignPoint,
    score: f64,
    passed: bool,
    reasons: &[&str],
) -> CandidateRecord {
    CandidateRecord {
        candidate_id: id.into(),
        job_id: "j".into(),
        iteration: 0,
        parent_id: parent.into(),
        origin: Origin::Draft,
        design_point: point,
        plan: Plan::default(),
        required_skills: vec![],
        evaluation: Some(Evaluation {
            score,
            passed,
            drc_violations: 0,
            lvs: String::new(),
            area_um2: 1.0,
            area_score: 1.0,
            matching_score: 1.0,
            reasons: reasons.iter().map(|reason| reason.to_string()).collect(),
            drc_by_rule: Default::default(),
            lvs_mismatches: Vec::new(),
            signoff: None,
            layout: None,
            performance: None,
            parasitics: None,
            electrical: None,
            performance_share: None,
        }),
    }
}

#[test]
fn first_iteration_starts_from_the_default_point_and_is_deterministic() {
    let journal = Journal::from_candidates(&[]);
    let first = journal.propose(&space(), 5, 42, 0, vec![], &[]);
    let again = journal.propose(&space(), 5, 42, 0, vec![], &[]);
    assert_eq!(first, again, "same seed, same proposals");
    assert_eq!(first[0].point, space().default_point());
    assert_eq!(first.len(), 5);
    let other = journal.propose(&space(), 5, 43, 0, vec![], &[]);
    assert_ne!(first, other, "another seed, other drafts");
}

#[test]
fn later_iterations_repair_improve_and_draft_without_repeats() {
    let space = space();
    let mut rng = SplitMix64::new(1);
    let good = space.default_point();
    let bad = space.random_point(&mut rng);
    let candidates = vec![
        record("c0", "", good.clone(), 0.9, true, &[]),
        record(
            "c1",
            "",
            bad.clone(),
            0.2,
            false,
            &["matching 0.5 below min_matching_score 0.8"],
        ),
    ];
    let journal = Journal::from_candidates(&candidates);
    assert_eq!(journal.best().unwrap().candidate_id, "c0");
    let proposals = journal.propose(&space, 4, 7, 1, vec![], &[]);
    assert_eq!(proposals.len(), 4);
    let repair = proposals
        .iter()
        .find(|proposal| proposal.origin == Origin::Repair)
        .expect("a repair");
    assert_eq!(repair.parent_id, "c1");
    assert!(repair.point.arrangement == "ABBA" || repair.point.arrangement == "2D");
    assert!(
        proposals
            .iter()
            .any(|proposal| proposal.origin == Origin::Improve && proposal.parent_id == "c0")
    );
    let mut keys: Vec<String> = proposals
        .iter()
        .map(|proposal| proposal.point.key())
        .collect();
    keys.push(good.key());
    keys.push(bad.key());
    let unique: HashSet<&String> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "no point is tried twice");
}

#[test]
fn running_candidates_are_neither_repaired_nor_repeated() {
    // an iteration drafted ahead sees the iteration before it still running
    let space = space();
    let mut rng = SplitMix64::new(5);
    let good = space.default_point();
    let running = space.random_point(&mut rng);
    let mut unevaluated = record("c1", "", running.clone(), 0.0, false, &[]);
    unevaluated.evaluation = None;
    let candidates = vec![record("c0", "", good.clone(), 0.9, true, &[]), unevaluated];
    let journal = Journal::from_candidates(&candidates);
    assert_eq!(journal.best().unwrap().candidate_id, "c0");
    let proposals = journal.propose(&space, 6, 11, 2, vec![], &[]);
    assert!(
        proposals
            .iter()
            .all(|proposal| proposal.origin != Origin::Repair && proposal.parent_id != "c1"),
        "a running candidate is not a failure: {proposals:?}"
    );
    let canonical_running = space.canonical(&running);
    assert!(
        proposals
            .iter()
            .all(|proposal| proposal.point != canonical_running),
        "a running point is not drafted again"
    );
    assert!(
        proposals
            .iter()
            .any(|proposal| proposal.origin == Origin::Improve && proposal.parent_id == "c0")
    );
}

#[test]
fn preset_points_come_first_and_avoided_points_never() {
    let space = space();
    let default = space.default_point();
    let mut rng = SplitMix64::new(3);
    let advised = space.random_point(&mut rng);
    let preset = vec![Proposal {
        point: advised.clone(),
        parent_id: String::new(),
        origin: Origin::Llm,
    }];
    let journal = Journal::from_candidates(&[]);
    let proposals = journal.propose(&space, 6, 9, 0, preset, std::slice::from_ref(&default));
    assert_eq!(proposals[0].point, advised);
    assert_eq!(proposals[0].origin, Origin::Llm);
    assert!(
        proposals.iter().all(|proposal| proposal.point != default),
        "a point that failed on a similar circuit is not drafted"
    );
}
