//! The steps every transition is made of: a notice in a state, a move to a
//! phase (written and reported), the ways a search ends (concluded, completed,
//! to the foundry deck, failed), the best taken, a round kept moving.

use centroid_planner::job_events::EventData;

use super::{Best, Effect, Progress};
use crate::model::{EventKind, JobPhase, JobRecord, JobState, Notice, Outcome, Round};
use crate::session::overlap::{missing, top_up};

/// A notice in the job's current state.
pub(super) fn notice(
    job: &JobRecord,
    kind: EventKind,
    message: impl Into<String>,
    data: EventData,
) -> Notice {
    Notice {
        kind,
        state: job.state(),
        message: message.into(),
        data,
    }
}

/// The job enters `phase`: written, and reported as a state change.
pub(super) fn move_to(job: &mut JobRecord, phase: JobPhase, message: &str) -> Vec<Effect> {
    let from = job.state();
    job.phase = phase;
    vec![
        Effect::Persist,
        Effect::emit(state_change(job, from, message, None)),
    ]
}

/// A state change from `from` to the job's state (`candidates`: an iteration's).
pub(super) fn state_change(
    job: &JobRecord,
    from: JobState,
    message: &str,
    candidates: Option<usize>,
) -> Notice {
    let data = EventData::StateChange {
        from: from.as_str().into(),
        to: job.state().as_str().into(),
        candidates,
    };
    notice(job, EventKind::StateChanged, message, data)
}

/// A state users see passed through on the way (no phase of its own).
pub(super) fn passing_through(job: &JobRecord, state: JobState, message: &str) -> Effect {
    let data = EventData::StateChange {
        from: job.state().as_str().into(),
        to: state.as_str().into(),
        candidates: None,
    };
    Effect::emit(Notice {
        kind: EventKind::StateChanged,
        state,
        message: message.into(),
        data,
    })
}

pub(super) fn end(job: &mut JobRecord, outcome: Outcome, message: &str) -> Vec<Effect> {
    let phase = JobPhase::Ending {
        outcome,
        message: message.to_string(),
    };
    move_to(job, phase, message)
}

pub(super) fn conclude(job: &mut JobRecord, message: &str) -> Vec<Effect> {
    job.phase = JobPhase::Concluding {
        message: message.to_string(),
    };
    vec![Effect::Persist]
}

/// The search ends: to the foundry deck when the job names one, else concluded.
pub(super) fn end_search(job: &mut JobRecord, message: &str) -> Vec<Effect> {
    if job.options.signoff_deck.is_empty() {
        return conclude(job, message);
    }
    move_to(job, JobPhase::ChoosingSignoff, message)
}

/// The best candidate passed: the job completes.
pub(super) fn complete(job: &mut JobRecord, why: &str) -> Vec<Effect> {
    let mut effects = vec![passing_through(job, JobState::Passed, why)];
    job.phase = JobPhase::Ending {
        outcome: Outcome::Completed,
        message: "completed: the best candidate passed".into(),
    };
    let entered = state_change(job, JobState::Passed, "completed", None);
    effects.extend([Effect::Persist, Effect::emit(entered)]);
    effects
}

pub(super) fn take_best(job: &mut JobRecord, best: Option<Best>) {
    if let Some(best) = best {
        job.best_candidate_id = best.candidate_id;
        job.best_score = best.score;
        job.best_passed = best.passed;
    }
}

pub(in crate::session) fn final_notice(job: &JobRecord, outcome: Outcome, message: &str) -> Notice {
    let kind = match outcome {
        Outcome::Completed => EventKind::Completed,
        Outcome::Failed => EventKind::Failed,
        Outcome::Cancelled => EventKind::Cancelled,
    };
    let data = EventData::Ended {
        outcome: outcome.as_str().into(),
        best_candidate_id: job.best_candidate_id.clone(),
        best_score: job.best_score,
        best_passed: job.best_passed,
        iterations: job.iteration + 1,
    };
    notice(job, kind, message, data)
}

/// A round not all in: more of it queued, its lost candidates recorded, or a wait.
pub(super) fn keep_round_moving(round: &mut Round, progress: &Progress) -> Effect {
    if let Some(candidates) = top_up(round, &progress.finished, progress.window) {
        round.started_ms = progress.now_ms;
        return Effect::EnqueueMore { candidates };
    }
    let stalled = round.started_ms > 0
        && progress.now_ms.saturating_sub(round.started_ms) > progress.stall_limit_ms;
    if stalled {
        let candidates: Vec<String> = missing(round, &progress.finished)
            .into_iter()
            .cloned()
            .collect();
        if !candidates.is_empty() {
            let message = format!("no result within {} ms", progress.stall_limit_ms);
            return Effect::RecordLost {
                candidates,
                message,
            };
        }
    }
    Effect::Wait
}
