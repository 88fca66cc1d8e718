//! The planner's advice for an iteration, asked on fresh results: the advice
//! for iteration k+1 is asked once iteration k's results are in — all of them
//! by default, or the share `[llm] results_before_advice_pct` says, while k's
//! last candidates keep the farm working — so the model plans k+1 from k's
//! evaluations. Nothing waits for it: the rule-based share of k+1 runs at once,
//! and the model's share is drafted when the advice arrives
//! ([`super::model_share`]), or when the model's timeout has passed (a model
//! that fails is a fallback). An advice no iteration takes (the job ended
//! first) is recorded as dropped — dropped-late when its share was drafted
//! rule-based without it (`[llm] model_share = "when_ready"`, the last
//! iteration) — with every request it sent, answered or not.

use std::sync::Arc;
use std::time::Duration;

use centroid_planner::job_events::{EventData, KnowledgeSource, PlannerChoice};
use centroid_schemas::TaskContext;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Driver;
use crate::agent::call_ledger::CallLedger;
use crate::context::Interrupted;
use crate::model::{CandidateRecord, EventKind, JobRecord};
use centroid_planner::advice::{Advice, AdviceRequest, JournalEntry, LlmCall};
use centroid_planner::planner::{Planner, PlannerKind};
use centroid_planner::skill_catalog::SkillCatalog;

/// How much longer than the model's timeout the model's share waits for the advice.
const ADVICE_GRACE: Duration = Duration::from_secs(1);

/// Advice being asked for one iteration; dropped = abandoned.
pub(super) struct PendingAdvice {
    /// the iteration the advice is for
    iteration: u32,
    handle: JoinHandle<Advice>,
    /// notified once the advice is in (a permit kept until waited for)
    pub(super) done: Arc<Notify>,
    /// when it was asked
    asked: Instant,
    /// its model calls as they are sent and answered
    ledger: CallLedger,
    /// its share was drafted rule-based without it: no iteration takes it
    late: bool,
}

impl PendingAdvice {
    /// The advice, once the task ends (a task that panicked is a fallback).
    async fn join_mut(&mut self) -> Advice {
        (&mut self.handle).await.unwrap_or_else(|error| {
            Advice::fallback(format!("planner task failed: {error}"), Vec::new())
        })
    }

    /// The calls of the advice abandoned before it ended, every request sent
    /// (the server saw it): those answered as recorded, those still out with
    /// `outcome` and `reason`.
    fn abandoned_calls(&self, outcome: &str, reason: &str) -> Vec<LlmCall> {
        self.ledger
            .calls()
            .into_iter()
            .map(|(call, answered)| {
                if answered {
                    call
                } else {
                    LlmCall {
                        outcome: outcome.into(),
                        reason: reason.into(),
                        ..call
                    }
                }
            })
            .collect()
    }
}

impl Drop for PendingAdvice {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// How many candidates of an iteration are the model's share, drafted when its
/// advice arrives (its points first, the search journal's to fill up): half the
/// iteration, at least one; none for the rule-based planner (or a job of no-op
/// plans). The rule-based share, the rest, runs meanwhile.
pub(super) fn model_share_count(job: &JobRecord, kind: &PlannerKind) -> Option<u32> {
    match kind {
        PlannerKind::Llm { .. } if !job.options.noop_plan => {
            Some((job.options.candidates_per_iteration / 2).max(1))
        }
        _ => None,
    }
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
    let count = model_share_count(job, &planner.kind()).unwrap_or(1);
    let request = AdviceRequest {
        job_id: job.job_id.clone(),
        iteration,
        count: count as usize,
        task: task.clone(),
        skills: skills.clone(),
        space: planner.design_space(task, skills),
        journal: candidates.iter().map(JournalEntry::of).collect(),
        history: history.to_vec(),
    };
    let done = Arc::new(Notify::new());
    let signal = done.clone();
    let ledger = CallLedger::default();
    let advise = ledger.scope(planner.clone().advise(request));
    PendingAdvice {
        iteration,
        handle: tokio::spawn(async move {
            let advice = advise.await;
            signal.notify_one();
            advice
        }),
        done,
        asked: Instant::now(),
        ledger,
        late: false,
    }
}

impl Driver {
    /// Reports which planner plans the job, once.
    pub(super) async fn announce_planner_once(
        &mut self,
        job: &JobRecord,
        kind: &PlannerKind,
    ) -> Result<(), Interrupted> {
        if !self.planner_announced {
            self.planner_announced = true;
            self.announce_planner(job, kind).await?;
        }
        Ok(())
    }

    /// Starts asking the advice for `iteration` (`job`'s current one, or the one
    /// a share carried over awaits) from `journal` (every candidate so far with
    /// its evaluation), unless it is asked already (when the last iteration's
    /// results came in); an advice asked for another iteration is dropped.
    pub(super) async fn ask_advice(
        &mut self,
        job: &JobRecord,
        iteration: u32,
        task: &Arc<TaskContext>,
        skills: &SkillCatalog,
        journal: &[CandidateRecord],
    ) -> Result<(), Interrupted> {
        match self.pending_advice.take() {
            Some(pending) if pending.iteration == iteration => {
                self.pending_advice = Some(pending);
                return Ok(());
            }
            Some(stale) => self.drop_advice(job, stale).await?,
            None => {}
        }
        let planner = self.context.planner_with_inputs(job, &self.inputs);
        self.pending_advice = Some(ask(
            job,
            iteration,
            task,
            &planner,
            skills,
            journal,
            &self.history,
        ));
        Ok(())
    }

    /// The advice for `iteration` (`job`'s current one, or the one a late share
    /// carried over was asked for) once it is in, or once the model's timeout
    /// (and a grace) has passed since it was asked (a fallback, the call
    /// recorded as abandoned); `None` while it is being asked — asked now when
    /// it is not (a job taken over). Its model calls, a fallback and a
    /// rewritten guidance are reported as events; the planner's memory goes into
    /// the record's next write.
    pub(super) async fn arrived_advice(
        &mut self,
        job: &JobRecord,
        iteration: u32,
        task: &Arc<TaskContext>,
        skills: &SkillCatalog,
    ) -> Result<Option<Advice>, Interrupted> {
        let kind = self.context.planner_with_inputs(job, &self.inputs).kind();
        self.announce_planner_once(job, &kind).await?;
        let timeout = Duration::from_millis(self.context.config.llm.timeout_ms) + ADVICE_GRACE;
        let advice = match self.pending_advice.take() {
            Some(mut pending) if pending.iteration == iteration => {
                if pending.handle.is_finished() {
                    pending.join_mut().await
                } else if pending.asked.elapsed() >= timeout {
                    // the client gives up at its timeout and records the call; the grace lets it
                    let reason = format!(
                        "no answer within {} ms: abandoned, the job goes on without the model's advice",
                        pending.asked.elapsed().as_millis()
                    );
                    let calls = pending.abandoned_calls("failed", &reason);
                    drop(pending);
                    Advice::fallback("timeout", calls)
                } else {
                    self.pending_advice = Some(pending);
                    return Ok(None);
                }
            }
            other => {
                if let Some(stale) = other {
                    self.drop_advice(job, stale).await?;
                }
                let context = self.context.clone();
                let journal = self.journal.read(&context, &job.job_id).await?;
                self.ask_advice(job, iteration, task, skills, &journal)
                    .await?;
                return Ok(None);
            }
        };
        self.report_advice(job, &advice).await?;
        if let Some(memory) = &advice.memory {
            self.planner_memory = Some(memory.clone());
        }
        Ok(Some(advice))
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

    /// Starts asking the advice for the iteration after `job`'s current one once
    /// the set share of the current one's candidates is evaluated (below 100 %:
    /// at 100 % the advice is asked when the next iteration is planned, right
    /// after), when there will be a next iteration and nothing is asked yet.
    pub(super) async fn ask_when_results_in(&mut self, job: &JobRecord) -> Result<(), Interrupted> {
        let next = job.iteration + 1;
        let share = self.context.config.llm.results_before_advice_pct;
        let (Ok(task), Some(skills)) = (self.parsed.clone(), self.skills.clone()) else {
            return Ok(());
        };
        if share >= 100
            || job.options.noop_plan
            || next >= job.options.max_iterations
            || self.pending_advice.is_some()
        {
            return Ok(());
        }
        let planner = self.context.planner_with_inputs(job, &self.inputs);
        if planner.kind() == PlannerKind::Heuristic {
            return Ok(());
        }
        let context = self.context.clone();
        let candidates = self.journal.read(&context, &job.job_id).await?;
        if !share_evaluated(&candidates, job.iteration, share) {
            return Ok(());
        }
        self.pending_advice = Some(ask(
            job,
            next,
            &task,
            &planner,
            &skills,
            &candidates,
            &self.history,
        ));
        Ok(())
    }

    /// Whether the iteration after `job`'s current one may be drafted ahead: the
    /// LLM planner plans it from the current one's results, so not before the
    /// set share of them is evaluated — but under `[llm] model_share =
    /// "when_ready"`, where only its rule-based share is drafted ahead (as the
    /// rule-based planner's, without the current iteration's evaluations) and
    /// the model's advice for it is asked once it runs, the current iteration
    /// evaluated. The rule-based planner always may.
    pub(super) async fn may_draft_ahead(&mut self, job: &JobRecord) -> Result<bool, Interrupted> {
        let planner = self.context.planner_with_inputs(job, &self.inputs);
        if planner.kind() == PlannerKind::Heuristic
            || job.options.noop_plan
            || self.settings.model_share_when_ready
        {
            return Ok(true);
        }
        let context = self.context.clone();
        let candidates = self.journal.read(&context, &job.job_id).await?;
        let share = self.context.config.llm.results_before_advice_pct;
        Ok(share_evaluated(&candidates, job.iteration, share))
    }

    /// Records the calls of an advice no iteration took (the job ended, or the
    /// iteration was planned without it) as dropped — "dropped-late" when its
    /// share was drafted rule-based without it; one abandoned before its
    /// answers came records every request it sent.
    pub(super) async fn drop_advice(
        &mut self,
        job: &JobRecord,
        mut pending: PendingAdvice,
    ) -> Result<(), Interrupted> {
        let iteration = pending.iteration;
        let (outcome, reason) = if pending.late {
            let reason = format!(
                "the advice for iteration {iteration} came after its share was drafted rule-based: dropped"
            );
            ("dropped-late", reason)
        } else {
            let reason = format!("the advice for iteration {iteration} was not used: dropped");
            ("dropped", reason)
        };
        let calls: Vec<LlmCall> = if pending.handle.is_finished() {
            let advice = pending.join_mut().await;
            advice
                .calls
                .into_iter()
                .map(|call| LlmCall {
                    outcome: outcome.into(),
                    reason: reason.clone(),
                    ..call
                })
                .collect()
        } else {
            let unanswered = if pending.late {
                format!(
                    "the advice for iteration {iteration} was late: its share was drafted \
                     rule-based, and this answer had not come when it was dropped"
                )
            } else {
                format!("{reason} before this answer came")
            };
            pending
                .abandoned_calls(outcome, &unanswered)
                .into_iter()
                .map(|call| LlmCall {
                    outcome: outcome.into(),
                    ..call
                })
                .collect()
        };
        drop(pending);
        self.context.emit_llm_calls(job, "", &calls).await
    }

    /// The advice for `iteration`, still being asked, is late: its share was
    /// drafted rule-based, so no iteration takes it (recorded as dropped-late
    /// when dropped).
    pub(super) fn advice_late(&mut self, iteration: u32) {
        if let Some(pending) = &mut self.pending_advice
            && pending.iteration == iteration
        {
            pending.late = true;
        }
    }

    /// An advice still asked when the job ends, recorded as dropped.
    pub(super) async fn drop_pending_advice(&mut self, job: &JobRecord) -> Result<(), Interrupted> {
        match self.pending_advice.take() {
            Some(pending) => self.drop_advice(job, pending).await,
            None => Ok(()),
        }
    }
}

/// Whether at least `share` % of `iteration`'s candidates are evaluated.
fn share_evaluated(candidates: &[CandidateRecord], iteration: u32, share: u32) -> bool {
    let of_iteration: Vec<&CandidateRecord> = candidates
        .iter()
        .filter(|candidate| candidate.iteration == iteration)
        .collect();
    let evaluated = of_iteration
        .iter()
        .filter(|candidate| candidate.evaluation.is_some())
        .count();
    !of_iteration.is_empty() && evaluated * 100 >= of_iteration.len() * share as usize
}
