//! What an entry needs before it runs: its job exists and is neither finished
//! nor cancelled, its candidate exists without a result. A record that cannot be
//! read for good makes the entry unreadable (its candidate is recorded failed).

use centroid_planner::candidate::CandidateRecord;

use super::Disposition;
use crate::context::{Context, Interrupted};
use crate::model::{JobRecord, QueueEntry};

pub(super) enum Preflight {
    Run(Box<JobRecord>, Box<CandidateRecord>),
    Skip(Disposition),
}

/// Whether the entry still needs a run: its job exists, is neither finished nor
/// cancelled, and the candidate exists without a result.
pub(super) async fn preflight(context: &Context, entry: &QueueEntry) -> Preflight {
    match read_preflight(context, entry).await {
        Ok(preflight) => preflight,
        Err(Interrupted::Shutdown) => Preflight::Skip(Disposition::LeavePending),
        Err(Interrupted::Store(error)) => Preflight::Skip(Disposition::Unreadable(error)),
    }
}

async fn read_preflight(context: &Context, entry: &QueueEntry) -> Result<Preflight, Interrupted> {
    let (job_id, candidate_id) = (entry.job_id.as_str(), entry.candidate_id.as_str());
    let store = &context.store;
    let job = context
        .with_store_retry("read job", || store.get_job(job_id))
        .await?;
    let Some(job) = job.filter(|job| !job.is_finished() && !job.cancel_requested) else {
        return Ok(Preflight::Skip(Disposition::Ack));
    };
    let cancel = context
        .with_store_retry("read cancel", || store.cancel_requested(job_id))
        .await?;
    if cancel.is_some() {
        return Ok(Preflight::Skip(Disposition::Ack));
    }
    let candidate = context
        .with_store_retry("read candidate", || {
            store.get_candidate(job_id, candidate_id)
        })
        .await?;
    let Some(candidate) = candidate else {
        return Ok(Preflight::Skip(Disposition::Ack));
    };
    let has_result = context
        .with_store_retry("check result", || store.has_result(job_id, candidate_id))
        .await?;
    Ok(if has_result {
        Preflight::Skip(Disposition::Ack)
    } else {
        Preflight::Run(Box::new(job), Box::new(candidate))
    })
}
