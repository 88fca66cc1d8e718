//! The end's path: patience, signoff, concluding, ending, the time budget.

use super::*;

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
    let mut job = job_in(JobPhase::Executing(round(&["a"], 1)));
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
