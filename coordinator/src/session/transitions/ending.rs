//! The end's transitions: the foundry deck's round, concluding, ending,
//! finishing, a cancel.

use centroid_planner::job_events::EventData;

use super::steps::{complete, conclude, end, final_notice, keep_round_moving, notice, take_best};
use super::{Best, Effect, Progress};
use crate::model::{EventKind, JobPhase, JobRecord, Outcome, Round};

pub(super) fn cancel(job: &mut JobRecord, reason: String, best: Option<Best>) -> Vec<Effect> {
    take_best(job, best);
    job.cancel_requested = true;
    if job.error.is_empty() {
        job.error = reason.clone();
    }
    job.cancel_reason = reason;
    job.phase = JobPhase::Finished {
        outcome: Outcome::Cancelled,
    };
    let message = job.cancel_reason.clone();
    vec![
        Effect::Finish,
        Effect::emit(final_notice(job, Outcome::Cancelled, &message)),
        Effect::Forget,
    ]
}

pub(super) fn signoff_chosen(
    job: &mut JobRecord,
    candidates: Vec<String>,
    parents: Vec<String>,
    now_ms: u64,
) -> Vec<Effect> {
    if candidates.is_empty() {
        return conclude(
            job,
            "no candidate with an exported layout to run the foundry deck on",
        );
    }
    let count = candidates.len();
    let deck = job.options.signoff_deck.clone();
    let data = EventData::SignoffQueued {
        deck: deck.clone(),
        candidates: candidates.clone(),
        parents,
    };
    job.phase = JobPhase::Signoff(Round::queued(candidates, count, now_ms));
    let message = format!("foundry deck {deck} on {count} candidates");
    vec![
        Effect::EnqueueDrafted { queued: count },
        Effect::emit(notice(job, EventKind::StateChanged, message, data)),
    ]
}

pub(super) fn signoff_waiting(
    job: &mut JobRecord,
    mut round: Round,
    progress: &Progress,
) -> Vec<Effect> {
    let all_in = round
        .candidates
        .iter()
        .all(|candidate_id| progress.finished.contains(candidate_id));
    if all_in {
        job.phase = JobPhase::JudgingSignoff(round);
        return vec![Effect::Persist];
    }
    let effect = keep_round_moving(&mut round, progress);
    job.phase = JobPhase::Signoff(round);
    vec![effect]
}

pub(super) fn signoff_judged(
    job: &mut JobRecord,
    ran: bool,
    best: Option<Best>,
    error: &str,
) -> Vec<Effect> {
    let deck = job.options.signoff_deck.clone();
    if !ran {
        // the search's best stays the best, but it did not pass: the deck never ran
        job.best_passed = false;
        return conclude(
            job,
            &format!("the foundry deck {deck} did not run: {error}"),
        );
    }
    take_best(job, best);
    if job.best_passed {
        return complete(job, "the foundry deck found the best candidate clean");
    }
    conclude(
        job,
        &format!("the foundry deck {deck} passed no kept candidate"),
    )
}

/// Completed with the best layout when there is one (seed 000: max iterations →
/// accept the current result), failed when no candidate produced a layout.
pub(super) fn concluded(job: &mut JobRecord, message: &str, any_layout: bool) -> Vec<Effect> {
    if job.best_passed || any_layout {
        if !job.best_passed {
            job.error = format!("{message}; the best candidate did not pass");
        }
        return end(job, Outcome::Completed, message);
    }
    end(
        job,
        Outcome::Failed,
        &format!("{message}; no candidate produced a layout"),
    )
}

pub(super) fn ended(job: &mut JobRecord, outcome: Outcome, message: String) -> Vec<Effect> {
    if outcome != Outcome::Completed && job.error.is_empty() {
        job.error = message.clone();
    }
    job.phase = JobPhase::Finished { outcome };
    vec![
        Effect::Finish,
        Effect::emit(final_notice(job, outcome, &message)),
        Effect::Forget,
    ]
}
