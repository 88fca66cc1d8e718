//! EXECUTING (waiting for the iteration's results; a candidate without a result
//! past every delivery's deadline is recorded as lost, so a lost queue entry
//! cannot hang a job) and EVALUATING (scores, the job's best, kept artifacts, and
//! whether to iterate).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use centroid_schemas::TaskContext;
use serde_json::Value;

use super::{Driver, Flow, ending};
use crate::artifacts;
use crate::evaluator;
use crate::model::{
    CandidateRecord, CandidateResult, CandidateStatus, Evaluation, EventKind, JobRecord, JobState,
    now_ms,
};
use crate::search::Journal;

/// Where the candidates of the current iteration stand.
pub(super) enum Awaited {
    AllIn,
    Waiting,
    Stop,
}

impl Driver {
    pub(super) async fn wait_for_results(
        &mut self,
        job: &mut JobRecord,
        task: &Arc<TaskContext>,
    ) -> Flow {
        // one read of the results serves the early draft and the wait
        let Some(finished) = self.finished_ids(&job.job_id).await else {
            return Flow::Stop;
        };
        if let Flow::Stop = self.draft_next_if_slots_idle(job, task, &finished).await {
            return Flow::Stop;
        }
        if self.evaluate_arrived(job, task, &finished).await.is_none() {
            return Flow::Stop;
        }
        match self.await_iteration_given(job, finished).await {
            Awaited::Stop => Flow::Stop,
            Awaited::Waiting => Flow::Continue,
            Awaited::AllIn => {
                let message = "every candidate of the iteration is in";
                ending::transition(&self.context, job, JobState::Evaluating, message).await;
                Flow::Continue
            }
        }
    }

    /// Whether every candidate of `job.iteration_candidates` has a result; waits a
    /// little while some are missing, and records as lost the ones past every
    /// delivery's deadline.
    pub(super) async fn await_iteration(&mut self, job: &mut JobRecord) -> Awaited {
        match self.finished_ids(&job.job_id).await {
            Some(finished) => self.await_iteration_given(job, finished).await,
            None => Awaited::Stop,
        }
    }

    /// [`Self::await_iteration`] with the ids of the candidates that have a result.
    async fn await_iteration_given(
        &mut self,
        job: &mut JobRecord,
        finished: HashSet<String>,
    ) -> Awaited {
        let context = self.context.clone();
        let job_id = job.job_id.clone();
        if job.iteration_candidates.is_empty() {
            // a record written before iteration_candidates existed
            let Some(candidates) = context
                .with_store_retry("read candidates", || context.store.candidates(&job_id))
                .await
            else {
                return Awaited::Stop;
            };
            job.iteration_candidates = candidates
                .into_iter()
                .filter(|candidate| candidate.iteration == job.iteration)
                .map(|candidate| candidate.candidate_id)
                .collect();
        }
        let missing: Vec<&String> = job
            .iteration_candidates
            .iter()
            .filter(|candidate_id| !finished.contains(*candidate_id))
            .collect();
        if missing.is_empty() {
            return Awaited::AllIn;
        }
        match self.top_up_queue(job, &finished).await {
            None => return Awaited::Stop,
            Some(true) => return Awaited::Waiting,
            Some(false) => {}
        }
        // only what is in the queue can be late
        let enqueued = job
            .iteration_enqueued
            .map_or(usize::MAX, |count| count as usize);
        let missing: Vec<&String> = job
            .iteration_candidates
            .iter()
            .take(enqueued)
            .filter(|candidate_id| !finished.contains(*candidate_id))
            .collect();
        let config = &context.config;
        let stall_limit_ms = job
            .options
            .candidate_deadline_ms
            .saturating_add(config.rpc_grace_ms)
            * (config.max_deliveries as u64 + 1)
            + config.lease_timeout_ms;
        let stalled = job.iteration_started_ms > 0
            && now_ms().saturating_sub(job.iteration_started_ms) > stall_limit_ms;
        if !stalled {
            self.wait_a_little(Duration::from_millis(250)).await;
            return Awaited::Waiting;
        }
        for candidate_id in missing {
            let message = format!("no result within {stall_limit_ms} ms");
            let lost = CandidateResult::without_run(
                candidate_id,
                CandidateStatus::Failed,
                "LOST",
                &message,
            );
            if context
                .with_store_retry("record lost candidate", || {
                    context.store.record_result(&job_id, &lost)
                })
                .await
                .is_none()
            {
                return Awaited::Stop;
            }
            tracing::warn!(session_id = %job_id, candidate_id = %candidate_id, "candidate lost: no result in time");
        }
        Awaited::Waiting
    }

    /// Ids of the job's candidates with a result; `None` on shutdown.
    pub(super) async fn finished_ids(&self, job_id: &str) -> Option<HashSet<String>> {
        let context = &self.context;
        let ids = context
            .with_store_retry("read result ids", || context.store.result_ids(job_id))
            .await?;
        Some(ids.into_iter().collect())
    }

    /// Stores `candidates` and the job record and puts the first `queued` candidates
    /// into the work queue, at once; wakes the dispatchers. `None` on shutdown.
    pub(super) async fn enqueue(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
        queued: usize,
    ) -> Option<()> {
        let context = &self.context;
        context
            .with_store_retry("enqueue candidates", || {
                context.store.enqueue_iteration(job, candidates, queued)
            })
            .await?;
        context.queue_changed.notify_waiters();
        Some(())
    }

    /// Puts more of the iteration — once it is all queued, of the next iteration
    /// drafted ahead — into the work queue while fewer than a window of the enqueued
    /// candidates are still out (`Some(true)` when it did: the progress clock
    /// restarts); `None` on shutdown.
    async fn top_up_queue(&self, job: &mut JobRecord, finished: &HashSet<String>) -> Option<bool> {
        let Some(enqueued) = job.iteration_enqueued.map(|count| count as usize) else {
            return Some(false);
        };
        let next_enqueued = job
            .next_iteration
            .as_ref()
            .map_or(0, |next| next.enqueued as usize);
        let next_total = job
            .next_iteration
            .as_ref()
            .map_or(0, |next| next.candidates.len());
        let total = job.iteration_candidates.len();
        if enqueued >= total && next_enqueued >= next_total {
            return Some(false);
        }
        let out = |ids: &[String]| {
            ids.iter()
                .filter(|candidate_id| !finished.contains(*candidate_id))
                .count()
        };
        let outstanding = out(&job.iteration_candidates[..enqueued.min(total)])
            + job.next_iteration.as_ref().map_or(0, |next| {
                out(&next.candidates[..next_enqueued.min(next_total)])
            });
        let window = super::planning::queue_window(&self.context).await;
        if outstanding >= window {
            return Some(false);
        }
        let room = window - outstanding;
        let context = &self.context;
        let next_ids: Vec<String> = if enqueued < total {
            let ids = job.iteration_candidates[enqueued..total.min(enqueued + room)].to_vec();
            job.iteration_enqueued = Some((enqueued + ids.len()) as u32);
            ids
        } else {
            let next = job.next_iteration.as_mut().expect("checked above");
            let ids = next.candidates[next_enqueued..next_total.min(next_enqueued + room)].to_vec();
            next.enqueued = (next_enqueued + ids.len()) as u32;
            ids
        };
        // only the records needed (each holds its plan): one read per candidate
        let mut next = Vec::with_capacity(next_ids.len());
        for candidate_id in &next_ids {
            let record = context
                .with_store_retry("read candidate", || {
                    context.store.get_candidate(&job.job_id, candidate_id)
                })
                .await?;
            next.extend(record);
        }
        job.iteration_started_ms = now_ms();
        job.updated_ms = now_ms();
        self.enqueue(job, &next, next.len()).await?;
        tracing::debug!(session_id = %job.job_id, added = next.len(), enqueued = job.iteration_enqueued, total, next = ?job.next_iteration.as_ref().map(|next| next.enqueued), "queue topped up");
        Some(true)
    }

    /// The job's candidates (from the journal cache, without plans); each one
    /// `current` selects that has a result but no evaluation yet is evaluated,
    /// stored and reported. Returns them with the results of the `current` ones;
    /// `None` on shutdown.
    pub(super) async fn evaluate_candidates(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        current: impl Fn(&CandidateRecord) -> bool,
    ) -> Option<(Vec<CandidateRecord>, HashMap<String, CandidateResult>)> {
        let context = &self.context;
        let store = &context.store;
        let candidates = self.journal.read(context, &job.job_id).await?;
        let mut results = HashMap::new();
        let mut evaluated = Vec::with_capacity(candidates.len());
        for mut candidate in candidates {
            if current(&candidate) {
                let candidate_id = candidate.candidate_id.clone();
                let result = context
                    .with_store_retry("read result", || {
                        store.get_result(&job.job_id, &candidate_id)
                    })
                    .await?;
                if let Some(result) = result {
                    if candidate.evaluation.is_none() {
                        let evaluation = evaluator::evaluate(&task.objectives, &result);
                        // the stored record keeps its plan: write the evaluation into it
                        let stored = context
                            .with_store_retry("read candidate", || {
                                store.get_candidate(&job.job_id, &candidate_id)
                            })
                            .await?;
                        if let Some(mut stored) = stored {
                            stored.evaluation = Some(evaluation.clone());
                            context
                                .with_store_retry("write evaluation", || {
                                    store.put_candidate(&stored)
                                })
                                .await?;
                        }
                        self.journal.set_evaluation(&candidate_id, &evaluation);
                        candidate.evaluation = Some(evaluation.clone());
                        let message = evaluation_message(&evaluation);
                        let data = serde_json::to_value(&evaluation).unwrap_or(Value::Null);
                        context
                            .emit(job, EventKind::Evaluation, &candidate_id, message, data)
                            .await;
                    }
                    results.insert(candidate_id, result);
                }
            }
            evaluated.push(candidate);
        }
        Some((evaluated, results))
    }

    /// Evaluates the candidates of the current iteration whose results are in while
    /// the others still run, so that the slots do not idle through the evaluations
    /// when the iteration's last result arrives. An evaluation reads its own result
    /// only, and the job's best is taken once the whole iteration is in
    /// ([`Self::evaluate_iteration`]), so the order of arrival changes nothing. The
    /// candidates of an iteration drafted ahead wait for their own iteration: the
    /// best of this one must not see them. `None` on shutdown.
    async fn evaluate_arrived(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        finished: &HashSet<String>,
    ) -> Option<()> {
        let arrived: Vec<&String> = job
            .iteration_candidates
            .iter()
            .filter(|candidate_id| finished.contains(*candidate_id))
            .collect();
        if !self.journal.any_unevaluated(&arrived) {
            return Some(());
        }
        let iteration = job.iteration;
        self.evaluate_candidates(job, task, |candidate| {
            candidate.iteration == iteration
                && candidate.evaluation.is_none()
                && finished.contains(&candidate.candidate_id)
        })
        .await
        .map(|_| ())
    }

    pub(super) async fn evaluate_iteration(
        &mut self,
        job: &mut JobRecord,
        task: &TaskContext,
    ) -> Flow {
        let context = self.context.clone();
        let job_id = job.job_id.clone();
        let iteration = job.iteration;
        let Some((evaluated, _)) = self
            .evaluate_candidates(job, task, |candidate| {
                // the ones evaluated as they arrived need not be read again
                candidate.iteration == iteration && candidate.evaluation.is_none()
            })
            .await
        else {
            return Flow::Stop;
        };
        let previous = (job.best_passed, job.best_score);
        if let Some(best) = Journal::from_candidates(&evaluated).best() {
            let evaluation = best.evaluation.as_ref().expect("best has an evaluation");
            job.best_candidate_id = best.candidate_id.clone();
            job.best_score = evaluation.score;
            job.best_passed = evaluation.passed;
        }
        let improved = (job.best_passed, job.best_score) > (previous.0, previous.1 + 1e-9)
            && !job.best_candidate_id.is_empty();
        artifacts::keep_best(&context, &job_id, &evaluated).await;
        job.stale_iterations = if improved {
            0
        } else {
            job.stale_iterations + 1
        };
        let last_iteration = job.iteration + 1 >= job.options.max_iterations;
        let out_of_patience = job.stale_iterations >= job.options.patience.max(1);
        let search_ends = (job.best_passed && out_of_patience) || last_iteration;
        if search_ends && !job.options.signoff_deck.is_empty() {
            let message = format!("the search ends; foundry deck {}", job.options.signoff_deck);
            ending::transition(&context, job, JobState::Signoff, &message).await;
        } else if job.best_passed && (out_of_patience || last_iteration) {
            let message = "the best candidate passed and no longer improves";
            ending::transition(&context, job, JobState::Passed, message).await;
        } else if last_iteration {
            let message = format!("max_iterations ({}) reached", job.options.max_iterations);
            ending::conclude(&context, job, &message).await;
            return Flow::Stop;
        } else {
            ending::transition(&context, job, JobState::Iterating, "iterating").await;
        }
        Flow::Continue
    }
}

/// One line on an evaluation for the job's events.
fn evaluation_message(evaluation: &Evaluation) -> String {
    let verdict = if evaluation.passed {
        "passed".to_string()
    } else {
        format!("not passed: {}", evaluation.reasons.join("; "))
    };
    match &evaluation.signoff {
        Some(deck) => format!(
            "foundry deck {}: {} violations; {verdict}",
            deck.deck, deck.violations
        ),
        None => verdict,
    }
}
