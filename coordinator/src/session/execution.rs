//! EXECUTING and EVALUATING, the driver's side: where a round's candidates
//! stand ([`Driver::progress`]), the queue (candidates stored and queued with the
//! job record in one store call), candidates lost (no result past every
//! delivery's deadline, so a lost queue entry cannot hang a job), and the
//! evaluations — each result evaluated as it arrives, the iteration's best
//! taken once the whole iteration is in.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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

    /// Ids of the job's candidates with a result (only those recorded since the
    /// last look are read: [`super::finished_ids`]).
    pub(super) async fn finished_ids(
        &self,
        job_id: &str,
    ) -> Result<Arc<HashSet<String>>, Interrupted> {
        self.finished.read(&self.context, job_id).await
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

    /// Puts these stored candidates into the work queue with the job record (one
    /// store call; the candidates, stored when drafted, are neither read nor
    /// written again); wakes the dispatchers.
    pub(super) async fn enqueue_more(
        &self,
        job: &JobRecord,
        candidate_ids: &[String],
    ) -> Result<(), Interrupted> {
        let context = &self.context;
        context
            .with_store_retry("enqueue candidates", || {
                context.store.enqueue_stored(job, candidate_ids)
            })
            .await?;
        context.queue_changed.notify_waiters();
        tracing::debug!(session_id = %job.job_id, added = candidate_ids.len(), "queue topped up");
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
        let selected: Vec<ToEvaluate> = candidates
            .iter()
            .filter(|candidate| current(candidate))
            .map(|candidate| ToEvaluate {
                candidate_id: candidate.candidate_id.clone(),
                evaluated: candidate.evaluation.is_some(),
            })
            .collect();
        let (results, mut evaluations) = self.evaluate_results(job, task, &selected).await?;
        for candidate in &mut candidates {
            if let Some(evaluation) = evaluations.remove(&candidate.candidate_id) {
                candidate.evaluation = Some(evaluation);
            }
        }
        Ok((candidates, results))
    }

    /// Reads the results of `selected` with the stored candidates of those not
    /// evaluated yet (one store call per few); each one with a result and no
    /// evaluation is evaluated, stored and reported. Returns the results read and the
    /// new evaluations.
    async fn evaluate_results(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        selected: &[ToEvaluate],
    ) -> Result<
        (
            HashMap<String, CandidateResult>,
            HashMap<String, Evaluation>,
        ),
        Interrupted,
    > {
        let context = &self.context;
        let store = &context.store;
        let (mut results, mut evaluations) = (HashMap::new(), HashMap::new());
        for chunk in selected.chunks(RECORDS_PER_CALL) {
            let ids: Vec<String> = chunk
                .iter()
                .map(|selected| selected.candidate_id.clone())
                .collect();
            let unevaluated: Vec<String> = chunk
                .iter()
                .filter(|selected| !selected.evaluated)
                .map(|selected| selected.candidate_id.clone())
                .collect();
            let (read, stored) = context
                .with_store_retry("read results and candidates", || {
                    store.results_and_candidates(&job.job_id, &ids, &unevaluated)
                })
                .await?;
            // the stored candidates come in the order of `unevaluated`
            let mut stored = stored.into_iter();
            let (mut written, mut events) = (Vec::new(), Vec::new());
            for (selected, result) in chunk.iter().zip(read) {
                let record = match selected.evaluated {
                    true => None,
                    false => stored.next().flatten(),
                };
                let Some(result) = result else { continue };
                if !selected.evaluated {
                    let candidate_id = &selected.candidate_id;
                    let mut record =
                        record.ok_or_else(|| missing_candidate(&job.job_id, candidate_id))?;
                    let evaluation = evaluator::evaluate_against(
                        &task.objectives,
                        &result,
                        job.schematic.as_ref(),
                    );
                    events.push(evaluation_event(job, candidate_id, &evaluation));
                    record.evaluation = Some(evaluation.clone());
                    written.push(record);
                    evaluations.insert(candidate_id.clone(), evaluation);
                }
                results.insert(selected.candidate_id.clone(), result);
            }
            self.write_evaluated(job, &written, &events).await?;
        }
        Ok((results, evaluations))
    }

    /// Writes evaluations into the stored candidates (which keep their plans; read,
    /// then written back in one store call) and the journal cache.
    async fn write_evaluations(
        &self,
        job: &JobRecord,
        evaluations: &[(String, Evaluation)],
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
        self.write_evaluated(job, &written, &[]).await
    }

    /// Writes candidates with their new evaluations and `events` (which report them)
    /// in one store call, then into the journal cache; the events are logged and
    /// their watchers woken.
    async fn write_evaluated(
        &self,
        job: &JobRecord,
        written: &[CandidateRecord],
        events: &[EventRecord],
    ) -> Result<(), Interrupted> {
        if written.is_empty() && events.is_empty() {
            return Ok(());
        }
        let context = &self.context;
        context
            .with_store_retry("write evaluations", || {
                context
                    .store
                    .put_candidates_reported(&job.job_id, written, events)
            })
            .await?;
        for record in written {
            if let Some(evaluation) = &record.evaluation {
                self.journal
                    .set_evaluation(&record.candidate_id, evaluation);
            }
        }
        for event in events {
            context.event_appended(job, event);
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
            self.write_evaluations(job, chunk).await?;
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
        if let Some(unevaluated) = self.journal.unevaluated(candidate_ids, iteration) {
            let selected: Vec<ToEvaluate> = unevaluated
                .into_iter()
                .map(|candidate_id| ToEvaluate {
                    candidate_id,
                    evaluated: false,
                })
                .collect();
            if !selected.is_empty() {
                self.evaluate_results(job, task, &selected).await?;
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

/// A candidate whose result is read for its evaluation, and whether it has one.
struct ToEvaluate {
    candidate_id: String,
    evaluated: bool,
}

/// The `Evaluation` event reporting a candidate's new evaluation.
fn evaluation_event(job: &JobRecord, candidate_id: &str, evaluation: &Evaluation) -> EventRecord {
    let message = evaluation_message(evaluation);
    let data = EventData::Evaluated(Box::new(evaluation.clone()));
    Context::event_of(job, EventKind::Evaluation, candidate_id, message, data)
}

/// A candidate the job's round names is not in the store: the job cannot go on.
fn missing_candidate(job_id: &str, candidate_id: &str) -> Interrupted {
    Interrupted::Store(crate::store::missing_candidate(job_id, candidate_id))
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
