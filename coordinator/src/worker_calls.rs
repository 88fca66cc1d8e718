//! Every call the coordinator makes to a worker, in one place (as Ballista's
//! executor manager): building a `RunCandidate` request from a plan, running it
//! on a taken slot with a deadline while watching for the worker's death, the
//! job's cancellation and shutdown; telling a worker to stop a candidate; short
//! probe plans outside the queue; and turning a failed RPC into a structured
//! error (a transport failure is SERVICE_UNAVAILABLE, not INTERNAL_ERROR).
//!
//! Invariant: no call to a worker is made without a deadline.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use centroid_planner::performance::steps::{is_simulation_skill, request_inputs};
use centroid_planner::random::SplitMix64;
use centroid_planner::step_failure::StepFailure;
use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{
    Artifact, CancelCandidateRequest, RunCandidateRequest, RunCandidateResponse, SkillCall,
};
use centroid_proto::{Error, ErrorCode};
use centroid_runtime::trace_context;
use serde_json::Value;
use tokio::sync::watch;

use crate::context::{Context, Interrupted};
use crate::model::{JobInputs, JobRecord, Plan, StepOutcome};
use crate::registry::SlotGuard;
use crate::retry_policy::{Decision, RetryPolicy, Tries, decide};

/// Deadline of one CancelCandidate call (the worker answers at once).
const CANCEL_RPC_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause before asking once more when the worker did not know the candidate (the
/// RunCandidate may still be on its way).
const CANCEL_RETRY_PAUSE: Duration = Duration::from_millis(300);
/// Extra time the local timer grants beyond the gRPC deadline (the worker's own
/// deadline error should arrive first).
const LOCAL_TIMER_SLACK: Duration = Duration::from_secs(1);

/// How one RunCandidate call ended.
pub(crate) enum CallOutcome {
    Response(RunCandidateResponse),
    Failed(Error),
    /// the worker was declared lost while the call ran (no heartbeat within the
    /// timeout, or unreachable on a call)
    WorkerLost,
    /// the job was cancelled while the call ran
    Cancelled,
    ShuttingDown,
}

/// A RunCandidate request for `plan`.
pub(crate) fn run_request(
    candidate_id: &str,
    session_id: &str,
    plan: &Plan,
    deadline_ms: u64,
    continue_on_error: bool,
) -> RunCandidateRequest {
    RunCandidateRequest {
        candidate_id: candidate_id.to_string(),
        session_id: session_id.to_string(),
        deadline_ms,
        plan: plan
            .steps
            .iter()
            .map(|step| SkillCall {
                step_id: step.step_id.clone(),
                skill: step.skill.clone(),
                arguments_json: step.arguments.to_string(),
            })
            .collect(),
        continue_on_error,
        inputs: Vec::new(),
    }
}

/// Runs `request` on the taken slot with `rpc_timeout` as the gRPC deadline (and a
/// local timer just above it), until it answers, the worker is declared dead, the
/// job is cancelled or the coordinator shuts down.
pub(crate) async fn run_on_slot(
    slot: &SlotGuard,
    request: RunCandidateRequest,
    rpc_timeout: Duration,
    trace_id: &str,
    cancel: &mut watch::Receiver<bool>,
    shutdown: &mut watch::Receiver<bool>,
) -> CallOutcome {
    let mut client = slot.client.clone();
    let mut dead = slot.dead.clone();
    let mut request = tonic::Request::new(request);
    request.set_timeout(rpc_timeout);
    trace_context::attach(request.metadata_mut(), trace_id);
    tokio::select! {
        result = tokio::time::timeout(rpc_timeout + LOCAL_TIMER_SLACK, client.run_candidate(request)) => match result {
            Ok(Ok(response)) => CallOutcome::Response(response.into_inner()),
            Ok(Err(status)) => CallOutcome::Failed(classify_status(&status)),
            Err(_) => CallOutcome::Failed(Error::new(
                ErrorCode::Timeout,
                format!("no answer within {} ms", rpc_timeout.as_millis()),
            )),
        },
        _ = dead.wait_for(|is_dead| *is_dead) => CallOutcome::WorkerLost,
        _ = cancel.wait_for(|cancelled| *cancelled) => CallOutcome::Cancelled,
        _ = shutdown.wait_for(|stopping| *stopping) => CallOutcome::ShuttingDown,
    }
}

/// The step outcomes of a response (data parsed from JSON).
pub(crate) fn step_outcomes(response: &RunCandidateResponse) -> Vec<StepOutcome> {
    response
        .steps
        .iter()
        .map(|step| StepOutcome {
            step_id: step.step_id.clone(),
            skill: step.skill.clone(),
            ok: step.ok,
            error_code: step
                .error
                .as_ref()
                .map(|error| error.error_code().wire_name().to_string())
                .unwrap_or_default(),
            error_message: step.error.as_ref().map(error_text).unwrap_or_default(),
            data: serde_json::from_str(&step.data_json).unwrap_or(Value::Null),
            duration_ms: step.duration_ms,
        })
        .collect()
}

/// A run whose only failure is its extraction or simulation (every step before
/// passed): the layout is done, so the run counts as finished — its artifacts kept —
/// and the evaluator fails the candidate with the failed step's reason.
pub(crate) fn keep_layout_of_failed_simulation(outcome: CallOutcome) -> CallOutcome {
    match outcome {
        CallOutcome::Response(mut response) if !response.ok => {
            let failed = response.steps.iter().find(|step| !step.ok);
            if failed.is_some_and(|step| is_simulation_skill(&step.skill)) {
                response.ok = true;
                response.error = None;
            }
            CallOutcome::Response(response)
        }
        other => other,
    }
}

/// The failure of a response that did not succeed: its error and the failed step.
pub(crate) fn response_failure(response: &RunCandidateResponse) -> (Error, String) {
    let error = response
        .error
        .clone()
        .unwrap_or_else(|| Error::new(ErrorCode::InternalError, "failed without an error"));
    let failed_step = response
        .steps
        .iter()
        .find(|step| !step.ok)
        .map(|step| step.step_id.clone())
        .unwrap_or_default();
    (error, failed_step)
}

/// A failed step's error as the planner's ReAct adjustment reads it.
pub(crate) fn step_failure(error: &Error) -> StepFailure {
    StepFailure {
        code: error.error_code().wire_name().to_string(),
        message: error.message.clone(),
        details: error.details(),
    }
}

/// A skill error's message, with the file and line its `details` name (a testbench
/// line ngspice refused: `… (testbench.sp line 11)`); the file by its name, not the
/// worker's scratch path.
pub(crate) fn error_text(error: &Error) -> String {
    let details = error.details();
    let file = details.get("file").and_then(Value::as_str);
    let line = details.get("line").and_then(Value::as_u64);
    match (file, line) {
        (Some(file), Some(line)) => {
            let name = std::path::Path::new(file).file_name().map_or_else(
                || file.to_owned(),
                |name| name.to_string_lossy().into_owned(),
            );
            format!("{} ({name} line {line})", error.message)
        }
        _ => error.message.clone(),
    }
}

/// A skill error's `details.reason` ("" when it has none).
pub(crate) fn error_reason(error: &Error) -> String {
    error
        .details()
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The files a plan needs the request to bring ([`request_inputs`]: the user's
/// testbench) from the job's inputs.
pub(crate) fn request_files(plan: &Plan, inputs: &JobInputs) -> Vec<Artifact> {
    request_inputs(plan)
        .into_iter()
        .filter(|name| *name == centroid_schemas::TESTBENCH_FILE && !inputs.testbench_sp.is_empty())
        .map(|name| Artifact {
            name: name.to_owned(),
            media_type: centroid_proto::media_type::of_file(name).to_owned(),
            content: inputs.testbench_sp.as_bytes().to_vec(),
        })
        .collect()
}

/// The files a plan needs its request to bring, read from the job's inputs in the
/// store only when it needs any (a job without a user testbench reads nothing).
pub(crate) async fn request_files_of(
    context: &Context,
    job_id: &str,
    plan: &Plan,
) -> Result<Vec<Artifact>, Interrupted> {
    if request_inputs(plan).is_empty() {
        return Ok(Vec::new());
    }
    let inputs = context
        .with_store_retry("read inputs", || context.store.get_inputs(job_id))
        .await?;
    Ok(inputs
        .map(|inputs| request_files(plan, &inputs))
        .unwrap_or_default())
}

/// Tells the worker to stop a candidate of a cancelled job, each call with a deadline.
pub(crate) async fn cancel_on_worker(
    mut client: WorkerClient<centroid_runtime::AuthChannel>,
    worker_id: &str,
    job_id: &str,
    candidate_id: &str,
) {
    for attempt in 1..=2 {
        let mut request = tonic::Request::new(CancelCandidateRequest {
            candidate_id: candidate_id.to_string(),
            reason: format!("job {job_id} cancelled"),
        });
        request.set_timeout(CANCEL_RPC_TIMEOUT);
        let answer = tokio::time::timeout(
            CANCEL_RPC_TIMEOUT + Duration::from_millis(500),
            client.cancel_candidate(request),
        )
        .await;
        match answer {
            Ok(Ok(response)) if response.get_ref().found => {
                tracing::info!(
                    session_id = job_id,
                    candidate_id,
                    worker_id,
                    "worker stopped the candidate"
                );
                return;
            }
            Ok(Ok(_)) if attempt == 1 => tokio::time::sleep(CANCEL_RETRY_PAUSE).await,
            Ok(Ok(_)) => {
                tracing::info!(
                    session_id = job_id,
                    candidate_id,
                    worker_id,
                    "worker was not running the candidate any more"
                );
                return;
            }
            Ok(Err(status)) => {
                // an older worker answers UNIMPLEMENTED: it finishes the candidate, which is ignored
                tracing::warn!(session_id = job_id, candidate_id, worker_id, code = ?status.code(), message = status.message(), "cannot cancel the candidate on the worker");
                return;
            }
            Err(_) => {
                tracing::warn!(
                    session_id = job_id,
                    candidate_id,
                    worker_id,
                    timeout_ms = CANCEL_RPC_TIMEOUT.as_millis() as u64,
                    "cancel request to the worker timed out"
                );
                return;
            }
        }
    }
}

/// Why a probe plan gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ProbeError {
    #[error("no live worker has the skills {0:?}")]
    NoWorker(Vec<String>),
    #[error("no answer within {0} ms")]
    Deadline(u128),
    #[error("{}: {}", .0.error_code().wire_name(), .0.message)]
    Failed(Error),
    #[error("the coordinator is shutting down")]
    ShuttingDown,
}

/// Runs a short plan outside the queue (e.g. `route.info` to learn the routing
/// pitch before planning; a kept candidate's picture, its GDS sent as `inputs`) on
/// any live worker with the skills, within `deadline`.
/// A refusal for capacity or a lost worker is retried by the retry policy like
/// any candidate, so a worker replacing its KLayout process cannot turn a probe
/// into "no answer".
pub(crate) async fn probe(
    context: &Arc<Context>,
    job: &JobRecord,
    plan: &Plan,
    deadline: Duration,
    inputs: Vec<Artifact>,
) -> Result<RunCandidateResponse, ProbeError> {
    let (job_id, trace_id) = (job.job_id.as_str(), job.trace_id.as_str());
    let required: Vec<String> = plan.steps.iter().map(|step| step.skill.clone()).collect();
    let started = Instant::now();
    let policy = RetryPolicy::new(
        Duration::from_millis(context.config.retry_base_ms),
        Duration::from_millis(context.config.retry_max_ms),
    );
    let mut tries = Tries::default();
    let mut excluded = BTreeSet::new();
    // a probe belongs to no job's cancellation; the sender must live, or the
    // closed channel would read as "cancelled" at once
    let (_never_cancel, mut never_cancelled) = watch::channel(false);
    let mut shutdown = context.shutdown.subscribe();
    let candidate_id = format!("{job_id}-probe");
    loop {
        let remaining = deadline.saturating_sub(started.elapsed());
        if remaining.is_zero() {
            return Err(ProbeError::Deadline(deadline.as_millis()));
        }
        let Some(slot) = context.registry.try_acquire(&required, &excluded) else {
            if context.registry.alive_slots() == 0 && started.elapsed() > deadline / 2 {
                return Err(ProbeError::NoWorker(required));
            }
            tokio::select! {
                _ = context.registry.slots_changed.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = context.shutting_down() => return Err(ProbeError::ShuttingDown),
            }
            continue;
        };
        // a probe is a set of checks: every step runs, whatever the one before said
        let mut request = run_request(
            &candidate_id,
            job_id,
            plan,
            remaining.as_millis() as u64,
            true,
        );
        request.inputs = inputs.clone();
        let outcome = run_on_slot(
            &slot,
            request,
            remaining,
            trace_id,
            &mut never_cancelled,
            &mut shutdown,
        )
        .await;
        let worker_id = slot.worker_id.clone();
        drop(slot);
        let error = match outcome {
            CallOutcome::Response(response) => return Ok(response),
            CallOutcome::Failed(error) => error,
            CallOutcome::WorkerLost => Error::new(
                ErrorCode::ServiceUnavailable,
                format!("worker {worker_id} lost"),
            ),
            CallOutcome::Cancelled | CallOutcome::ShuttingDown => {
                return Err(ProbeError::ShuttingDown);
            }
        };
        let code = error.error_code();
        match decide(
            code,
            error.retryable,
            &tries,
            &policy,
            jitter(&candidate_id),
        ) {
            Decision::Retry {
                delay,
                avoid_worker,
                ..
            } => {
                tracing::info!(session_id = job_id, worker_id = %worker_id, code = code.wire_name(), error = %error.message, retry_in_ms = delay.as_millis() as u64, "probe retried");
                if code == ErrorCode::ResourceExhausted {
                    context.registry.mark_saturated(&worker_id);
                }
                if avoid_worker {
                    excluded.insert(worker_id);
                }
                tries.count(code);
                tokio::select! {
                    _ = tokio::time::sleep(delay.min(deadline.saturating_sub(started.elapsed()))) => {}
                    _ = context.shutting_down() => return Err(ProbeError::ShuttingDown),
                }
            }
            Decision::Adjust | Decision::Record => return Err(ProbeError::Failed(error)),
        }
    }
}

/// A jitter in [0, 1) that differs between candidates and between calls.
pub(crate) fn jitter(salt: &str) -> f64 {
    let seed = crate::model::now_ms()
        ^ salt.bytes().fold(0u64, |hash, byte| {
            hash.wrapping_mul(31).wrapping_add(byte as u64)
        });
    SplitMix64::new(seed).unit()
}

/// The structured error of a failed call; a transport failure (the worker died or
/// hung up, no structured details) counts as SERVICE_UNAVAILABLE, not INTERNAL_ERROR.
pub(crate) fn classify_status(status: &tonic::Status) -> Error {
    let error = Error::from_status(status);
    let structured = !status.details().is_empty();
    let transport = matches!(
        status.code(),
        tonic::Code::Unknown
            | tonic::Code::Internal
            | tonic::Code::Cancelled
            | tonic::Code::Unavailable
    ) && !structured;
    if transport {
        return Error::new(
            ErrorCode::ServiceUnavailable,
            format!("worker unreachable: {}", status.message()),
        )
        .with_retryable(true)
        .with_details(serde_json::json!({"reason": UNREACHABLE_REASON}));
    }
    error
}

/// The `details.reason` of a transport failure (the worker is then marked unreachable).
const UNREACHABLE_REASON: &str = "worker_unreachable";

/// Whether `error` says the worker could not be reached at all.
pub(crate) fn is_unreachable(error: &Error) -> bool {
    error.details().get("reason").and_then(Value::as_str) == Some(UNREACHABLE_REASON)
}
