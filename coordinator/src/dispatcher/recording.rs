//! Recording a candidate's result: once (a late duplicate from a reclaimed entry
//! is ignored), with its artifacts kept and a `CandidateFinished` event that
//! carries the measured figures.

use centroid_planner::job_events::{CandidateFinished, EventData, MeasuredFigures};
use centroid_proto::Error;
use centroid_proto::v1::{Artifact, RunCandidateResponse};

use super::Disposition;
use super::recorder::Recorder;
use crate::artifacts;
use crate::context::Context;
use crate::error::StoreError;
use crate::model::{
    ArtifactMeta, CandidateResult, CandidateStatus, EventKind, EventRecord, JobRecord, QueueEntry,
};
use crate::worker_calls;
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
/// event follows them, so that whoever sees the event finds them. Without
/// artifacts it goes through the `recorder` (batched with other candidates' writes).
pub(super) async fn record(
    (context, recorder): (&Context, &Recorder),
    job: &JobRecord,
    finished: Finished<'_>,
) -> bool {
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
        // with the other candidates' writes of the moment (one store call)
        recorder
            .record(job_id, result, event)
            .await
            .map_err(|failed| failed.to_string())
    } else {
        context
            .with_store_retry("record result", || {
                context.store.record_result(job_id, &result)
            })
            .await
            .map(|first| (result, event, first))
            .map_err(|interrupted| interrupted.to_string())
    };
    let (result, event) = match recording {
        Ok((result, event, true)) => (result, event),
        Ok(_) => {
            tracing::info!(session_id = job_id, candidate_id = %candidate_id, "late duplicate result ignored");
            return true;
        }
        Err(failed) => {
            tracing::error!(session_id = job_id, candidate_id = %candidate_id, %failed, "result not recorded");
            return false;
        }
    };
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

/// A result of the last try: the worker's `response` (when it answered) and the
/// `error` the run ended with (none when ok); an ok run's artifacts apart. What
/// the run adds (attempts, duration, plan, adjustments) is left to the caller.
pub(super) fn result_of_try(
    candidate_id: &str,
    worker_id: &str,
    response: Option<RunCandidateResponse>,
    error: Option<Error>,
) -> (CandidateResult, Vec<Artifact>) {
    let ok = response.as_ref().is_some_and(|response| response.ok);
    let slot_ms = response.as_ref().map_or(0, |response| response.duration_ms);
    let steps = response
        .as_ref()
        .map(worker_calls::step_outcomes)
        .unwrap_or_default();
    let artifacts = match (ok, response) {
        (true, Some(response)) => response.artifacts,
        _ => Vec::new(),
    };
    let result = CandidateResult {
        candidate_id: candidate_id.to_string(),
        status: if ok {
            CandidateStatus::Finished
        } else {
            CandidateStatus::Failed
        },
        ok,
        worker_id: worker_id.to_string(),
        attempts: 0,
        error_code: error
            .as_ref()
            .map(|error| error.error_code().wire_name().to_string())
            .unwrap_or_default(),
        error_message: error
            .as_ref()
            .map(worker_calls::error_text)
            .unwrap_or_default(),
        steps,
        artifacts: Vec::new(),
        duration_ms: 0,
        slot_ms,
        finished_ms: crate::model::now_ms(),
        plan: None,
        adjustments: Vec::new(),
    };
    (result, artifacts)
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
    (context, recorder): (&Context, &Recorder),
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
    record((context, recorder), job, finished).await;
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
