//! Several candidates' writes in one Redis pipeline: events appended and results
//! recorded with their events (each by its own script, atomic by itself), one
//! round trip for them all — what the dispatcher's recorder sends per wake.

use redis::Value;

use super::super::RedisStore;
use super::super::codec::corrupt;
use crate::error::{StoreError, StoreResult};
use crate::store::CandidateWrite;

impl RedisStore {
    /// One pipeline of the writes; a command the server refuses fails its write
    /// only (the pipeline ignores errors: each reply is read on its own).
    pub(super) async fn write_candidates(
        &self,
        writes: &[CandidateWrite],
    ) -> StoreResult<Vec<StoreResult<bool>>> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for write in writes {
            match write {
                CandidateWrite::Event { job_id, event } => {
                    self.push_event(&mut pipe, job_id, event)
                }
                CandidateWrite::Result {
                    job_id,
                    result,
                    event,
                } => self.push_result_reported(&mut pipe, job_id, result, event),
            }
        }
        let replies: Vec<Value> = pipe.query_async(&mut self.conn()).await?;
        if replies.len() != writes.len() {
            let message = format!("{} replies to {} writes", replies.len(), writes.len());
            return Err(corrupt(&self.key("queue"), message));
        }
        Ok(writes
            .iter()
            .zip(replies)
            .map(|(write, reply)| match (write, reply) {
                (_, Value::ServerError(error)) => Err(StoreError::Redis(error.into())),
                (CandidateWrite::Event { .. }, _) => Ok(true),
                (CandidateWrite::Result { .. }, Value::Int(recorded)) => Ok(recorded == 1),
                (CandidateWrite::Result { job_id, .. }, other) => Err(corrupt(
                    &self.job_key(job_id, "results"),
                    format!("unexpected reply {other:?}"),
                )),
            })
            .collect())
    }
}
