//! A queue entry's delivery in Redis: its counter bumped and the records its
//! candidate needs read, in one round trip — the job as its delivery view, parsed
//! again only when its text changed ([`super::super::delivered_jobs`]); a job
//! without a view (written by an earlier coordinator) is read whole. The
//! deliveries of one queue read go in one pipeline ([`RedisStore::deliver_many`]).

use redis::{AsyncCommands, Value};

use super::super::RedisStore;
use super::super::codec::{corrupt, from_json};
use crate::error::StoreResult;
use crate::store::DispatchReads;

/// The replies a delivery's commands add to a pipeline (the PEXPIRE's ignored).
const REPLIES_PER_DELIVERY: usize = 5;

/// A delivery's replies: the counter, the job's view, the cancel reason, the
/// candidate, whether it has a result.
type DeliveryReplies = (i64, Option<String>, Option<String>, Option<String>, bool);

impl RedisStore {
    pub(super) async fn deliver(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<DispatchReads> {
        let mut pipe = redis::pipe();
        self.push_delivery(&mut pipe, job_id, candidate_id);
        let replies: DeliveryReplies = pipe.query_async(&mut self.conn()).await?;
        self.dispatch_reads(job_id, replies).await
    }

    /// The deliveries of `entries` (job id, candidate id) in one pipeline.
    pub(super) async fn deliver_many(
        &self,
        entries: &[(String, String)],
    ) -> StoreResult<Vec<StoreResult<DispatchReads>>> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for (job_id, candidate_id) in entries {
            self.push_delivery(&mut pipe, job_id, candidate_id);
        }
        let replies: Vec<Value> = pipe.query_async(&mut self.conn()).await?;
        if replies.len() != entries.len() * REPLIES_PER_DELIVERY {
            let message = format!("{} replies to {} deliveries", replies.len(), entries.len());
            return Err(corrupt(&self.key("queue"), message));
        }
        let mut reads = Vec::with_capacity(entries.len());
        let mut replies = replies.into_iter();
        for (job_id, _) in entries {
            let one: Vec<Value> = replies.by_ref().take(REPLIES_PER_DELIVERY).collect();
            let parsed = redis::from_redis_value::<DeliveryReplies>(Value::Array(one))
                .map_err(|error| corrupt(&self.job_key(job_id, "deliveries"), error));
            reads.push(match parsed {
                Ok(one) => self.dispatch_reads(job_id, one).await,
                Err(error) => Err(error),
            });
        }
        Ok(reads)
    }

    /// A delivery's commands: HINCRBY of the counter (and its expiry), GET of the
    /// job's view and of its cancel reason, HGET of the candidate, HEXISTS of its
    /// result.
    fn push_delivery(&self, pipe: &mut redis::Pipeline, job_id: &str, candidate_id: &str) {
        let deliveries_key = self.job_key(job_id, "deliveries");
        pipe.cmd("HINCRBY")
            .arg(&deliveries_key)
            .arg(candidate_id)
            .arg(1);
        pipe.cmd("PEXPIRE")
            .arg(&deliveries_key)
            .arg(self.ttl_ms())
            .ignore();
        pipe.cmd("GET").arg(self.job_key(job_id, "delivery"));
        pipe.cmd("GET").arg(self.job_key(job_id, "cancel"));
        pipe.cmd("HGET")
            .arg(self.job_key(job_id, "candidates"))
            .arg(candidate_id);
        pipe.cmd("HEXISTS")
            .arg(self.job_key(job_id, "results"))
            .arg(candidate_id);
    }

    /// The records of a delivery's replies (the job record read whole when it has
    /// no view).
    async fn dispatch_reads(
        &self,
        job_id: &str,
        (deliveries, job, cancel, candidate, has_result): DeliveryReplies,
    ) -> StoreResult<DispatchReads> {
        let view_key = self.job_key(job_id, "delivery");
        let job = match job {
            Some(view) => Some(view),
            None => self.conn().get(self.job_key(job_id, "")).await?,
        };
        let candidates_key = self.job_key(job_id, "candidates");
        Ok(DispatchReads {
            deliveries: deliveries.max(0) as u32,
            job: job
                .map(|text| self.delivered_jobs.parsed(&view_key, job_id, text))
                .transpose()?,
            cancel,
            candidate: candidate
                .map(|text| from_json(&candidates_key, &text))
                .transpose()?,
            has_result,
        })
    }

    pub(super) async fn bump_deliveries(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<u32> {
        let key = self.job_key(job_id, "deliveries");
        let mut pipe = redis::pipe();
        pipe.cmd("HINCRBY").arg(&key).arg(candidate_id).arg(1);
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        let (count,): (i64,) = pipe.query_async(&mut self.conn()).await?;
        Ok(count.max(0) as u32)
    }
}
