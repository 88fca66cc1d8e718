//! The job session: the state machine of seed 000 §4.1 as a typed
//! [`JobPhase`](crate::model::JobPhase), persisted with the job record after
//! every transition so that a restarted coordinator resumes where it was.
//!
//! One driver task per job ([`spawn_driver`]) holds the job's lease in the store
//! ([`lease`]), so one coordinator drives a job at a time; another takes over
//! when the lease lapses. The driver is the only writer of its job's record.
//! It loops: observe what the current phase waits for ([`observe`]: a draft,
//! results, an evaluation, a cancel …) as a `PhaseEvent`, move the phase on
//! with the pure [`transitions::advance`], and carry out the effects it returns
//! ([`effects`]). A store error that retrying cannot mend fails the job, naming
//! the record ([`ending::fail_on_store_error`]).

mod advice;
mod effects;
mod ending;
mod execution;
mod finished_ids;
mod journal_cache;
mod lease;
mod model_share;
mod observe;
mod overlap;
mod pictures;
mod planning;
mod remembering;
mod signoff;
mod transitions;

pub(crate) use lease::spawn_driver;

use std::sync::Arc;
use std::time::Duration;

use centroid_schemas::{InputErrors, TaskContext};
use tokio::sync::watch;

use crate::context::{Context, Interrupted};
use crate::model::{CandidateRecord, JobInputs, JobRecord};
use transitions::{PhaseEvent, PhaseSettings, advance};

/// One job's driver, while it holds the lease.
pub(crate) struct Driver {
    context: Arc<Context>,
    inputs: JobInputs,
    parsed: Result<Arc<TaskContext>, InputErrors>,
    settings: PhaseSettings,
    cancel: watch::Receiver<bool>,
    lost: watch::Receiver<bool>,
    /// "waiting for workers" was reported already
    waiting_reported: bool,
    /// which planner plans the job was reported already
    planner_announced: bool,
    /// the planner's advice for the next iteration, asked once this one's
    /// results are in
    pending_advice: Option<advice::PendingAdvice>,
    /// the planner's memory after its last advice, for the job record's next write
    planner_memory: Option<centroid_planner::advice::PlannerMemory>,
    /// the skills the last iteration was drafted with
    skills: Option<centroid_planner::skill_catalog::SkillCatalog>,
    /// the long-term memory was consulted for this job
    recalled: bool,
    /// points that failed on similar circuits (long-term memory): never drafted
    avoid: Vec<centroid_planner::design_point::DesignPoint>,
    /// similar earlier jobs and failure patterns, for the LLM planner's prompt
    history: Vec<String>,
    /// the knowledge the planner's prompt carried was reported already
    knowledge_reported: bool,
    /// the job's candidates as read so far (without plans)
    journal: journal_cache::JournalCache,
    /// the job's candidates with a result, as read so far
    finished: finished_ids::FinishedIds,
    /// candidates drafted and not stored yet (`Effect::EnqueueDrafted` stores them)
    drafted: Vec<CandidateRecord>,
}

impl Driver {
    /// The driver of `job_id`; `None` when its record or inputs are gone
    /// (expired) — or on shutdown, or when they cannot be read at all (the job
    /// is then failed, naming the record).
    async fn load(
        context: Arc<Context>,
        job_id: String,
        lost: watch::Receiver<bool>,
    ) -> Option<(Driver, JobRecord)> {
        let job = match context
            .with_store_retry("read job", || context.store.get_job(&job_id))
            .await
        {
            Ok(Some(job)) => job,
            Ok(None) => {
                tracing::warn!(session_id = %job_id, "job has no record (expired?); dropping it");
                return None;
            }
            Err(Interrupted::Shutdown) => return None,
            Err(Interrupted::Store(error)) => {
                ending::fail_unreadable_job(&context, &job_id, &error).await;
                return None;
            }
        };
        let inputs = match context
            .with_store_retry("read inputs", || context.store.get_inputs(&job_id))
            .await
        {
            Ok(Some(inputs)) => inputs,
            Ok(None) => {
                tracing::warn!(session_id = %job_id, "job has no inputs (expired?); dropping it");
                return None;
            }
            Err(Interrupted::Shutdown) => return None,
            Err(Interrupted::Store(error)) => {
                let mut job = job;
                ending::fail_on_store_error(&context, &mut job, &error).await;
                return None;
            }
        };
        tracing::Span::current().record("trace_id", job.trace_id.as_str());
        let parsed = TaskContext::load(&inputs.task_inputs(), job_id.clone()).map(Arc::new);
        let settings = PhaseSettings {
            overlap_iterations: context.config.overlap_iterations,
            model_share_when_ready: context.config.llm.model_share
                == centroid_runtime::ModelSharePolicy::WhenReady,
        };
        let driver = Driver {
            cancel: context.cancel_signal(&job_id),
            context,
            inputs,
            parsed,
            settings,
            lost,
            waiting_reported: false,
            planner_announced: false,
            pending_advice: None,
            skills: None,
            planner_memory: None,
            recalled: false,
            avoid: Vec::new(),
            history: Vec::new(),
            knowledge_reported: false,
            journal: journal_cache::JournalCache::default(),
            finished: finished_ids::FinishedIds::default(),
            drafted: Vec::new(),
        };
        Some((driver, job))
    }

    /// Drives the job until it is finished, the lease is lost, or the
    /// coordinator shuts down.
    async fn run(&mut self, mut job: JobRecord) {
        while !job.is_finished() && !self.context.is_shutting_down() && !*self.lost.borrow() {
            match self.step(&mut job).await {
                Ok(()) => {}
                Err(Interrupted::Shutdown) => return,
                Err(Interrupted::Store(error)) => {
                    ending::fail_on_store_error(&self.context, &mut job, &error).await;
                    return;
                }
            }
        }
    }

    /// Observes the phase once and carries out the transition that follows.
    async fn step(&mut self, job: &mut JobRecord) -> Result<(), Interrupted> {
        let Some(event) = self.observe(job).await? else {
            return Ok(());
        };
        self.move_on(job, event).await
    }

    /// Advances `job` on `event` and carries out the effects (which may observe
    /// more: a draft made ahead).
    async fn move_on(&mut self, job: &mut JobRecord, event: PhaseEvent) -> Result<(), Interrupted> {
        let mut pending = vec![event];
        while let Some(event) = pending.pop() {
            let effects = match advance(job, event, self.settings) {
                Ok(effects) => effects,
                Err(unexpected) => {
                    tracing::error!(session_id = %job.job_id, %unexpected, "a driver bug: event ignored");
                    self.wait_a_little(Duration::from_millis(250)).await;
                    return Ok(());
                }
            };
            pending.extend(self.apply(job, effects).await?);
        }
        Ok(())
    }

    /// Waits up to `duration`, or until a candidate finishes, the planner's
    /// advice arrives or a cancel does.
    async fn wait_a_little(&mut self, duration: Duration) {
        let advice = self
            .pending_advice
            .as_ref()
            .map(|pending| pending.done.clone());
        let advice_in = async {
            match advice {
                Some(done) => done.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(duration) => {}
            _ = self.context.progress.notified() => {}
            _ = advice_in => {}
            _ = self.cancel.wait_for(|cancelled| *cancelled) => {}
        }
    }
}
