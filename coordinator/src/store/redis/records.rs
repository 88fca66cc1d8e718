//! The job and worker records in Redis (keys in the table of `mod.rs`).

use std::collections::HashMap;
use std::time::Duration;

use redis::{AsyncCommands, Value};

use super::RedisStore;
use super::codec::{corrupt, from_json, stream_entries, to_json};
use crate::error::StoreResult;
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, WorkerCard,
    candidate_listed, result_listed,
};
use crate::store::{DispatchReads, JobRecords};

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

    /// The job's results by candidate id, each parsed by `read`.
    async fn read_results(
        &self,
        job_id: &str,
        read: impl Fn(&str) -> serde_json::Result<CandidateResult>,
    ) -> StoreResult<HashMap<String, CandidateResult>> {
        let key = self.job_key(job_id, "results");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        all.into_iter()
            .map(|(candidate_id, text)| {
                let result = read(&text).map_err(|error| corrupt(&key, error))?;
                Ok((candidate_id, result))
            })
            .collect()
    }
}

#[tonic::async_trait]
impl JobRecords for RedisStore {
    async fn create_job(&self, job: &JobRecord, inputs: &JobInputs) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("SET")
            .arg(self.job_key(&job.job_id, ""))
            .arg(to_json(job))
            .ignore();
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

    async fn put_job(&self, job: &JobRecord) -> StoreResult<()> {
        let _: () = self
            .conn()
            .pset_ex(
                self.job_key(&job.job_id, ""),
                to_json(job),
                self.settings.job_ttl.as_millis() as u64,
            )
            .await?;
        Ok(())
    }

    async fn get_job(&self, job_id: &str) -> StoreResult<Option<JobRecord>> {
        let key = self.job_key(job_id, "");
        let text: Option<String> = self.conn().get(&key).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    async fn get_inputs(&self, job_id: &str) -> StoreResult<Option<JobInputs>> {
        let key = self.job_key(job_id, "inputs");
        let text: Option<String> = self.conn().get(&key).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    async fn list_jobs(&self, limit: usize) -> StoreResult<Vec<JobRecord>> {
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

    async fn active_jobs(&self) -> StoreResult<Vec<String>> {
        let mut ids: Vec<String> = self.conn().smembers(self.key("jobs:active")).await?;
        ids.sort();
        Ok(ids)
    }

    async fn active_weight(&self) -> StoreResult<u64> {
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

    async fn request_cancel(&self, job_id: &str, reason: &str) -> StoreResult<()> {
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

    async fn cancel_requested(&self, job_id: &str) -> StoreResult<Option<String>> {
        Ok(self.conn().get(self.job_key(job_id, "cancel")).await?)
    }

    async fn lease_job(&self, job_id: &str, owner: &str, ttl: Duration) -> StoreResult<bool> {
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

    async fn release_job(&self, job_id: &str, owner: &str) -> StoreResult<()> {
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

    async fn finish_job(&self, job: &JobRecord) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("SET")
            .arg(self.job_key(&job.job_id, ""))
            .arg(to_json(job))
            .ignore();
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

    async fn enqueue_iteration(
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
        pipe.cmd("SET")
            .arg(self.job_key(&job.job_id, ""))
            .arg(to_json(job))
            .ignore();
        self.touch_job_keys(&mut pipe, &job.job_id).await;
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn put_candidate(&self, candidate: &CandidateRecord) -> StoreResult<()> {
        let key = self.job_key(&candidate.job_id, "candidates");
        let mut pipe = redis::pipe();
        pipe.cmd("HSET")
            .arg(&key)
            .arg(&candidate.candidate_id)
            .arg(to_json(candidate))
            .ignore();
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn get_candidate(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateRecord>> {
        let key = self.job_key(job_id, "candidates");
        let text: Option<String> = self.conn().hget(&key, candidate_id).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    async fn candidates(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.read_candidates(job_id, |text| serde_json::from_str(text))
            .await
    }

    async fn candidate_listing(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.read_candidates(job_id, candidate_listed).await
    }

    async fn candidate_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        let mut ids: Vec<String> = self
            .conn()
            .hkeys(self.job_key(job_id, "candidates"))
            .await?;
        ids.sort();
        Ok(ids)
    }

    async fn get_result(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateResult>> {
        let key = self.job_key(job_id, "results");
        let text: Option<String> = self.conn().hget(&key, candidate_id).await?;
        text.map(|text| from_json(&key, &text)).transpose()
    }

    async fn record_result(&self, job_id: &str, result: &CandidateResult) -> StoreResult<bool> {
        let key = self.job_key(job_id, "results");
        let mut pipe = redis::pipe();
        pipe.cmd("HSETNX")
            .arg(&key)
            .arg(&result.candidate_id)
            .arg(to_json(result));
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        let (recorded,): (bool,) = pipe.query_async(&mut self.conn()).await?;
        Ok(recorded)
    }

    async fn has_result(&self, job_id: &str, candidate_id: &str) -> StoreResult<bool> {
        Ok(self
            .conn()
            .hexists(self.job_key(job_id, "results"), candidate_id)
            .await?)
    }

    async fn results(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        self.read_results(job_id, |text| serde_json::from_str(text))
            .await
    }

    async fn result_listing(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        self.read_results(job_id, result_listed).await
    }

    async fn result_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        Ok(self.conn().hkeys(self.job_key(job_id, "results")).await?)
    }

    async fn candidate_counts(&self, job_id: &str) -> StoreResult<(usize, usize)> {
        let mut pipe = redis::pipe();
        pipe.cmd("HLEN").arg(self.job_key(job_id, "candidates"));
        pipe.cmd("HLEN").arg(self.job_key(job_id, "results"));
        let (total, finished): (usize, usize) = pipe.query_async(&mut self.conn()).await?;
        Ok((total, finished))
    }

    async fn deliver(&self, job_id: &str, candidate_id: &str) -> StoreResult<DispatchReads> {
        let job_key = self.job_key(job_id, "");
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
        pipe.cmd("GET").arg(&job_key);
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
        Ok(DispatchReads {
            deliveries: deliveries.max(0) as u32,
            job: job.map(|text| from_json(&job_key, &text)).transpose()?,
            cancel,
            candidate: candidate
                .map(|text| from_json(&candidates_key, &text))
                .transpose()?,
            has_result,
        })
    }

    async fn bump_deliveries(&self, job_id: &str, candidate_id: &str) -> StoreResult<u32> {
        let key = self.job_key(job_id, "deliveries");
        let mut pipe = redis::pipe();
        pipe.cmd("HINCRBY").arg(&key).arg(candidate_id).arg(1);
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        let (count,): (i64,) = pipe.query_async(&mut self.conn()).await?;
        Ok(count.max(0) as u32)
    }

    async fn append_event(&self, job_id: &str, event: &EventRecord) -> StoreResult<String> {
        let key = self.job_key(job_id, "events");
        let mut pipe = redis::pipe();
        pipe.cmd("XADD")
            .arg(&key)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.settings.max_events)
            .arg("*")
            .arg("e")
            .arg(to_json(event));
        pipe.cmd("PEXPIRE").arg(&key).arg(self.ttl_ms()).ignore();
        let (id,): (String,) = pipe.query_async(&mut self.conn()).await?;
        Ok(id)
    }

    async fn events_after(
        &self,
        job_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, EventRecord)>> {
        let key = self.job_key(job_id, "events");
        let start = match after {
            Some(cursor) if !cursor.is_empty() => format!("({cursor}"),
            _ => "-".to_string(),
        };
        let reply: Value = redis::cmd("XRANGE")
            .arg(&key)
            .arg(start)
            .arg("+")
            .arg("COUNT")
            .arg(limit)
            .query_async(&mut self.conn())
            .await?;
        stream_entries(&reply)
            .into_iter()
            .map(|(id, fields)| {
                let text = fields
                    .get("e")
                    .ok_or_else(|| corrupt(&key, "event without field e"))?;
                Ok((id, from_json(&key, text)?))
            })
            .collect()
    }

    async fn put_artifact(
        &self,
        job_id: &str,
        meta: &ArtifactMeta,
        content: &[u8],
    ) -> StoreResult<()> {
        let field = format!("{}/{}", meta.candidate_id, meta.name);
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("HSET")
            .arg(self.job_key(job_id, "artifacts"))
            .arg(&field)
            .arg(content)
            .ignore();
        pipe.cmd("HSET")
            .arg(self.job_key(job_id, "artifact_index"))
            .arg(&field)
            .arg(to_json(meta))
            .ignore();
        for suffix in ["artifacts", "artifact_index"] {
            pipe.cmd("PEXPIRE")
                .arg(self.job_key(job_id, suffix))
                .arg(self.ttl_ms())
                .ignore();
        }
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn delete_candidate_artifacts(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<()> {
        let fields: Vec<String> = self
            .artifacts(job_id)
            .await?
            .into_iter()
            .filter(|meta| meta.candidate_id == candidate_id)
            .map(|meta| format!("{}/{}", meta.candidate_id, meta.name))
            .collect();
        if fields.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("HDEL")
            .arg(self.job_key(job_id, "artifacts"))
            .arg(&fields)
            .ignore();
        pipe.cmd("HDEL")
            .arg(self.job_key(job_id, "artifact_index"))
            .arg(&fields)
            .ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn artifacts(&self, job_id: &str) -> StoreResult<Vec<ArtifactMeta>> {
        let key = self.job_key(job_id, "artifact_index");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        let mut metas: Vec<ArtifactMeta> = all
            .values()
            .map(|text| from_json(&key, text))
            .collect::<StoreResult<_>>()?;
        metas.sort_by(|left, right| {
            (&left.candidate_id, &left.name).cmp(&(&right.candidate_id, &right.name))
        });
        Ok(metas)
    }

    async fn get_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        Ok(self
            .conn()
            .hget(
                self.job_key(job_id, "artifacts"),
                format!("{candidate_id}/{name}"),
            )
            .await?)
    }

    async fn put_worker_card(&self, card: &WorkerCard, ttl: Duration) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.key(&format!("worker:{}", card.worker_id)))
            .arg(to_json(card))
            .arg("PX")
            .arg(ttl.as_millis() as u64)
            .ignore();
        pipe.cmd("SADD")
            .arg(self.key("workers"))
            .arg(&card.worker_id)
            .ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn worker_cards(&self) -> StoreResult<Vec<WorkerCard>> {
        let ids: Vec<String> = self.conn().smembers(self.key("workers")).await?;
        let mut cards = Vec::new();
        for id in ids {
            let key = self.key(&format!("worker:{id}"));
            let text: Option<String> = self.conn().get(&key).await?;
            match text {
                Some(text) => cards.push(from_json::<WorkerCard>(&key, &text)?),
                None => {
                    let _: () = self.conn().srem(self.key("workers"), &id).await?;
                }
            }
        }
        cards.sort_by(|left, right| left.worker_id.cmp(&right.worker_id));
        Ok(cards)
    }
}
