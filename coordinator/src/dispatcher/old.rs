//! The dispatcher: takes candidate entries from the work queue (consumer group),
//! sends each to a live worker with a free slot (least loaded first), applies the
//! retry policy of the brief by error code, and records results idempotently.
//!
//! Leases: an entry stays pending under this coordinator's consumer while it is
//! waiting or running; a renewal task re-claims (XCLAIM JUSTID) the entries whose
//! worker is alive every third of the lease. When a worker stops heartbeating its
//! calls are abandoned and their leases lapse; the reclaimer (XAUTOCLAIM with
//! min-idle = lease timeout > heartbeat timeout) hands them out again, bumping the
//! delivery counter. After `max_deliveries` an entry goes to the dead-letter stream.
//!
//! Retry policy (seed 000 §4.3.3 and the brief):
//! | code | what happens |
//! |---|---|
//! | INVALID_PARAM, NOT_FOUND, CONFLICT | the planner adjusts the failed step (ReAct), at most 3 times |
//! | DRC_VIOLATION | recorded; the search re-plans the candidate (repair) next iteration |
//! | TIMEOUT | retried 2× |
//! | SERVICE_UNAVAILABLE | retried 3× on another worker when there is one |
//! | RESOURCE_EXHAUSTED | retried after a back-off (not counted as a delivery) |
//! | INTERNAL_ERROR | retried once |
//! | CANCELLED (the worker was told to stop the candidate) | recorded, not retried |
//! Back-off: exponential from `retry_base_ms`, capped at `retry_max_ms`, full jitter.
//!
//! Cancellation: when the job of a running candidate is cancelled (or ends), the
//! RunCandidate call is dropped and the worker is told to stop the candidate
//! (`Worker.CancelCandidate`, with its own deadline); the candidate is then
//! recorded as abandoned by the session.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{
    CancelCandidateRequest, RunCandidateRequest, RunCandidateResponse, SkillCall,
};
use centroid_proto::{Error, ErrorCode};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::artifacts;
use crate::coordinator::Shared;
use crate::evaluator;
use crate::model::{
    CandidateRecord, CandidateResult, CandidateStatus, EventKind, Plan, QueueEntry, StepOutcome,
    now_ms,
};
use crate::planner::Planner;
use crate::planner::design_space::SplitMix64;
use crate::planner::heuristic::HeuristicPlanner;

const MAX_ADJUSTMENTS: u32 = 3;
const MAX_EXHAUSTED_RETRIES: u32 = 50;
/// Deadline of one CancelCandidate call (the worker answers at once).
const CANCEL_RPC_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause before asking once more when the worker did not know the candidate (the
/// RunCandidate may still be on its way).
const CANCEL_RETRY_PAUSE: Duration = Duration::from_millis(300);

/// What this coordinator is working on, by queue entry id.
type InFlight = Arc<Mutex<HashMap<String, InFlightEntry>>>;

struct InFlightEntry {
    job_id: String,
    /// the worker running it; `None` while it waits for a slot or a retry
    worker_id: Option<String>,
}

fn set_worker(in_flight: &InFlight, entry: &QueueEntry, worker_id: Option<&str>) {
    in_flight.lock().expect("in-flight lock").insert(
        entry.entry_id.clone(),
        InFlightEntry {
            job_id: entry.job_id.clone(),
            worker_id: worker_id.map(str::to_string),
        },
    );
}

pub(crate) fn spawn(shared: Arc<Shared>) -> Vec<JoinHandle<()>> {
    let in_flight: InFlight = Arc::new(Mutex::new(HashMap::new()));
    vec![
        tokio::spawn(dispatch_loop(shared.clone(), in_flight.clone())),
        tokio::spawn(renew_loop(shared.clone(), in_flight)),
        tokio::spawn(sweep_loop(shared)),
    ]
}

async fn sweep_loop(shared: Arc<Shared>) {
    let period = Duration::from_millis((shared.config.heartbeat_timeout_ms / 4).max(50));
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.wait_for(|stopping| *stopping) => return,
        }
        if !shared.registry.sweep().is_empty() {
            shared.queue_changed.notify_waiters();
        }
        // publish the live workers' cards for the other coordinators sharing the store
        let ttl = shared.config.heartbeat_timeout();
        for card in shared.registry.cards_due(ttl / 3, &shared.consumer) {
            if let Err(error) = shared.store.put_worker_card(&card, ttl).await {
                tracing::warn!(%error, worker_id = %card.worker_id, "cannot publish the worker card");
            }
        }
    }
}

async fn renew_loop(shared: Arc<Shared>, in_flight: InFlight) {
    let period = Duration::from_millis((shared.config.lease_timeout_ms / 3).max(50));
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = shutdown.wait_for(|stopping| *stopping) => return,
        }
        let (entry_ids, job_ids): (Vec<String>, BTreeSet<String>) = {
            let in_flight = in_flight.lock().expect("in-flight lock");
            let entry_ids = in_flight
                .iter()
                .filter(|(_, entry)| {
                    entry
                        .worker_id
                        .as_ref()
                        .is_none_or(|worker_id| shared.registry.is_alive(worker_id))
                })
                .map(|(entry_id, _)| entry_id.clone())
                .collect();
            (
                entry_ids,
                in_flight
                    .values()
                    .map(|entry| entry.job_id.clone())
                    .collect(),
            )
        };
        if let Err(error) = shared.store.queue_renew(&shared.consumer, &entry_ids).await {
            tracing::warn!(%error, entries = entry_ids.len(), "cannot renew queue leases");
        }
        // a job cancelled through another coordinator: stop its candidates here too
        for job_id in job_ids {
            if let Ok(Some(_)) = shared.store.cancel_requested(&job_id).await
                && shared.signal_cancel_if_watched(&job_id)
            {
                tracing::info!(session_id = %job_id, "job cancelled elsewhere; stopping its candidates here");
            }
        }
    }
}

async fn dispatch_loop(shared: Arc<Shared>, in_flight: InFlight) {
    let mut shutdown = shared.shutdown.subscribe();
    let reclaim_period = Duration::from_millis((shared.config.lease_timeout_ms / 4).max(50));
    let mut last_reclaim = Instant::now() - reclaim_period;
    let mut store_attempt = 0u32;
    loop {
        if shared.is_shutting_down() {
            return;
        }
        // without a live worker this coordinator claims nothing: the entries stay in
        // the stream for a coordinator that has workers (or for when one registers)
        let alive_slots = shared.registry.alive_slots() as usize;
        let capacity = if alive_slots == 0 {
            0
        } else {
            alive_slots * 2 + 4
        };
        let available = capacity.saturating_sub(in_flight.lock().expect("in-flight lock").len());
        let mut entries: Vec<QueueEntry> = Vec::new();
        let mut failed = None;
        if available > 0 {
            if last_reclaim.elapsed() >= reclaim_period {
                last_reclaim = Instant::now();
                match shared
                    .store
                    .queue_reclaim(&shared.consumer, shared.config.lease_timeout(), available)
                    .await
                {
                    Ok(reclaimed) => {
                        for entry in &reclaimed {
                            tracing::info!(session_id = %entry.job_id, candidate_id = %entry.candidate_id, "reclaimed a lapsed lease");
                        }
                        entries.extend(reclaimed);
                    }
                    Err(error) => failed = Some(error),
                }
            }
            if failed.is_none() && entries.len() < available {
                match shared
                    .store
                    .queue_read(&shared.consumer, available - entries.len())
                    .await
                {
                    Ok(read) => entries.extend(read),
                    Err(error) => failed = Some(error),
                }
            }
        }
        if let Some(error) = failed {
            if !shared
                .store_backoff(store_attempt, &error, "read the queue")
                .await
            {
                return;
            }
            store_attempt += 1;
            continue;
        }
        store_attempt = 0;
        let mut started = 0;
        for entry in entries {
            {
                let mut in_flight = in_flight.lock().expect("in-flight lock");
                if in_flight.contains_key(&entry.entry_id) {
                    continue;
                }
                in_flight.insert(
                    entry.entry_id.clone(),
                    InFlightEntry {
                        job_id: entry.job_id.clone(),
                        worker_id: None,
                    },
                );
            }
            started += 1;
            let span = tracing::info_span!("candidate", session_id = %entry.job_id, candidate_id = %entry.candidate_id);
            tokio::spawn(tracing::Instrument::instrument(
                handle_entry(shared.clone(), in_flight.clone(), entry),
                span,
            ));
        }
        if started == 0 {
            let queue_changed = shared.queue_changed.notified();
            let slots_changed = shared.registry.slots_changed.notified();
            tokio::select! {
                _ = queue_changed => {}
                _ = slots_changed => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = shutdown.wait_for(|stopping| *stopping) => return,
            }
        }
    }
}

/// How one RunCandidate call ended.
enum CallOutcome {
    Response(RunCandidateResponse),
    Failed(Error),
    WorkerLost,
    Cancelled,
    ShuttingDown,
}

/// What to do with an entry after the handler returns.
enum Disposition {
    /// result recorded (or nothing to do): acknowledge
    Ack,
    /// leave it pending: the lease lapses and another delivery takes it
    LeavePending,
}

async fn handle_entry(shared: Arc<Shared>, in_flight: InFlight, entry: QueueEntry) {
    let disposition = run_entry(&shared, &in_flight, &entry).await;
    if let Disposition::Ack = disposition {
        let mut attempt = 0;
        while let Err(error) = shared.store.queue_ack(&entry.entry_id).await {
            if !shared.store_backoff(attempt, &error, "acknowledge").await {
                break;
            }
            attempt += 1;
        }
    }
    in_flight
        .lock()
        .expect("in-flight lock")
        .remove(&entry.entry_id);
    shared.progress.notify_waiters();
}

fn backoff(shared: &Shared, attempt: u32, salt: &str) -> Duration {
    let ceiling = (shared
        .config
        .retry_base_ms
        .saturating_mul(1u64 << attempt.min(16)))
    .min(shared.config.retry_max_ms)
    .max(1);
    let seed = now_ms()
        ^ salt.bytes().fold(0u64, |hash, byte| {
            hash.wrapping_mul(31).wrapping_add(byte as u64)
        });
    let jitter = SplitMix64::new(seed).unit();
    Duration::from_millis(((ceiling as f64) * (0.5 + 0.5 * jitter)) as u64)
}

fn to_request(candidate: &CandidateRecord, plan: &Plan, deadline_ms: u64) -> RunCandidateRequest {
    RunCandidateRequest {
        candidate_id: candidate.candidate_id.clone(),
        session_id: candidate.job_id.clone(),
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
        continue_on_error: false,
    }
}

fn step_outcomes(response: &RunCandidateResponse) -> Vec<StepOutcome> {
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
            error_message: step
                .error
                .as_ref()
                .map(|error| error.message.clone())
                .unwrap_or_default(),
            data: serde_json::from_str(&step.data_json).unwrap_or(Value::Null),
            duration_ms: step.duration_ms,
        })
        .collect()
}

async fn read_with_retry<T, F, Fut>(shared: &Shared, what: &str, mut call: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, crate::error::StoreError>>,
{
    let mut attempt = 0;
    loop {
        match call().await {
            Ok(value) => return Some(value),
            Err(error) => {
                if !shared.store_backoff(attempt, &error, what).await {
                    return None;
                }
                attempt += 1;
            }
        }
    }
}

async fn run_entry(shared: &Arc<Shared>, in_flight: &InFlight, entry: &QueueEntry) -> Disposition {
    let job_id = entry.job_id.as_str();
    let candidate_id = entry.candidate_id.as_str();
    let Some(job) = read_with_retry(shared, "read job", || shared.store.get_job(job_id)).await
    else {
        return Disposition::LeavePending;
    };
    let Some(job) = job else {
        return Disposition::Ack;
    };
    if job.is_finished() || job.cancel_requested {
        return Disposition::Ack;
    }
    if read_with_retry(shared, "read cancel", || {
        shared.store.cancel_requested(job_id)
    })
    .await
    .flatten()
    .is_some()
    {
        return Disposition::Ack;
    }
    let Some(candidate) = read_with_retry(shared, "read candidate", || {
        shared.store.get_candidate(job_id, candidate_id)
    })
    .await
    else {
        return Disposition::LeavePending;
    };
    let Some(candidate) = candidate else {
        return Disposition::Ack;
    };
    let Some(already) = read_with_retry(shared, "check result", || {
        shared.store.has_result(job_id, candidate_id)
    })
    .await
    else {
        return Disposition::LeavePending;
    };
    if already {
        return Disposition::Ack;
    }

    let mut cancel = shared.cancel_signal(job_id);
    let mut shutdown = shared.shutdown.subscribe();
    let deadline_ms = job.options.candidate_deadline_ms;
    let rpc_timeout = Duration::from_millis(deadline_ms + shared.config.rpc_grace_ms);
    let planner = HeuristicPlanner::default();
    let skills = shared.registry.skills();
    let mut plan = candidate.plan.clone();
    let mut adjustments: Vec<String> = Vec::new();
    let mut excluded: BTreeSet<String> = BTreeSet::new();
    let (mut timeouts, mut unavailable, mut internal, mut exhausted) = (0u32, 0u32, 0u32, 0u32);
    let mut count_delivery = true;
    let mut deliveries = 0;
    let started = Instant::now();

    let (response, last_error, worker_id) = loop {
        if *cancel.borrow() {
            return Disposition::Ack;
        }
        if count_delivery {
            let Some(count) = read_with_retry(shared, "count delivery", || {
                shared.store.bump_deliveries(job_id, candidate_id)
            })
            .await
            else {
                return Disposition::LeavePending;
            };
            deliveries = count;
            if count > shared.config.max_deliveries {
                let reason = format!(
                    "delivered {count} times (max_deliveries {})",
                    shared.config.max_deliveries
                );
                tracing::warn!(session_id = job_id, candidate_id, %reason, "dead-lettering");
                let result = failed_result(
                    candidate_id,
                    CandidateStatus::DeadLettered,
                    "DEAD_LETTERED",
                    &reason,
                    count,
                    "",
                    started,
                );
                if read_with_retry(shared, "dead-letter", || {
                    shared.store.dead_letter(entry, &reason)
                })
                .await
                .is_none()
                {
                    return Disposition::LeavePending;
                }
                record(shared, &job, &candidate, result, &[]).await;
                shared
                    .emit(
                        &job,
                        EventKind::CandidateDeadLettered,
                        candidate_id,
                        reason,
                        Value::Null,
                    )
                    .await;
                return Disposition::LeavePending; // acknowledged by dead_letter
            }
        }
        count_delivery = true;

        // wait for a slot on a live worker; with no live worker for a whole lease,
        // hand the entry back (its lease lapses and any coordinator may take it)
        let mut no_worker_since: Option<Instant> = None;
        let slot = loop {
            if let Some(slot) = shared
                .registry
                .try_acquire(&candidate.required_skills, &excluded)
            {
                break slot;
            }
            if shared.registry.alive_slots() == 0 {
                let since = *no_worker_since.get_or_insert_with(Instant::now);
                if since.elapsed() > shared.config.lease_timeout() {
                    tracing::info!(
                        session_id = job_id,
                        candidate_id,
                        "no live worker here; handing the entry back"
                    );
                    return Disposition::LeavePending;
                }
            } else {
                no_worker_since = None;
            }
            let slots_changed = shared.registry.slots_changed.notified();
            tokio::select! {
                _ = slots_changed => {}
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = cancel.wait_for(|cancelled| *cancelled) => return Disposition::Ack,
                _ = shutdown.wait_for(|stopping| *stopping) => return Disposition::LeavePending,
            }
        };
        let worker_id = slot.worker_id.clone();
        set_worker(in_flight, entry, Some(&worker_id));
        tracing::info!(session_id = job_id, candidate_id, worker_id = %worker_id, delivery = deliveries, "candidate dispatched");
        shared
            .emit(
                &job,
                EventKind::CandidateDispatched,
                candidate_id,
                format!("on {worker_id}"),
                json!({"worker_id": worker_id, "delivery": deliveries}),
            )
            .await;

        let mut client = slot.client.clone();
        let mut dead = slot.dead.clone();
        let mut request = tonic::Request::new(to_request(&candidate, &plan, deadline_ms));
        request.set_timeout(rpc_timeout);
        let outcome = tokio::select! {
            result = tokio::time::timeout(rpc_timeout + Duration::from_secs(1), client.run_candidate(request)) => match result {
                Ok(Ok(response)) => CallOutcome::Response(response.into_inner()),
                Ok(Err(status)) => CallOutcome::Failed(classify_status(&status)),
                Err(_) => CallOutcome::Failed(Error::new(ErrorCode::Timeout, format!("no answer within {} ms", rpc_timeout.as_millis()))),
            },
            _ = dead.wait_for(|is_dead| *is_dead) => CallOutcome::WorkerLost,
            _ = cancel.wait_for(|cancelled| *cancelled) => CallOutcome::Cancelled,
            _ = shutdown.wait_for(|stopping| *stopping) => CallOutcome::ShuttingDown,
        };
        drop(slot);
        set_worker(in_flight, entry, None);

        let error = match outcome {
            CallOutcome::Cancelled => {
                tracing::info!(session_id = job_id, candidate_id, worker_id = %worker_id, "candidate abandoned: job cancelled");
                cancel_on_worker(client, &worker_id, job_id, candidate_id).await;
                return Disposition::Ack;
            }
            CallOutcome::ShuttingDown => return Disposition::LeavePending,
            CallOutcome::WorkerLost => {
                tracing::warn!(session_id = job_id, candidate_id, worker_id = %worker_id, "worker lost mid-candidate; the lease will lapse and the candidate be reclaimed");
                shared
                    .emit(
                        &job,
                        EventKind::CandidateRetried,
                        candidate_id,
                        format!("worker {worker_id} stopped heartbeating; lease left to lapse"),
                        json!({"worker_id": worker_id}),
                    )
                    .await;
                set_worker(in_flight, entry, Some(&worker_id));
                // keep it marked as on the dead worker so the renewal skips it; the reclaimer takes it
                return Disposition::LeavePending;
            }
            CallOutcome::Response(response) => {
                if response.ok {
                    break (Some(response), None, worker_id);
                }
                let step_error = response.error.clone().unwrap_or_else(|| {
                    Error::new(ErrorCode::InternalError, "failed without an error")
                });
                let failed_step = response
                    .steps
                    .iter()
                    .find(|step| !step.ok)
                    .map(|step| step.step_id.clone())
                    .unwrap_or_default();
                match step_error.error_code() {
                    ErrorCode::InvalidParam | ErrorCode::NotFound | ErrorCode::Conflict
                        if (adjustments.len() as u32) < MAX_ADJUSTMENTS =>
                    {
                        match planner.adjust(&plan, &failed_step, &step_error, &skills) {
                            Some(adjustment) => {
                                tracing::info!(session_id = job_id, candidate_id, note = %adjustment.note, "step adjusted (ReAct)");
                                shared
                                    .emit(
                                        &job,
                                        EventKind::StepAdjusted,
                                        candidate_id,
                                        adjustment.note.clone(),
                                        json!({"step_id": failed_step}),
                                    )
                                    .await;
                                adjustments.push(adjustment.note);
                                plan = adjustment.plan;
                                continue;
                            }
                            None => break (Some(response), Some(step_error), worker_id),
                        }
                    }
                    ErrorCode::InternalError if internal < 1 => {
                        internal += 1;
                        step_error
                    }
                    _ => break (Some(response), Some(step_error), worker_id),
                }
            }
            CallOutcome::Failed(error) => error,
        };

        // an RPC-level (or retryable step) failure: the retry policy
        let code = error.error_code();
        let retry = match code {
            ErrorCode::Timeout => {
                timeouts += 1;
                timeouts <= 2
            }
            ErrorCode::ServiceUnavailable => {
                unavailable += 1;
                excluded.insert(worker_id.clone());
                if error.message.starts_with("worker unreachable") {
                    shared.registry.mark_unreachable(&worker_id);
                }
                unavailable <= 3
            }
            ErrorCode::ResourceExhausted => {
                exhausted += 1;
                count_delivery = false;
                exhausted <= MAX_EXHAUSTED_RETRIES
            }
            ErrorCode::InternalError => {
                internal += 1;
                internal <= 1
            }
            _ => false,
        };
        if !retry {
            break (None, Some(error), worker_id);
        }
        let attempt = timeouts + unavailable + internal + exhausted;
        let delay = backoff(shared, attempt, candidate_id);
        tracing::info!(session_id = job_id, candidate_id, worker_id = %worker_id, code = code.wire_name(), error = %error.message, retry_in_ms = delay.as_millis() as u64, "retrying candidate");
        shared
            .emit(
                &job,
                EventKind::CandidateRetried,
                candidate_id,
                format!("{}: {}", code.wire_name(), error.message),
                json!({"worker_id": worker_id, "retry_in_ms": delay.as_millis() as u64}),
            )
            .await;
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = cancel.wait_for(|cancelled| *cancelled) => return Disposition::Ack,
            _ = shutdown.wait_for(|stopping| *stopping) => return Disposition::LeavePending,
        }
    };

    let ok = response.as_ref().is_some_and(|response| response.ok);
    let steps = response.as_ref().map(step_outcomes).unwrap_or_default();
    let mut result = CandidateResult {
        candidate_id: candidate_id.to_string(),
        status: if ok {
            CandidateStatus::Finished
        } else {
            CandidateStatus::Failed
        },
        ok,
        worker_id: worker_id.clone(),
        attempts: deliveries,
        error_code: last_error
            .as_ref()
            .map(|error| error.error_code().wire_name().to_string())
            .unwrap_or_default(),
        error_message: last_error
            .as_ref()
            .map(|error| error.message.clone())
            .unwrap_or_default(),
        steps,
        artifacts: Vec::new(),
        duration_ms: started.elapsed().as_millis() as u64,
        finished_ms: now_ms(),
        plan: Some(plan),
        adjustments,
    };
    let artifacts_to_keep = if ok {
        response
            .map(|response| response.artifacts)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    result.artifacts = artifacts_to_keep
        .iter()
        .map(|artifact| crate::model::ArtifactMeta {
            candidate_id: candidate_id.to_string(),
            name: artifact.name.clone(),
            media_type: artifact.media_type.clone(),
            size: artifact.content.len() as u64,
        })
        .collect();
    if !record(shared, &job, &candidate, result, &artifacts_to_keep).await {
        return Disposition::LeavePending;
    }
    Disposition::Ack
}

/// Tells the worker to stop a candidate of a cancelled job, each call with a deadline.
async fn cancel_on_worker(
    mut client: WorkerClient<tonic::transport::Channel>,
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
        match tokio::time::timeout(
            CANCEL_RPC_TIMEOUT + Duration::from_millis(500),
            client.cancel_candidate(request),
        )
        .await
        {
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

fn failed_result(
    candidate_id: &str,
    status: CandidateStatus,
    code: &str,
    message: &str,
    attempts: u32,
    worker_id: &str,
    started: Instant,
) -> CandidateResult {
    CandidateResult {
        candidate_id: candidate_id.to_string(),
        status,
        ok: false,
        worker_id: worker_id.to_string(),
        attempts,
        error_code: code.to_string(),
        error_message: message.to_string(),
        steps: Vec::new(),
        artifacts: Vec::new(),
        duration_ms: started.elapsed().as_millis() as u64,
        finished_ms: now_ms(),
        plan: None,
        adjustments: Vec::new(),
    }
}

/// Records the result once; the first recording emits CandidateFinished and keeps
/// the artifacts. `false` when the store stayed down until shutdown.
async fn record(
    shared: &Arc<Shared>,
    job: &crate::model::JobRecord,
    candidate: &CandidateRecord,
    result: CandidateResult,
    artifacts: &[centroid_proto::v1::Artifact],
) -> bool {
    let job_id = job.job_id.as_str();
    let Some(first) = read_with_retry(shared, "record result", || {
        shared.store.record_result(job_id, &result)
    })
    .await
    else {
        return false;
    };
    if !first {
        tracing::info!(session_id = job_id, candidate_id = %candidate.candidate_id, "late duplicate result ignored");
        return true;
    }
    if !artifacts.is_empty() {
        artifacts::store_artifacts(shared, job_id, &candidate.candidate_id, artifacts).await;
    }
    let measured = evaluator::measure(&result.steps);
    tracing::info!(
        session_id = job_id,
        candidate_id = %candidate.candidate_id,
        ok = result.ok,
        worker_id = %result.worker_id,
        drc_violations = measured.drc_violations,
        duration_ms = result.duration_ms,
        "candidate finished"
    );
    shared
        .emit(
            job,
            EventKind::CandidateFinished,
            &candidate.candidate_id,
            if result.ok {
                "ok".to_string()
            } else {
                format!("{}: {}", result.error_code, result.error_message)
            },
            json!({
                "ok": result.ok,
                "status": result.status.as_str(),
                "worker_id": result.worker_id,
                "attempts": result.attempts,
                "duration_ms": result.duration_ms,
                "metrics": {
                    "drc_ran": measured.drc_ran,
                    "drc_violations": measured.drc_violations,
                    "lvs": measured.lvs,
                    "bbox_area_um2": measured.bbox_area_um2,
                    "device_area_um2": measured.device_area_um2,
                    "matching_score": measured.matching_score,
                },
                "adjustments": result.adjustments,
            }),
        )
        .await;
    shared.progress.notify_waiters();
    true
}

/// Runs a short plan outside the queue (e.g. `route.info` to learn the routing
/// pitch before planning), on any live worker with the skills, with a deadline.
pub(crate) async fn probe(
    shared: &Arc<Shared>,
    job_id: &str,
    plan: &Plan,
    deadline: Duration,
) -> Option<RunCandidateResponse> {
    let required: Vec<String> = plan.steps.iter().map(|step| step.skill.clone()).collect();
    if shared.registry.alive_slots() == 0 {
        return None;
    }
    let waited = Instant::now();
    let slot = loop {
        if let Some(slot) = shared.registry.try_acquire(&required, &BTreeSet::new()) {
            break slot;
        }
        if waited.elapsed() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let candidate_id = format!("{job_id}-probe");
    let request = RunCandidateRequest {
        candidate_id: candidate_id.clone(),
        session_id: job_id.to_string(),
        deadline_ms: deadline.as_millis() as u64,
        plan: plan
            .steps
            .iter()
            .map(|step| SkillCall {
                step_id: step.step_id.clone(),
                skill: step.skill.clone(),
                arguments_json: step.arguments.to_string(),
            })
            .collect(),
        continue_on_error: false,
    };
    let mut tonic_request = tonic::Request::new(request);
    tonic_request.set_timeout(deadline + Duration::from_secs(2));
    let mut client = slot.client.clone();
    match tokio::time::timeout(
        deadline + Duration::from_secs(3),
        client.run_candidate(tonic_request),
    )
    .await
    {
        Ok(Ok(response)) => Some(response.into_inner()),
        Ok(Err(status)) => {
            tracing::warn!(session_id = job_id, worker_id = %slot.worker_id, message = status.message(), "probe failed");
            None
        }
        Err(_) => None,
    }
}

/// The structured error of a failed call; a transport failure (the worker died or
/// hung up, no structured details) counts as SERVICE_UNAVAILABLE, not INTERNAL_ERROR.
fn classify_status(status: &tonic::Status) -> Error {
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
        .with_retryable(true);
    }
    error
}
