//! The transition table, phase by phase, without a store or a clock: every
//! phase × every event here, the search's and the end's paths in [`search`]
//! and [`ending`].

mod ending;
mod model_share;
mod search;

use super::*;
use crate::model::{Ahead, Drafting, JobOptions, JobState, Round};

pub(super) fn options() -> JobOptions {
    JobOptions {
        candidates_per_iteration: 4,
        max_iterations: 5,
        seed: 1,
        time_budget_ms: 0,
        candidate_deadline_ms: 60_000,
        noop_plan: false,
        sleep_ms: 0,
        signoff_deck: String::new(),
        planner: String::new(),
        patience: 2,
        priority: 1,
    }
}

pub(super) fn job_in(phase: JobPhase) -> JobRecord {
    let mut job = JobRecord::new("j".into(), "j".into(), options(), 0);
    job.phase = phase;
    job
}

pub(super) fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

pub(super) const OVERLAP: PhaseSettings = PhaseSettings {
    overlap_iterations: true,
    model_share_when_ready: false,
};

/// Overlapping, and a late model's share joins the next iteration.
pub(super) const WHEN_READY: PhaseSettings = PhaseSettings {
    overlap_iterations: true,
    model_share_when_ready: true,
};

pub(super) fn progress(
    finished: &[&str],
    farm_slots: usize,
    window: usize,
    now_ms: u64,
) -> Progress {
    Progress {
        finished: Arc::new(finished.iter().map(|name| name.to_string()).collect()),
        farm_slots,
        window,
        now_ms,
        stall_limit_ms: 1_000,
    }
}

pub(super) fn best(candidate_id: &str, score: f64, passed: bool) -> Option<Best> {
    Some(Best {
        candidate_id: candidate_id.into(),
        score,
        passed,
    })
}

pub(super) fn states_reported(effects: &[Effect]) -> Vec<(EventKind, &'static str)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Emit(notice) => Some((notice.kind, notice.state.as_str())),
            _ => None,
        })
        .collect()
}

pub(super) fn round(candidates: &[&str], enqueued: u32) -> Round {
    Round {
        candidates: ids(candidates),
        enqueued,
        started_ms: 100,
        overlap_next: false,
        ahead: None,
        model_share: None,
    }
}

/// One of each phase.
fn every_phase() -> Vec<JobPhase> {
    vec![
        JobPhase::Init,
        JobPhase::Parsing,
        JobPhase::ProbingRules,
        JobPhase::Planning(Drafting::default()),
        JobPhase::Executing(round(&["a", "b"], 1)),
        JobPhase::Evaluating(round(&["a"], 1)),
        JobPhase::ChoosingSignoff,
        JobPhase::Signoff(round(&["s0"], 1)),
        JobPhase::JudgingSignoff(round(&["s0"], 1)),
        JobPhase::Concluding {
            message: "m".into(),
        },
        JobPhase::Ending {
            outcome: Outcome::Completed,
            message: "m".into(),
        },
        JobPhase::Finished {
            outcome: Outcome::Completed,
        },
    ]
}

/// One of each event.
fn every_event() -> Vec<PhaseEvent> {
    vec![
        PhaseEvent::Started,
        PhaseEvent::Parsed {
            modules: Vec::new(),
            devices: 1,
        },
        PhaseEvent::Unparsable { issues: 1 },
        PhaseEvent::RulesProbed {
            ran: true,
            pitch_um: None,
            undrawable: Vec::new(),
            schematic: None,
        },
        PhaseEvent::Drafted {
            candidates: ids(&["c"]),
            model_share: None,
            window: 2,
            now_ms: 1,
        },
        PhaseEvent::DesignSpaceExhausted,
        PhaseEvent::PlanningFailed {
            message: "m".into(),
        },
        PhaseEvent::ResultsSeen(progress(&["a"], 2, 2, 1)),
        PhaseEvent::DraftedAhead {
            candidates: ids(&["n"]),
            model_share: None,
            outstanding: 1,
            window: 2,
        },
        PhaseEvent::ModelShareDrafted {
            candidates: ids(&["m"]),
            chosen_too: Vec::new(),
            from_model: 1,
            outstanding: 1,
            window: 2,
            now_ms: 1,
        },
        PhaseEvent::ShareDraftedByRule {
            candidates: ids(&["r"]),
            outstanding: 1,
            window: 2,
            now_ms: 1,
        },
        PhaseEvent::IterationEvaluated {
            best: None,
            now_ms: 1,
        },
        PhaseEvent::SignoffChosen {
            candidates: ids(&["s"]),
            parents: ids(&["a"]),
            now_ms: 1,
        },
        PhaseEvent::SignoffJudged {
            ran: true,
            best: None,
            error: String::new(),
        },
        PhaseEvent::Concluded { any_layout: true },
        PhaseEvent::Ended,
        PhaseEvent::TimeBudgetSpent,
        PhaseEvent::Cancelled {
            reason: "r".into(),
            best: None,
        },
    ]
}

/// The (phase, event) pairs the table has a row for, by name.
fn has_row(phase: &JobPhase, event: &PhaseEvent) -> bool {
    use JobPhase as P;
    use PhaseEvent as E;
    match (phase, event) {
        (P::Finished { .. }, _) => false,
        (_, E::Cancelled { .. } | E::Unparsable { .. }) => true,
        (phase, E::TimeBudgetSpent) => phase.is_time_budgeted(),
        (P::Init, E::Started)
        | (P::Parsing, E::Parsed { .. })
        | (P::ProbingRules, E::RulesProbed { .. })
        | (
            P::Planning(_),
            E::Drafted { .. } | E::DesignSpaceExhausted | E::PlanningFailed { .. },
        )
        | (
            P::Executing(_),
            E::ResultsSeen(_)
            | E::DraftedAhead { .. }
            | E::ModelShareDrafted { .. }
            | E::ShareDraftedByRule { .. },
        )
        | (P::Evaluating(_), E::IterationEvaluated { .. })
        | (P::ChoosingSignoff, E::SignoffChosen { .. })
        | (P::Signoff(_), E::ResultsSeen(_))
        | (P::JudgingSignoff(_), E::SignoffJudged { .. })
        | (P::Concluding { .. }, E::Concluded { .. })
        | (P::Ending { .. }, E::Ended) => true,
        _ => false,
    }
}

#[test]
fn every_phase_answers_every_event_by_its_row_or_refuses_it_untouched() {
    let mut rows = 0;
    for phase in every_phase() {
        for event in every_event() {
            let mut job = job_in(phase.clone());
            let before = job.clone();
            let answer = advance(&mut job, event.clone(), OVERLAP);
            if has_row(&phase, &event) {
                rows += 1;
                let effects = answer.unwrap_or_else(|error| panic!("{error}"));
                assert!(
                    !effects.is_empty(),
                    "{phase:?} × {event:?}: a transition always does something"
                );
            } else {
                let error = answer.expect_err("no row");
                assert_eq!(job, before, "{error}: the record is untouched");
            }
        }
    }
    assert_eq!(rows, 16 + 11 * 2 + 3, "rows of the table");
}

#[test]
fn a_cancel_ends_any_unfinished_job_with_the_best_of_what_finished() {
    for phase in every_phase() {
        let mut job = job_in(phase.clone());
        let cancelled = PhaseEvent::Cancelled {
            reason: "stop".into(),
            best: best("a", 0.5, true),
        };
        let answer = advance(&mut job, cancelled, OVERLAP);
        if matches!(phase, JobPhase::Finished { .. }) {
            assert!(answer.is_err(), "a finished job stays finished");
            continue;
        }
        let effects = answer.unwrap();
        assert_eq!(job.outcome(), Some(Outcome::Cancelled), "{phase:?}");
        assert_eq!(
            (job.cancel_reason.as_str(), job.error.as_str()),
            ("stop", "stop")
        );
        assert_eq!(job.best_candidate_id, "a");
        assert_eq!(states_reported(&effects), [(EventKind::Cancelled, "done")]);
    }
}

#[test]
fn the_phase_round_trips_through_the_store_format() {
    let mut overlapping = round(&["a", "b"], 1);
    overlapping.ahead = Some(Ahead {
        candidates: ids(&["n"]),
        enqueued: 1,
        model_share: None,
    });
    for phase in every_phase()
        .into_iter()
        .chain([JobPhase::Executing(overlapping)])
    {
        let job = job_in(phase);
        let text = serde_json::to_string(&job).unwrap();
        let back: JobRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, job, "{text}");
    }
}
