//! A queue entry's delivery in Redis: its counter bumped and the records its
//! candidate needs read, in one round trip — the job as its delivery view, parsed
//! again only when its text changed ([`super::super::delivered_jobs`]); a job
//! without a view (written by an earlier coordinator) is read whole.

use redis::AsyncCommands;

use super::super::RedisStore;
use super::super::codec::from_json;
use crate::error::StoreResult;
use crate::store::DispatchReads;

impl RedisStore {
    pub(super) async fn deliver(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<DispatchReads> {
        let view_key = self.job_key(job_id, "delivery");
        let candidates_key = self.job_key(job_id, "candidates");
        let deliveries_key = self.job_key(job_id, "deliveries");
        let mut pipe = redis::pipe();
        pipe.cmd("HINCRBY")
            .arg(&deliveries_key)
            .arg(candidate_id)
            .arg(1);
        pipe.cmd("PEXPIRE")
            .arg(&deliveries_key)
            .arg(self.ttl_ms())
            .ignore();
        pipe.cmd("GET").arg(&view_key);
        pipe.cmd("GET").arg(self.job_key(job_id, "cancel"));
        pipe.cmd("HGET").arg(&candidates_key).arg(candidate_id);
        pipe.cmd("HEXISTS")
            .arg(self.job_key(job_id, "results"))
            .arg(candidate_id);
        let (deliveries, job, cancel, candidate, has_result): (
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            bool,
        ) = pipe.query_async(&mut self.conn()).await?;
        let job = match job {
            Some(view) => Some(view),
            None => self.conn().get(self.job_key(job_id, "")).await?,
        };
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
