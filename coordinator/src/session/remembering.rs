//! The job's use of the long-term memory: at its first planning, the most similar
//! earlier cases (their best points are tried first, the LLM planner sees them
//! with the failure patterns of similar circuits); at its end, its own case (a
//! pass) or its failure, and the failures that repeated within it. The memory is
//! an aid: when it cannot be read or written the job goes on, with an event.

use std::collections::BTreeMap;
use std::sync::Arc;

use centroid_planner::job_events::{EventData, FailureSeen, SimilarCase};
use centroid_schemas::TaskContext;

use super::Driver;
use crate::context::Interrupted;
use crate::model::{CandidateRecord, DesignPoint, EventKind, JobRecord, Origin, Outcome, now_ms};
use centroid_planner::case_memory::{
    Case, FailurePattern, MemoryError, Signature, most_similar, similar_failures,
};
use centroid_planner::evaluator::failure_family;

/// Similar cases reused, and failure patterns shown, at most.
const RECALLED: usize = 3;

impl Driver {
    /// The best points of the cases most similar to this job's circuit and the
    /// points that failed on similar circuits without being the fix (first planning
    /// only); fills `self.history` for the LLM planner's prompt.
    pub(super) async fn recall(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        so_far: &[CandidateRecord],
    ) -> Result<(Vec<DesignPoint>, Vec<DesignPoint>), Interrupted> {
        let Some(memory) = self.context.memory.clone() else {
            return Ok(Default::default());
        };
        if self.recalled || !so_far.is_empty() {
            return Ok(Default::default());
        }
        self.recalled = true;
        let signature = Signature::of(task);
        let read =
            async { Ok::<_, MemoryError>((memory.cases().await?, memory.failures().await?)) };
        let (cases, failures) = match read.await {
            Ok(read) => read,
            Err(error) => {
                self.memory_trouble(job, &error.to_string()).await?;
                return Ok(Default::default());
            }
        };
        let recalled = most_similar(cases, &signature, &job.job_id, RECALLED);
        let failures = similar_failures(failures, &signature, RECALLED);
        for similar in &recalled {
            if let Err(error) = memory.used(&similar.case.job_id).await {
                // only the eviction order suffers: the case is used all the same
                tracing::warn!(session_id = %job.job_id, case = %similar.case.job_id, %error, "cannot count the use of a case");
            }
            let case = &similar.case;
            self.history.push(format!(
                "case {} ({}, {}, similarity {:.3}): best point {} → score {:.3}, area {:.1} um2, first pass after {} candidates",
                case.job_id,
                case.circuit,
                case.tech,
                similar.similarity,
                case.best_point.key(),
                case.score,
                case.area_um2,
                case.candidates_to_first_pass
            ));
        }
        for (failure, similarity) in &failures {
            self.history.push(format!(
                "failure {} ({}, similarity {similarity:.3}): {} — {}{}",
                failure.id,
                failure.circuit,
                failure.kind,
                failure.message,
                failure
                    .point
                    .as_ref()
                    .map_or(String::new(), |point| format!(" at {}", point.key()))
            ));
        }
        let data = EventData::Recalled {
            memory: memory.describe(),
            similar_cases: recalled
                .iter()
                .map(|similar| SimilarCase {
                    job_id: similar.case.job_id.clone(),
                    circuit: similar.case.circuit.clone(),
                    similarity: similar.similarity,
                    point: similar.case.best_point.clone(),
                })
                .collect(),
            failure_patterns: failures
                .iter()
                .map(|(failure, similarity)| FailureSeen {
                    id: failure.id.clone(),
                    kind: failure.kind.clone(),
                    similarity: *similarity,
                })
                .collect(),
        };
        let message = format!(
            "memory: {} similar cases, {} failure patterns",
            recalled.len(),
            failures.len()
        );
        self.context
            .emit(job, EventKind::Memory, "", message, data)
            .await?;
        let mut points: Vec<DesignPoint> = Vec::new();
        for similar in recalled {
            if !points.contains(&similar.case.best_point) {
                points.push(similar.case.best_point);
            }
        }
        let avoid: Vec<DesignPoint> = failures
            .into_iter()
            .filter_map(|(failure, _)| {
                failure
                    .point
                    .filter(|point| Some(point) != failure.fixed_by.as_ref())
            })
            .filter(|point| !points.contains(point))
            .collect();
        Ok((points, avoid))
    }

    /// Stores the job's case (it completed with a passing layout) or its failure,
    /// and the failure patterns that repeated within it.
    pub(super) async fn remember(
        &self,
        job: &JobRecord,
        outcome: Outcome,
    ) -> Result<(), Interrupted> {
        let (Some(memory), Ok(task)) = (self.context.memory.clone(), &self.parsed) else {
            return Ok(());
        };
        let context = &self.context;
        let candidates = context
            .with_store_retry("read candidates", || context.store.candidates(&job.job_id))
            .await?;
        let found = Found::of(job, task, &candidates);
        let mut stored = Vec::new();
        if let Some(case) = found.case(job, task) {
            if let Err(error) = memory.put_case(&case).await {
                return self.memory_trouble(job, &error.to_string()).await;
            }
            let data = EventData::StoredCase {
                stored_case: job.job_id.clone(),
            };
            stored.push((format!("memory: stored case {}", job.job_id), data));
        }
        for failure in found.failures(job, task, outcome) {
            if let Err(error) = memory.put_failure(&failure).await {
                return self.memory_trouble(job, &error.to_string()).await;
            }
            let message = format!("memory: stored failure {}", failure.id);
            let data = EventData::StoredFailure {
                stored_failure: failure.id,
            };
            stored.push((message, data));
        }
        for (message, data) in stored {
            context
                .emit(job, EventKind::Memory, "", message, data)
                .await?;
        }
        Ok(())
    }

    async fn memory_trouble(&self, job: &JobRecord, message: &str) -> Result<(), Interrupted> {
        tracing::warn!(session_id = %job.job_id, error = %message, "long-term memory unavailable; the job goes on without it");
        let data = EventData::MemoryTrouble {
            memory_error: message.to_string(),
        };
        self.context
            .emit(
                job,
                EventKind::Memory,
                "",
                format!("memory: {message}"),
                data,
            )
            .await
    }
}

/// The index of a candidate in its iteration (`…-i3-c7` → 7).
fn index_of(candidate_id: &str) -> u32 {
    candidate_id
        .rsplit_once("-c")
        .and_then(|(_, index)| index.parse().ok())
        .unwrap_or(u32::MAX)
}

/// What a finished job leaves to remember: its evaluated candidates in the order
/// they were drafted, its best, and the circuit's signature.
struct Found<'a> {
    ordered: Vec<&'a CandidateRecord>,
    best: Option<&'a CandidateRecord>,
    signature: Signature,
}

impl<'a> Found<'a> {
    fn of(job: &JobRecord, task: &TaskContext, candidates: &'a [CandidateRecord]) -> Found<'a> {
        let mut ordered: Vec<&CandidateRecord> = candidates
            .iter()
            .filter(|candidate| {
                candidate.origin != Origin::Signoff && candidate.evaluation.is_some()
            })
            .collect();
        ordered.sort_by_key(|candidate| (candidate.iteration, index_of(&candidate.candidate_id)));
        let best = candidates
            .iter()
            .find(|candidate| candidate.candidate_id == job.best_candidate_id);
        Found {
            ordered,
            best,
            signature: Signature::of(task),
        }
    }

    /// The job's case, when its best passed.
    fn case(&self, job: &JobRecord, task: &TaskContext) -> Option<Case> {
        let first_pass = self.ordered.iter().position(|candidate| {
            candidate
                .evaluation
                .as_ref()
                .is_some_and(|evaluation| evaluation.passed)
        })? as u32
            + 1;
        let best = self.best.filter(|_| job.best_passed)?;
        let (score, area_um2) = best.evaluation.as_ref().map_or((0.0, 0.0), |evaluation| {
            (evaluation.score, evaluation.area_um2)
        });
        Some(Case {
            job_id: job.job_id.clone(),
            circuit: task.circuit.name.clone(),
            tech: task.drc_rules.tech.clone(),
            signature: self.signature.clone(),
            objectives: serde_json::to_value(&task.objectives).unwrap_or_default(),
            best_point: best.design_point.clone(),
            score,
            area_um2,
            candidates_to_first_pass: first_pass,
            plan_summary: best.plan.summary.clone(),
            stored_ms: now_ms(),
            uses: 0,
        })
    }

    /// The failure families that hit two or more candidates (with the point that
    /// passed later, if any), and the job's own failure.
    fn failures(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        outcome: Outcome,
    ) -> Vec<FailurePattern> {
        let fixed_by = self
            .best
            .filter(|_| job.best_passed)
            .map(|best| best.design_point.clone());
        let mut by_family: BTreeMap<&'static str, Vec<&CandidateRecord>> = BTreeMap::new();
        for candidate in &self.ordered {
            if let Some(evaluation) = candidate
                .evaluation
                .as_ref()
                .filter(|evaluation| !evaluation.passed)
                && let Some(reason) = evaluation
                    .reasons
                    .iter()
                    .find(|reason| !reason.starts_with("performance_max"))
            {
                by_family
                    .entry(failure_family(reason))
                    .or_default()
                    .push(candidate);
            }
        }
        let pattern = |id: String, kind: &str, message: String, point, fixed_by| FailurePattern {
            id,
            job_id: job.job_id.clone(),
            circuit: task.circuit.name.clone(),
            tech: task.drc_rules.tech.clone(),
            signature: self.signature.clone(),
            kind: kind.to_string(),
            message,
            point,
            fixed_by,
            stored_ms: now_ms(),
        };
        let mut failures: Vec<FailurePattern> = by_family
            .into_iter()
            .filter(|(_, failed)| failed.len() >= 2)
            .map(|(family, failed)| {
                let message = failed[0]
                    .evaluation
                    .as_ref()
                    .and_then(|evaluation| evaluation.reasons.first().cloned())
                    .unwrap_or_default();
                let point = Some(failed[0].design_point.clone());
                let id = format!("{}-{family}", job.job_id);
                pattern(id, family, message, point, fixed_by.clone())
            })
            .collect();
        if outcome == Outcome::Failed || (!job.best_passed && !job.error.is_empty()) {
            let id = job.job_id.clone();
            failures.push(pattern(id, "job_failed", job.error.clone(), None, None));
        }
        failures
    }
}
