//! EXECUTING and EVALUATING, the driver's side: where a round's candidates
//! stand ([`Driver::progress`]), the queue (candidates stored and queued with the
//! job record in one store call), candidates lost (no result past every
//! delivery's deadline, so a lost queue entry cannot hang a job), and the
//! evaluations — each result evaluated as it arrives, the iteration's best
//! taken once the whole iteration is in.

use std::collections::{HashMap, HashSet};

use centroid_planner::job_events::EventData;
use centroid_schemas::TaskContext;

use super::Driver;
use super::planning::{farm_slots, queue_window};
use super::transitions::{Best, PhaseEvent, Progress};
use crate::artifacts;
use crate::context::{Context, Interrupted};
use crate::model::{
    CandidateRecord, CandidateResult, CandidateStatus, Evaluation, EventKind, JobRecord, now_ms,
};
use centroid_planner::evaluator;
use centroid_planner::performance::relative;
use centroid_planner::search::Journal;

impl Driver {
    /// Where the candidates of the job stand, for the round being waited on.
    pub(super) async fn progress(&self, job: &JobRecord) -> Result<Progress, Interrupted> {
        let context = &self.context;
        let finished = self.finished_ids(&job.job_id).await?;
        let window = queue_window(context, job).await;
        let config = &context.config;
        let stall_limit_ms = job
            .options
            .candidate_deadline_ms
            .saturating_add(config.rpc_grace_ms)
            * (config.max_deliveries as u64 + 1)
            + config.lease_timeout_ms;
        Ok(Progress {
            finished,
            farm_slots: farm_slots(context).await,
            window,
            now_ms: now_ms(),
            stall_limit_ms,
        })
    }

    /// Ids of the job's candidates with a result.
    pub(super) async fn finished_ids(&self, job_id: &str) -> Result<HashSet<String>, Interrupted> {
        let context = &self.context;
        let ids = context
            .with_store_retry("read result ids", || context.store.result_ids(job_id))
            .await?;
        Ok(ids.into_iter().collect())
    }

    /// Stores the drafted candidates and the job record and puts the first
    /// `queued` candidates into the work queue, at once; wakes the dispatchers.
    pub(super) async fn enqueue_drafted(
        &mut self,
        job: &JobRecord,
        queued: usize,
    ) -> Result<(), Interrupted> {
        let drafted = std::mem::take(&mut self.drafted);
        enqueue(&self.context, job, &drafted, queued).await
    }

    /// Puts these stored candidates into the work queue with the job record.
    pub(super) async fn enqueue_more(
        &self,
        job: &JobRecord,
        candidate_ids: &[String],
    ) -> Result<(), Interrupted> {
        let context = &self.context;
        // only the records needed (each holds its plan): one read per candidate
        let mut records = Vec::with_capacity(candidate_ids.len());
        for candidate_id in candidate_ids {
            let record = context
                .with_store_retry("read candidate", || {
                    context.store.get_candidate(&job.job_id, candidate_id)
                })
                .await?;
            records.push(record.ok_or_else(|| missing_candidate(&job.job_id, candidate_id))?);
        }
        enqueue(context, job, &records, records.len()).await?;
        tracing::debug!(session_id = %job.job_id, added = records.len(), "queue topped up");
        Ok(())
    }

    /// Records candidates that had no result in time as lost.
    pub(super) async fn record_lost(
        &self,
        job: &JobRecord,
        candidate_ids: &[String],
        message: &str,
    ) -> Result<(), Interrupted> {
        let context = &self.context;
        for candidate_id in candidate_ids {
            let lost = CandidateResult::without_run(
                candidate_id,
                CandidateStatus::Failed,
                "LOST",
                message,
            );
            context
                .with_store_retry("record lost candidate", || {
                    context.store.record_result(&job.job_id, &lost)
                })
                .await?;
            tracing::warn!(session_id = %job.job_id, candidate_id = %candidate_id, "candidate lost: no result in time");
        }
        Ok(())
    }

    /// The job's candidates (from the journal cache, without plans); each one
    /// `current` selects that has a result but no evaluation yet is evaluated,
    /// stored and reported. Returns them with the results of the `current` ones.
    pub(super) async fn evaluate_candidates(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        current: impl Fn(&CandidateRecord) -> bool,
    ) -> Result<(Vec<CandidateRecord>, HashMap<String, CandidateResult>), Interrupted> {
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
                        let evaluation = evaluator::evaluate_against(
                            &task.objectives,
                            &result,
                            job.schematic.as_ref(),
                        );
                        self.store_evaluation(job, &candidate_id, &evaluation)
                            .await?;
                        candidate.evaluation = Some(evaluation);
                    }
                    results.insert(candidate_id, result);
                }
            }
            evaluated.push(candidate);
        }
        Ok((evaluated, results))
    }

    /// Writes an evaluation into the stored candidate (which keeps its plan) and
    /// the journal cache, and reports it.
    async fn store_evaluation(
        &self,
        job: &JobRecord,
        candidate_id: &str,
        evaluation: &Evaluation,
    ) -> Result<(), Interrupted> {
        self.write_evaluation(job, candidate_id, evaluation).await?;
        let context = &self.context;
        let message = evaluation_message(evaluation);
        let data = EventData::Evaluated(Box::new(evaluation.clone()));
        context
            .emit(job, EventKind::Evaluation, candidate_id, message, data)
            .await
    }

    /// Writes an evaluation into the stored candidate (which keeps its plan) and the
    /// journal cache.
    async fn write_evaluation(
        &self,
        job: &JobRecord,
        candidate_id: &str,
        evaluation: &Evaluation,
    ) -> Result<(), Interrupted> {
        let context = &self.context;
        let store = &context.store;
        let stored = context
            .with_store_retry("read candidate", || {
                store.get_candidate(&job.job_id, candidate_id)
            })
            .await?;
        let mut stored = stored.ok_or_else(|| missing_candidate(&job.job_id, candidate_id))?;
        stored.evaluation = Some(evaluation.clone());
        context
            .with_store_retry("write evaluation", || store.put_candidate(&stored))
            .await?;
        self.journal.set_evaluation(candidate_id, evaluation);
        Ok(())
    }

    /// The job's evaluated candidates re-scored with their post-layout performance
    /// relative to each other's (`performance::relative`: the score moves as
    /// candidates arrive); those whose score changed are stored again.
    async fn rank_performance(
        &self,
        job: &JobRecord,
        mut candidates: Vec<CandidateRecord>,
    ) -> Result<Vec<CandidateRecord>, Interrupted> {
        let (ids, mut evaluations): (Vec<&String>, Vec<&mut Evaluation>) = candidates
            .iter_mut()
            .filter_map(|candidate| {
                let evaluation = candidate.evaluation.as_mut()?;
                Some((&candidate.candidate_id, evaluation))
            })
            .unzip();
        let changed = relative::rank(&mut evaluations);
        for index in changed {
            self.write_evaluation(job, ids[index], evaluations[index])
                .await?;
        }
        Ok(candidates)
    }

    /// Evaluates the candidates of the current iteration whose results are in while
    /// the others still run, so that the slots do not idle through the evaluations
    /// when the iteration's last result arrives. An evaluation reads its own result
    /// only, and the job's best is taken once the whole iteration is in
    /// ([`Self::evaluate_iteration`]), so the order of arrival changes nothing. The
    /// candidates of an iteration drafted ahead wait for their own iteration: the
    /// best of this one must not see them.
    pub(super) async fn evaluate_arrived(
        &self,
        job: &JobRecord,
        candidate_ids: &[String],
    ) -> Result<(), Interrupted> {
        let Ok(task) = &self.parsed else {
            return Ok(());
        };
        let arrived: Vec<&String> = candidate_ids.iter().collect();
        if !self.journal.any_unevaluated(&arrived) {
            return Ok(());
        }
        let arrived: HashSet<&String> = arrived.into_iter().collect();
        let iteration = job.iteration;
        self.evaluate_candidates(job, task, |candidate| {
            candidate.iteration == iteration
                && candidate.evaluation.is_none()
                && arrived.contains(&candidate.candidate_id)
        })
        .await?;
        Ok(())
    }

    /// The whole iteration evaluated, the best of the journal so far, the best
    /// candidates' artifacts kept.
    pub(super) async fn evaluate_iteration(
        &self,
        job: &JobRecord,
        task: &TaskContext,
    ) -> Result<PhaseEvent, Interrupted> {
        let iteration = job.iteration;
        let (evaluated, _) = self
            .evaluate_candidates(job, task, |candidate| {
                // the ones evaluated as they arrived need not be read again
                candidate.iteration == iteration && candidate.evaluation.is_none()
            })
            .await?;
        let evaluated = self.rank_performance(job, evaluated).await?;
        artifacts::keep_best(&self.context, &job.job_id, &evaluated).await?;
        Ok(PhaseEvent::IterationEvaluated {
            best: best_of(&evaluated),
            now_ms: now_ms(),
        })
    }

    /// A cancelled job keeps what finished: those candidates are evaluated, the best
    /// of them is the job's best and keeps its artifacts.
    pub(super) async fn keep_what_finished(
        &self,
        job: &JobRecord,
    ) -> Result<Option<Best>, Interrupted> {
        let Ok(task) = &self.parsed else {
            return Ok(None);
        };
        let task = task.clone();
        let (candidates, _) = self
            .evaluate_candidates(job, &task, |candidate| candidate.evaluation.is_none())
            .await?;
        let candidates = self.rank_performance(job, candidates).await?;
        artifacts::keep_best(&self.context, &job.job_id, &candidates).await?;
        Ok(best_of(&candidates))
    }
}

/// The best evaluated candidate of `candidates`, by the search's ranking.
pub(super) fn best_of(candidates: &[CandidateRecord]) -> Option<Best> {
    let journal = Journal::from_candidates(candidates);
    let best = journal.best()?;
    let evaluation = best.evaluation.as_ref()?;
    Some(Best {
        candidate_id: best.candidate_id.clone(),
        score: evaluation.score,
        passed: evaluation.passed,
    })
}

/// Stores `candidates` and the job record and puts the first `queued` of them
/// into the work queue, at once; wakes the dispatchers.
async fn enqueue(
    context: &Context,
    job: &JobRecord,
    candidates: &[CandidateRecord],
    queued: usize,
) -> Result<(), Interrupted> {
    context
        .with_store_retry("enqueue candidates", || {
            context.store.enqueue_iteration(job, candidates, queued)
        })
        .await?;
    context.queue_changed.notify_waiters();
    Ok(())
}

/// A candidate the job's round names is not in the store: the job cannot go on.
fn missing_candidate(job_id: &str, candidate_id: &str) -> Interrupted {
    Interrupted::Store(crate::error::StoreError::Missing {
        key: format!("job {job_id} candidate {candidate_id}"),
    })
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
