//! Job records in Redis: the job and its inputs, the listing and the active set with
//! weights, the cancel flag, the job lease.

use std::collections::HashMap;
use std::time::Duration;

use redis::AsyncCommands;

use super::super::RedisStore;
use super::super::codec::{from_json, to_json};
use crate::error::StoreResult;
use crate::model::{JobInputs, JobRecord};

impl RedisStore {
    pub(super) async fn create_job(&self, job: &JobRecord, inputs: &JobInputs) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.set_job(&mut pipe, job);
        pipe.cmd("SET")
            .arg(self.job_key(&job.job_id, "inputs"))
            .arg(to_json(inputs))
            .ignore();
        pipe.cmd("ZADD")
            .arg(self.key("jobs"))
            .arg(job.created_ms)
            .arg(&job.job_id)
            .ignore();
        pipe.cmd("ZREMRANGEBYRANK")
            .arg(self.key("jobs"))
            .arg(0)
            .arg(-(self.settings.max_jobs as i64) - 1)
            .ignore();
        pipe.cmd("SADD")
            .arg(self.key("jobs:active"))
            .arg(&job.job_id)
            .ignore();
        pipe.cmd("HSET")
            .arg(self.key("jobs:weights"))
            .arg(&job.job_id)
            .arg(job.options.weight())
            .ignore();
        self.touch_job_keys(&mut pipe, &job.job_id).await;
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    pub(super) async fn put_job(&self, job: &JobRecord) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.set_job(&mut pipe, job);
        for suffix in ["", "delivery"] {
            pipe.cmd("PEXPIRE")
                .arg(self.job_key(&job.job_id, suffix))
                .arg(self.ttl_ms())
                .ignore();
        }
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    pub(super) async fn get_job(&self, job_id: &str) -> StoreResult<Option<JobRecord>> {
        let key = self.job_key(job_id, "");
        let text: Option<String> = self.conn().get(&key).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    pub(super) async fn get_inputs(&self, job_id: &str) -> StoreResult<Option<JobInputs>> {
        let key = self.job_key(job_id, "inputs");
        let text: Option<String> = self.conn().get(&key).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    pub(super) async fn list_jobs(&self, limit: usize) -> StoreResult<Vec<JobRecord>> {
        let ids: Vec<String> = redis::cmd("ZREVRANGE")
            .arg(self.key("jobs"))
            .arg(0)
            .arg(limit.saturating_sub(1) as i64)
            .query_async(&mut self.conn())
            .await?;
        let mut jobs = Vec::new();
        for id in ids {
            match self.get_job(&id).await? {
                Some(job) => jobs.push(job),
                None => {
                    // expired: drop it from the listing
                    let _: () = self.conn().zrem(self.key("jobs"), &id).await?;
                }
            }
        }
        Ok(jobs)
    }

    pub(super) async fn active_jobs(&self) -> StoreResult<Vec<String>> {
        let mut ids: Vec<String> = self.conn().smembers(self.key("jobs:active")).await?;
        ids.sort();
        Ok(ids)
    }

    pub(super) async fn active_weight(&self) -> StoreResult<u64> {
        let (active, weights): (Vec<String>, HashMap<String, u64>) = redis::pipe()
            .cmd("SMEMBERS")
            .arg(self.key("jobs:active"))
            .cmd("HGETALL")
            .arg(self.key("jobs:weights"))
            .query_async(&mut self.conn())
            .await?;
        // a job submitted before weights were kept counts as 1
        Ok(active
            .iter()
            .map(|job_id| weights.get(job_id).copied().unwrap_or(1).max(1))
            .sum())
    }

    pub(super) async fn request_cancel(&self, job_id: &str, reason: &str) -> StoreResult<()> {
        let _: () = self
            .conn()
            .pset_ex(
                self.job_key(job_id, "cancel"),
                reason,
                self.settings.job_ttl.as_millis() as u64,
            )
            .await?;
        Ok(())
    }

    pub(super) async fn cancel_requested(&self, job_id: &str) -> StoreResult<Option<String>> {
        Ok(self.conn().get(self.job_key(job_id, "cancel")).await?)
    }

    pub(super) async fn lease_job(
        &self,
        job_id: &str,
        owner: &str,
        ttl: Duration,
    ) -> StoreResult<bool> {
        const SCRIPT: &str = r"local holder = redis.call('GET', KEYS[1])
              if holder == false or holder == ARGV[1] then
                redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
                return 1
              end
              return 0";
        let taken: i64 = redis::cmd("EVAL")
            .arg(SCRIPT)
            .arg(1)
            .arg(self.job_key(job_id, "owner"))
            .arg(owner)
            .arg(ttl.as_millis() as u64)
            .query_async(&mut self.conn())
            .await?;
        Ok(taken == 1)
    }

    pub(super) async fn release_job(&self, job_id: &str, owner: &str) -> StoreResult<()> {
        const SCRIPT: &str = r"if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
              return 0";
        let _: i64 = redis::cmd("EVAL")
            .arg(SCRIPT)
            .arg(1)
            .arg(self.job_key(job_id, "owner"))
            .arg(owner)
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    pub(super) async fn finish_job(&self, job: &JobRecord) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        self.set_job(&mut pipe, job);
        pipe.cmd("SREM")
            .arg(self.key("jobs:active"))
            .arg(&job.job_id)
            .ignore();
        pipe.cmd("HDEL")
            .arg(self.key("jobs:weights"))
            .arg(&job.job_id)
            .ignore();
        self.touch_job_keys(&mut pipe, &job.job_id).await;
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }
}
