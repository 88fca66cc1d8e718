//! What the coordinator's tasks share: the configuration, the store, the worker
//! registry, the wake-ups between the dispatcher and the job drivers, the
//! per-job cancel signals and the shutdown flag — plus the two things every task
//! does with them: append a job event, and retry a store call while the store is
//! down.
//!
//! Every other module of the coordinator uses this one; this one uses none of
//! them (no import circle).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use centroid_planner::job_events::EventData;
use centroid_runtime::event_types;

use crate::candidate_times::CandidateTimes;
use crate::config::CoordinatorConfig;
use crate::error::StoreError;
use crate::farm_load::FarmLoad;
use crate::metrics::CoordinatorMetrics;
use crate::model::{EventJson, EventKind, EventRecord, JobInputs, JobRecord, Notice, now_ms};
use crate::planner::PlannerFactory;
use crate::registry::Registry;
use crate::store::Store;
use centroid_planner::advice::LlmCall;
use centroid_planner::case_memory::CaseMemory;
use centroid_planner::planner::Planner;

/// Longest pause between two tries of a store call.
const STORE_RETRY_MAX: Duration = Duration::from_secs(2);
/// First pause after a failed store call (doubled per try).
const STORE_RETRY_FIRST: Duration = Duration::from_millis(100);

/// Why a task stopped short: the coordinator shuts down, or the store failed
/// for good (the error says which record).
#[derive(Debug, thiserror::Error)]
pub(crate) enum Interrupted {
    #[error("the coordinator shuts down")]
    Shutdown,
    #[error("store: {0}")]
    Store(StoreError),
}

/// A job's planner and the routing pitch it was made for.
type JobPlanner = (Option<f64>, Arc<dyn Planner>);

pub(crate) struct Context {
    pub config: CoordinatorConfig,
    pub store: Arc<dyn Store>,
    pub registry: Arc<Registry>,
    /// this coordinator's consumer name in the queue's consumer group
    pub consumer: String,
    /// this process's identity as a job driver (consumer name + a per-start id)
    pub driver_id: String,
    /// a job event was appended
    pub events_changed: Notify,
    /// candidates were enqueued or a job ended
    pub queue_changed: Notify,
    /// a candidate finished or a cancel arrived (job drivers wake up)
    pub progress: Notify,
    /// the driver task of each job this process drives
    pub drivers: Mutex<HashMap<String, JoinHandle<()>>>,
    cancel_signals: Mutex<HashMap<String, watch::Sender<bool>>>,
    /// makes the planner of each job
    planners: Arc<dyn PlannerFactory>,
    /// the planner of each job this process plans or adjusts, with the routing
    /// pitch it was made for
    job_planners: Mutex<HashMap<String, JobPlanner>>,
    pub shutdown: watch::Sender<bool>,
    pub metrics: CoordinatorMetrics,
    /// the long-term memory (cases, failure patterns), when there is one
    pub memory: Option<Arc<dyn CaseMemory>>,
    /// what every job has out, as the drivers share the slots by it
    pub farm_load: FarmLoad,
    /// each job's typical candidate time: whether its entries may prefetch
    pub candidate_times: CandidateTimes,
}

impl Context {
    pub fn new(
        config: CoordinatorConfig,
        store: Arc<dyn Store>,
        registry: Arc<Registry>,
        planners: Arc<dyn PlannerFactory>,
        memory: Option<Arc<dyn CaseMemory>>,
    ) -> Context {
        let consumer = config.consumer_name();
        let prefetch_below_ms = config.prefetch_below_ms;
        let driver_id = format!(
            "{consumer}/{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        Context {
            config,
            store,
            registry,
            consumer,
            driver_id,
            events_changed: Notify::new(),
            queue_changed: Notify::new(),
            progress: Notify::new(),
            drivers: Mutex::new(HashMap::new()),
            cancel_signals: Mutex::new(HashMap::new()),
            planners,
            job_planners: Mutex::new(HashMap::new()),
            shutdown: watch::Sender::new(false),
            metrics: CoordinatorMetrics::new(),
            memory,
            farm_load: FarmLoad::default(),
            candidate_times: CandidateTimes::new(prefetch_below_ms),
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Resolves once shutdown has been requested.
    pub async fn shutting_down(&self) {
        let mut shutdown = self.shutdown.subscribe();
        let _ = shutdown.wait_for(|stopping| *stopping).await;
    }

    /// The cancel signal of a job (created on first use).
    pub fn cancel_signal(&self, job_id: &str) -> watch::Receiver<bool> {
        self.cancel_signals
            .lock()
            .expect("cancel lock")
            .entry(job_id.to_string())
            .or_insert_with(|| watch::Sender::new(false))
            .subscribe()
    }

    pub fn signal_cancel(&self, job_id: &str) {
        self.cancel_signals
            .lock()
            .expect("cancel lock")
            .entry(job_id.to_string())
            .or_insert_with(|| watch::Sender::new(false))
            .send_replace(true);
    }

    /// Signals a job's cancellation to the tasks of this process watching it;
    /// `false` when none watches it or it was signalled already.
    pub fn signal_cancel_if_watched(&self, job_id: &str) -> bool {
        let signals = self.cancel_signals.lock().expect("cancel lock");
        match signals.get(job_id) {
            Some(sender) if !*sender.borrow() => {
                sender.send_replace(true);
                true
            }
            _ => false,
        }
    }

    /// Drops what this process kept for a job that ended.
    pub fn forget_job(&self, job_id: &str) {
        self.cancel_signals
            .lock()
            .expect("cancel lock")
            .remove(job_id);
        self.job_planners
            .lock()
            .expect("planners lock")
            .remove(job_id);
        self.candidate_times.forget(job_id);
    }

    /// The job's planner, made once per job (and again when its routing pitch
    /// changes) by the configured [`PlannerFactory`].
    pub fn planner_with_inputs(&self, job: &JobRecord, inputs: &JobInputs) -> Arc<dyn Planner> {
        let mut planners = self.job_planners.lock().expect("planners lock");
        if let Some((pitch, planner)) = planners.get(&job.job_id)
            && *pitch == job.route_pitch_um
        {
            return planner.clone();
        }
        let planner = self.planners.planner_for(job, inputs);
        planners.insert(job.job_id.clone(), (job.route_pitch_um, planner.clone()));
        planner
    }

    /// As [`Context::planner_with_inputs`], reading the inputs from the store when
    /// the planner is not made yet; `None` when they are gone.
    pub async fn job_planner(
        &self,
        job: &JobRecord,
    ) -> Result<Option<Arc<dyn Planner>>, Interrupted> {
        if let Some((pitch, planner)) = self
            .job_planners
            .lock()
            .expect("planners lock")
            .get(&job.job_id)
            && *pitch == job.route_pitch_um
        {
            return Ok(Some(planner.clone()));
        }
        let inputs = self
            .with_store_retry("read inputs", || self.store.get_inputs(&job.job_id))
            .await?;
        Ok(inputs.map(|inputs| self.planner_with_inputs(job, &inputs)))
    }

    /// Runs a store call until it succeeds, pausing with back-off while the store
    /// is down (a transient error, [`StoreError::is_transient`]); a permanent
    /// error (a corrupt record, one that must exist and does not) is returned at
    /// once, for the caller to fail what it was doing with it. The one store-error
    /// policy of the coordinator.
    pub async fn with_store_retry<T, Call, Attempt>(
        &self,
        what: &str,
        mut call: Call,
    ) -> Result<T, Interrupted>
    where
        Call: FnMut() -> Attempt,
        Attempt: Future<Output = Result<T, StoreError>>,
    {
        let mut attempt = 0u32;
        loop {
            match call().await {
                Ok(value) => return Ok(value),
                Err(error) if !error.is_transient() => {
                    tracing::error!(%error, what, "store call failed for good");
                    return Err(Interrupted::Store(error));
                }
                Err(error) => {
                    let delay = (STORE_RETRY_FIRST * 2u32.pow(attempt.min(5))).min(STORE_RETRY_MAX);
                    tracing::warn!(%error, what, retry_in_ms = delay.as_millis() as u64, "store unavailable; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = self.shutting_down() => return Err(Interrupted::Shutdown),
                    }
                    attempt += 1;
                }
            }
        }
    }

    /// Logs each model call and appends it to the job's log as an `LlmCall` event.
    pub async fn emit_llm_calls(
        &self,
        job: &JobRecord,
        candidate_id: &str,
        calls: &[LlmCall],
    ) -> Result<(), Interrupted> {
        for call in calls {
            self.metrics.llm_call(
                &call.role,
                &call.outcome,
                call.prompt_tokens,
                call.completion_tokens,
            );
            tracing::info!(
                session_id = %job.job_id,
                candidate_id,
                role = %call.role,
                iteration = call.iteration,
                model = %call.model,
                prompt_tokens = call.prompt_tokens,
                completion_tokens = call.completion_tokens,
                duration_ms = call.duration_ms,
                attempts = call.attempts,
                outcome = %call.outcome,
                fallback_reason = %call.reason,
                trace_id = %call.trace_id,
                event_type = event_types::TOKEN_USAGE,
                "llm call"
            );
            // the progress line says why a call was not used (never the prompt)
            let said = match call.outcome.as_str() {
                "used" => &call.summary,
                _ => &call.reason,
            };
            let message = format!(
                "{} call {} ({}): {said}",
                call.role, call.outcome, call.model
            );
            let data = EventData::LlmCall(call.clone());
            self.emit(job, EventKind::LlmCall, candidate_id, message, data)
                .await?;
        }
        Ok(())
    }

    /// Appends an event to the job's log in the job's current state (retrying
    /// while the store is down).
    pub async fn emit(
        &self,
        job: &JobRecord,
        kind: EventKind,
        candidate_id: &str,
        message: impl Into<String>,
        data: EventData,
    ) -> Result<(), Interrupted> {
        let event = Context::event_of(job, kind, candidate_id, message, data);
        self.append_event(job, event).await
    }

    /// The event [`Context::emit`] appends, for a store call that appends it with
    /// other writes (then [`Context::event_appended`]).
    pub(crate) fn event_of(
        job: &JobRecord,
        kind: EventKind,
        candidate_id: &str,
        message: impl Into<String>,
        data: EventData,
    ) -> EventRecord {
        EventRecord {
            kind,
            timestamp_ms: now_ms(),
            state: job.state(),
            candidate_id: candidate_id.to_string(),
            iteration: job.iteration,
            message: message.into(),
            data: EventJson::of(&data),
            last: kind.is_last(),
        }
    }

    /// What follows an event appended by another store call than
    /// [`Context::emit`]'s: its log line, the job's watchers woken.
    pub(crate) fn event_appended(&self, job: &JobRecord, event: &EventRecord) {
        if event.kind != EventKind::LlmCall {
            log_event(job, event);
        }
        self.events_changed.notify_waiters();
    }

    /// As [`Context::emit`], for tasks that go on whatever becomes of the event
    /// (a dispatch, a retry): the facts it reports are in the store already, so an
    /// event the store refuses is logged, not fatal.
    pub async fn report(
        &self,
        job: &JobRecord,
        kind: EventKind,
        candidate_id: &str,
        message: impl Into<String>,
        data: EventData,
    ) {
        let event = Context::event_of(job, kind, candidate_id, message, data);
        self.report_event(job, event).await;
    }

    /// As [`Context::report`], for an event made already ([`Context::event_of`]).
    pub(crate) async fn report_event(&self, job: &JobRecord, event: EventRecord) {
        let (kind, candidate_id) = (event.kind, event.candidate_id.clone());
        if let Err(interrupted) = self.append_event(job, event).await {
            tracing::warn!(session_id = %job.job_id, %candidate_id, ?kind, %interrupted, "event not appended");
        }
    }

    /// Appends a session's notice (a transition's event, in the state it names).
    pub(crate) async fn emit_notice(
        &self,
        job: &JobRecord,
        candidate_id: &str,
        notice: &Notice,
    ) -> Result<(), Interrupted> {
        let event = EventRecord {
            kind: notice.kind,
            timestamp_ms: now_ms(),
            state: notice.state,
            candidate_id: candidate_id.to_string(),
            iteration: job.iteration,
            message: notice.message.clone(),
            data: EventJson::of(&notice.data),
            last: notice.kind.is_last(),
        };
        self.append_event(job, event).await
    }

    async fn append_event(&self, job: &JobRecord, event: EventRecord) -> Result<(), Interrupted> {
        if event.kind != EventKind::LlmCall {
            log_event(job, &event);
        }
        self.with_store_retry("append event", || {
            self.store.append_event(&job.job_id, &event)
        })
        .await?;
        self.events_changed.notify_waiters();
        Ok(())
    }
}

/// The event class of seed 000 §4.6.1 a job event belongs to.
fn event_type(kind: EventKind) -> &'static str {
    match kind {
        EventKind::StateChanged
        | EventKind::Completed
        | EventKind::Cancelled
        | EventKind::WaitingForWorkers => event_types::SESSION,
        EventKind::PlanCreated | EventKind::StepAdjusted | EventKind::Planner => event_types::PLAN,
        EventKind::CandidateDispatched
        | EventKind::CandidateFinished
        | EventKind::CandidateRetried => event_types::TOOL_CALL,
        EventKind::Evaluation => event_types::EVALUATION,
        EventKind::Iteration => event_types::ITERATION,
        EventKind::Memory => event_types::RETRIEVAL,
        EventKind::LlmCall => event_types::TOKEN_USAGE,
        EventKind::Failed | EventKind::CandidateDeadLettered => event_types::ERROR,
    }
}

/// The tracing target of the log lines of per-candidate events (a candidate
/// dispatched, finished, evaluated): logged at debug, so a farm dispatching thousands
/// of candidates a second does not write a line for each at the default `info`;
/// `CENTROID_LOG=info,centroid::candidate_events=debug` shows them.
pub const CANDIDATE_EVENTS_TARGET: &str = "centroid::candidate_events";

/// Whether an event reports one candidate's ordinary course (its dispatch, its
/// finish, its evaluation) rather than the job's, a retry or a failure.
fn is_per_candidate(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::CandidateDispatched | EventKind::CandidateFinished | EventKind::Evaluation
    )
}

/// Every job event is also a log line of its class (the JSON log's `event_type`),
/// with the job's session and trace ids and the event's data (its JSON text as
/// stored) — the one log line of each fact a job event records (dispatches,
/// retries, transitions, the end …). Errors at warn, per-candidate events at debug
/// ([`CANDIDATE_EVENTS_TARGET`]), the rest at info.
fn log_event(job: &JobRecord, event: &EventRecord) {
    let event_type = event_type(event.kind);
    let data_json = DataJson(&event.data);
    let (kind, candidate_id, message) = (event.kind, event.candidate_id.as_str(), &event.message);
    let (iteration, state) = (event.iteration, event.state.as_str());
    if event_type == event_types::ERROR {
        tracing::warn!(session_id = %job.job_id, trace_id = %job.trace_id, candidate_id, event_type, iteration, state, event = ?kind, %data_json, "{message}");
    } else if is_per_candidate(kind) {
        tracing::debug!(target: CANDIDATE_EVENTS_TARGET, session_id = %job.job_id, trace_id = %job.trace_id, candidate_id, event_type, iteration, state, event = ?kind, %data_json, "{message}");
    } else {
        tracing::info!(session_id = %job.job_id, trace_id = %job.trace_id, candidate_id, event_type, iteration, state, event = ?kind, %data_json, "{message}");
    }
}

/// An event's data as its log line shows it: the stored JSON text (`{}` for none).
struct DataJson<'a>(&'a EventJson);

impl std::fmt::Display for DataJson<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_null() {
            formatter.write_str("{}")
        } else {
            formatter.write_str(self.0.as_str())
        }
    }
}
