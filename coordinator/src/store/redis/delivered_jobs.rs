//! What a queue entry's delivery reads of its job: the job's **delivery view**
//! (`P:job:{id}:delivery`, written with every write of the job record), and the
//! views last read, parsed.
//!
//! The job is read at every delivery (its finished and cancelled marks must be
//! current), but the record holds the round's candidate ids — at a thousand
//! slots, ~1,250 ids, ~55 KB, rewritten at every queue top-up (tens of times a
//! second per job): each delivery moved the whole text out of Redis and through
//! the coordinator's reply parser. The view is the record without what a top-up
//! changes (the rounds' candidate ids, their queued counts and start, the
//! `updated_ms`): a few hundred bytes, changed only when the job's phase, options
//! or best change. [`DeliveredJobs`] keeps the last text read of each job with
//! its parsed record, and parses only a text that differs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::codec::from_json;
use crate::error::StoreResult;
use crate::model::{Ahead, JobPhase, JobRecord, Round};

/// The job as a delivery reads it: `job` without its rounds' candidate ids, their
/// queued counts and start time, and without `updated_ms` (every field else as
/// in the record; a field added to [`JobRecord`] must be placed here).
pub(super) fn delivery_view(job: &JobRecord) -> JobRecord {
    JobRecord {
        job_id: job.job_id.clone(),
        name: job.name.clone(),
        options: job.options.clone(),
        trace_id: job.trace_id.clone(),
        created_ms: job.created_ms,
        updated_ms: 0,
        started_ms: job.started_ms,
        phase: phase_without_ids(&job.phase),
        iteration: job.iteration,
        error: job.error.clone(),
        best_candidate_id: job.best_candidate_id.clone(),
        best_score: job.best_score,
        best_passed: job.best_passed,
        stale_iterations: job.stale_iterations,
        route_pitch_um: job.route_pitch_um,
        schematic: job.schematic.clone(),
        cancel_requested: job.cancel_requested,
        cancel_reason: job.cancel_reason.clone(),
        owner: job.owner.clone(),
        planner_memory: job.planner_memory.clone(),
    }
}

fn phase_without_ids(phase: &JobPhase) -> JobPhase {
    match phase {
        JobPhase::Executing(round) => JobPhase::Executing(round_without_ids(round)),
        JobPhase::Evaluating(round) => JobPhase::Evaluating(round_without_ids(round)),
        JobPhase::Signoff(round) => JobPhase::Signoff(round_without_ids(round)),
        JobPhase::JudgingSignoff(round) => JobPhase::JudgingSignoff(round_without_ids(round)),
        other => other.clone(),
    }
}

fn round_without_ids(round: &Round) -> Round {
    Round {
        candidates: Vec::new(),
        enqueued: 0,
        started_ms: 0,
        overlap_next: round.overlap_next,
        ahead: round.ahead.as_ref().map(|ahead| Ahead {
            candidates: Vec::new(),
            enqueued: 0,
            model_share: ahead.model_share.clone(),
        }),
        model_share: round.model_share.clone(),
    }
}

/// Jobs kept by [`DeliveredJobs`]; past it, all kept texts are dropped (a farm
/// runs a few jobs at a time: they are read again at their next delivery).
const KEPT_JOBS: usize = 64;

/// The last job record text read at a delivery, per job, with its parsed record.
#[derive(Default)]
pub(super) struct DeliveredJobs(Mutex<HashMap<String, (String, Arc<JobRecord>)>>);

impl DeliveredJobs {
    /// The record of `text`: the kept one when `text` is the text it was parsed
    /// from, else `text` parsed (and kept).
    pub(super) fn parsed(
        &self,
        key: &str,
        job_id: &str,
        text: String,
    ) -> StoreResult<Arc<JobRecord>> {
        if let Some((kept, job)) = self.lock().get(job_id)
            && *kept == text
        {
            return Ok(job.clone());
        }
        let job: Arc<JobRecord> = Arc::new(from_json(key, &text)?);
        let mut jobs = self.lock();
        if jobs.len() >= KEPT_JOBS && !jobs.contains_key(job_id) {
            jobs.clear();
        }
        jobs.insert(job_id.to_string(), (text, job.clone()));
        Ok(job)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Arc<JobRecord>)>> {
        self.0.lock().expect("delivered jobs lock")
    }
}
