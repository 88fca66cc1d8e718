//! The job records last read at queue entries' deliveries, parsed: the job record
//! is read at every delivery (its finished and cancelled marks must be current),
//! but it changes far less often than it is read, and it holds the round's
//! candidate ids — at a thousand slots, parsing it at each delivery was a large
//! part of the dispatcher's work. [`DeliveredJobs`] keeps the last text read of
//! each job with its parsed record, and parses only a text that differs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::codec::from_json;
use crate::error::StoreResult;
use crate::model::JobRecord;

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
