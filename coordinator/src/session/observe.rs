//! What the driver does in each phase to learn what happened next: one match
//! over the phase, each arm handing the work to the module of that phase and
//! returning the [`PhaseEvent`] it observed (`None`: nothing yet — e.g. no live
//! worker; the loop comes back).

use crate::context::Interrupted;
use crate::model::{JobPhase, JobRecord, now_ms};

use super::Driver;
use super::transitions::PhaseEvent;

impl Driver {
    pub(super) async fn observe(
        &mut self,
        job: &JobRecord,
    ) -> Result<Option<PhaseEvent>, Interrupted> {
        if let Some(cancelled) = self.cancellation(job).await? {
            return Ok(Some(cancelled));
        }
        let task = match (&self.parsed, &job.phase) {
            (_, JobPhase::Ending { outcome, .. }) => {
                self.end_work(job, *outcome).await?;
                return Ok(Some(PhaseEvent::Ended));
            }
            (Ok(task), _) => task.clone(),
            (Err(errors), _) => {
                let issues = errors.issues.len();
                return Ok(Some(PhaseEvent::Unparsable { issues }));
            }
        };
        if job.phase.is_time_budgeted() && time_budget_spent(job) {
            return Ok(Some(PhaseEvent::TimeBudgetSpent));
        }
        let event = match &job.phase {
            JobPhase::Init => Some(PhaseEvent::Started),
            JobPhase::Parsing => Some(PhaseEvent::Parsed {
                modules: task
                    .circuit
                    .modules
                    .iter()
                    .map(|module| module.describe())
                    .collect(),
                devices: task.circuit.devices.len(),
            }),
            JobPhase::ProbingRules => self.probe_rules(job, &task).await?,
            JobPhase::Planning(drafting) => self.plan_iteration(job, &task, drafting).await?,
            JobPhase::Executing(round) => match &round.model_share {
                Some(share) => match self.draft_model_share(job, &task, round, share).await? {
                    Some(added) => Some(added),
                    None => Some(PhaseEvent::ResultsSeen(self.progress(job).await?)),
                },
                None => Some(PhaseEvent::ResultsSeen(self.progress(job).await?)),
            },
            JobPhase::Signoff(_) => Some(PhaseEvent::ResultsSeen(self.progress(job).await?)),
            JobPhase::Evaluating(_) => Some(self.evaluate_iteration(job, &task).await?),
            JobPhase::ChoosingSignoff => Some(self.choose_signoff(job).await?),
            JobPhase::JudgingSignoff(round) => Some(self.judge_signoff(job, &task, round).await?),
            JobPhase::Concluding { .. } => Some(PhaseEvent::Concluded {
                any_layout: self.any_layout(job).await?,
            }),
            JobPhase::Ending { .. } | JobPhase::Finished { .. } => None,
        };
        Ok(event)
    }

    /// A cancellation requested through any coordinator (or before a restart):
    /// this process's in-flight calls are stopped, what finished is evaluated
    /// (its best is the job's best, with its artifacts), and the candidates
    /// without a result are recorded as abandoned.
    async fn cancellation(&mut self, job: &JobRecord) -> Result<Option<PhaseEvent>, Interrupted> {
        let context = self.context.clone();
        let requested = context
            .with_store_retry("read cancel", || {
                context.store.cancel_requested(&job.job_id)
            })
            .await?;
        let Some(reason) = requested else {
            return Ok(None);
        };
        context.signal_cancel(&job.job_id);
        let best = self.keep_what_finished(job).await?;
        self.abandon_unfinished(job, &reason).await?;
        Ok(Some(PhaseEvent::Cancelled { reason, best }))
    }
}

/// Whether the job's time budget (from its start) is spent.
fn time_budget_spent(job: &JobRecord) -> bool {
    job.options.time_budget_ms > 0
        && now_ms().saturating_sub(job.started_ms) > job.options.time_budget_ms
}
