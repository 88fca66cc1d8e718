//! How the coordinator's records read over gRPC: errors as a structured
//! `centroid.v1.Error` status, jobs, events, candidates and memory cases as proto
//! messages.

use centroid_planner::case_memory::Case;
use centroid_proto::v1::{
    ArtifactRef, CancelJobResponse, CandidateSummary, CaseSummary, GetJobResponse, JobEvent,
    JobEventKind, JobOutcome as ProtoOutcome, JobState as ProtoState, JobSummary,
};
use centroid_proto::{Error, ErrorCode};
use tonic::Status;

use crate::coordinator::JobView;
use crate::error::CoordinatorError;
use crate::model::{CandidateResult, EventKind, EventRecord, JobRecord, JobState, Outcome};

impl From<CoordinatorError> for Status {
    fn from(error: CoordinatorError) -> Status {
        let structured = match &error {
            CoordinatorError::InvalidInputs(issues) => Error::new(
                ErrorCode::InvalidParam,
                format!("invalid inputs: {} issues", issues.len()),
            )
            .with_retryable(false)
            .with_details(serde_json::json!({"issues": issues})),
            CoordinatorError::InvalidOptions(message) => {
                Error::new(ErrorCode::InvalidParam, message.clone()).with_retryable(false)
            }
            CoordinatorError::Limit(message) => {
                Error::new(ErrorCode::ResourceExhausted, message.clone()).with_retryable(true)
            }
            CoordinatorError::UnknownJob(_)
            | CoordinatorError::UnknownArtifact(_)
            | CoordinatorError::UnknownCase(_)
            | CoordinatorError::NoMemory => {
                Error::new(ErrorCode::NotFound, error.to_string()).with_retryable(false)
            }
            CoordinatorError::Store(_) | CoordinatorError::Memory(_) => {
                Error::new(ErrorCode::ServiceUnavailable, error.to_string()).with_retryable(true)
            }
            _ => Error::new(ErrorCode::InternalError, error.to_string()),
        };
        structured.to_status()
    }
}

fn event_kind(kind: EventKind) -> JobEventKind {
    match kind {
        EventKind::StateChanged => JobEventKind::StateChanged,
        EventKind::PlanCreated => JobEventKind::PlanCreated,
        EventKind::CandidateDispatched => JobEventKind::CandidateDispatched,
        EventKind::CandidateFinished => JobEventKind::CandidateFinished,
        EventKind::CandidateRetried => JobEventKind::CandidateRetried,
        EventKind::Evaluation => JobEventKind::Evaluation,
        EventKind::Iteration => JobEventKind::Iteration,
        EventKind::WaitingForWorkers => JobEventKind::WaitingForWorkers,
        EventKind::Completed => JobEventKind::Completed,
        EventKind::Failed => JobEventKind::Failed,
        EventKind::Cancelled => JobEventKind::Cancelled,
        EventKind::CandidateDeadLettered => JobEventKind::CandidateDeadLettered,
        EventKind::StepAdjusted => JobEventKind::StepAdjusted,
        EventKind::LlmCall => JobEventKind::LlmCall,
        EventKind::Planner => JobEventKind::Planner,
        EventKind::Memory => JobEventKind::Memory,
    }
}

pub fn job_event(job_id: &str, cursor: String, event: EventRecord) -> JobEvent {
    JobEvent {
        job_id: job_id.to_string(),
        cursor,
        timestamp_ms: event.timestamp_ms,
        kind: event_kind(event.kind) as i32,
        state: event.state.as_str().to_string(),
        job_state: proto_state(event.state) as i32,
        candidate_id: event.candidate_id,
        iteration: event.iteration,
        message: event.message,
        data_json: if event.data.is_null() {
            String::new()
        } else {
            event.data.as_str().to_string()
        },
        last: event.last,
    }
}

pub fn job_summary(job: &JobRecord, total: usize, finished: usize) -> JobSummary {
    JobSummary {
        job_id: job.job_id.clone(),
        name: job.name.clone(),
        state: job.state().as_str().to_string(),
        outcome: job
            .outcome()
            .map(|outcome| outcome.as_str().to_string())
            .unwrap_or_default(),
        iteration: job.iteration,
        candidates_total: total as u32,
        candidates_finished: finished as u32,
        best_candidate_id: job.best_candidate_id.clone(),
        best_score: job.best_score,
        best_passed: job.best_passed,
        created_ms: job.created_ms,
        updated_ms: job.updated_ms,
        error: job.error.clone(),
        signoff_deck: job.options.signoff_deck.clone(),
        job_state: proto_state(job.state()) as i32,
        job_outcome: proto_outcome(job.outcome()) as i32,
        trace_id: job.trace_id.clone(),
    }
}

pub fn job_response(view: JobView) -> GetJobResponse {
    let candidates: Vec<CandidateSummary> = view
        .candidates
        .iter()
        .map(|candidate| {
            let result = view.results.get(&candidate.candidate_id);
            let evaluation = candidate.evaluation.as_ref();
            CandidateSummary {
                candidate_id: candidate.candidate_id.clone(),
                iteration: candidate.iteration,
                parent_id: candidate.parent_id.clone(),
                origin: candidate.origin.as_str().to_string(),
                design_point_json: serde_json::to_string(&candidate.design_point)
                    .unwrap_or_default(),
                status: result
                    .map(|result| result.status.as_str())
                    .unwrap_or("queued")
                    .to_string(),
                worker_id: result
                    .map(|result| result.worker_id.clone())
                    .unwrap_or_default(),
                attempts: result.map(|result| result.attempts).unwrap_or_default(),
                score: evaluation
                    .map(|evaluation| evaluation.score)
                    .unwrap_or_default(),
                passed: evaluation.is_some_and(|evaluation| evaluation.passed),
                drc_violations: evaluation
                    .map(|evaluation| evaluation.drc_violations)
                    .unwrap_or(-1),
                area_um2: evaluation
                    .map(|evaluation| evaluation.area_um2)
                    .unwrap_or_default(),
                matching_score: evaluation
                    .map(|evaluation| evaluation.matching_score)
                    .unwrap_or_default(),
                lvs: evaluation
                    .map(|evaluation| evaluation.lvs.clone())
                    .unwrap_or_default(),
                error: result.map(candidate_error).unwrap_or_default(),
                evaluation_json: evaluation
                    .and_then(|evaluation| serde_json::to_string(evaluation).ok())
                    .unwrap_or_default(),
                duration_ms: result
                    .map(|result| result.steps.iter().map(|step| step.duration_ms).sum())
                    .unwrap_or_default(),
                slot_ms: result.map(|result| result.slot_ms).unwrap_or_default(),
            }
        })
        .collect();
    let best_plan_json = view
        .best_plan
        .as_ref()
        .and_then(|plan| serde_json::to_string(plan).ok())
        .unwrap_or_default();
    GetJobResponse {
        job: Some(job_summary(
            &view.job,
            view.candidates.len(),
            view.results.len(),
        )),
        candidates,
        artifacts: view
            .artifacts
            .iter()
            .map(|meta| ArtifactRef {
                candidate_id: meta.candidate_id.clone(),
                name: meta.name.clone(),
                media_type: meta.media_type.clone(),
                size: meta.size,
            })
            .collect(),
        best_plan_json,
    }
}

/// CancelJob's answer: the job's state and outcome once the cancel took effect.
/// A failed candidate's error as `CandidateSummary.error` carries it, `"CODE:
/// message"` (clients split the code off): the recorded code is kept, and a
/// message already starting with it is not prefixed twice.
fn candidate_error(result: &CandidateResult) -> String {
    let (code, message) = (&result.error_code, &result.error_message);
    if code.is_empty() || message.starts_with(&format!("{code}: ")) {
        message.clone()
    } else if message.is_empty() {
        code.clone()
    } else {
        format!("{code}: {message}")
    }
}

pub fn cancel_response(job: &JobRecord) -> CancelJobResponse {
    CancelJobResponse {
        state: job.state().as_str().to_string(),
        outcome: job
            .outcome()
            .map(|outcome| outcome.as_str().to_string())
            .unwrap_or_default(),
        job_state: proto_state(job.state()) as i32,
        job_outcome: proto_outcome(job.outcome()) as i32,
    }
}

pub fn proto_state(state: JobState) -> ProtoState {
    match state {
        JobState::Init => ProtoState::Init,
        JobState::Parsing => ProtoState::Parsing,
        JobState::Planning => ProtoState::Planning,
        JobState::Executing => ProtoState::Executing,
        JobState::Evaluating => ProtoState::Evaluating,
        JobState::Signoff => ProtoState::Signoff,
        JobState::Passed => ProtoState::Passed,
        JobState::Iterating => ProtoState::Iterating,
        JobState::Completed => ProtoState::Completed,
        JobState::Failed => ProtoState::Failed,
        JobState::Done => ProtoState::Done,
    }
}

pub fn proto_outcome(outcome: Option<Outcome>) -> ProtoOutcome {
    match outcome {
        None => ProtoOutcome::Unspecified,
        Some(Outcome::Completed) => ProtoOutcome::Completed,
        Some(Outcome::Failed) => ProtoOutcome::Failed,
        Some(Outcome::Cancelled) => ProtoOutcome::Cancelled,
    }
}

/// A case of the long-term memory as the Jobs service lists it.
pub fn case_summary(case: Case) -> CaseSummary {
    CaseSummary {
        job_id: case.job_id,
        circuit: case.circuit,
        tech: case.tech,
        score: case.score,
        area_um2: case.area_um2,
        candidates_to_first_pass: case.candidates_to_first_pass,
        uses: case.uses,
        stored_ms: case.stored_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STATES: [JobState; 11] = [
        JobState::Init,
        JobState::Parsing,
        JobState::Planning,
        JobState::Executing,
        JobState::Evaluating,
        JobState::Signoff,
        JobState::Passed,
        JobState::Iterating,
        JobState::Completed,
        JobState::Failed,
        JobState::Done,
    ];

    #[test]
    fn a_candidate_error_keeps_its_code() {
        use crate::model::CandidateStatus;
        let failed = |code: &str, message: &str| {
            CandidateResult::without_run("c", CandidateStatus::Failed, code, message)
        };
        assert_eq!(
            candidate_error(&failed("INVALID_PARAM", "layout.read: path outside")),
            "INVALID_PARAM: layout.read: path outside"
        );
        assert_eq!(
            candidate_error(&failed("TIMEOUT", "TIMEOUT: step s1")),
            "TIMEOUT: step s1"
        );
        assert_eq!(candidate_error(&failed("", "lost")), "lost");
        assert_eq!(candidate_error(&failed("CANCELLED", "")), "CANCELLED");
    }

    #[test]
    fn the_enum_and_the_string_name_the_same_state() {
        for state in STATES {
            let name = proto_state(state).as_str_name();
            assert_eq!(
                name.strip_prefix("JOB_STATE_").unwrap().to_lowercase(),
                state.as_str()
            );
        }
        for outcome in [Outcome::Completed, Outcome::Failed, Outcome::Cancelled] {
            let name = proto_outcome(Some(outcome)).as_str_name();
            assert_eq!(
                name.strip_prefix("JOB_OUTCOME_").unwrap().to_lowercase(),
                outcome.as_str()
            );
        }
        assert_eq!(proto_outcome(None), ProtoOutcome::Unspecified);
    }
}
