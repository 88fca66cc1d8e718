//! Runs one candidate's plan on a leased slot: `session/reset`, then each step
//! (arguments checked against the skill's schema first), then the files left in
//! the candidate's scratch directory become artifacts.
//!
//! A skill's failure is a step result. A lost process (death, deadline, drain
//! grace expiry) fails the whole candidate with a retryable error and the slot
//! gets a fresh process. A cancelled candidate (`CancelCandidate`) stops the same
//! way — its process group is killed and replaced — and fails with CANCELLED,
//! not retryable.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use centroid_proto::v1::{
    Artifact, RunCandidateRequest, RunCandidateResponse, SkillCall, StepResult,
};
use centroid_proto::{Error, ErrorCode};
use centroid_runtime::event_types;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::cancel::CancelSignal;
use crate::candidate_inputs;
use crate::error::SkillProcessError;
use crate::pool::SlotLease;
use crate::schema_check::CompiledSkillSchemas;
use crate::scratch_dir;
use crate::skill_process::ToolCallResult;
use crate::supervisor;

/// Placeholder replaced, inside any string argument, by the candidate's scratch directory.
pub const CANDIDATE_DIR_PLACEHOLDER: &str = "${CANDIDATE_DIR}";

/// Largest total size of the artifacts returned for one candidate.
const MAX_ARTIFACT_BYTES: u64 = 256 * 1024 * 1024;

/// What a candidate needs besides its slot.
#[derive(Clone)]
pub struct CandidateContext {
    pub worker_id: String,
    pub catalog: Arc<CompiledSkillSchemas>,
    /// becomes `true` when the drain grace period ran out: in-flight candidates stop
    pub drain_grace_expired: watch::Receiver<bool>,
    /// becomes `Some(reason)` when this candidate is cancelled
    pub cancel: CancelSignal,
    /// the job's trace id (may be empty), handed to the skill server
    pub trace_id: String,
}

/// Why a call into the process did not produce an answer.
enum Interruption {
    Process(SkillProcessError),
    DrainGraceExpired,
    Cancelled(String),
}

/// Runs the plan. `Err` means the candidate could not finish because of the
/// worker (TIMEOUT / SERVICE_UNAVAILABLE / INTERNAL_ERROR), not because of a skill.
pub async fn run_candidate(
    mut lease: SlotLease,
    mut request: RunCandidateRequest,
    deadline: Instant,
    mut context: CandidateContext,
) -> Result<RunCandidateResponse, Error> {
    let started = Instant::now();
    // a slot whose process died while idle starts a new one, within the candidate's deadline
    let ensured =
        tokio::time::timeout_at(deadline, supervisor::ensure_live_process(&mut lease)).await;
    let startup_failure = match ensured {
        Ok(Ok(())) => None,
        Ok(Err(error)) => Some(error.to_string()),
        Err(_elapsed) => Some("starting it ran past the candidate deadline".to_string()),
    };
    if let Some(reason) = startup_failure {
        return Err(Error::new(
            ErrorCode::ServiceUnavailable,
            format!("no klayout process on slot {}: {reason}", lease.index()),
        ));
    }
    let process = lease.process.as_mut().expect("ensured above");
    process.set_log_context(&request.candidate_id, &request.session_id);
    // Only a plan that names the scratch directory can leave files in it (or read
    // the files the request brings).
    let needs_scratch_dir = !request.inputs.is_empty()
        || request
            .plan
            .iter()
            .any(|step| step.arguments_json.contains(CANDIDATE_DIR_PLACEHOLDER));
    let scratch_dir = match needs_scratch_dir {
        false => None,
        true => Some(scratch_dir::create().map_err(|error| {
            Error::new(
                ErrorCode::InternalError,
                format!("cannot create scratch directory: {error}"),
            )
        })?),
    };
    let scratch_path = scratch_dir
        .as_ref()
        .map(|dir| dir.path().to_path_buf())
        .unwrap_or_default();
    let mut input_names = HashSet::new();
    if !request.inputs.is_empty() {
        let inputs = std::mem::take(&mut request.inputs);
        let written = candidate_inputs::write(&scratch_path, &inputs);
        input_names = candidate_inputs::names(&inputs);
        written.map_err(|error| {
            Error::new(
                ErrorCode::InternalError,
                format!("cannot write the request's input files: {error}"),
            )
        })?;
    }

    let trace_id = context.trace_id.clone();
    let reset = process.reset_session(
        deadline,
        scratch_dir.as_ref().map(|dir| dir.path()),
        &trace_id,
    );
    if let Err(interruption) = interruptible(reset, &mut context).await {
        return Err(fail_candidate(
            lease,
            interruption,
            None,
            0,
            deadline,
            started,
        ));
    }

    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        "session reset"
    );

    let mut steps: Vec<StepResult> = Vec::with_capacity(request.plan.len());
    let mut first_error: Option<Error> = None;
    for step in &request.plan {
        if first_error.is_some() && !request.continue_on_error {
            break;
        }
        let step_started = Instant::now();
        let scratch = scratch_dir.as_ref().map(|dir| dir.path());
        let checked_arguments = parse_arguments(step, &scratch_path).and_then(|arguments| {
            context.catalog.check_arguments(&step.skill, &arguments)?;
            context
                .catalog
                .check_files(&step.skill, &arguments, scratch)?;
            Ok(arguments)
        });
        let arguments = match checked_arguments {
            Ok(arguments) => arguments,
            Err(error) => {
                tracing::info!(step_id = %step.step_id, skill = %step.skill, error = %error.message, "step refused before klayout");
                first_error.get_or_insert_with(|| error.clone());
                steps.push(failed_step(step, error, step_started));
                continue;
            }
        };
        lease.count_forwarded_call();
        let process = lease.process.as_mut().expect("a live process");
        let call = process.call_tool(&step.skill, arguments, deadline);
        match interruptible(call, &mut context).await {
            Ok(result) => {
                let step_result = step_result_from_tool(step, result, step_started);
                tracing::info!(
                    event_type = event_types::TOOL_CALL,
                    step_id = %step.step_id,
                    skill = %step.skill,
                    ok = step_result.ok,
                    error_code = step_result.error.as_ref().map(|error| error.error_code().wire_name()).unwrap_or(""),
                    duration_ms = step_started.elapsed().as_millis() as u64,
                    "skill call"
                );
                if let Some(error) = step_result.error.as_ref().filter(|_| !step_result.ok) {
                    first_error.get_or_insert_with(|| error.clone());
                }
                steps.push(step_result);
            }
            Err(Interruption::Process(SkillProcessError::JsonRpc { code, message, .. })) => {
                let error = Error::new(
                    ErrorCode::InternalError,
                    format!("skill server refused the call: {message}"),
                )
                .with_retryable(false)
                .with_details(json!({"jsonrpc_code": code}));
                first_error.get_or_insert_with(|| error.clone());
                steps.push(failed_step(step, error, step_started));
            }
            Err(interruption) => {
                let completed_steps = steps.len();
                return Err(fail_candidate(
                    lease,
                    interruption,
                    Some(step),
                    completed_steps,
                    deadline,
                    started,
                ));
            }
        }
    }

    // reading (possibly large) files and removing the directory block: not on a runtime thread
    let artifacts = match scratch_dir {
        None => Vec::new(),
        Some(dir) => tokio::task::spawn_blocking(move || {
            let collected = collect_artifacts(dir.path(), &input_names);
            drop(dir);
            collected
        })
        .await
        .map_err(std::io::Error::other)
        .and_then(|collected| collected)
        .map_err(|error| {
            Error::new(
                ErrorCode::InternalError,
                format!("cannot read artifacts: {error}"),
            )
        })?,
    };
    let slot = lease.index() as u32;
    // The log context stays until the next candidate sets its own: the child's
    // stderr is read apart from its responses, so lines of this candidate (a
    // traceback, say) may still arrive after its last response.
    drop(lease);
    Ok(RunCandidateResponse {
        candidate_id: request.candidate_id,
        session_id: request.session_id,
        ok: first_error.is_none(),
        steps,
        artifacts,
        error: first_error,
        worker_id: context.worker_id,
        slot,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Awaits a call into the process unless the candidate is cancelled or the drain
/// grace period runs out first.
async fn interruptible<T>(
    call: impl Future<Output = Result<T, SkillProcessError>>,
    context: &mut CandidateContext,
) -> Result<T, Interruption> {
    if let Some(reason) = context.cancel.borrow().clone() {
        return Err(Interruption::Cancelled(reason));
    }
    if *context.drain_grace_expired.borrow() {
        return Err(Interruption::DrainGraceExpired);
    }
    let CandidateContext {
        drain_grace_expired,
        cancel,
        ..
    } = context;
    tokio::select! {
        result = call => result.map_err(Interruption::Process),
        // a closed signal (cannot happen while the run is registered) disables the branch
        Ok(reason) = cancel.wait_for(Option::is_some) => {
            Err(Interruption::Cancelled(reason.clone().unwrap_or_default()))
        }
        _ = drain_grace_expired.wait_for(|expired| *expired) => Err(Interruption::DrainGraceExpired),
    }
}

/// The candidate lost its process: replace the process, describe the failure.
fn fail_candidate(
    lease: SlotLease,
    interruption: Interruption,
    step: Option<&SkillCall>,
    completed_steps: usize,
    deadline: Instant,
    started: Instant,
) -> Error {
    let pid = lease
        .process
        .as_ref()
        .map(|process| process.pid())
        .unwrap_or_default();
    let slot = lease.index();
    let (step_id, skill) = step
        .map(|step| (step.step_id.as_str(), step.skill.as_str()))
        .unwrap_or(("", "session/reset"));
    let budget_ms = deadline.saturating_duration_since(started).as_millis();
    let error = match &interruption {
        Interruption::Process(SkillProcessError::Timeout { .. }) => Error::new(
            ErrorCode::Timeout,
            format!("step `{step_id}` (`{skill}`) ran past the candidate deadline of {budget_ms} ms"),
        ),
        Interruption::Process(SkillProcessError::Exited { status }) => Error::new(
            ErrorCode::ServiceUnavailable,
            format!("klayout process died during step `{step_id}` (`{skill}`): {status}"),
        ),
        Interruption::Process(other) => Error::new(
            ErrorCode::ServiceUnavailable,
            format!("klayout process failed during step `{step_id}` (`{skill}`): {other}"),
        ),
        Interruption::DrainGraceExpired => Error::new(
            ErrorCode::ServiceUnavailable,
            format!("worker is draining and its grace period ran out during step `{step_id}` (`{skill}`)"),
        ),
        Interruption::Cancelled(reason) => Error::new(
            ErrorCode::Cancelled,
            format!("candidate cancelled during step `{step_id}` (`{skill}`): {reason}"),
        ),
    }
    .with_retryable(!matches!(interruption, Interruption::Cancelled(_)))
    .with_details(json!({
        "step_id": step_id,
        "skill": skill,
        "completed_steps": completed_steps,
        "slot": slot,
        "pid": pid,
    }));
    if matches!(interruption, Interruption::Cancelled(_)) {
        tracing::info!(
            slot,
            pid,
            step_id,
            "candidate cancelled; killing its klayout process group"
        );
    } else {
        tracing::warn!(error_code = error.error_code().wire_name(), error = %error.message, "candidate failed");
    }
    supervisor::replace_process(lease, error.message.clone());
    error
}

/// The step's arguments as a JSON object, with the scratch directory filled in.
fn parse_arguments(step: &SkillCall, scratch_dir: &Path) -> Result<Value, Error> {
    let text = step.arguments_json.trim();
    let mut arguments: Value = if text.is_empty() {
        json!({})
    } else {
        serde_json::from_str(text).map_err(|error| {
            Error::new(
                ErrorCode::InvalidParam,
                format!("arguments of step `{}` are not json: {error}", step.step_id),
            )
            .with_details(json!({"pointer": ""}))
        })?
    };
    if !arguments.is_object() {
        return Err(Error::new(
            ErrorCode::InvalidParam,
            format!("arguments of step `{}` must be a json object", step.step_id),
        )
        .with_details(json!({"pointer": ""})));
    }
    replace_placeholder(&mut arguments, &scratch_dir.display().to_string());
    Ok(arguments)
}

fn replace_placeholder(value: &mut Value, scratch_dir: &str) {
    match value {
        Value::String(text) if text.contains(CANDIDATE_DIR_PLACEHOLDER) => {
            *text = text.replace(CANDIDATE_DIR_PLACEHOLDER, scratch_dir);
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_placeholder(item, scratch_dir)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| replace_placeholder(field, scratch_dir)),
        _ => {}
    }
}

fn failed_step(step: &SkillCall, error: Error, step_started: Instant) -> StepResult {
    StepResult {
        step_id: step.step_id.clone(),
        skill: step.skill.clone(),
        ok: false,
        error: Some(error),
        data_json: "null".to_string(),
        duration_ms: step_started.elapsed().as_millis() as u64,
    }
}

fn step_result_from_tool(
    step: &SkillCall,
    result: ToolCallResult,
    step_started: Instant,
) -> StepResult {
    let error = if result.ok {
        None
    } else {
        Some(match result.error {
            Some(tool_error) => {
                let code = ErrorCode::from_wire_name(&tool_error.code);
                let message = if tool_error.message.is_empty() {
                    tool_error.code.clone()
                } else {
                    tool_error.message
                };
                Error::new(code, message).with_details(tool_error.details)
            }
            None => Error::new(ErrorCode::InternalError, "skill failed without an error"),
        })
    };
    let duration_ms = result
        .duration_ms
        .map(|milliseconds| milliseconds.max(0.0).round() as u64)
        .unwrap_or_else(|| step_started.elapsed().as_millis() as u64);
    StepResult {
        step_id: step.step_id.clone(),
        skill: step.skill.clone(),
        ok: result.ok,
        error,
        data_json: result.data.to_string(),
        duration_ms,
    }
}

/// Every regular file under the scratch directory, by relative path, but the
/// request's own input files.
fn collect_artifacts(
    scratch_dir: &Path,
    input_names: &HashSet<String>,
) -> std::io::Result<Vec<Artifact>> {
    let mut artifacts = Vec::new();
    let mut total_bytes = 0u64;
    let mut pending_dirs = vec![scratch_dir.to_path_buf()];
    while let Some(dir) = pending_dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let file_type = entry.file_type()?;
            if file_type.is_dir() {
                pending_dirs.push(entry.path());
                continue;
            }
            if !file_type.is_file() {
                continue;
            }
            let path = entry.path();
            let name = path
                .strip_prefix(scratch_dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            if input_names.contains(&name) {
                continue;
            }
            total_bytes += entry.metadata()?.len();
            if total_bytes > MAX_ARTIFACT_BYTES {
                return Err(std::io::Error::other(format!(
                    "artifacts exceed {MAX_ARTIFACT_BYTES} bytes"
                )));
            }
            artifacts.push(Artifact {
                media_type: centroid_proto::media_type::of_file(&name).to_string(),
                content: std::fs::read(&path)?,
                name,
            });
        }
    }
    artifacts.sort_by(|left, right| left.name.cmp(&right.name));
    Ok(artifacts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_is_replaced_in_nested_strings() {
        let mut value =
            json!({"path": "${CANDIDATE_DIR}/top.gds", "list": ["${CANDIDATE_DIR}"], "n": 3});
        replace_placeholder(&mut value, "/tmp/x");
        assert_eq!(
            value,
            json!({"path": "/tmp/x/top.gds", "list": ["/tmp/x"], "n": 3})
        );
    }

    #[test]
    fn non_object_arguments_are_invalid() {
        let step = SkillCall {
            step_id: "s".into(),
            skill: "debug.noop".into(),
            arguments_json: "[1]".into(),
        };
        let error = parse_arguments(&step, Path::new("/tmp")).unwrap_err();
        assert_eq!(error.error_code(), ErrorCode::InvalidParam);
    }
}
