//! What an entry needs before it runs: its job exists and is neither finished
//! nor cancelled, its candidate exists without a result. A record that cannot be
//! read for good makes the entry unreadable (its candidate is recorded failed).
//! The reads and the delivery counter are one store call ([`crate::store::JobRecords::deliver`]).

use std::sync::Arc;

use centroid_planner::candidate::CandidateRecord;

use super::Disposition;
use crate::context::{Context, Interrupted};
use crate::model::{JobRecord, QueueEntry};

pub(super) enum Preflight {
    /// the job, the candidate, and the entry's delivery count (this delivery's included)
    Run(Arc<JobRecord>, Box<CandidateRecord>, u32),
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
    let reads = context
        .with_store_retry("deliver", || store.deliver(job_id, candidate_id))
        .await?;
    let Some(job) = reads
        .job
        .filter(|job| !job.is_finished() && !job.cancel_requested)
    else {
        return Ok(Preflight::Skip(Disposition::Ack));
    };
    if reads.cancel.is_some() || reads.has_result {
        return Ok(Preflight::Skip(Disposition::Ack));
    }
    Ok(match reads.candidate {
        Some(candidate) => Preflight::Run(job, Box::new(candidate), reads.deliveries),
        None => Preflight::Skip(Disposition::Ack),
    })
}
