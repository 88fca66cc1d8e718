//! The model's share of an iteration: the round runs its rule-based share, waits
//! for the model's before it ends, and takes the model's in when it is drafted.

use super::*;
use crate::model::{Drafting, ModelShare};

fn share(count: u32) -> Option<ModelShare> {
    Some(ModelShare {
        count,
        hidden: None,
        asked_for: None,
    })
}

fn executing(job: &JobRecord) -> &Round {
    let JobPhase::Executing(round) = &job.phase else {
        panic!("{:?}", job.phase)
    };
    round
}

#[test]
fn the_rule_based_share_runs_and_the_round_waits_for_the_model_s_share() {
    let mut job = job_in(JobPhase::Planning(Drafting::default()));
    let drafted = PhaseEvent::Drafted {
        candidates: ids(&["c0", "c1"]),
        model_share: share(2),
        window: 8,
        now_ms: 10,
    };
    let effects = advance(&mut job, drafted, OVERLAP).unwrap();
    assert_eq!(effects[0], Effect::EnqueueDrafted { queued: 2 });
    assert_eq!(executing(&job).model_share, share(2));

    // the rule-based share is in: the round does not end without the model's
    let in_ = PhaseEvent::ResultsSeen(progress(&["c0", "c1"], 2, 8, 20));
    let effects = advance(&mut job, in_, OVERLAP).unwrap();
    assert!(
        matches!(job.phase, JobPhase::Executing(_)),
        "{:?}",
        job.phase
    );
    assert_eq!(effects.last(), Some(&Effect::Wait));

    // the model's share arrives: added to the round, queued as the window leaves room
    let added = PhaseEvent::ModelShareDrafted {
        candidates: ids(&["c3", "c2"]),
        chosen_too: Vec::new(),
        from_model: 1,
        outstanding: 0,
        window: 8,
        now_ms: 30,
    };
    let effects = advance(&mut job, added, OVERLAP).unwrap();
    assert_eq!(effects[0], Effect::EnqueueDrafted { queued: 2 });
    let Effect::Emit(notice) = &effects[1] else {
        panic!("{effects:?}")
    };
    assert_eq!(
        notice.data,
        EventData::ModelShareAdded {
            iteration: 0,
            candidates: ids(&["c3", "c2"]),
            chosen_too: Vec::new(),
            from_model: 1,
        }
    );
    let round = executing(&job);
    assert_eq!(round.candidates, ids(&["c0", "c1", "c3", "c2"]));
    assert_eq!((round.enqueued, round.started_ms), (4, 30));
    assert_eq!(round.model_share, None);

    // the round ends once the model's share is in too
    let some = PhaseEvent::ResultsSeen(progress(&["c0", "c1", "c3"], 2, 8, 40));
    advance(&mut job, some, OVERLAP).unwrap();
    assert!(matches!(job.phase, JobPhase::Executing(_)));
    let all = PhaseEvent::ResultsSeen(progress(&["c0", "c1", "c3", "c2"], 2, 8, 50));
    advance(&mut job, all, OVERLAP).unwrap();
    assert!(
        matches!(job.phase, JobPhase::Evaluating(_)),
        "{:?}",
        job.phase
    );
}

#[test]
fn the_model_s_share_queues_after_the_round_s_own_and_nothing_drafted_ends_the_wait() {
    let mut round = round(&["c0", "c1", "c2"], 1);
    round.model_share = share(1);
    let mut job = job_in(JobPhase::Executing(round));
    let added = PhaseEvent::ModelShareDrafted {
        candidates: ids(&["c3"]),
        chosen_too: Vec::new(),
        from_model: 1,
        outstanding: 1,
        window: 1,
        now_ms: 30,
    };
    let effects = advance(&mut job, added, OVERLAP).unwrap();
    assert_eq!(
        effects[0],
        Effect::EnqueueDrafted { queued: 0 },
        "stored, queued after the round's own"
    );
    assert_eq!(executing(&job).enqueued, 1);

    let mut waiting = round_waiting();
    let nothing = PhaseEvent::ModelShareDrafted {
        candidates: Vec::new(),
        chosen_too: Vec::new(),
        from_model: 0,
        outstanding: 0,
        window: 4,
        now_ms: 30,
    };
    let effects = advance(&mut waiting, nothing, OVERLAP).unwrap();
    assert_eq!(effects, vec![Effect::Persist]);
    assert_eq!(executing(&waiting).model_share, None);
    let all = PhaseEvent::ResultsSeen(progress(&["c0"], 2, 4, 40));
    advance(&mut waiting, all, OVERLAP).unwrap();
    assert!(matches!(waiting.phase, JobPhase::Evaluating(_)));
}

#[test]
fn a_model_that_chose_points_the_round_runs_already_is_reported_though_nothing_is_added() {
    let mut job = round_waiting();
    let chosen = PhaseEvent::ModelShareDrafted {
        candidates: Vec::new(),
        chosen_too: ids(&["c0"]),
        from_model: 1,
        outstanding: 1,
        window: 4,
        now_ms: 30,
    };
    let effects = advance(&mut job, chosen, OVERLAP).unwrap();
    assert_eq!(effects[0], Effect::Persist);
    let Some(Effect::Emit(notice)) = effects.get(1) else {
        panic!("{effects:?}")
    };
    assert_eq!(
        notice.data,
        EventData::ModelShareAdded {
            iteration: 0,
            candidates: Vec::new(),
            chosen_too: ids(&["c0"]),
            from_model: 1,
        }
    );
    assert_eq!(executing(&job).candidates, ids(&["c0"]));
}

fn round_waiting() -> JobRecord {
    let mut waiting = round(&["c0"], 1);
    waiting.model_share = share(1);
    job_in(JobPhase::Executing(waiting))
}

#[test]
fn no_iteration_is_drafted_ahead_while_the_model_s_share_is_awaited() {
    let mut job = round_waiting();
    job.iteration = 1;
    let JobPhase::Executing(round) = &mut job.phase else {
        panic!()
    };
    round.candidates = ids(&["c0", "c1", "c2"]);
    round.enqueued = 3;
    round.overlap_next = true;
    let effects = advance(
        &mut job,
        PhaseEvent::ResultsSeen(progress(&["c0", "c1"], 4, 4, 40)),
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
fn an_iteration_drafted_ahead_keeps_its_model_s_share_awaited() {
    let mut round = round(&["c0"], 1);
    round.ahead = Some(Ahead {
        candidates: ids(&["n0"]),
        enqueued: 1,
        model_share: share(1),
    });
    let mut job = job_in(JobPhase::Evaluating(round));
    job.iteration = 1;
    advance(
        &mut job,
        PhaseEvent::IterationEvaluated {
            best: None,
            now_ms: 5,
        },
        OVERLAP,
    )
    .unwrap();
    let next = executing(&job);
    assert_eq!(next.candidates, ids(&["n0"]));
    assert_eq!(next.model_share, share(1));
}

#[test]
fn when_ready_a_round_whose_own_candidates_are_in_closes_and_the_next_takes_the_late_share() {
    let mut job = round_waiting();
    job.iteration = 1;
    // under "wait" the round waits for the model's share
    let mut waiting = job.clone();
    let in_ = PhaseEvent::ResultsSeen(progress(&["c0"], 2, 4, 40));
    advance(&mut waiting, in_.clone(), OVERLAP).unwrap();
    assert!(matches!(waiting.phase, JobPhase::Executing(_)));

    // "when ready": it closes, and the next iteration carries the share
    advance(&mut job, in_, WHEN_READY).unwrap();
    assert!(
        matches!(job.phase, JobPhase::Evaluating(_)),
        "{:?}",
        job.phase
    );
    let evaluated = PhaseEvent::IterationEvaluated {
        best: None,
        now_ms: 50,
    };
    advance(&mut job, evaluated, WHEN_READY).unwrap();
    assert_eq!(job.iteration, 2);
    let carried = ModelShare {
        count: 1,
        hidden: None,
        asked_for: Some(1),
    };
    assert_eq!(
        job.phase,
        JobPhase::Planning(Drafting {
            hidden: None,
            carried: Some(carried.clone()),
        })
    );

    // iteration 2 runs its rule-based share with the carried share awaited
    let drafted = PhaseEvent::Drafted {
        candidates: ids(&["d0", "d1", "d2", "d3"]),
        model_share: Some(carried.clone()),
        window: 8,
        now_ms: 60,
    };
    advance(&mut job, drafted, WHEN_READY).unwrap();
    assert_eq!(executing(&job).model_share, Some(carried));

    // the late answer joins iteration 2, said to be iteration 1's advice
    let added = PhaseEvent::ModelShareDrafted {
        candidates: ids(&["d4"]),
        chosen_too: Vec::new(),
        from_model: 1,
        outstanding: 2,
        window: 8,
        now_ms: 70,
    };
    let effects = advance(&mut job, added, WHEN_READY).unwrap();
    let Some(Effect::Emit(notice)) = effects.get(1) else {
        panic!("{effects:?}")
    };
    assert!(
        notice.message.contains(
            "added to iteration 2 when the planner's advice for iteration 1 arrived late"
        ),
        "{}",
        notice.message
    );
    let round = executing(&job);
    assert_eq!(round.candidates, ids(&["d0", "d1", "d2", "d3", "d4"]));
    assert_eq!(round.model_share, None);
}

#[test]
fn when_ready_the_last_iteration_drafts_a_late_share_by_rule_once_slots_would_idle() {
    let mut last = round_waiting();
    last.iteration = last.options.max_iterations - 1;
    let JobPhase::Executing(round) = &mut last.phase else {
        panic!()
    };
    round.candidates = ids(&["c0", "c1", "c2"]);
    round.enqueued = 3;
    // under "wait" the last iteration waits for the model's share
    let mut waiting = last.clone();
    let all_in = PhaseEvent::ResultsSeen(progress(&["c0", "c1", "c2"], 2, 4, 40));
    let effects = advance(&mut waiting, all_in, OVERLAP).unwrap();
    assert_eq!(effects.last(), Some(&Effect::Wait), "{effects:?}");

    // "when ready": not while every slot is busy
    let busy = PhaseEvent::ResultsSeen(progress(&["c0"], 2, 4, 40));
    let effects = advance(&mut last, busy, WHEN_READY).unwrap();
    assert!(!effects.contains(&Effect::DraftShareByRule), "{effects:?}");
    // one slot would idle: the late share is drafted rule-based now
    let one_out = PhaseEvent::ResultsSeen(progress(&["c0", "c1"], 2, 4, 50));
    let effects = advance(&mut last, one_out, WHEN_READY).unwrap();
    assert_eq!(effects, vec![Effect::DraftShareByRule]);
    assert_eq!(executing(&last).model_share, share(1), "still awaited");

    let drafted = PhaseEvent::ShareDraftedByRule {
        candidates: ids(&["c3"]),
        outstanding: 1,
        window: 4,
        now_ms: 60,
    };
    let effects = advance(&mut last, drafted, WHEN_READY).unwrap();
    assert_eq!(effects[0], Effect::EnqueueDrafted { queued: 1 });
    let Some(Effect::Emit(notice)) = effects.get(1) else {
        panic!("{effects:?}")
    };
    assert!(
        notice
            .message
            .contains("drafted rule-based: the planner's advice for iteration 4 is late")
            && notice.message.contains("the job's last iteration")
            && notice.message.contains("dropped"),
        "{}",
        notice.message
    );
    assert_eq!(
        notice.data,
        EventData::ModelShareAdded {
            iteration: 4,
            candidates: ids(&["c3"]),
            chosen_too: Vec::new(),
            from_model: 0,
        }
    );
    let round = executing(&last);
    assert_eq!(round.candidates, ids(&["c0", "c1", "c2", "c3"]));
    assert_eq!((round.enqueued, round.model_share.clone()), (4, None));

    // the iteration ends once the share drafted by rule is in: no model waited for
    let all = PhaseEvent::ResultsSeen(progress(&["c0", "c1", "c2", "c3"], 2, 4, 70));
    advance(&mut last, all, WHEN_READY).unwrap();
    assert!(
        matches!(last.phase, JobPhase::Evaluating(_)),
        "{:?}",
        last.phase
    );
}

#[test]
fn when_ready_a_round_of_nothing_of_its_own_drafts_its_late_share_by_rule_at_once() {
    let mut nothing_own = round(&[], 0);
    nothing_own.model_share = Some(ModelShare {
        count: 1,
        hidden: None,
        asked_for: Some(2),
    });
    let mut job = job_in(JobPhase::Executing(nothing_own));
    job.iteration = 3;
    let none_in = PhaseEvent::ResultsSeen(progress(&[], 2, 4, 40));
    let mut waiting = job.clone();
    advance(&mut waiting, none_in.clone(), OVERLAP).unwrap();
    assert!(
        matches!(waiting.phase, JobPhase::Executing(_)),
        "under \"wait\" it waits"
    );
    let effects = advance(&mut job, none_in, WHEN_READY).unwrap();
    assert_eq!(effects, vec![Effect::DraftShareByRule]);
    let drafted = PhaseEvent::ShareDraftedByRule {
        candidates: ids(&["c0"]),
        outstanding: 0,
        window: 4,
        now_ms: 50,
    };
    let effects = advance(&mut job, drafted, WHEN_READY).unwrap();
    let Some(Effect::Emit(notice)) = effects.get(1) else {
        panic!("{effects:?}")
    };
    assert!(
        notice
            .message
            .contains("the planner's advice for iteration 2 is late")
            && notice.message.contains("no candidates of its own"),
        "{}",
        notice.message
    );
    assert_eq!(executing(&job).candidates, ids(&["c0"]));

    // a share drafted by rule that found nothing (the space exhausted) ends the wait
    let mut exhausted = round_waiting();
    exhausted.iteration = exhausted.options.max_iterations - 1;
    let nothing = PhaseEvent::ShareDraftedByRule {
        candidates: Vec::new(),
        outstanding: 0,
        window: 4,
        now_ms: 50,
    };
    let effects = advance(&mut exhausted, nothing, WHEN_READY).unwrap();
    assert_eq!(effects, vec![Effect::Persist]);
    let all = PhaseEvent::ResultsSeen(progress(&["c0"], 2, 4, 60));
    advance(&mut exhausted, all, WHEN_READY).unwrap();
    assert!(matches!(exhausted.phase, JobPhase::Evaluating(_)));
}
