//! The planner's advice for an iteration, asked ahead: when iteration k is
//! enqueued, the advice for k+1 is asked while k's candidates run, so a model
//! call overlaps execution instead of adding to the job's wall time. An answer
//! not in when k+1 is planned is not waited for: the search journal drafts k+1
//! alone and the answer serves k+2. Only the first iteration waits for the
//! model, at most its timeout; a model that fails is a fallback.

use std::sync::Arc;
use std::time::Duration;

use centroid_planner::job_events::{EventData, KnowledgeSource, PlannerChoice};
use centroid_schemas::TaskContext;
use tokio::task::JoinHandle;

use super::Driver;
use crate::context::Interrupted;
use crate::model::{CandidateRecord, EventKind, JobRecord};
use centroid_planner::advice::{Advice, AdviceRequest, JournalEntry, LlmCall};
use centroid_planner::planner::{Planner, PlannerKind};
use centroid_planner::skill_catalog::SkillCatalog;

/// How much longer than the model's timeout PLANNING waits for the advice.
const ADVICE_GRACE: Duration = Duration::from_secs(1);

/// Advice being asked for one iteration; dropped = abandoned.
pub(super) struct PendingAdvice {
    handle: JoinHandle<Advice>,
}

impl PendingAdvice {
    /// The advice, once the task ends (a task that panicked is a fallback).
    async fn join_mut(&mut self) -> Advice {
        (&mut self.handle).await.unwrap_or_else(|error| {
            Advice::fallback(format!("planner task failed: {error}"), Vec::new())
        })
    }

    async fn join(mut self) -> Advice {
        self.join_mut().await
    }
}

impl Drop for PendingAdvice {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// How many design points the model is asked for: half the iteration (the
/// search journal drafts the rest, so exploration never stops).
fn advised_count(job: &JobRecord) -> usize {
    (job.options.candidates_per_iteration as usize / 2).max(1)
}

/// Starts asking `planner` for the advice of `iteration`, given the candidates so
/// far and the memory's history lines.
fn ask(
    job: &JobRecord,
    iteration: u32,
    task: &Arc<TaskContext>,
    planner: &Arc<dyn Planner>,
    skills: &SkillCatalog,
    candidates: &[CandidateRecord],
    history: &[String],
) -> PendingAdvice {
    let request = AdviceRequest {
        job_id: job.job_id.clone(),
        iteration,
        count: advised_count(job),
        task: task.clone(),
        skills: skills.clone(),
        space: planner.design_space(task, skills),
        journal: candidates.iter().map(JournalEntry::of).collect(),
        history: history.to_vec(),
    };
    PendingAdvice {
        handle: tokio::spawn(planner.clone().advise(request)),
    }
}

/// The model call the job stopped waiting for: still a call made (and counted),
/// failed with the reason, though its answer never arrived.
fn abandoned_call(iteration: u32, kind: &PlannerKind, waited: Duration) -> LlmCall {
    let model = match kind {
        PlannerKind::Llm { model } => model.clone(),
        PlannerKind::Heuristic => String::new(),
    };
    LlmCall {
        role: "planner".into(),
        iteration,
        model,
        prompt_tokens: 0,
        completion_tokens: 0,
        usage_estimated: true,
        duration_ms: waited.as_millis() as u64,
        attempts: 1,
        outcome: "failed".into(),
        reason: format!(
            "no answer within {} ms: abandoned, the job goes on without the model's advice",
            waited.as_millis()
        ),
        summary: String::new(),
        trace_id: String::new(),
    }
}

impl Driver {
    /// The advice for `job`'s current iteration: the one asked ahead, else asked
    /// now; waited for at most the model's timeout. Its model calls, a fallback
    /// and a rewritten guidance are reported as events.
    pub(super) async fn advice(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        planner: &Arc<dyn Planner>,
        skills: &SkillCatalog,
        so_far: &[CandidateRecord],
    ) -> Result<Advice, Interrupted> {
        let kind = planner.kind();
        if !self.planner_announced {
            self.planner_announced = true;
            self.announce_planner(job, &kind).await?;
        }
        if kind == PlannerKind::Heuristic || job.options.noop_plan {
            return Ok(Advice::default());
        }
        let advice = match self.pending_advice.take() {
            // asked while the last iteration ran, and answered: use it
            Some(pending) if pending.handle.is_finished() => pending.join().await,
            // asked, not answered yet: the journal drafts this iteration (no slot
            // waits for a model); the answer serves the next one
            Some(pending) => {
                self.pending_advice = Some(pending);
                let message = format!(
                    "the model's advice is not in yet: the journal drafts iteration {} alone",
                    job.iteration
                );
                let data = EventData::AdviceLate {
                    iteration: job.iteration,
                };
                self.context
                    .emit(job, EventKind::Planner, "", message, data)
                    .await?;
                return Ok(Advice::default());
            }
            // nothing asked yet (the first iteration, or a job taken over): ask and
            // wait at most the model's timeout — the one call a job waits for
            None => {
                let mut pending = ask(
                    job,
                    job.iteration,
                    task,
                    planner,
                    skills,
                    so_far,
                    &self.history,
                );
                // the client gives up at its timeout and records the call; the grace lets it
                let timeout =
                    Duration::from_millis(self.context.config.llm.timeout_ms) + ADVICE_GRACE;
                tokio::select! {
                    advice = pending.join_mut() => advice,
                    _ = tokio::time::sleep(timeout) => {
                        Advice::fallback("timeout", vec![abandoned_call(job.iteration, &kind, timeout)])
                    }
                    _ = self.cancel.wait_for(|cancelled| *cancelled) => Advice::fallback("cancelled", Vec::new()),
                }
            }
        };
        self.report_advice(job, &advice).await?;
        Ok(advice)
    }

    /// Reports which planner plans the job (and why, when not the one asked for).
    async fn announce_planner(
        &self,
        job: &JobRecord,
        kind: &PlannerKind,
    ) -> Result<(), Interrupted> {
        let choice = |kind: &str, model: &str| PlannerChoice {
            kind: kind.into(),
            model: model.into(),
            requested: None,
            why: None,
        };
        let (message, planner) = match (kind, job.options.planner.as_str()) {
            (PlannerKind::Llm { model }, _) => (
                format!("the LLM planner ({model}) plans this job"),
                choice("llm", model),
            ),
            (PlannerKind::Heuristic, "llm") => {
                let why = self.context.config.llm.missing().unwrap_or_default();
                let message = format!(
                    "the LLM planner was asked for but {why}: the heuristic planner plans this job"
                );
                let planner = PlannerChoice {
                    requested: Some("llm".into()),
                    why: Some(why),
                    ..choice("heuristic", "")
                };
                (message, planner)
            }
            (PlannerKind::Heuristic, _) => (
                "the heuristic planner plans this job".to_string(),
                choice("heuristic", ""),
            ),
        };
        let data = EventData::PlannerChosen { planner };
        self.context
            .emit(job, EventKind::Planner, "", message, data)
            .await
    }

    /// Reports an advice's model calls, the knowledge its prompt carried (once
    /// per job), a rewritten guidance and a fallback.
    async fn report_advice(&mut self, job: &JobRecord, advice: &Advice) -> Result<(), Interrupted> {
        let context = self.context.clone();
        context.emit_llm_calls(job, "", &advice.calls).await?;
        if !advice.knowledge.is_empty() && !self.knowledge_reported {
            self.knowledge_reported = true;
            let knowledge: Vec<KnowledgeSource> = advice
                .knowledge
                .iter()
                .map(|(source, score)| KnowledgeSource {
                    source: source.clone(),
                    score: f64::from(*score),
                })
                .collect();
            let message = format!(
                "layout knowledge in the prompt: {} sections",
                knowledge.len()
            );
            let data = EventData::KnowledgeUsed { knowledge };
            context
                .emit(job, EventKind::Memory, "", message, data)
                .await?;
        }
        if let Some(guidance) = &advice.guidance {
            let message = format!(
                "the meta-prompt agent rewrote the planner's guidance (version {}) after repeated {} failures",
                guidance.version, guidance.because
            );
            let data = EventData::GuidanceRewritten {
                system_prompt: guidance.clone(),
            };
            context
                .emit(job, EventKind::Planner, "", message, data)
                .await?;
        }
        if let Some(reason) = &advice.fallback {
            let message = format!(
                "the heuristic planner drafts iteration {} alone: {reason}",
                job.iteration
            );
            let data = EventData::PlannerFallback {
                fallback: reason.clone(),
                iteration: Some(job.iteration),
                step_id: None,
            };
            context
                .emit(job, EventKind::Planner, "", message, data)
                .await?;
        }
        Ok(())
    }

    /// Starts asking the advice for the iteration after `job`'s current one
    /// (while the current one runs), when there will be one and no question to
    /// the model is still open.
    pub(super) fn ask_ahead(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        planner: &Arc<dyn Planner>,
        skills: &SkillCatalog,
        candidates: &[CandidateRecord],
    ) {
        let next = job.iteration + 1;
        if planner.kind() == PlannerKind::Heuristic
            || job.options.noop_plan
            || next >= job.options.max_iterations
            || self.pending_advice.is_some()
        {
            return;
        }
        self.pending_advice = Some(ask(
            job,
            next,
            task,
            planner,
            skills,
            candidates,
            &self.history,
        ));
    }
}
