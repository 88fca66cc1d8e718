//! Transitions of the job record and the end of a job.

use std::sync::Arc;

use serde_json::json;

use super::pictures;
use crate::context::Context;
use crate::model::{
    CandidateResult, CandidateStatus, EventKind, JobRecord, JobState, Outcome, now_ms,
};

/// Writes the job record in its new state and reports the transition.
pub(super) async fn transition(
    context: &Context,
    job: &mut JobRecord,
    state: JobState,
    message: &str,
) {
    let from = job.state;
    job.state = state;
    job.updated_ms = now_ms();
    if context
        .with_store_retry("write job", || context.store.put_job(job))
        .await
        .is_none()
    {
        return;
    }
    let data = json!({"from": from.as_str(), "to": state.as_str()});
    context
        .emit(job, EventKind::StateChanged, "", message, data)
        .await;
}

/// Ends the job (DONE with an outcome): first the kept candidates get their
/// pictures (not when cancelled); a cancelled job's candidates without a result
/// are recorded as abandoned.
pub(super) async fn finish(
    context: &Arc<Context>,
    job: &mut JobRecord,
    outcome: Outcome,
    message: &str,
) {
    if outcome != Outcome::Cancelled {
        pictures::draw_missing(context, job).await;
    } else {
        let candidates = context
            .store
            .candidates(&job.job_id)
            .await
            .unwrap_or_default();
        for candidate in candidates {
            let abandoned = CandidateResult::without_run(
                &candidate.candidate_id,
                CandidateStatus::Abandoned,
                "CANCELLED",
                &job.cancel_reason,
            );
            let _ = context.store.record_result(&job.job_id, &abandoned).await;
        }
    }
    let final_state = match outcome {
        Outcome::Completed => JobState::Completed,
        _ => JobState::Failed,
    };
    if outcome != Outcome::Cancelled && job.state != final_state {
        transition(context, job, final_state, message).await;
    }
    job.state = JobState::Done;
    job.outcome = Some(outcome);
    if outcome != Outcome::Completed && job.error.is_empty() {
        job.error = message.to_string();
    }
    job.updated_ms = now_ms();
    if context
        .with_store_retry("finish job", || context.store.finish_job(job))
        .await
        .is_none()
    {
        return;
    }
    let kind = match outcome {
        Outcome::Completed => EventKind::Completed,
        Outcome::Failed => EventKind::Failed,
        Outcome::Cancelled => EventKind::Cancelled,
    };
    let data = json!({
        "outcome": outcome.as_str(),
        "best_candidate_id": job.best_candidate_id,
        "best_score": job.best_score,
        "best_passed": job.best_passed,
        "iterations": job.iteration + 1,
    });
    let best = job.best_candidate_id.clone();
    context.emit(job, kind, &best, message, data).await;
    context.forget_job(&job.job_id);
    context.queue_changed.notify_waiters();
}

/// The end without a passing best that improves no more: completed with the best
/// layout when there is one (seed 000: max iterations → accept the current result),
/// failed when no candidate produced a layout.
pub(super) async fn conclude(context: &Arc<Context>, job: &mut JobRecord, message: &str) {
    let results = context.store.results(&job.job_id).await.unwrap_or_default();
    let any_layout = results.values().any(|result| result.ok);
    if job.best_passed || any_layout {
        if !job.best_passed {
            job.error = format!("{message}; the best candidate did not pass");
        }
        finish(context, job, Outcome::Completed, message).await;
    } else {
        let message = format!("{message}; no candidate produced a layout");
        finish(context, job, Outcome::Failed, &message).await;
    }
}
