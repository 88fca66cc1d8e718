//! Candidate records in Redis: an iteration stored and queued at once, one
//! candidate or several read and written, the listings.

use std::collections::HashMap;

use redis::AsyncCommands;

use super::super::RedisStore;
use super::super::codec::{corrupt, from_json, hash_records, to_json};
use super::super::delivered_jobs::delivery_view;
use crate::error::StoreResult;
use crate::model::{CandidateRecord, JobRecord, candidate_listed};
use crate::store::missing_candidate;

impl RedisStore {
    /// The job's candidates, each parsed by `read`, sorted by id.
    async fn read_candidates(
        &self,
        job_id: &str,
        read: impl Fn(&str) -> serde_json::Result<CandidateRecord>,
    ) -> StoreResult<Vec<CandidateRecord>> {
        let key = self.job_key(job_id, "candidates");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        let mut candidates: Vec<CandidateRecord> = all
            .values()
            .map(|text| read(text).map_err(|error| corrupt(&key, error)))
            .collect::<StoreResult<_>>()?;
        candidates.sort_by(|left, right| left.candidate_id.cmp(&right.candidate_id));
        Ok(candidates)
    }

    pub(super) async fn enqueue_iteration(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
        queued: usize,
    ) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for (index, candidate) in candidates.iter().enumerate() {
            pipe.cmd("HSET")
                .arg(self.job_key(&job.job_id, "candidates"))
                .arg(&candidate.candidate_id)
                .arg(to_json(candidate))
                .ignore();
            if index >= queued {
                continue;
            }
            pipe.cmd("XADD")
                .arg(self.key("queue"))
                .arg("MAXLEN")
                .arg("~")
                .arg(self.settings.max_queue)
                .arg("*")
                .arg("job")
                .arg(&job.job_id)
                .arg("candidate")
                .arg(&candidate.candidate_id)
                .arg("weight")
                .arg(job.options.weight())
                .ignore();
        }
        self.set_job(&mut pipe, job);
        self.touch_job_keys(&mut pipe, &job.job_id).await;
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    /// One script: every candidate checked (HEXISTS), then an XADD each and the
    /// SETs of the job record and its delivery view (KEYS[3] and KEYS[4], the
    /// first of the job's keys), the job's keys' TTLs refreshed; nothing written
    /// when one is missing (the script returns its id).
    pub(super) async fn enqueue_stored(
        &self,
        job: &JobRecord,
        candidate_ids: &[String],
    ) -> StoreResult<()> {
        const SCRIPT: &str = r"for index = 7, #ARGV do
                if redis.call('HEXISTS', KEYS[1], ARGV[index]) == 0 then return ARGV[index] end
              end
              for index = 7, #ARGV do
                redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*',
                  'job', ARGV[1], 'candidate', ARGV[index], 'weight', ARGV[2])
              end
              redis.call('SET', KEYS[3], ARGV[5])
              redis.call('SET', KEYS[4], ARGV[6])
              for index = 3, #KEYS do redis.call('PEXPIRE', KEYS[index], ARGV[4]) end
              return false";
        let job_id = &job.job_id;
        let mut script = redis::cmd("EVAL");
        script.arg(SCRIPT);
        let touched = self.job_key_suffixes();
        script
            .arg(2 + touched.len())
            .arg(self.job_key(job_id, "candidates"))
            .arg(self.key("queue"));
        for suffix in touched {
            script.arg(self.job_key(job_id, suffix));
        }
        script
            .arg(job_id)
            .arg(job.options.weight())
            .arg(self.settings.max_queue)
            .arg(self.ttl_ms())
            .arg(to_json(job))
            .arg(to_json(&delivery_view(job)))
            .arg(candidate_ids);
        let missing: Option<String> = script.query_async(&mut self.conn()).await?;
        match missing {
            Some(candidate_id) => Err(missing_candidate(job_id, &candidate_id)),
            None => Ok(()),
        }
    }

    pub(super) async fn put_candidate(&self, candidate: &CandidateRecord) -> StoreResult<()> {
        self.put_candidates(std::slice::from_ref(candidate)).await
    }

    /// The HSETs of the candidates in one pipeline.
    pub(super) async fn put_candidates(&self, candidates: &[CandidateRecord]) -> StoreResult<()> {
        if candidates.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for candidate in candidates {
            let key = self.job_key(&candidate.job_id, "candidates");
            pipe.cmd("HSET")
                .arg(&key)
                .arg(&candidate.candidate_id)
                .arg(to_json(candidate))
                .ignore();
            pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        }
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    /// HMGET of the candidates.
    pub(super) async fn get_candidates(
        &self,
        job_id: &str,
        candidate_ids: &[String],
    ) -> StoreResult<Vec<Option<CandidateRecord>>> {
        let key = self.job_key(job_id, "candidates");
        hash_records(self.conn(), &key, candidate_ids).await
    }

    pub(super) async fn get_candidate(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateRecord>> {
        let key = self.job_key(job_id, "candidates");
        let text: Option<String> = self.conn().hget(&key, candidate_id).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    pub(super) async fn candidates(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.read_candidates(job_id, |text| serde_json::from_str(text))
            .await
    }

    pub(super) async fn candidate_listing(
        &self,
        job_id: &str,
    ) -> StoreResult<Vec<CandidateRecord>> {
        self.read_candidates(job_id, candidate_listed).await
    }

    pub(super) async fn candidate_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        let mut ids: Vec<String> = self
            .conn()
            .hkeys(self.job_key(job_id, "candidates"))
            .await?;
        ids.sort();
        Ok(ids)
    }
}
