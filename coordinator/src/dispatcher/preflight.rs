//! What an entry needs before it runs: its job exists and is neither finished
//! nor cancelled, its candidate exists without a result. A record that cannot be
//! read for good makes the entry unreadable (its candidate is recorded failed).
//! The reads and the delivery counter are one store call ([`crate::store::JobRecords::deliver`]),
//! or part of one for the entries of a queue read ([`crate::store::JobRecords::deliver_many`]).

use std::sync::Arc;

use centroid_planner::candidate::CandidateRecord;

use super::Disposition;
use crate::context::{Context, Interrupted};
use crate::error::StoreResult;
use crate::model::{JobRecord, QueueEntry};
use crate::store::DispatchReads;

/// An entry's delivery read with the other entries of its queue read (its reads,
/// or its own error), or `None`: not read yet (the entry reads it itself).
pub(super) type Delivered = Option<StoreResult<DispatchReads>>;

pub(super) enum Preflight {
    /// the job, the candidate, and the entry's delivery count (this delivery's included)
    Run(Arc<JobRecord>, Box<CandidateRecord>, u32),
    Skip(Disposition),
}

/// Whether the entry still needs a run: its job exists, is neither finished nor
/// cancelled, and the candidate exists without a result.
pub(super) async fn preflight(
    context: &Context,
    entry: &QueueEntry,
    delivered: Delivered,
) -> Preflight {
    match read_preflight(context, entry, delivered).await {
        Ok(preflight) => preflight,
        Err(Interrupted::Shutdown) => Preflight::Skip(Disposition::LeavePending),
        Err(Interrupted::Store(error)) => Preflight::Skip(Disposition::Unreadable(error)),
    }
}

async fn read_preflight(
    context: &Context,
    entry: &QueueEntry,
    delivered: Delivered,
) -> Result<Preflight, Interrupted> {
    let (job_id, candidate_id) = (entry.job_id.as_str(), entry.candidate_id.as_str());
    let store = &context.store;
    let reads = match delivered {
        Some(reads) => reads.map_err(Interrupted::Store)?,
        None => {
            context
                .with_store_retry("deliver", || store.deliver(job_id, candidate_id))
                .await?
        }
    };
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
