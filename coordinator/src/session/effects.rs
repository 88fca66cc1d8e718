//! Carrying out a transition's effects, in order: the job record written (alone,
//! or with candidates queued in the same store call), job events appended,
//! candidates evaluated or recorded as lost, a draft made ahead or a late
//! model's share drafted rule-based (observed as the next event), the finished
//! job written and forgotten.

use std::time::Duration;

use super::Driver;
use super::planning::Drafted;
use super::transitions::{Effect, PhaseEvent};
use crate::context::Interrupted;
use crate::model::{Drafting, JobRecord, now_ms};

/// How long the driver waits for a result before it looks again.
const RESULT_WAIT: Duration = Duration::from_millis(250);

impl Driver {
    /// Carries out `effects`; the events they observed on the way (a draft made
    /// ahead, a late share drafted rule-based), for the driver to advance on next.
    pub(super) async fn apply(
        &mut self,
        job: &mut JobRecord,
        effects: Vec<Effect>,
    ) -> Result<Vec<PhaseEvent>, Interrupted> {
        let context = self.context.clone();
        let mut observed = Vec::new();
        // the planner's memory goes into the record with its next write
        if let Some(memory) = self.planner_memory.take() {
            job.planner_memory = Some(memory);
        }
        for effect in effects {
            match effect {
                Effect::Persist => {
                    job.updated_ms = now_ms();
                    context
                        .with_store_retry("write job", || context.store.put_job(job))
                        .await?;
                }
                Effect::Emit(notice) => context.emit_notice(job, "", &notice).await?,
                Effect::EnqueueDrafted { queued } => {
                    job.updated_ms = now_ms();
                    self.enqueue_drafted(job, queued).await?;
                }
                Effect::EnqueueMore { candidates } => {
                    job.updated_ms = now_ms();
                    self.enqueue_more(job, &candidates).await?;
                }
                Effect::DraftAhead {
                    iteration,
                    hidden,
                    outstanding,
                } => observed.extend(
                    self.draft_ahead(job, iteration, hidden, outstanding)
                        .await?,
                ),
                Effect::DraftShareByRule => match self.draft_share_by_rule(job).await? {
                    Some(drafted) => observed.push(drafted),
                    // no live worker: the next look tries again
                    None => self.wait_a_little(RESULT_WAIT).await,
                },
                Effect::EvaluateArrived { candidates } => {
                    self.evaluate_arrived(job, &candidates).await?;
                    self.ask_when_results_in(job).await?
                }
                Effect::RecordLost {
                    candidates,
                    message,
                } => self.record_lost(job, &candidates, &message).await?,
                Effect::Wait => self.wait_a_little(RESULT_WAIT).await,
                Effect::Finish => {
                    job.updated_ms = now_ms();
                    context
                        .with_store_retry("finish job", || context.store.finish_job(job))
                        .await?;
                    context.farm_load.forget();
                }
                Effect::Forget => {
                    context.forget_job(&job.job_id);
                    context.queue_changed.notify_waiters();
                }
            }
        }
        Ok(observed)
    }

    /// Drafts iteration `iteration` — its rule-based share, when the LLM plans
    /// the job — while the current one's last candidates run (`None` when no
    /// worker is live, or the set share of the current one's results is not in
    /// yet for the LLM planner: the next look tries again).
    async fn draft_ahead(
        &mut self,
        job: &JobRecord,
        iteration: u32,
        hidden: u32,
        outstanding: usize,
    ) -> Result<Option<PhaseEvent>, Interrupted> {
        // the model's share waits for this iteration's results (the next look tries again)
        if !self.may_draft_ahead(job).await? {
            self.wait_a_little(RESULT_WAIT).await;
            return Ok(None);
        }
        let (Ok(task), Some(skills)) = (self.parsed.clone(), self.live_skills(job).await?) else {
            self.wait_a_little(RESULT_WAIT).await;
            return Ok(None);
        };
        let mut ahead = job.clone();
        ahead.iteration = iteration;
        let drafting = Drafting {
            hidden: Some(hidden),
            carried: None,
        };
        let (candidates, model_share) = match self.draft(&ahead, &task, &skills, &drafting).await? {
            Drafted::Candidates {
                candidates,
                model_share,
            } => (candidates, model_share),
            // planned again (the same way) after this iteration, which then ends the job
            Drafted::Exhausted | Drafted::Failed(_) => (Vec::new(), None),
        };
        let ids = candidates
            .iter()
            .map(|candidate| candidate.candidate_id.clone())
            .collect();
        self.drafted = candidates;
        Ok(Some(PhaseEvent::DraftedAhead {
            candidates: ids,
            model_share,
            outstanding,
            window: super::planning::queue_window(&self.context, job).await,
        }))
    }
}
