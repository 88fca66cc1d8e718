//! Recording a candidate's result: once (a late duplicate from a reclaimed entry
//! is ignored), with its artifacts kept and a `CandidateFinished` event that
//! carries the measured figures.

use centroid_planner::job_events::{CandidateFinished, EventData, MeasuredFigures};
use centroid_proto::v1::Artifact;

use super::Disposition;
use crate::artifacts;
use crate::context::Context;
use crate::error::StoreError;
use crate::model::{
    ArtifactMeta, CandidateResult, CandidateStatus, EventKind, EventRecord, JobRecord, QueueEntry,
};
use centroid_planner::evaluator;

/// A result to record and the files its run produced.
pub(super) struct Finished<'a> {
    pub result: CandidateResult,
    pub artifacts: &'a [Artifact],
}

/// Records the result once; the first recording emits CandidateFinished and keeps
/// the artifacts. `false` when the store stayed down until shutdown.
///
/// A result without artifacts (every failed run; an ok run that kept no file, as a
/// simulated one) is recorded with its event in one store call; with artifacts the
/// event follows them, so that whoever sees the event finds them.
pub(super) async fn record(context: &Context, job: &JobRecord, finished: Finished<'_>) -> bool {
    let Finished {
        mut result,
        artifacts,
    } = finished;
    let job_id = job.job_id.as_str();
    let candidate_id = result.candidate_id.clone();
    result.artifacts = artifacts
        .iter()
        .map(|artifact| ArtifactMeta {
            candidate_id: candidate_id.clone(),
            name: artifact.name.clone(),
            media_type: artifact.media_type.clone(),
            size: artifact.content.len() as u64,
        })
        .collect();
    let measured = evaluator::measure(&result.steps);
    let event = finished_event(job, &result, &measured);
    let recording = if artifacts.is_empty() {
        context
            .with_store_retry("record result", || {
                context
                    .store
                    .record_result_reported(job_id, &result, &event)
            })
            .await
    } else {
        context
            .with_store_retry("record result", || {
                context.store.record_result(job_id, &result)
            })
            .await
    };
    let first = match recording {
        Ok(first) => first,
        Err(interrupted) => {
            tracing::error!(session_id = job_id, candidate_id = %candidate_id, %interrupted, "result not recorded");
            return false;
        }
    };
    if !first {
        tracing::info!(session_id = job_id, candidate_id = %candidate_id, "late duplicate result ignored");
        return true;
    }
    context.metrics.candidate_recorded(&result);
    // a finish is logged with its event (debug, per candidate); a failed run here too
    if !result.ok {
        tracing::info!(
            session_id = job_id,
            candidate_id = %candidate_id,
            worker_id = %result.worker_id,
            error_code = %result.error_code,
            duration_ms = result.duration_ms,
            "candidate failed"
        );
    }
    if artifacts.is_empty() {
        context.event_appended(job, &event);
    } else {
        artifacts::store_artifacts(context, job_id, &candidate_id, artifacts).await;
        context.report_event(job, event).await;
    }
    // the job's driver hears of it when the entry is done (`ProgressPace`)
    true
}

/// The CandidateFinished event of `result`.
fn finished_event(
    job: &JobRecord,
    result: &CandidateResult,
    measured: &evaluator::Measurements,
) -> EventRecord {
    let message = if result.ok {
        "ok".to_string()
    } else {
        format!("{}: {}", result.error_code, result.error_message)
    };
    let data = EventData::CandidateFinished(CandidateFinished {
        ok: result.ok,
        status: result.status.as_str().into(),
        worker_id: result.worker_id.clone(),
        attempts: result.attempts,
        duration_ms: result.duration_ms,
        metrics: MeasuredFigures::from(measured),
        adjustments: result.adjustments.clone(),
    });
    let candidate_id = &result.candidate_id;
    Context::event_of(
        job,
        EventKind::CandidateFinished,
        candidate_id,
        message,
        data,
    )
}

/// A candidate whose entry needs a record that cannot be read for good: recorded
/// as failed with the store's error, so its job does not wait for it.
pub(super) async fn record_unreadable(
    context: &Context,
    entry: &QueueEntry,
    error: &StoreError,
) -> Disposition {
    tracing::error!(session_id = %entry.job_id, candidate_id = %entry.candidate_id, %error, "the candidate's records cannot be read");
    let result = CandidateResult::without_run(
        &entry.candidate_id,
        CandidateStatus::Failed,
        "STORE_ERROR",
        &format!("store: {error}"),
    );
    match context
        .with_store_retry("record result", || {
            context.store.record_result(&entry.job_id, &result)
        })
        .await
    {
        Ok(_) => Disposition::Ack,
        Err(interrupted) => {
            tracing::error!(session_id = %entry.job_id, candidate_id = %entry.candidate_id, %interrupted, "result not recorded");
            Disposition::LeavePending
        }
    }
}

/// Records a candidate dead-lettered after `count` deliveries over `duration_ms`,
/// and reports it.
pub(super) async fn record_dead_letter(
    context: &Context,
    job: &JobRecord,
    candidate_id: &str,
    (count, duration_ms): (u32, u64),
    reason: String,
) {
    let mut result = CandidateResult::without_run(
        candidate_id,
        CandidateStatus::DeadLettered,
        "DEAD_LETTERED",
        &reason,
    );
    result.attempts = count;
    result.duration_ms = duration_ms;
    let finished = Finished {
        result,
        artifacts: &[],
    };
    record(context, job, finished).await;
    let data = EventData::Nothing;
    context
        .report(
            job,
            EventKind::CandidateDeadLettered,
            candidate_id,
            reason,
            data,
        )
        .await;
}
