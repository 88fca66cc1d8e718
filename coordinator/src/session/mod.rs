//! The job session: the state machine of seed 000 §4.1, persisted in the store
//! after every transition so that a restarted coordinator resumes where it was.
//!
//! INIT → PARSING → PLANNING → EXECUTING → EVALUATING → PASSED | ITERATING
//! (→ PLANNING) … → COMPLETED | FAILED → DONE (outcome completed, failed or
//! cancelled). Per candidate, the step-level states of the seed (STEP_EXEC,
//! STEP_DONE, ReAct adjustment) happen on the dispatcher's side.
//!
//! One driver task per job ([`spawn_driver`]) holds the job's lease in the store,
//! so one coordinator drives a job at a time; another takes over when the lease
//! lapses. The states are handled in [`planning`], [`execution`] and [`ending`].

mod advice;
mod ending;
mod execution;
mod journal_cache;
mod overlap;
mod pictures;
mod planning;
mod remembering;
mod signoff;

use execution::Awaited;

use std::sync::Arc;
use std::time::Duration;

use centroid_schemas::{InputErrors, TaskContext};
use serde_json::json;
use tokio::sync::watch;

use crate::context::Context;
use crate::model::{EventKind, JobInputs, JobRecord, JobState, Outcome};

/// Whether the driver goes on after handling a state.
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// Starts the driver of a job unless one runs in this process.
pub(crate) fn spawn_driver(context: &Arc<Context>, job_id: &str) {
    let mut drivers = context.drivers.lock().expect("drivers lock");
    if drivers
        .get(job_id)
        .is_some_and(|handle| !handle.is_finished())
    {
        return;
    }
    let span = tracing::info_span!(
        "session",
        session_id = %job_id,
        trace_id = tracing::field::Empty
    );
    let driver = tracing::Instrument::instrument(drive(context.clone(), job_id.to_string()), span);
    drivers.insert(job_id.to_string(), tokio::spawn(driver));
}

/// Runs a job to its end (or until the coordinator shuts down), holding the job's
/// driver lease.
async fn drive(context: Arc<Context>, job_id: String) {
    if !take_lease(&context, &job_id).await {
        return;
    }
    let lease = context.config.lease_timeout();
    let (lost_sender, lost) = watch::channel(false);
    let renewer = {
        let context = context.clone();
        let job_id = job_id.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match context
                    .store
                    .lease_job(&job_id, &context.driver_id, lease)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(session_id = %job_id, "lost the job lease to another coordinator");
                        lost_sender.send_replace(true);
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(session_id = %job_id, %error, "cannot renew the job lease")
                    }
                }
            }
        })
    };
    if let Some(mut driver) = Driver::load(context.clone(), job_id.clone(), lost).await {
        driver.run().await;
    }
    renewer.abort();
    let _ = context.store.release_job(&job_id, &context.driver_id).await;
}

/// Waits for the job's lease; `false` when the job finished meanwhile or on shutdown.
async fn take_lease(context: &Context, job_id: &str) -> bool {
    let lease = context.config.lease_timeout();
    let mut announced = false;
    loop {
        match context
            .store
            .lease_job(job_id, &context.driver_id, lease)
            .await
        {
            Ok(true) => return true,
            Ok(false) if !announced => {
                announced = true;
                tracing::info!(session_id = %job_id, "another coordinator drives this job; waiting for its lease to lapse");
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(session_id = %job_id, %error, "cannot take the job lease"),
        }
        tokio::select! {
            _ = tokio::time::sleep(lease / 3) => {}
            _ = context.shutting_down() => return false,
        }
        if let Ok(Some(job)) = context.store.get_job(job_id).await
            && job.is_finished()
        {
            return false;
        }
    }
}

/// One job's driver, while it holds the lease.
pub(crate) struct Driver {
    context: Arc<Context>,
    job_id: String,
    inputs: JobInputs,
    parsed: Result<Arc<TaskContext>, InputErrors>,
    cancel: watch::Receiver<bool>,
    lost: watch::Receiver<bool>,
    /// "waiting for workers" was reported already
    waiting_reported: bool,
    /// which planner plans the job was reported already
    planner_announced: bool,
    /// the planner's advice for the next iteration, asked while this one runs
    pending_advice: Option<advice::PendingAdvice>,
    /// the long-term memory was consulted for this job
    recalled: bool,
    /// similar earlier jobs and failure patterns, for the LLM planner's prompt
    history: Vec<String>,
    /// the knowledge the planner's prompt carried was reported already
    knowledge_reported: bool,
    /// the job's candidates as read so far (without plans)
    journal: journal_cache::JournalCache,
}

impl Driver {
    async fn load(
        context: Arc<Context>,
        job_id: String,
        lost: watch::Receiver<bool>,
    ) -> Option<Driver> {
        let inputs = context
            .with_store_retry("read inputs", || context.store.get_inputs(&job_id))
            .await?;
        let Some(inputs) = inputs else {
            tracing::warn!(session_id = %job_id, "job has no inputs (expired?); dropping it");
            return None;
        };
        let parsed = TaskContext::load(&inputs.task_inputs(), job_id.clone()).map(Arc::new);
        if let Ok(Some(job)) = context.store.get_job(&job_id).await {
            tracing::Span::current().record("trace_id", job.trace_id.as_str());
        }
        Some(Driver {
            cancel: context.cancel_signal(&job_id),
            context,
            job_id,
            inputs,
            parsed,
            lost,
            waiting_reported: false,
            planner_announced: false,
            pending_advice: None,
            recalled: false,
            history: Vec::new(),
            knowledge_reported: false,
            journal: journal_cache::JournalCache::default(),
        })
    }

    async fn run(&mut self) {
        while !self.context.is_shutting_down() && !*self.lost.borrow() {
            let context = self.context.clone();
            let job_id = self.job_id.clone();
            let Some(job) = context
                .with_store_retry("read job", || context.store.get_job(&job_id))
                .await
            else {
                return;
            };
            let Some(mut job) = job.filter(|job| !job.is_finished()) else {
                return;
            };
            if let Flow::Stop = self.step(&mut job).await {
                return;
            }
        }
    }

    /// Handles the job's current state once.
    async fn step(&mut self, job: &mut JobRecord) -> Flow {
        if let Flow::Stop = self.stop_if_cancelled(job).await {
            return Flow::Stop;
        }
        let context = match &self.parsed {
            Ok(context) => context.clone(),
            Err(errors) => {
                job.error = format!("inputs no longer parse: {} issues", errors.issues.len());
                ending::finish(
                    &self.context,
                    job,
                    Outcome::Failed,
                    "inputs no longer parse",
                )
                .await;
                return Flow::Stop;
            }
        };
        if job.options.time_budget_ms > 0
            && crate::model::now_ms().saturating_sub(job.started_ms) > job.options.time_budget_ms
            && matches!(
                job.state,
                JobState::Planning | JobState::Executing | JobState::Iterating
            )
        {
            let message = format!("time budget of {} ms spent", job.options.time_budget_ms);
            if job.options.signoff_deck.is_empty() {
                ending::conclude(&self.context, job, &message).await;
                return Flow::Stop;
            }
            ending::transition(&self.context, job, JobState::Signoff, &message).await;
            return Flow::Continue;
        }
        match job.state {
            JobState::Init => {
                ending::transition(&self.context, job, JobState::Parsing, "parsing inputs").await;
                Flow::Continue
            }
            JobState::Parsing => {
                let modules: Vec<String> = context
                    .circuit
                    .modules
                    .iter()
                    .map(|module| module.describe())
                    .collect();
                let data = json!({"modules": modules, "devices": context.circuit.devices.len()});
                self.context
                    .emit(job, EventKind::StateChanged, "", "inputs parsed", data)
                    .await;
                ending::transition(&self.context, job, JobState::Planning, "planning").await;
                Flow::Continue
            }
            JobState::Planning => self.plan_iteration(job, &context).await,
            JobState::Executing => self.wait_for_results(job, &context).await,
            JobState::Evaluating => self.evaluate_iteration(job, &context).await,
            JobState::Signoff => self.run_signoff(job, &context).await,
            JobState::Passed => {
                ending::transition(&self.context, job, JobState::Completed, "completed").await;
                Flow::Continue
            }
            JobState::Iterating => {
                job.iteration += 1;
                let data = json!({"best_candidate_id": job.best_candidate_id, "best_score": job.best_score});
                let message = format!("iteration {}", job.iteration);
                self.context
                    .emit(job, EventKind::Iteration, "", message, data)
                    .await;
                match job.next_iteration.take() {
                    Some(next) if !next.candidates.is_empty() => {
                        // drafted while the iteration before ran (overlapping iterations)
                        job.iteration_candidates = next.candidates;
                        job.iteration_enqueued = Some(next.enqueued);
                        job.iteration_started_ms = crate::model::now_ms();
                        job.overlap_next =
                            overlap::overlap_next(job, self.context.config.overlap_iterations);
                        let message = "executing the iteration drafted ahead";
                        ending::transition(&self.context, job, JobState::Executing, message).await;
                    }
                    _ => {
                        let message = "planning the next iteration";
                        ending::transition(&self.context, job, JobState::Planning, message).await;
                    }
                }
                Flow::Continue
            }
            JobState::Completed => {
                self.remember(job).await;
                let message = if job.best_passed {
                    "completed: the best candidate passed"
                } else {
                    "completed"
                };
                ending::finish(&self.context, job, Outcome::Completed, message).await;
                Flow::Stop
            }
            JobState::Failed => {
                self.remember(job).await;
                let message = job.error.clone();
                ending::finish(&self.context, job, Outcome::Failed, &message).await;
                Flow::Stop
            }
            JobState::Done => Flow::Stop,
        }
    }

    /// Ends the job as cancelled when a cancellation was requested (through any
    /// coordinator, or before a restart); this one's in-flight calls are stopped too.
    async fn stop_if_cancelled(&mut self, job: &mut JobRecord) -> Flow {
        if !job.cancel_requested {
            let context = &self.context;
            let Some(reason) = context
                .with_store_retry("read cancel", || {
                    context.store.cancel_requested(&job.job_id)
                })
                .await
            else {
                return Flow::Stop;
            };
            if let Some(reason) = reason {
                job.cancel_requested = true;
                job.cancel_reason = reason;
            }
        }
        if !job.cancel_requested {
            return Flow::Continue;
        }
        self.context.signal_cancel(&job.job_id);
        self.keep_what_finished(job).await;
        let reason = job.cancel_reason.clone();
        ending::finish(&self.context, job, Outcome::Cancelled, &reason).await;
        Flow::Stop
    }

    /// A cancelled job keeps what finished: those candidates are evaluated, the best
    /// of them is the job's best and keeps its artifacts.
    async fn keep_what_finished(&self, job: &mut JobRecord) {
        let Ok(task) = &self.parsed else { return };
        let task = task.clone();
        let Some((candidates, _)) = self
            .evaluate_candidates(job, &task, |candidate| candidate.evaluation.is_none())
            .await
        else {
            return;
        };
        if let Some(best) = crate::search::Journal::from_candidates(&candidates).best() {
            let evaluation = best.evaluation.as_ref().expect("best has an evaluation");
            job.best_candidate_id = best.candidate_id.clone();
            job.best_score = evaluation.score;
            job.best_passed = evaluation.passed;
        }
        crate::artifacts::keep_best(&self.context, &job.job_id, &candidates).await;
    }

    /// Waits up to `duration`, or until a candidate finishes or a cancel arrives.
    async fn wait_a_little(&mut self, duration: Duration) {
        tokio::select! {
            _ = tokio::time::sleep(duration) => {}
            _ = self.context.progress.notified() => {}
            _ = self.cancel.wait_for(|cancelled| *cancelled) => {}
        }
    }
}
