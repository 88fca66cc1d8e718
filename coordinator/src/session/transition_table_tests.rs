//! The transition table, phase by phase, without a store or a clock.

use super::*;
use crate::model::JobOptions;

fn options() -> JobOptions {
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
    }
}

fn job_in(phase: JobPhase) -> JobRecord {
    let mut job = JobRecord::new("j".into(), "j".into(), options(), 0);
    job.phase = phase;
    job
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

const OVERLAP: PhaseSettings = PhaseSettings {
    overlap_iterations: true,
};

fn progress(finished: &[&str], farm_slots: usize, window: usize, now_ms: u64) -> Progress {
    Progress {
        finished: finished.iter().map(|name| name.to_string()).collect(),
        farm_slots,
        window,
        now_ms,
        stall_limit_ms: 1_000,
    }
}

fn best(candidate_id: &str, score: f64, passed: bool) -> Option<Best> {
    Some(Best {
        candidate_id: candidate_id.into(),
        score,
        passed,
    })
}

fn states_reported(effects: &[Effect]) -> Vec<(EventKind, &'static str)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Emit(notice) => Some((notice.kind, notice.state.as_str())),
            _ => None,
        })
        .collect()
}

fn round(candidates: &[&str], enqueued: u32) -> Round {
    Round {
        candidates: ids(candidates),
        enqueued,
        started_ms: 100,
        overlap_next: false,
        ahead: None,
    }
}

#[test]
fn a_job_is_parsed_then_probes_the_rules_then_plans() {
    let mut job = job_in(JobPhase::Init);
    let effects = advance(&mut job, PhaseEvent::Started, OVERLAP).unwrap();
    assert_eq!(job.phase, JobPhase::Parsing);
    assert_eq!(effects[0], Effect::Persist);
    assert_eq!(
        states_reported(&effects),
        [(EventKind::StateChanged, "parsing")]
    );

    let parsed = PhaseEvent::Parsed {
        modules: vec!["dp".into()],
        devices: 5,
    };
    let effects = advance(&mut job, parsed, OVERLAP).unwrap();
    assert_eq!(job.phase, JobPhase::ProbingRules);
    assert_eq!(
        states_reported(&effects),
        [
            (EventKind::StateChanged, "parsing"),
            (EventKind::StateChanged, "planning")
        ],
        "the parse is reported in PARSING, the move in PLANNING"
    );

    let probed = PhaseEvent::RulesProbed {
        ran: true,
        pitch_um: Some(0.46),
        undrawable: Vec::new(),
    };
    let effects = advance(&mut job, probed, OVERLAP).unwrap();
    assert_eq!(job.phase, JobPhase::Planning(Drafting { hidden: None }));
    assert_eq!(job.route_pitch_um, Some(0.46));
    assert!(effects.contains(&Effect::Persist));
    let Effect::Emit(probe) = &effects[0] else {
        panic!("the probe is reported: {effects:?}")
    };
    assert_eq!(probe.data["route_pitch_um"], 0.46);
}

#[test]
fn a_probe_that_did_not_run_is_not_reported_and_undrawable_devices_fail_the_job() {
    let mut job = job_in(JobPhase::ProbingRules);
    let skipped = PhaseEvent::RulesProbed {
        ran: false,
        pitch_um: None,
        undrawable: Vec::new(),
    };
    assert_eq!(
        advance(&mut job, skipped, OVERLAP).unwrap(),
        [Effect::Persist]
    );

    let mut job = job_in(JobPhase::ProbingRules);
    let undrawable = PhaseEvent::RulesProbed {
        ran: true,
        pitch_um: None,
        undrawable: vec!["M3: no poly layer".into()],
    };
    advance(&mut job, undrawable, OVERLAP).unwrap();
    let JobPhase::Ending { outcome, message } = &job.phase else {
        panic!("{:?}", job.phase)
    };
    assert_eq!(*outcome, Outcome::Failed);
    assert!(message.contains("M3: no poly layer"), "{message}");
}

#[test]
fn a_draft_queues_a_window_and_decides_whether_the_next_iteration_overlaps() {
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    let drafted = PhaseEvent::Drafted {
        candidates: ids(&["c0", "c1", "c2", "c3"]),
        window: 3,
        now_ms: 500,
    };
    let effects = advance(&mut job, drafted.clone(), OVERLAP).unwrap();
    assert_eq!(effects[0], Effect::EnqueueDrafted { queued: 3 });
    let JobPhase::Searching(round) = &job.phase else {
        panic!("{:?}", job.phase)
    };
    assert_eq!((round.enqueued, round.started_ms), (3, 500));
    assert!(
        !round.overlap_next,
        "the first iteration's feedback is waited for"
    );

    let mut later = job_in(JobPhase::Planning(Drafting::default()));
    later.iteration = 1;
    advance(&mut later, drafted.clone(), OVERLAP).unwrap();
    let JobPhase::Searching(round) = &later.phase else {
        panic!()
    };
    assert!(round.overlap_next);
    let mut off = job_in(JobPhase::Planning(Drafting::default()));
    off.iteration = 1;
    advance(&mut off, drafted, PhaseSettings::default()).unwrap();
    let JobPhase::Searching(round) = &off.phase else {
        panic!()
    };
    assert!(!round.overlap_next, "overlapping switched off");
}

#[test]
fn a_draft_that_finds_nothing_concludes_and_one_that_cannot_plan_fails() {
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    advance(&mut job, PhaseEvent::DesignSpaceExhausted, OVERLAP).unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Concluding {
            message: "the design space is exhausted".into()
        }
    );
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    let failed = PhaseEvent::PlanningFailed {
        message: "the workers lack skills".into(),
    };
    advance(&mut job, failed, OVERLAP).unwrap();
    assert_eq!(job.state(), JobState::Failed);
}

#[test]
fn a_search_waits_evaluates_what_arrived_tops_the_queue_up_and_moves_on_when_all_is_in() {
    let searching = || job_in(JobPhase::Searching(round(&["a", "b", "c", "d"], 2)));

    let mut job = searching();
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&[], 2, 2, 200)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(effects, [Effect::Wait], "two out on a window of two");

    let mut job = searching();
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a"], 2, 2, 300)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        effects,
        [
            Effect::EvaluateArrived {
                candidates: ids(&["a"])
            },
            Effect::EnqueueMore {
                candidates: ids(&["c"])
            }
        ]
    );
    let JobPhase::Searching(round) = &job.phase else {
        panic!()
    };
    assert_eq!(
        (round.enqueued, round.started_ms),
        (3, 300),
        "the stall clock restarts"
    );

    let mut job = searching();
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a", "b", "c", "d"], 2, 2, 300)),
        OVERLAP,
    )
    .unwrap();
    assert!(matches!(job.phase, JobPhase::Evaluating(_)));
    assert_eq!(
        states_reported(&effects),
        [(EventKind::StateChanged, "evaluating")]
    );
}

#[test]
fn candidates_without_a_result_past_the_stall_limit_are_lost() {
    let mut job = job_in(JobPhase::Searching(round(&["a", "b"], 2)));
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a"], 2, 2, 100 + 1_001)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        effects[1],
        Effect::RecordLost {
            candidates: ids(&["b"]),
            message: "no result within 1000 ms".into()
        }
    );
}

#[test]
fn slots_about_to_idle_draft_the_next_iteration_ahead_hiding_this_ones_evaluations() {
    let mut overlapping = round(&["a", "b", "c"], 3);
    overlapping.overlap_next = true;
    let mut job = job_in(JobPhase::Searching(overlapping));
    job.iteration = 2;
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a"], 4, 8, 300)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        effects,
        [Effect::DraftAhead {
            iteration: 3,
            hidden: 2,
            outstanding: 2
        }]
    );

    let drafted = PhaseEvent::DraftedAhead {
        candidates: ids(&["n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7"]),
        outstanding: 2,
        window: 8,
    };
    let effects = advance(&mut job, drafted, OVERLAP).unwrap();
    assert_eq!(
        effects[0],
        Effect::EnqueueDrafted { queued: 6 },
        "the window less what is out"
    );
    let JobPhase::Searching(round) = &job.phase else {
        panic!()
    };
    assert_eq!(round.ahead.as_ref().unwrap().enqueued, 6);

    // drafted once: results keep coming without another draft
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["a", "b"], 4, 8, 400)),
        OVERLAP,
    )
    .unwrap();
    assert!(
        !effects
            .iter()
            .any(|effect| matches!(effect, Effect::DraftAhead { .. })),
        "{effects:?}"
    );
}

#[test]
fn an_early_draft_and_a_late_one_leave_out_the_same_evaluations() {
    // slots never idled: the next iteration is planned after this one, hiding it
    let mut overlapping = round(&["a", "b"], 2);
    overlapping.overlap_next = true;
    let mut job = job_in(JobPhase::Evaluating(overlapping));
    job.iteration = 2;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.5, false),
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.iteration, 3);
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting { hidden: Some(2) }),
        "hidden as the early draft (DraftAhead hidden: 2) would have"
    );
    // without overlap, nothing is hidden
    let mut job = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    job.iteration = 2;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: None,
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.phase, JobPhase::Planning(Drafting { hidden: None }));
}

#[test]
fn an_iteration_drafted_ahead_runs_next_and_one_that_found_nothing_is_planned_again() {
    let mut with_ahead = round(&["a"], 1);
    with_ahead.overlap_next = true;
    with_ahead.ahead = Some(Ahead {
        candidates: ids(&["n0", "n1", "n2"]),
        enqueued: 2,
    });
    let mut job = job_in(JobPhase::Evaluating(with_ahead));
    job.iteration = 1;
    let effects = advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.4, false),
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    let JobPhase::Searching(next) = &job.phase else {
        panic!("{:?}", job.phase)
    };
    assert_eq!(next.candidates, ids(&["n0", "n1", "n2"]));
    assert_eq!((next.enqueued, next.started_ms), (2, 900));
    assert!(next.overlap_next, "decided anew for iteration 2");
    assert_eq!(
        states_reported(&effects),
        [
            (EventKind::StateChanged, "iterating"),
            (EventKind::Iteration, "iterating"),
            (EventKind::StateChanged, "executing")
        ]
    );

    let mut found_nothing = round(&["a"], 1);
    found_nothing.overlap_next = true;
    found_nothing.ahead = Some(Ahead::default());
    let mut job = job_in(JobPhase::Evaluating(found_nothing));
    job.iteration = 1;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: None,
            now_ms: 900,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.phase, JobPhase::Planning(Drafting { hidden: Some(1) }));
}

#[test]
fn an_empty_early_draft_is_kept_as_found_nothing() {
    let mut overlapping = round(&["a", "b"], 2);
    overlapping.overlap_next = true;
    let mut job = job_in(JobPhase::Searching(overlapping));
    let drafted = PhaseEvent::DraftedAhead {
        candidates: Vec::new(),
        outstanding: 1,
        window: 4,
    };
    assert_eq!(
        advance(&mut job, drafted, OVERLAP).unwrap(),
        [Effect::Persist]
    );
    let JobPhase::Searching(round) = &job.phase else {
        panic!()
    };
    assert_eq!(round.ahead, Some(Ahead::default()));
}

#[test]
fn the_search_ends_passed_out_of_patience_or_at_its_last_iteration() {
    // passed, and no better for `patience` iterations: completed
    let mut job = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    job.iteration = 2;
    (job.best_candidate_id, job.best_score, job.best_passed) = ("x".into(), 0.9, true);
    job.stale_iterations = 1;
    let effects = advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("x", 0.9, true),
            now_ms: 1,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.stale_iterations, 2);
    assert_eq!(job.state(), JobState::Completed);
    assert_eq!(
        states_reported(&effects),
        [
            (EventKind::StateChanged, "passed"),
            (EventKind::StateChanged, "completed")
        ]
    );

    // an improvement resets the patience and the search goes on
    let mut job = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    job.stale_iterations = 1;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.7, true),
            now_ms: 1,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        (job.stale_iterations, job.best_candidate_id.as_str()),
        (0, "a")
    );
    assert!(matches!(job.phase, JobPhase::Planning(_)));

    // the last iteration without a pass: concluded
    let mut job = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    job.iteration = 4;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.3, false),
            now_ms: 1,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Concluding {
            message: "max_iterations (5) reached".into()
        }
    );
}

#[test]
fn with_a_foundry_deck_the_end_of_the_search_goes_to_signoff() {
    let mut job = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    job.options.signoff_deck = "deck".into();
    job.iteration = 4;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: best("a", 0.8, true),
            now_ms: 1,
        },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.phase, JobPhase::ChoosingSignoff);

    let chosen = PhaseEvent::SignoffChosen {
        candidates: ids(&["s0", "s1"]),
        parents: ids(&["a", "b"]),
        now_ms: 10,
    };
    let effects = advance(&mut job, chosen, OVERLAP).unwrap();
    assert_eq!(effects[0], Effect::EnqueueDrafted { queued: 2 });
    assert_eq!(
        job.phase,
        JobPhase::Signoff(Round::queued(ids(&["s0", "s1"]), 2, 10))
    );

    let waiting = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["s0"], 2, 4, 20)),
        OVERLAP,
    )
    .unwrap();
    assert_eq!(waiting, [Effect::Wait]);
    advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["s0", "s1"], 2, 4, 30)),
        OVERLAP,
    )
    .unwrap();
    assert!(matches!(job.phase, JobPhase::JudgingSignoff(_)));

    let mut clean = job.clone();
    let judged = PhaseEvent::SignoffJudged {
        ran: true,
        best: best("s1", 0.8, true),
        error: String::new(),
    };
    advance(&mut clean, judged, OVERLAP).unwrap();
    assert_eq!(clean.best_candidate_id, "s1");
    assert_eq!(clean.state(), JobState::Completed);

    let mut dirty = job.clone();
    let judged = PhaseEvent::SignoffJudged {
        ran: true,
        best: best("s0", 0.6, false),
        error: String::new(),
    };
    advance(&mut dirty, judged, OVERLAP).unwrap();
    assert_eq!(
        dirty.phase,
        JobPhase::Concluding {
            message: "the foundry deck deck passed no kept candidate".into()
        }
    );

    let mut not_run = job;
    not_run.best_passed = true;
    let judged = PhaseEvent::SignoffJudged {
        ran: false,
        best: None,
        error: "INTERNAL_ERROR: no such deck".into(),
    };
    advance(&mut not_run, judged, OVERLAP).unwrap();
    assert!(
        !not_run.best_passed,
        "a deck that did not run passes nothing"
    );
    assert!(
        matches!(&not_run.phase, JobPhase::Concluding { message } if message.contains("no such deck"))
    );
}

#[test]
fn no_candidate_for_the_deck_concludes() {
    let mut job = job_in(JobPhase::ChoosingSignoff);
    let chosen = PhaseEvent::SignoffChosen {
        candidates: Vec::new(),
        parents: Vec::new(),
        now_ms: 1,
    };
    assert_eq!(
        advance(&mut job, chosen, OVERLAP).unwrap(),
        [Effect::Persist]
    );
    assert!(matches!(job.phase, JobPhase::Concluding { .. }));
}

#[test]
fn a_concluded_search_completes_with_a_layout_and_fails_without_one() {
    let concluding = || {
        job_in(JobPhase::Concluding {
            message: "max_iterations (5) reached".into(),
        })
    };
    let mut job = concluding();
    advance(
        &mut job,
        PhaseEvent::Concluded { any_layout: true },
        OVERLAP,
    )
    .unwrap();
    assert_eq!(job.state(), JobState::Completed);
    assert_eq!(
        job.error,
        "max_iterations (5) reached; the best candidate did not pass"
    );

    let mut job = concluding();
    advance(
        &mut job,
        PhaseEvent::Concluded { any_layout: false },
        OVERLAP,
    )
    .unwrap();
    let JobPhase::Ending { outcome, message } = &job.phase else {
        panic!()
    };
    assert_eq!(*outcome, Outcome::Failed);
    assert_eq!(
        message,
        "max_iterations (5) reached; no candidate produced a layout"
    );

    let effects = advance(&mut job, PhaseEvent::Ended, OVERLAP).unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Finished {
            outcome: Outcome::Failed
        }
    );
    assert_eq!(
        job.error,
        "max_iterations (5) reached; no candidate produced a layout"
    );
    assert_eq!(
        effects[0],
        Effect::Finish,
        "the record before the last event"
    );
    assert_eq!(states_reported(&effects), [(EventKind::Failed, "done")]);
    assert_eq!(effects[2], Effect::Forget);
    assert!(job.is_finished());
}

#[test]
fn the_time_budget_ends_the_search_not_an_evaluation() {
    let mut job = job_in(JobPhase::Searching(round(&["a"], 1)));
    job.options.time_budget_ms = 10;
    advance(&mut job, PhaseEvent::TimeBudgetSpent, OVERLAP).unwrap();
    assert_eq!(
        job.phase,
        JobPhase::Concluding {
            message: "time budget of 10 ms spent".into()
        }
    );
    let mut with_deck = job_in(JobPhase::Planning(Drafting::default()));
    with_deck.options.signoff_deck = "deck".into();
    advance(&mut with_deck, PhaseEvent::TimeBudgetSpent, OVERLAP).unwrap();
    assert_eq!(with_deck.phase, JobPhase::ChoosingSignoff);

    let mut evaluating = job_in(JobPhase::Evaluating(round(&["a"], 1)));
    let before = evaluating.clone();
    assert!(advance(&mut evaluating, PhaseEvent::TimeBudgetSpent, OVERLAP).is_err());
    assert_eq!(evaluating, before);
}

/// One of each phase.
fn every_phase() -> Vec<JobPhase> {
    vec![
        JobPhase::Init,
        JobPhase::Parsing,
        JobPhase::ProbingRules,
        JobPhase::Planning(Drafting::default()),
        JobPhase::Searching(round(&["a", "b"], 1)),
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
        },
        PhaseEvent::Drafted {
            candidates: ids(&["c"]),
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
            outstanding: 1,
            window: 2,
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
        | (P::Searching(_), E::ResultsSeen(_) | E::DraftedAhead { .. })
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
    assert_eq!(rows, 14 + 11 * 2 + 3, "rows of the table");
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
    });
    for phase in every_phase()
        .into_iter()
        .chain([JobPhase::Searching(overlapping)])
    {
        let job = job_in(phase);
        let text = serde_json::to_string(&job).unwrap();
        let back: JobRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, job, "{text}");
    }
}
