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
    CandidateRecord, CandidateResult, CandidateStatus, Evaluation, EventKind, EventRecord,
    JobRecord, now_ms,
};
use centroid_planner::evaluator;
use centroid_planner::performance::relative;
use centroid_planner::search::Journal;

/// Records read or written per store call when many are (results carry their
/// steps' data: a bounded reply).
const RECORDS_PER_CALL: usize = 64;

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
        enqueue(&self.context, job, &drafted, queued).await?;
        self.journal.remember(&drafted);
        Ok(())
    }

    /// Puts these stored candidates into the work queue with the job record.
    pub(super) async fn enqueue_more(
        &self,
        job: &JobRecord,
        candidate_ids: &[String],
    ) -> Result<(), Interrupted> {
        let context = &self.context;
        // only the records needed (each holds its plan), a few per store call
        let mut records = Vec::with_capacity(candidate_ids.len());
        for chunk in candidate_ids.chunks(RECORDS_PER_CALL) {
            let read = context
                .with_store_retry("read candidates", || {
                    context.store.get_candidates(&job.job_id, chunk)
                })
                .await?;
            for (candidate_id, record) in chunk.iter().zip(read) {
                records.push(record.ok_or_else(|| missing_candidate(&job.job_id, candidate_id))?);
            }
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
        let mut candidates = self.journal.read(&self.context, &job.job_id).await?;
        let selected = candidates
            .iter_mut()
            .filter(|candidate| current(candidate))
            .collect();
        let results = self.evaluate_records(job, task, selected).await?;
        Ok((candidates, results))
    }

    /// Reads the results of `records` (a few per store call); each one with a
    /// result and no evaluation yet is evaluated, stored and reported. Returns the
    /// results read.
    async fn evaluate_records(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        mut records: Vec<&mut CandidateRecord>,
    ) -> Result<HashMap<String, CandidateResult>, Interrupted> {
        let context = &self.context;
        let store = &context.store;
        let mut results = HashMap::new();
        for chunk in records.chunks_mut(RECORDS_PER_CALL) {
            let ids: Vec<String> = chunk
                .iter()
                .map(|candidate| candidate.candidate_id.clone())
                .collect();
            let read = context
                .with_store_retry("read results", || store.get_results(&job.job_id, &ids))
                .await?;
            let mut evaluated = Vec::new();
            for (candidate, result) in chunk.iter_mut().zip(read) {
                let Some(result) = result else { continue };
                if candidate.evaluation.is_none() {
                    let evaluation = evaluator::evaluate_against(
                        &task.objectives,
                        &result,
                        job.schematic.as_ref(),
                    );
                    evaluated.push((candidate.candidate_id.clone(), evaluation));
                }
                results.insert(candidate.candidate_id.clone(), result);
            }
            self.store_evaluations(job, &evaluated).await?;
            for candidate in chunk.iter_mut() {
                if let Some((_, evaluation)) = evaluated
                    .iter()
                    .find(|(candidate_id, _)| *candidate_id == candidate.candidate_id)
                {
                    candidate.evaluation = Some(evaluation.clone());
                }
            }
        }
        Ok(results)
    }

    /// Writes new evaluations into the stored candidates (which keep their plans)
    /// and the journal cache, and reports each: the candidates and their events in
    /// one store call.
    async fn store_evaluations(
        &self,
        job: &JobRecord,
        evaluations: &[(String, Evaluation)],
    ) -> Result<(), Interrupted> {
        let events: Vec<EventRecord> = evaluations
            .iter()
            .map(|(candidate_id, evaluation)| {
                let message = evaluation_message(evaluation);
                let data = EventData::Evaluated(Box::new(evaluation.clone()));
                Context::event_of(job, EventKind::Evaluation, candidate_id, message, data)
            })
            .collect();
        self.write_evaluations(job, evaluations, &events).await?;
        for event in &events {
            self.context.event_appended(job, event);
        }
        Ok(())
    }

    /// Writes evaluations into the stored candidates (which keep their plans; read,
    /// then written back with `events` in one store call) and the journal cache.
    async fn write_evaluations(
        &self,
        job: &JobRecord,
        evaluations: &[(String, Evaluation)],
        events: &[EventRecord],
    ) -> Result<(), Interrupted> {
        if evaluations.is_empty() {
            return Ok(());
        }
        let context = &self.context;
        let store = &context.store;
        let ids: Vec<String> = evaluations
            .iter()
            .map(|(candidate_id, _)| candidate_id.clone())
            .collect();
        let stored = context
            .with_store_retry("read candidates", || {
                store.get_candidates(&job.job_id, &ids)
            })
            .await?;
        let mut written = Vec::with_capacity(stored.len());
        for ((candidate_id, evaluation), stored) in evaluations.iter().zip(stored) {
            let mut stored = stored.ok_or_else(|| missing_candidate(&job.job_id, candidate_id))?;
            stored.evaluation = Some(evaluation.clone());
            written.push(stored);
        }
        context
            .with_store_retry("write evaluations", || {
                store.put_candidates_reported(&job.job_id, &written, events)
            })
            .await?;
        for (candidate_id, evaluation) in evaluations {
            self.journal.set_evaluation(candidate_id, evaluation);
        }
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
        let changed: Vec<(String, Evaluation)> = relative::rank(&mut evaluations)
            .into_iter()
            .map(|index| (ids[index].clone(), evaluations[index].clone()))
            .collect();
        for chunk in changed.chunks(RECORDS_PER_CALL) {
            self.write_evaluations(job, chunk, &[]).await?;
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
        let iteration = job.iteration;
        // the cache knows them all (the usual case): only the new ones are touched
        if let Some(mut unevaluated) = self.journal.unevaluated(candidate_ids, iteration) {
            if !unevaluated.is_empty() {
                self.evaluate_records(job, task, unevaluated.iter_mut().collect())
                    .await?;
            }
            return Ok(());
        }
        let arrived: HashSet<&String> = candidate_ids.iter().collect();
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
