//! The worker's shared state: the pool and the compiled skill schemas, admission of
//! candidates (a free slot, else a place in the waiting room — `prefetch` of them,
//! see [`crate::waiting_room`] — else RESOURCE_EXHAUSTED at once),
//! per-candidate cancellation, health, and the drain. The gRPC service
//! (`service.rs`), the registration task and `node.rs` all hold it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use centroid_proto::v1::{
    DrainResponse, HealthResponse, RunCandidateRequest, RunCandidateResponse, SlotHealth,
};
use centroid_proto::{Error, ErrorCode, PROTOCOL_VERSION};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument;

use crate::cancel::CancelRegistry;
use crate::candidate::{self, CandidateContext};
use crate::metrics::WorkerMetrics;
use crate::pool::{Admitted, Pool};
use crate::registration::{RegistrationHandle, WorkerReport};
use crate::schema_check::CompiledSkillSchemas;

/// How long in-flight candidates get, after the grace period ran out and they
/// were told to stop, to give their slots back.
const FAIL_BACK_WAIT: Duration = Duration::from_secs(10);

/// Longest deadline a candidate can ask for (a week): keeps `now + deadline` finite.
const MAX_CANDIDATE_DEADLINE_MS: u64 = 7 * 24 * 3600 * 1000;

/// Everything the service, the registration task and the drain share.
pub struct WorkerState {
    pub worker_id: String,
    pool: Arc<Pool>,
    catalog: Arc<CompiledSkillSchemas>,
    draining: AtomicBool,
    /// number of RunCandidate calls between admission and answer
    in_flight: watch::Sender<usize>,
    drain_grace_expired: watch::Sender<bool>,
    /// the admitted candidates, cancellable by id
    cancels: Arc<CancelRegistry>,
    default_drain_grace: Duration,
    default_deadline: Duration,
    drain_report: tokio::sync::Mutex<Option<DrainResponse>>,
    registration: Mutex<Option<RegistrationHandle>>,
    pub metrics: Arc<WorkerMetrics>,
    /// longest plan a candidate may bring
    max_plan_steps: usize,
}

impl std::fmt::Debug for WorkerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerState")
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

impl WorkerState {
    pub fn new(
        worker_id: String,
        pool: Arc<Pool>,
        catalog: CompiledSkillSchemas,
        default_drain_grace: Duration,
        default_deadline: Duration,
        max_plan_steps: usize,
    ) -> Arc<WorkerState> {
        Arc::new(WorkerState {
            worker_id,
            pool,
            catalog: Arc::new(catalog),
            draining: AtomicBool::new(false),
            in_flight: watch::Sender::new(0),
            drain_grace_expired: watch::Sender::new(false),
            cancels: CancelRegistry::new(),
            default_drain_grace,
            default_deadline,
            drain_report: tokio::sync::Mutex::new(None),
            registration: Mutex::new(None),
            metrics: Arc::new(WorkerMetrics::default()),
            max_plan_steps,
        })
    }

    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    pub fn catalog(&self) -> &Arc<CompiledSkillSchemas> {
        &self.catalog
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    pub fn default_drain_grace(&self) -> Duration {
        self.default_drain_grace
    }

    /// Hands the registration task to the state, so the drain can deregister.
    pub fn attach_registration(&self, handle: RegistrationHandle) {
        *self.registration.lock().expect("registration lock") = Some(handle);
    }

    fn take_registration(&self) -> Option<RegistrationHandle> {
        self.registration.lock().expect("registration lock").take()
    }

    fn enter_in_flight(self: &Arc<Self>) -> InFlightGuard {
        self.in_flight.send_modify(|count| *count += 1);
        InFlightGuard {
            state: self.clone(),
        }
    }

    /// Stops taking candidates, waits for in-flight ones up to `grace`, fails the
    /// rest back (SERVICE_UNAVAILABLE, retryable), then deregisters. Idempotent:
    /// a second call waits for the first and returns its report.
    pub async fn drain(&self, grace: Duration) -> DrainResponse {
        let mut report = self.drain_report.lock().await;
        if let Some(report) = report.as_ref() {
            return *report;
        }
        self.draining.store(true, Ordering::SeqCst);
        // the calls waiting for a slot have not started: answered SERVICE_UNAVAILABLE
        // (retryable) at once, the coordinator runs them elsewhere
        let sent_away = self.pool.close_waiting_room();
        let mut in_flight = self.in_flight.subscribe();
        let in_flight_at_start = *in_flight.borrow();
        tracing::info!(
            in_flight = in_flight_at_start,
            sent_away,
            grace_ms = grace.as_millis() as u64,
            "draining"
        );
        let finished_in_time = tokio::time::timeout(grace, in_flight.wait_for(|count| *count == 0))
            .await
            .is_ok();
        let mut failed_back = 0;
        if !finished_in_time {
            failed_back = *in_flight.borrow();
            tracing::warn!(
                failing_back = failed_back,
                "drain grace period ran out; failing in-flight candidates back"
            );
            self.drain_grace_expired.send_replace(true);
            let _ =
                tokio::time::timeout(FAIL_BACK_WAIT, in_flight.wait_for(|count| *count == 0)).await;
        }
        if let Some(registration) = self.take_registration() {
            registration.deregister("drained").await;
        }
        let drained = DrainResponse {
            finished: in_flight_at_start.saturating_sub(failed_back + sent_away) as u32,
            failed_back: (failed_back + sent_away) as u32,
        };
        tracing::info!(
            finished = drained.finished,
            failed_back = drained.failed_back,
            "drained"
        );
        *report = Some(drained);
        drained
    }

    /// Stops a running candidate: its call into KLayout is abandoned, the slot's
    /// process group killed and replaced, and its RunCandidate fails with
    /// CANCELLED. `false` when no such candidate runs here (or it was cancelled already).
    pub fn cancel_candidate(&self, candidate_id: &str, reason: &str) -> bool {
        let reason = if reason.is_empty() {
            "cancelled by request"
        } else {
            reason
        };
        let found = self.cancels.cancel(candidate_id, reason);
        if found {
            tracing::info!(candidate_id, %reason, "cancelling candidate");
        } else {
            tracing::info!(candidate_id, %reason, "cancel request for a candidate not running here");
        }
        found
    }

    /// Deregisters (if registered) without draining: for a shutdown after a fatal error.
    pub async fn stop_registration(&self, reason: &str) {
        if let Some(registration) = self.take_registration() {
            registration.deregister(reason).await;
        }
    }

    pub fn health(&self) -> HealthResponse {
        let statuses = self.pool.statuses();
        HealthResponse {
            worker_id: self.worker_id.clone(),
            protocol_version: PROTOCOL_VERSION,
            draining: self.is_draining(),
            slots: self.pool.slot_count() as u32,
            free_slots: self.pool.free_slot_count() as u32,
            prefetch: self.pool.prefetch() as u32,
            waiting: self.pool.waiting_count() as u32,
            most_admitted: self.pool.most_admitted() as u32,
            slot_health: statuses
                .iter()
                .enumerate()
                .map(|(index, status)| SlotHealth {
                    index: index as u32,
                    pid: status.pid,
                    busy: status.busy,
                    candidate_id: status.candidate_id.clone(),
                    calls_forwarded: status.calls_forwarded,
                    restarts: status.restarts(),
                })
                .collect(),
            klayout_version: self.catalog.klayout_version.clone(),
            rejected_busy: self.pool.rejected_busy_count(),
        }
    }

    /// Runs a candidate; `trace_id` (from the caller's `traceparent`, may be empty)
    /// goes on its span and to the skill server.
    pub(crate) async fn run_candidate(
        self: &Arc<Self>,
        request: RunCandidateRequest,
        trace_id: String,
    ) -> Result<RunCandidateResponse, Error> {
        check_request(&request, self.max_plan_steps)?;
        let in_flight_guard = self.enter_in_flight();
        if self.is_draining() {
            return Err(
                Error::new(ErrorCode::ServiceUnavailable, "worker is draining")
                    .with_retryable(true),
            );
        }
        let admitted = self.pool.admit(&request.candidate_id);
        let deadline_budget = match request.deadline_ms {
            0 => self.default_deadline,
            milliseconds => Duration::from_millis(milliseconds.min(MAX_CANDIDATE_DEADLINE_MS)),
        };
        // the wait for a slot counts against the deadline (the caller's RPC timeout does)
        let deadline = Instant::now() + deadline_budget;
        let (cancel_guard, mut cancel) = self.cancels.register(&request.candidate_id);
        let lease = match admitted {
            Admitted::Now(lease) => *lease,
            Admitted::Wait(waiting) => {
                tokio::select! {
                    lease = waiting.lease() => lease.ok_or_else(not_started_draining)?,
                    cancelled = cancel.wait_for(Option::is_some) => {
                        let reason = cancelled
                            .map(|reason| reason.clone().unwrap_or_default())
                            .unwrap_or_default();
                        tracing::info!(candidate_id = %request.candidate_id, %reason, "cancelled while waiting for a slot");
                        return Err(Error::new(ErrorCode::Cancelled, reason).with_retryable(false));
                    }
                }
            }
            Admitted::Full => {
                let slots = self.pool.slot_count();
                let prefetch = self.pool.prefetch();
                return Err(Error::new(
                    ErrorCode::ResourceExhausted,
                    format!("all {slots} slots are busy and all {prefetch} waiting places taken"),
                )
                .with_retryable(true)
                .with_details(serde_json::json!({"slots": slots, "prefetch": prefetch})));
            }
            Admitted::Closed => return Err(not_started_draining()),
        };
        let span = tracing::info_span!(
            "candidate",
            candidate_id = %request.candidate_id,
            session_id = %request.session_id,
            trace_id = %trace_id,
            slot = lease.index(),
        );
        let context = CandidateContext {
            worker_id: self.worker_id.clone(),
            catalog: self.catalog.clone(),
            drain_grace_expired: self.drain_grace_expired.subscribe(),
            cancel,
            trace_id,
        };
        let metrics = self.metrics.clone();
        // Its own task: a client that hangs up must not cancel a call half-way
        // through the child's stdio.
        let candidate_task = tokio::spawn(
            async move {
                let _in_flight_guard = in_flight_guard;
                let _cancel_guard = cancel_guard;
                tracing::info!(steps = request.plan.len(), "candidate started");
                let started = std::time::Instant::now();
                let result = candidate::run_candidate(lease, request, deadline, context).await;
                let seconds = started.elapsed().as_secs_f64();
                match &result {
                    Ok(response) => {
                        let code = response.error.as_ref().map(|error| error.error_code().wire_name()).unwrap_or("");
                        metrics.candidate_ended(response.ok, code, seconds)
                    }
                    Err(error) => metrics.candidate_ended(false, error.error_code().wire_name(), seconds),
                }
                match &result {
                    Ok(response) => tracing::info!(ok = response.ok, duration_ms = response.duration_ms, "candidate finished"),
                    Err(error) if error.error_code() == ErrorCode::Cancelled => tracing::info!(error = %error.message, "candidate cancelled"),
                    Err(error) => tracing::warn!(error_code = error.error_code().wire_name(), error = %error.message, "candidate failed"),
                }
                result
            }
            .instrument(span),
        );
        candidate_task.await.unwrap_or_else(|join_error| {
            Err(Error::new(
                ErrorCode::InternalError,
                format!("candidate task failed: {join_error}"),
            ))
        })
    }
}

/// A call that will not start here because the worker drains: retryable elsewhere.
fn not_started_draining() -> Error {
    Error::new(
        ErrorCode::ServiceUnavailable,
        "worker is draining: the candidate was not started",
    )
    .with_retryable(true)
}

struct InFlightGuard {
    state: Arc<WorkerState>,
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.state.in_flight.send_modify(|count| *count -= 1);
    }
}

fn check_request(request: &RunCandidateRequest, max_plan_steps: usize) -> Result<(), Error> {
    if request.plan.len() > max_plan_steps {
        return Err(Error::new(
            ErrorCode::ResourceExhausted,
            format!(
                "the plan has {} steps; this worker's limit is {max_plan_steps} (max_plan_steps)",
                request.plan.len()
            ),
        )
        .with_retryable(false)
        .with_details(serde_json::json!({"limit": "max_plan_steps", "value": max_plan_steps})));
    }
    let refuse = |message: &str| {
        Err(Error::new(ErrorCode::InvalidParam, message.to_string()).with_retryable(false))
    };
    if request.candidate_id.is_empty() {
        return refuse("candidate_id is empty");
    }
    if request.plan.is_empty() {
        return refuse("plan has no steps");
    }
    if let Some(step) = request.plan.iter().find(|step| step.skill.is_empty()) {
        return refuse(&format!("step `{}` names no skill", step.step_id));
    }
    if let Some(error) = crate::candidate_inputs::refusal(&request.inputs) {
        return Err(error);
    }
    Ok(())
}

impl WorkerReport for WorkerState {
    fn worker_id(&self) -> String {
        self.worker_id.clone()
    }

    fn slot_count(&self) -> u32 {
        self.pool.slot_count() as u32
    }

    fn prefetch(&self) -> u32 {
        self.pool.prefetch() as u32
    }

    fn free_slots(&self) -> u32 {
        self.pool.free_slot_count() as u32
    }

    fn running_candidates(&self) -> Vec<String> {
        self.pool.running_candidates()
    }

    fn is_draining(&self) -> bool {
        WorkerState::is_draining(self)
    }

    fn skill_names(&self) -> Vec<String> {
        self.catalog.skill_names()
    }

    fn klayout_version(&self) -> String {
        self.catalog.klayout_version.clone()
    }
}

/// What the operator's endpoint (`--metrics-listen`) asks the worker.
pub struct WorkerProbe(pub Arc<WorkerState>);

#[tonic::async_trait]
impl centroid_runtime::OperationsProbe for WorkerProbe {
    async fn metrics(&self) -> String {
        self.0.metrics.render(&self.0.pool, self.0.is_draining())
    }

    /// Ready while not draining and every slot has a live KLayout process.
    async fn ready(&self) -> Result<(), String> {
        if self.0.is_draining() {
            return Err("draining".into());
        }
        let statuses = self.0.pool.statuses();
        let without_process = statuses.iter().filter(|status| status.pid == 0).count();
        match without_process {
            0 => Ok(()),
            count => Err(format!(
                "{count} of {} slots have no KLayout process",
                statuses.len()
            )),
        }
    }
}
