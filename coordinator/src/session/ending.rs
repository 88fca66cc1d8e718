//! The end of a job, the driver's side: whether any candidate produced a layout
//! (CONCLUDING), what an ending job does before it is finished (its case or
//! failure remembered, the pictures of its kept layouts), the candidates of a
//! cancelled job recorded as abandoned, and a job failed by a store error that
//! retrying cannot mend.

use std::sync::Arc;

use super::Driver;
use super::pictures;
use super::transitions::final_notice;
use crate::context::{Context, Interrupted};
use crate::error::StoreError;
use crate::model::{
    CandidateResult, CandidateStatus, JobOptions, JobPhase, JobRecord, Outcome, now_ms,
};

impl Driver {
    /// Whether any candidate of the job produced a layout.
    pub(super) async fn any_layout(&self, job: &JobRecord) -> Result<bool, Interrupted> {
        let context = &self.context;
        let results = context
            .with_store_retry("read results", || context.store.result_listing(&job.job_id))
            .await?;
        Ok(results.values().any(|result| result.ok))
    }

    /// What a job ending with `outcome` does before it is finished: its case or
    /// failure into the long-term memory, then the pictures of the layouts it
    /// kept. A job taken over while ending does both again (the memory keeps one
    /// record per job; pictures already drawn are not drawn again).
    pub(super) async fn end_work(
        &mut self,
        job: &JobRecord,
        outcome: Outcome,
    ) -> Result<(), Interrupted> {
        self.drop_pending_advice(job).await?;
        if outcome == Outcome::Cancelled {
            return Ok(());
        }
        self.remember(job, outcome).await?;
        pictures::draw_missing(&self.context, job).await
    }

    /// Records every candidate of a cancelled job without a result as abandoned.
    pub(super) async fn abandon_unfinished(
        &self,
        job: &JobRecord,
        reason: &str,
    ) -> Result<(), Interrupted> {
        let context = &self.context;
        let candidate_ids = context
            .with_store_retry("read candidate ids", || {
                context.store.candidate_ids(&job.job_id)
            })
            .await?;
        for candidate_id in candidate_ids {
            let abandoned = CandidateResult::without_run(
                &candidate_id,
                CandidateStatus::Abandoned,
                "CANCELLED",
                reason,
            );
            // a candidate with a result keeps it: only the first record counts
            context
                .with_store_retry("record abandoned candidate", || {
                    context.store.record_result(&job.job_id, &abandoned)
                })
                .await?;
        }
        Ok(())
    }
}

/// Fails the job after a store error that retrying cannot mend (a corrupt
/// record, one that must exist and does not): its record says which, and the
/// driver moves on. A store that cannot even take the failed record is logged.
pub(super) async fn fail_on_store_error(
    context: &Arc<Context>,
    job: &mut JobRecord,
    error: &StoreError,
) {
    let message = format!("store: {error}");
    tracing::error!(session_id = %job.job_id, %error, "failing the job: the store cannot serve it");
    job.error = message.clone();
    job.phase = JobPhase::Finished {
        outcome: Outcome::Failed,
    };
    job.updated_ms = now_ms();
    if let Err(interrupted) = context
        .with_store_retry("finish job", || context.store.finish_job(job))
        .await
    {
        tracing::error!(session_id = %job.job_id, %interrupted, "cannot record the failed job");
        return;
    }
    let notice = final_notice(job, Outcome::Failed, &message);
    if let Err(interrupted) = context.emit_notice(job, "", &notice).await {
        tracing::error!(session_id = %job.job_id, %interrupted, "cannot report the failed job");
    }
    context.forget_job(&job.job_id);
    context.queue_changed.notify_waiters();
}

/// A job whose own record (or inputs) cannot be read: a fresh failed record
/// replaces it, naming the error, so that it can be listed and fetched again.
pub(super) async fn fail_unreadable_job(context: &Arc<Context>, job_id: &str, error: &StoreError) {
    let options = JobOptions::default();
    let mut job = JobRecord::new(job_id.to_string(), job_id.to_string(), options, now_ms());
    fail_on_store_error(context, &mut job, error).await;
}
