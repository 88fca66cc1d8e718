//! Overlapping iterations: while the last candidates of iteration k run and slots
//! would idle, iteration k+1 is drafted and queued. It is drafted from the
//! evaluations of the iterations before k — k's are left out whether k+1 is
//! drafted early or, when the slots never idled, after k was evaluated — so a job
//! stays deterministic for its seed. Whether k+1 overlaps k is decided when k is
//! planned ([`overlap_next`]), only where the search cannot end
//! after k, so a drafted-ahead iteration always runs.

use std::collections::HashSet;
use std::sync::Arc;

use centroid_schemas::TaskContext;
use serde_json::json;

use super::planning::{Drafted, farm_slots, queue_window};
use super::{Driver, Flow};
use crate::model::{EventKind, JobRecord, NextIteration, now_ms};

/// Whether the iteration after `job.iteration` (being planned, with the job's best
/// and patience as the iterations before left them) is drafted without this
/// iteration's evaluations, so that it can start while this iteration's last
/// candidates run: overlapping is on, this is not the first iteration (its
/// feedback is worth waiting for), and the search cannot end after this iteration
/// (not the last one; patience cannot run out — it counts only once a candidate
/// passed, and a new pass is an improvement).
pub(super) fn overlap_next(job: &JobRecord, enabled: bool) -> bool {
    let options = &job.options;
    enabled
        && !options.noop_plan
        && job.iteration >= 1
        && job.iteration + 1 < options.max_iterations
        && !(job.best_passed && job.stale_iterations + 1 >= options.patience.max(1))
}

impl Driver {
    /// Drafts and queues the next iteration when this one is decided to overlap
    /// it, all of this one is queued and fewer of its candidates are out (not in
    /// `finished`) than the farm has slots. `Flow::Stop` on shutdown.
    pub(super) async fn draft_next_if_slots_idle(
        &mut self,
        job: &mut JobRecord,
        task: &Arc<TaskContext>,
        finished: &HashSet<String>,
    ) -> Flow {
        let all_queued = job
            .iteration_enqueued
            .is_none_or(|count| count as usize >= job.iteration_candidates.len());
        if !job.overlap_next || job.next_iteration.is_some() || !all_queued {
            return Flow::Continue;
        }
        let context = self.context.clone();
        let outstanding = job
            .iteration_candidates
            .iter()
            .filter(|candidate_id| !finished.contains(*candidate_id))
            .count();
        if outstanding == 0 || outstanding >= farm_slots(&context).await {
            return Flow::Continue;
        }
        let Some(skills) = self.live_skills(job).await else {
            return Flow::Continue;
        };
        let mut ahead = job.clone();
        ahead.iteration += 1;
        let Some(drafted) = self.draft(&ahead, task, &skills, Some(job.iteration)).await else {
            return Flow::Stop;
        };
        let Drafted::Candidates(candidates) = drafted else {
            // planned again (the same way) after this iteration, which then ends the job
            job.next_iteration = Some(NextIteration::default());
            let stored = context
                .with_store_retry("write job", || context.store.put_job(job))
                .await;
            return if stored.is_some() {
                Flow::Continue
            } else {
                Flow::Stop
            };
        };
        let room = queue_window(&context)
            .await
            .saturating_sub(outstanding)
            .max(1);
        let queued = candidates.len().min(room);
        job.next_iteration = Some(NextIteration {
            candidates: candidates
                .iter()
                .map(|candidate| candidate.candidate_id.clone())
                .collect(),
            enqueued: queued as u32,
        });
        job.updated_ms = now_ms();
        if self.enqueue(job, &candidates, queued).await.is_none() {
            return Flow::Stop;
        }
        let message = format!(
            "iteration {} drafted while iteration {} finishes ({outstanding} candidates out)",
            ahead.iteration, job.iteration
        );
        let data = json!({"iteration": ahead.iteration, "candidates": candidates.len(), "outstanding": outstanding});
        context
            .emit(job, EventKind::StateChanged, "", message, data)
            .await;
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::JobOptions;

    fn job(iteration: u32, max_iterations: u32, patience: u32) -> JobRecord {
        let options = JobOptions {
            candidates_per_iteration: 8,
            max_iterations,
            seed: 1,
            time_budget_ms: 0,
            candidate_deadline_ms: 60_000,
            noop_plan: false,
            sleep_ms: 0,
            signoff_deck: String::new(),
            planner: String::new(),
            patience,
        };
        let mut job = JobRecord::new("j".into(), "j".into(), options, 0);
        job.iteration = iteration;
        job
    }

    #[test]
    fn an_iteration_overlaps_the_next_only_where_the_search_goes_on() {
        assert!(overlap_next(&job(1, 8, 2), true));
        assert!(!overlap_next(&job(1, 8, 2), false), "switched off");
        assert!(
            !overlap_next(&job(0, 8, 2), true),
            "the first iteration's feedback is waited for"
        );
        assert!(
            !overlap_next(&job(7, 8, 2), true),
            "the last iteration has no next"
        );
        let mut passed = job(3, 8, 2);
        passed.best_passed = true;
        assert!(
            overlap_next(&passed, true),
            "patience 2 cannot run out after one stale iteration"
        );
        passed.stale_iterations = 1;
        assert!(
            !overlap_next(&passed, true),
            "one more stale iteration ends the search"
        );
        let mut not_passed = job(3, 8, 1);
        not_passed.stale_iterations = 5;
        assert!(
            overlap_next(&not_passed, true),
            "patience counts only once a candidate passed"
        );
        let mut noop = job(3, 8, 2);
        noop.options.noop_plan = true;
        assert!(!overlap_next(&noop, true));
    }
}
