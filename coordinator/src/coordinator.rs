//! The library face of the coordinator: [`Coordinator`] with `submit`, `watch`,
//! `get`, `list`, `cancel`, `fetch_artifact` and the worker registry. The gRPC
//! service wraps it; `centroid run` can use it in-process with a
//! [`crate::store::MemoryStore`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use centroid_schemas::{InputFile, InputIssue, TaskContext, TaskInputs};
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;

use crate::config::CoordinatorConfig;
use crate::error::{CoordinatorError, StoreError};
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventKind, EventRecord, JobInputs, JobOptions,
    JobRecord, JobState, now_ms,
};
use crate::registry::Registry;
use crate::store::Store;
use crate::{dispatcher, session};

/// What the caller may set per job (zeros mean "the default").
#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    pub name: String,
    pub candidates_per_iteration: u32,
    pub max_iterations: u32,
    pub seed: u64,
    pub time_budget_ms: u64,
    pub candidate_deadline_ms: u64,
    pub noop_plan: bool,
    pub sleep_ms: u64,
}

#[derive(Debug, Clone)]
pub struct Submitted {
    pub job_id: String,
    pub warnings: Vec<InputIssue>,
}

/// A job with its candidates, results and kept artifacts.
#[derive(Debug, Clone)]
pub struct JobView {
    pub job: JobRecord,
    pub candidates: Vec<CandidateRecord>,
    pub results: HashMap<String, CandidateResult>,
    pub artifacts: Vec<ArtifactMeta>,
}

pub(crate) struct Shared {
    pub config: CoordinatorConfig,
    pub store: Arc<dyn Store>,
    pub registry: Arc<Registry>,
    pub consumer: String,
    /// this process's identity as a job driver (consumer name + a per-start id)
    pub driver_id: String,
    pub events_changed: Notify,
    pub queue_changed: Notify,
    pub progress: Notify,
    drivers: Mutex<HashMap<String, JoinHandle<()>>>,
    cancel_signals: Mutex<HashMap<String, watch::Sender<bool>>>,
    pub shutdown: watch::Sender<bool>,
}

impl Shared {
    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
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

    pub fn forget_job_signals(&self, job_id: &str) {
        self.cancel_signals
            .lock()
            .expect("cancel lock")
            .remove(job_id);
    }

    /// Sleeps with back-off after a store failure; `false` when shutting down.
    pub async fn store_backoff(&self, attempt: u32, error: &StoreError, what: &str) -> bool {
        let delay = Duration::from_millis((100u64 << attempt.min(5)).min(2_000));
        tracing::warn!(%error, what, retry_in_ms = delay.as_millis() as u64, "store unavailable; retrying");
        let mut shutdown = self.shutdown.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(delay) => true,
            _ = shutdown.wait_for(|stopping| *stopping) => false,
        }
    }

    /// Appends an event (retrying while the store is down).
    pub async fn emit(
        &self,
        job: &JobRecord,
        kind: EventKind,
        candidate_id: &str,
        message: impl Into<String>,
        data: serde_json::Value,
    ) {
        let last = matches!(
            kind,
            EventKind::Completed | EventKind::Failed | EventKind::Cancelled
        );
        let event = EventRecord {
            kind,
            timestamp_ms: now_ms(),
            state: job.state,
            candidate_id: candidate_id.to_string(),
            iteration: job.iteration,
            message: message.into(),
            data,
            last,
        };
        let mut attempt = 0;
        loop {
            match self.store.append_event(&job.job_id, &event).await {
                Ok(_) => break,
                Err(error) => {
                    if !self.store_backoff(attempt, &error, "append event").await {
                        return;
                    }
                    attempt += 1;
                }
            }
        }
        self.events_changed.notify_waiters();
    }

    /// Starts the driver of a job unless one runs.
    pub fn spawn_driver(self: &Arc<Self>, job_id: &str) {
        let mut drivers = self.drivers.lock().expect("drivers lock");
        if drivers
            .get(job_id)
            .is_some_and(|handle| !handle.is_finished())
        {
            return;
        }
        let shared = self.clone();
        let id = job_id.to_string();
        let span = tracing::info_span!("session", session_id = %job_id);
        drivers.insert(
            job_id.to_string(),
            tokio::spawn(tracing::Instrument::instrument(
                session::drive(shared, id),
                span,
            )),
        );
    }
}

/// The coordinator: job sessions, the dispatcher and the worker registry.
#[derive(Clone)]
pub struct Coordinator {
    pub(crate) shared: Arc<Shared>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Coordinator {
    /// Starts the dispatcher and resumes every unfinished job of the store.
    pub async fn start(
        config: CoordinatorConfig,
        store: Arc<dyn Store>,
    ) -> Result<Coordinator, CoordinatorError> {
        let registry = Registry::new(config.heartbeat_timeout());
        let consumer = config.consumer_name();
        let driver_id = format!(
            "{consumer}/{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let shared = Arc::new(Shared {
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
            shutdown: watch::Sender::new(false),
        });
        let mut tasks = Vec::new();
        tasks.extend(dispatcher::spawn(shared.clone()));
        let coordinator = Coordinator {
            shared: shared.clone(),
            tasks: Arc::new(Mutex::new(tasks)),
        };
        // resume in the background: a store that is down must not block serving
        let resumer = tokio::spawn(async move {
            let mut attempt = 0;
            loop {
                match shared.store.active_jobs().await {
                    Ok(job_ids) => {
                        for job_id in job_ids {
                            tracing::info!(session_id = %job_id, "resuming job");
                            shared.spawn_driver(&job_id);
                        }
                        break;
                    }
                    Err(error) => {
                        if !shared
                            .store_backoff(attempt, &error, "list active jobs")
                            .await
                        {
                            break;
                        }
                        attempt += 1;
                    }
                }
            }
        });
        coordinator.tasks.lock().expect("tasks lock").push(resumer);
        Ok(coordinator)
    }

    pub fn config(&self) -> &CoordinatorConfig {
        &self.shared.config
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.shared.registry
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.shared.store
    }

    /// Validates the inputs and starts a job.
    pub async fn submit(
        &self,
        inputs: JobInputs,
        options: SubmitOptions,
    ) -> Result<Submitted, CoordinatorError> {
        let job_id = format!("job-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let task_inputs = task_inputs(&inputs);
        let context = TaskContext::load(&task_inputs, job_id.clone())
            .map_err(|errors| CoordinatorError::InvalidInputs(errors.issues))?;
        let config = &self.shared.config;
        let max_iterations = match options.max_iterations {
            0 => context.objectives.constraints.max_iterations.max(1),
            limit => limit,
        };
        if options.noop_plan && options.sleep_ms > 3_600_000 {
            return Err(CoordinatorError::InvalidOptions(
                "sleep_ms above one hour".into(),
            ));
        }
        let now = now_ms();
        let job = JobRecord {
            job_id: job_id.clone(),
            name: if options.name.is_empty() {
                context.circuit.name.clone()
            } else {
                options.name.clone()
            },
            state: JobState::Init,
            outcome: None,
            error: String::new(),
            options: JobOptions {
                candidates_per_iteration: if options.candidates_per_iteration == 0 {
                    config.candidates_per_iteration
                } else {
                    options.candidates_per_iteration
                },
                max_iterations,
                seed: options.seed,
                time_budget_ms: options.time_budget_ms,
                candidate_deadline_ms: if options.candidate_deadline_ms == 0 {
                    config.candidate_deadline_ms
                } else {
                    options.candidate_deadline_ms
                },
                noop_plan: options.noop_plan,
                sleep_ms: options.sleep_ms,
            },
            created_ms: now,
            updated_ms: now,
            started_ms: now,
            iteration: 0,
            iteration_enqueued: false,
            best_candidate_id: String::new(),
            best_score: 0.0,
            best_passed: false,
            iterations_without_improvement: 0,
            cancel_requested: false,
            cancel_reason: String::new(),
            route_pitch_um: None,
            route_probed: false,
            iteration_started_ms: 0,
            iteration_candidates: Vec::new(),
        };
        self.shared.store.create_job(&job, &inputs).await?;
        self.shared
            .emit(
                &job,
                EventKind::StateChanged,
                "",
                "job created",
                serde_json::json!({"options": job.options, "summary": context.circuit.summarize()}),
            )
            .await;
        tracing::info!(session_id = %job_id, "job submitted");
        self.shared.spawn_driver(&job_id);
        Ok(Submitted {
            job_id,
            warnings: context.warnings,
        })
    }

    pub async fn get(&self, job_id: &str) -> Result<JobView, CoordinatorError> {
        let store = &self.shared.store;
        let job = store
            .get_job(job_id)
            .await?
            .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
        Ok(JobView {
            candidates: store.candidates(job_id).await?,
            results: store.results(job_id).await?,
            artifacts: store.artifacts(job_id).await?,
            job,
        })
    }

    pub async fn list(&self, limit: usize) -> Result<Vec<JobRecord>, CoordinatorError> {
        Ok(self.shared.store.list_jobs(limit).await?)
    }

    /// The newest jobs, each with (candidates, candidates with a result).
    pub async fn list_with_counts(
        &self,
        limit: usize,
    ) -> Result<Vec<(JobRecord, usize, usize)>, CoordinatorError> {
        let jobs = self.list(limit).await?;
        let mut listed = Vec::with_capacity(jobs.len());
        for job in jobs {
            let (total, finished) = self.shared.store.candidate_counts(&job.job_id).await?;
            listed.push((job, total, finished));
        }
        Ok(listed)
    }

    /// Requests cancellation; the job's driver ends it as cancelled.
    pub async fn cancel(&self, job_id: &str, reason: &str) -> Result<JobRecord, CoordinatorError> {
        let store = &self.shared.store;
        let mut job = store
            .get_job(job_id)
            .await?
            .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
        if job.is_finished() || job.cancel_requested {
            return Ok(job);
        }
        job.cancel_requested = true;
        job.cancel_reason = if reason.is_empty() {
            "cancelled by request".into()
        } else {
            reason.to_string()
        };
        job.updated_ms = now_ms();
        store.request_cancel(job_id, &job.cancel_reason).await?;
        store.put_job(&job).await?;
        self.shared.signal_cancel(job_id);
        self.shared.progress.notify_waiters();
        self.shared.spawn_driver(job_id);
        tracing::info!(session_id = %job_id, "cancellation requested");
        Ok(job)
    }

    /// Waits until the job is done (or `timeout` runs out); returns its last record.
    pub async fn wait(
        &self,
        job_id: &str,
        timeout: Duration,
    ) -> Result<JobRecord, CoordinatorError> {
        let started = std::time::Instant::now();
        loop {
            let job = self
                .shared
                .store
                .get_job(job_id)
                .await?
                .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
            if job.is_finished() || started.elapsed() >= timeout {
                return Ok(job);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The job's events from `after` on; the stream ends after the last event.
    pub async fn watch(
        &self,
        job_id: &str,
        after: Option<String>,
    ) -> Result<mpsc::Receiver<(String, EventRecord)>, CoordinatorError> {
        let shared = self.shared.clone();
        if shared.store.get_job(job_id).await?.is_none() {
            return Err(CoordinatorError::UnknownJob(job_id.to_string()));
        }
        let (sender, receiver) = mpsc::channel(256);
        let job_id = job_id.to_string();
        tokio::spawn(async move {
            let mut cursor = after.filter(|cursor| !cursor.is_empty());
            let mut attempt = 0;
            loop {
                let notified = shared.events_changed.notified();
                match shared
                    .store
                    .events_after(&job_id, cursor.as_deref(), 256)
                    .await
                {
                    Ok(events) if !events.is_empty() => {
                        attempt = 0;
                        for (event_cursor, event) in events {
                            let last = event.last;
                            cursor = Some(event_cursor.clone());
                            if sender.send((event_cursor, event)).await.is_err() || last {
                                return;
                            }
                        }
                        continue;
                    }
                    Ok(_) => {}
                    Err(error) => {
                        if !shared.store_backoff(attempt, &error, "read events").await {
                            return;
                        }
                        attempt += 1;
                        continue;
                    }
                }
                tokio::select! {
                    _ = notified => {}
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = sender.closed() => return,
                }
            }
        });
        Ok(receiver)
    }

    /// An artifact of a kept candidate (`candidate_id` empty = the best one).
    pub async fn fetch_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> Result<(ArtifactMeta, Vec<u8>), CoordinatorError> {
        let store = &self.shared.store;
        let job = store
            .get_job(job_id)
            .await?
            .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
        let candidate_id = if candidate_id.is_empty() {
            job.best_candidate_id.clone()
        } else {
            candidate_id.to_string()
        };
        let meta = store
            .artifacts(job_id)
            .await?
            .into_iter()
            .find(|meta| meta.candidate_id == candidate_id && meta.name == name)
            .ok_or_else(|| CoordinatorError::UnknownArtifact(format!("{candidate_id}/{name}")))?;
        let content = store
            .get_artifact(job_id, &candidate_id, name)
            .await?
            .ok_or_else(|| CoordinatorError::UnknownArtifact(format!("{candidate_id}/{name}")))?;
        Ok((meta, content))
    }

    /// Stops the dispatcher and the job drivers (jobs stay in the store and resume on the next start).
    pub async fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().expect("tasks lock"));
        let drivers: Vec<(String, JoinHandle<()>)> = self
            .shared
            .drivers
            .lock()
            .expect("drivers lock")
            .drain()
            .collect();
        let mut job_ids = Vec::new();
        for (job_id, handle) in drivers {
            handle.abort();
            let _ = handle.await;
            job_ids.push(job_id);
        }
        for handle in tasks {
            handle.abort();
            let _ = handle.await;
        }
        // hand the jobs over at once instead of after a lease
        for job_id in job_ids {
            let _ = tokio::time::timeout(
                Duration::from_secs(1),
                self.shared
                    .store
                    .release_job(&job_id, &self.shared.driver_id),
            )
            .await;
        }
    }
}

pub fn task_inputs(inputs: &JobInputs) -> TaskInputs {
    TaskInputs {
        netlist: InputFile {
            label: "netlist.json".into(),
            bytes: inputs.netlist_json.clone().into_bytes(),
        },
        drc_rules: InputFile {
            label: "drc_rules.json".into(),
            bytes: inputs.drc_rules_json.clone().into_bytes(),
        },
        objectives: InputFile {
            label: "objectives.json".into(),
            bytes: inputs.objectives_json.clone().into_bytes(),
        },
    }
}
