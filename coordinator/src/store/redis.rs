//! The Redis store (the farm's short-term memory and work queue).
//!
//! Key layout, all under one prefix `P` (default `centroid`):
//!
//! | key | type | content |
//! |---|---|---|
//! | `P:jobs` | sorted set | job id → created_ms (listing; trimmed to `max_jobs`) |
//! | `P:jobs:active` | set | ids of unfinished jobs (a restarted coordinator resumes them) |
//! | `P:job:{id}` | string | the job record (JSON) |
//! | `P:job:{id}:inputs` | string | the three input files (JSON) |
//! | `P:job:{id}:cancel` | string | the cancellation reason, once requested |
//! | `P:job:{id}:owner` | string | the coordinator driving the job (lease, PX = lease timeout) |
//! | `P:job:{id}:candidates` | hash | candidate id → candidate record (JSON) |
//! | `P:job:{id}:results` | hash | candidate id → result (JSON), written with HSETNX: first result wins |
//! | `P:job:{id}:deliveries` | hash | candidate id → delivery counter |
//! | `P:job:{id}:events` | stream | the job's event log (MAXLEN ~ `max_events`) |
//! | `P:job:{id}:artifacts` | hash | `{candidate}/{name}` → bytes (only the best candidates' ones) |
//! | `P:job:{id}:artifact_index` | hash | `{candidate}/{name}` → metadata (JSON) |
//! | `P:workers` | set | ids of published worker cards (stale ids dropped on read) |
//! | `P:worker:{id}` | string | a live worker's card (skills, schemas, address), PX = heartbeat timeout |
//! | `P:queue` | stream | candidate entries {job, candidate}; consumer group `dispatch` (MAXLEN ~ `max_queue`) |
//! | `P:queue:dead` | stream | dead-lettered entries {job, candidate, reason} (MAXLEN ~ `max_dead`) |
//!
//! Every `P:job:{id}*` key gets a TTL (`job_ttl`) refreshed on each write.

use std::collections::HashMap;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{AsyncCommands, Value};

use crate::error::{StoreError, StoreResult};
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, QueueEntry,
    WorkerCard,
};
use crate::store::Store;

pub const GROUP: &str = "dispatch";

#[derive(Debug, Clone)]
pub struct RedisStoreSettings {
    pub url: String,
    pub prefix: String,
    pub job_ttl: Duration,
    pub max_events: u64,
    pub max_queue: u64,
    pub max_dead: u64,
    pub max_jobs: u64,
    /// bound on one command (also the connection timeout)
    pub command_timeout: Duration,
}

impl Default for RedisStoreSettings {
    fn default() -> Self {
        RedisStoreSettings {
            url: "redis://127.0.0.1:6379".into(),
            prefix: "centroid".into(),
            job_ttl: Duration::from_secs(7 * 24 * 3600),
            max_events: 10_000,
            max_queue: 100_000,
            max_dead: 10_000,
            max_jobs: 1_000,
            command_timeout: Duration::from_secs(5),
        }
    }
}

pub struct RedisStore {
    connection: ConnectionManager,
    settings: RedisStoreSettings,
}

fn corrupt(key: &str, message: impl ToString) -> StoreError {
    StoreError::Corrupt {
        key: key.to_string(),
        message: message.to_string(),
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("records serialize")
}

fn from_json<T: serde::de::DeserializeOwned>(key: &str, text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|error| corrupt(key, error))
}

fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Some(text.clone()),
        Value::Int(number) => Some(number.to_string()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

fn value_items(value: &Value) -> &[Value] {
    match value {
        Value::Array(items) | Value::Set(items) => items,
        _ => &[],
    }
}

/// `[id, [field, value, ...]]` entries of a stream reply, as (id, fields).
fn stream_entries(value: &Value) -> Vec<(String, HashMap<String, String>)> {
    let mut entries = Vec::new();
    for entry in value_items(value) {
        let parts = value_items(entry);
        let Some(id) = parts.first().and_then(value_text) else {
            continue;
        };
        let mut fields = HashMap::new();
        match parts.get(1) {
            Some(Value::Map(pairs)) => {
                for (field, field_value) in pairs {
                    if let (Some(field), Some(field_value)) =
                        (value_text(field), value_text(field_value))
                    {
                        fields.insert(field, field_value);
                    }
                }
            }
            Some(list) => {
                for pair in value_items(list).chunks(2) {
                    if let [field, field_value] = pair
                        && let (Some(field), Some(field_value)) =
                            (value_text(field), value_text(field_value))
                    {
                        fields.insert(field, field_value);
                    }
                }
            }
            None => {}
        }
        entries.push((id, fields));
    }
    entries
}

fn queue_entry(id: String, fields: &HashMap<String, String>) -> Option<QueueEntry> {
    Some(QueueEntry {
        entry_id: id,
        job_id: fields.get("job")?.clone(),
        candidate_id: fields.get("candidate")?.clone(),
    })
}

impl RedisStore {
    /// Connects (retrying until `connect_within` runs out) and creates the consumer group.
    pub async fn connect(
        settings: RedisStoreSettings,
        connect_within: Duration,
    ) -> StoreResult<RedisStore> {
        let client = redis::Client::open(settings.url.as_str())?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.command_timeout))
            .set_response_timeout(Some(settings.command_timeout))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let started = std::time::Instant::now();
        let connection = loop {
            match client
                .get_connection_manager_with_config(config.clone())
                .await
            {
                Ok(connection) => break connection,
                Err(error) if started.elapsed() < connect_within => {
                    tracing::warn!(%error, "redis not reachable yet; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error.into()),
            }
        };
        let store = RedisStore {
            connection,
            settings,
        };
        store.ensure_group().await?;
        Ok(store)
    }

    pub fn prefix(&self) -> &str {
        &self.settings.prefix
    }

    fn key(&self, suffix: &str) -> String {
        format!("{}:{suffix}", self.settings.prefix)
    }

    fn job_key(&self, job_id: &str, suffix: &str) -> String {
        if suffix.is_empty() {
            format!("{}:job:{job_id}", self.settings.prefix)
        } else {
            format!("{}:job:{job_id}:{suffix}", self.settings.prefix)
        }
    }

    fn conn(&self) -> ConnectionManager {
        self.connection.clone()
    }

    fn ttl_ms(&self) -> i64 {
        self.settings.job_ttl.as_millis() as i64
    }

    async fn ensure_group(&self) -> StoreResult<()> {
        let result: redis::RedisResult<Value> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut self.conn())
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(error) if error.to_string().contains("BUSYGROUP") => Ok(()),
            Err(error) => Err(error.into()),
        }
    }

    /// Runs a queue command; recreates the group once when Redis lost it (NOGROUP).
    async fn queue_command(&self, command: &redis::Cmd) -> StoreResult<Value> {
        match command.query_async::<Value>(&mut self.conn()).await {
            Ok(value) => Ok(value),
            Err(error) if error.to_string().contains("NOGROUP") => {
                tracing::warn!(
                    "the queue's consumer group is gone (redis lost its data?); creating it again"
                );
                self.ensure_group().await?;
                Ok(command.query_async::<Value>(&mut self.conn()).await?)
            }
            Err(error) => Err(error.into()),
        }
    }

    async fn touch_job_keys(&self, pipe: &mut redis::Pipeline, job_id: &str) {
        for suffix in [
            "",
            "inputs",
            "candidates",
            "results",
            "deliveries",
            "events",
            "artifacts",
            "artifact_index",
            "cancel",
        ] {
            pipe.cmd("PEXPIRE")
                .arg(self.job_key(job_id, suffix))
                .arg(self.ttl_ms())
                .ignore();
        }
    }
}

#[tonic::async_trait]
impl Store for RedisStore {
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
        self.touch_job_keys(&mut pipe, &job.job_id).await;
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn enqueue_iteration(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
    ) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for candidate in candidates {
            pipe.cmd("HSET")
                .arg(self.job_key(&job.job_id, "candidates"))
                .arg(&candidate.candidate_id)
                .arg(to_json(candidate))
                .ignore();
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
        let key = self.job_key(job_id, "candidates");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        let mut candidates: Vec<CandidateRecord> = all
            .values()
            .map(|text| from_json(&key, text))
            .collect::<StoreResult<_>>()?;
        candidates.sort_by(|left, right| left.candidate_id.cmp(&right.candidate_id));
        Ok(candidates)
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
        let key = self.job_key(job_id, "results");
        let all: HashMap<String, String> = self.conn().hgetall(&key).await?;
        all.into_iter()
            .map(|(candidate_id, text)| Ok((candidate_id, from_json(&key, &text)?)))
            .collect()
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

    async fn queue_read(&self, consumer: &str, count: usize) -> StoreResult<Vec<QueueEntry>> {
        let mut command = redis::cmd("XREADGROUP");
        command
            .arg("GROUP")
            .arg(GROUP)
            .arg(consumer)
            .arg("COUNT")
            .arg(count)
            .arg("STREAMS")
            .arg(self.key("queue"))
            .arg(">");
        let reply = self.queue_command(&command).await?;
        let mut entries = Vec::new();
        for stream in value_items(&reply) {
            if let Some(list) = value_items(stream).get(1) {
                for (id, fields) in stream_entries(list) {
                    if let Some(entry) = queue_entry(id, &fields) {
                        entries.push(entry);
                    }
                }
            }
        }
        if let Value::Map(streams) = &reply {
            for (_, list) in streams {
                for (id, fields) in stream_entries(list) {
                    if let Some(entry) = queue_entry(id, &fields) {
                        entries.push(entry);
                    }
                }
            }
        }
        Ok(entries)
    }

    async fn queue_reclaim(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> StoreResult<Vec<QueueEntry>> {
        let mut command = redis::cmd("XAUTOCLAIM");
        command
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg(consumer)
            .arg(min_idle.as_millis() as u64)
            .arg("0-0")
            .arg("COUNT")
            .arg(count);
        let reply = self.queue_command(&command).await?;
        let parts = value_items(&reply);
        let mut entries = Vec::new();
        if let Some(claimed) = parts.get(1) {
            for (id, fields) in stream_entries(claimed) {
                if let Some(entry) = queue_entry(id, &fields) {
                    entries.push(entry);
                }
            }
        }
        // entries trimmed from the stream while pending come back as deleted ids: nothing to run
        Ok(entries)
    }

    async fn queue_renew(&self, consumer: &str, entry_ids: &[String]) -> StoreResult<()> {
        if entry_ids.is_empty() {
            return Ok(());
        }
        let mut command = redis::cmd("XCLAIM");
        command
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg(consumer)
            .arg(0)
            .arg(entry_ids)
            .arg("JUSTID");
        self.queue_command(&command).await?;
        Ok(())
    }

    async fn queue_ack(&self, entry_id: &str) -> StoreResult<()> {
        let mut command = redis::cmd("XACK");
        command.arg(self.key("queue")).arg(GROUP).arg(entry_id);
        self.queue_command(&command).await?;
        Ok(())
    }

    async fn dead_letter(&self, entry: &QueueEntry, reason: &str) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("XADD")
            .arg(self.key("queue:dead"))
            .arg("MAXLEN")
            .arg("~")
            .arg(self.settings.max_dead)
            .arg("*")
            .arg("job")
            .arg(&entry.job_id)
            .arg("candidate")
            .arg(&entry.candidate_id)
            .arg("entry")
            .arg(&entry.entry_id)
            .arg("reason")
            .arg(reason)
            .ignore();
        pipe.cmd("XACK")
            .arg(self.key("queue"))
            .arg(GROUP)
            .arg(&entry.entry_id)
            .ignore();
        pipe.query_async::<()>(&mut self.conn()).await?;
        Ok(())
    }

    async fn dead_letters(&self, limit: usize) -> StoreResult<Vec<(String, String, String)>> {
        let reply: Value = redis::cmd("XREVRANGE")
            .arg(self.key("queue:dead"))
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(limit)
            .query_async(&mut self.conn())
            .await?;
        Ok(stream_entries(&reply)
            .into_iter()
            .map(|(_, fields)| {
                let field = |name: &str| fields.get(name).cloned().unwrap_or_default();
                (field("job"), field("candidate"), field("reason"))
            })
            .collect())
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

    async fn queue_pending_count(&self) -> StoreResult<u64> {
        let mut command = redis::cmd("XPENDING");
        command.arg(self.key("queue")).arg(GROUP);
        let reply = self.queue_command(&command).await?;
        Ok(value_items(&reply)
            .first()
            .and_then(value_text)
            .and_then(|text| text.parse().ok())
            .unwrap_or(0))
    }
}
