//! The library face of the coordinator: [`Coordinator`] with `submit`, `watch`,
//! `get`, `list`, `cancel`, `fetch_artifact` and the worker registry. The gRPC
//! service wraps it; `centroid run` can use it in-process with a
//! [`crate::store::InProcessStore`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use centroid_schemas::TaskContext;
use centroid_schemas::performance_check::check_job_testbench;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use centroid_planner::case_memory::{Case, CaseMemory};
use centroid_runtime::OperationsProbe;

use centroid_planner::job_events::EventData;

use crate::agent::LlmPlanners;
use crate::config::CoordinatorConfig;
use crate::context::{Context, Interrupted};
use crate::error::CoordinatorError;
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventKind, EventRecord, JobInputs, JobRecord,
    Plan, now_ms,
};
use crate::planner::PlannerFactory;
use crate::registry::Registry;
use crate::store::Store;
use crate::submission::{check_limits, iteration_width, job_options};
use crate::{dispatcher, session};

pub use crate::submission::{SubmitOptions, Submitted};

/// How many 50 ms waits a watcher gives a finished job's last event to appear.
const LAST_EVENT_WAITS: u32 = 40;

/// A job with its candidates, results and kept artifacts.
#[derive(Debug, Clone)]
pub struct JobView {
    pub job: JobRecord,
    /// every candidate, without its plan
    pub candidates: Vec<CandidateRecord>,
    /// every result, without the steps' data and the plan as run
    pub results: HashMap<String, CandidateResult>,
    pub artifacts: Vec<ArtifactMeta>,
    /// the best candidate's plan as run (after ReAct adjustments)
    pub best_plan: Option<Plan>,
}

/// The coordinator: job sessions, the dispatcher and the worker registry.
#[derive(Clone)]
pub struct Coordinator {
    pub(crate) context: Arc<Context>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Coordinator {
    /// Starts the dispatcher and resumes every unfinished job of the store; jobs
    /// asking for the LLM planner get it when `config.llm` is configured, every
    /// other job the rule-based planner.
    pub async fn start(
        config: CoordinatorConfig,
        store: Arc<dyn Store>,
    ) -> Result<Coordinator, CoordinatorError> {
        Coordinator::start_with_memory(config, store, None).await
    }

    /// As [`Coordinator::start`], with a long-term memory: jobs start from the
    /// most similar cases and leave theirs.
    pub async fn start_with_memory(
        config: CoordinatorConfig,
        store: Arc<dyn Store>,
        memory: Option<Arc<dyn CaseMemory>>,
    ) -> Result<Coordinator, CoordinatorError> {
        let planners = Arc::new(LlmPlanners::new(&config.llm));
        Coordinator::start_with_planners(config, store, planners, memory).await
    }

    /// As [`Coordinator::start_with_memory`], with the planners made by `planners`.
    pub async fn start_with_planners(
        config: CoordinatorConfig,
        store: Arc<dyn Store>,
        planners: Arc<dyn PlannerFactory>,
        memory: Option<Arc<dyn CaseMemory>>,
    ) -> Result<Coordinator, CoordinatorError> {
        let registry = Registry::new(
            config.heartbeat_timeout(),
            Duration::from_millis(config.dead_worker_grace_ms),
            config.worker_call_token(),
            config.common.tls.clone(),
        );
        let context = Arc::new(Context::new(config, store, registry, planners, memory));
        let mut tasks = dispatcher::spawn(context.clone());
        // resume in the background: a store that is down must not block serving
        let resuming = context.clone();
        tasks.push(tokio::spawn(async move {
            let store = &resuming.store;
            let job_ids = match resuming
                .with_store_retry("list active jobs", || store.active_jobs())
                .await
            {
                Ok(job_ids) => job_ids,
                Err(interrupted) => {
                    tracing::error!(%interrupted, "cannot list the jobs to resume");
                    return;
                }
            };
            for job_id in job_ids {
                tracing::info!(session_id = %job_id, "resuming job");
                session::spawn_driver(&resuming, &job_id);
            }
        }));
        Ok(Coordinator {
            context,
            tasks: Arc::new(Mutex::new(tasks)),
        })
    }

    /// The long-term memory's cases.
    pub async fn cases(&self) -> Result<Vec<Case>, CoordinatorError> {
        let memory = self
            .context
            .memory
            .as_ref()
            .ok_or(CoordinatorError::NoMemory)?;
        Ok(memory.cases().await?)
    }

    /// Removes a case from the long-term memory.
    pub async fn forget_case(&self, job_id: &str) -> Result<(), CoordinatorError> {
        let memory = self
            .context
            .memory
            .as_ref()
            .ok_or(CoordinatorError::NoMemory)?;
        match memory.forget(job_id).await? {
            true => Ok(()),
            false => Err(CoordinatorError::UnknownCase(job_id.to_string())),
        }
    }

    pub fn config(&self) -> &CoordinatorConfig {
        &self.context.config
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.context.registry
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.context.store
    }

    /// Validates the inputs and starts a job.
    pub async fn submit(
        &self,
        inputs: JobInputs,
        options: SubmitOptions,
    ) -> Result<Submitted, CoordinatorError> {
        let job_id = format!("job-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let context = TaskContext::load(&inputs.task_inputs(), job_id.clone())
            .map_err(|errors| CoordinatorError::InvalidInputs(errors.issues))?;
        let testbench_warnings =
            check_job_testbench(&context, "objectives.json", inputs.testbench().as_ref())
                .map_err(|errors| CoordinatorError::InvalidInputs(errors.issues))?;
        let config = &self.context.config;
        let width = iteration_width(config, self.context.registry.alive_slots(), &options);
        let job_options = job_options(&options, &context, config, width)?;
        check_limits(config, self.context.store.as_ref(), &options, width).await?;
        let name = match options.name.as_str() {
            "" => context.circuit.name.clone(),
            name => name.to_string(),
        };
        let trace_id = options.trace_id.clone();
        let owner = options.owner.clone();
        let options = job_options;
        let mut job = JobRecord::new(job_id.clone(), name, options, now_ms());
        if !trace_id.is_empty() {
            job.trace_id = trace_id;
        }
        job.owner = owner;
        self.context.store.create_job(&job, &inputs).await?;
        // the running jobs' shares change now, not at the next reading
        self.context.farm_load.forget();
        self.context
            .report(
                &job,
                EventKind::StateChanged,
                "",
                "job created",
                EventData::JobCreated {
                    options: serde_json::to_value(&job.options).unwrap_or_default(),
                    summary: context.circuit.summarize(),
                },
            )
            .await;
        session::spawn_driver(&self.context, &job_id);
        let mut warnings = context.warnings;
        warnings.extend(testbench_warnings);
        Ok(Submitted { job_id, warnings })
    }

    pub async fn get(&self, job_id: &str) -> Result<JobView, CoordinatorError> {
        let store = &self.context.store;
        let job = store
            .get_job(job_id)
            .await?
            .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
        let best_plan = match job.best_candidate_id.as_str() {
            "" => None,
            best => store
                .get_result(job_id, best)
                .await?
                .and_then(|result| result.plan),
        };
        Ok(JobView {
            candidates: store.candidate_listing(job_id).await?,
            results: store.result_listing(job_id).await?,
            artifacts: store.artifacts(job_id).await?,
            best_plan,
            job,
        })
    }

    pub async fn list(&self, limit: usize) -> Result<Vec<JobRecord>, CoordinatorError> {
        Ok(self.context.store.list_jobs(limit).await?)
    }

    /// The newest `limit` jobs that pass `visible` among the newest `window`, each
    /// with (candidates, candidates with a result).
    pub async fn list_with_counts(
        &self,
        limit: usize,
        window: usize,
        visible: impl Fn(&JobRecord) -> bool,
    ) -> Result<Vec<(JobRecord, usize, usize)>, CoordinatorError> {
        let jobs = self.list(window.max(limit)).await?;
        let mut listed = Vec::with_capacity(limit.min(jobs.len()));
        for job in jobs.into_iter().filter(|job| visible(job)).take(limit) {
            let (total, finished) = self.context.store.candidate_counts(&job.job_id).await?;
            listed.push((job, total, finished));
        }
        Ok(listed)
    }

    /// Requests cancellation; the job's driver ends it as cancelled.
    pub async fn cancel(&self, job_id: &str, reason: &str) -> Result<JobRecord, CoordinatorError> {
        let store = &self.context.store;
        let mut job = store
            .get_job(job_id)
            .await?
            .ok_or_else(|| CoordinatorError::UnknownJob(job_id.to_string()))?;
        if job.is_finished() || job.cancel_requested {
            return Ok(job);
        }
        // the record is its driver's to write: the request is kept apart, and the
        // answer shows it
        job.cancel_requested = true;
        job.cancel_reason = if reason.is_empty() {
            "cancelled by request".into()
        } else {
            reason.to_string()
        };
        store.request_cancel(job_id, &job.cancel_reason).await?;
        self.context.signal_cancel(job_id);
        self.context.progress.notify_waiters();
        session::spawn_driver(&self.context, job_id);
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
                .context
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

    /// The job's events from `after` on; the stream ends after the last event (at
    /// once when resumed after the last event of a finished job), or with the
    /// store's error when the log cannot be read for good.
    pub async fn watch(
        &self,
        job_id: &str,
        after: Option<String>,
    ) -> Result<mpsc::Receiver<Result<(String, EventRecord), CoordinatorError>>, CoordinatorError>
    {
        let context = self.context.clone();
        if context.store.get_job(job_id).await?.is_none() {
            return Err(CoordinatorError::UnknownJob(job_id.to_string()));
        }
        let (sender, receiver) = mpsc::channel(256);
        let job_id = job_id.to_string();
        tokio::spawn(async move {
            let mut cursor = after.filter(|cursor| !cursor.is_empty());
            let store = &context.store;
            // a job's record says "done" a moment before its last event is in the log
            let mut sent_any = false;
            let mut waited_for_last = 0;
            loop {
                let notified = context.events_changed.notified();
                let events = match context
                    .with_store_retry("read events", || {
                        store.events_after(&job_id, cursor.as_deref(), 256)
                    })
                    .await
                {
                    Ok(events) => events,
                    Err(Interrupted::Shutdown) => return,
                    Err(Interrupted::Store(error)) => {
                        // the watcher learns why its stream ends
                        let _closed = sender.send(Err(CoordinatorError::Store(error))).await;
                        return;
                    }
                };
                if !events.is_empty() {
                    for (event_cursor, event) in events {
                        let last = event.last;
                        cursor = Some(event_cursor.clone());
                        if sender.send(Ok((event_cursor, event))).await.is_err() || last {
                            return;
                        }
                        sent_any = true;
                    }
                    continue;
                }
                if cursor.is_some()
                    && matches!(store.get_job(&job_id).await, Ok(Some(job)) if job.is_finished())
                {
                    // resumed after the last event of a finished job: nothing more will
                    // come; while streaming, the last event follows the record at once
                    if !sent_any || waited_for_last >= LAST_EVENT_WAITS {
                        return;
                    }
                    waited_for_last += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
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
        let store = &self.context.store;
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
        self.context.shutdown.send_replace(true);
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().expect("tasks lock"));
        let drivers: Vec<(String, JoinHandle<()>)> = self
            .context
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
        // hand the jobs over at once instead of after a lease; a release that fails or
        // times out only delays the hand-over until the lease expires
        for job_id in job_ids {
            let release = self
                .context
                .store
                .release_job(&job_id, &self.context.driver_id);
            match tokio::time::timeout(Duration::from_secs(1), release).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::warn!(
                    job_id = %job_id, %error,
                    "job not released at shutdown; another coordinator takes it when its lease expires"
                ),
                Err(_) => tracing::warn!(
                    job_id = %job_id,
                    "job release timed out at shutdown; another coordinator takes it when its lease expires"
                ),
            }
        }
    }
}

/// What the operator's endpoint (`--metrics-listen`) asks the coordinator.
#[tonic::async_trait]
impl OperationsProbe for Coordinator {
    async fn metrics(&self) -> String {
        self.context
            .metrics
            .render(self.context.store.as_ref(), &self.context.registry)
            .await
    }

    /// Ready while it serves and its store answers.
    async fn ready(&self) -> Result<(), String> {
        if self.context.is_shutting_down() {
            return Err("shutting down".into());
        }
        self.context
            .store
            .queue_pending_count()
            .await
            .map(|_| ())
            .map_err(|error| format!("the store does not answer: {error}"))
    }
}
