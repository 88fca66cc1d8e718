//! The Redis store (the farm's short-term memory and work queue).
//!
//! Key layout, all under one prefix `P` (default `centroid`):
//!
//! | key | type | content |
//! |---|---|---|
//! | `P:jobs` | sorted set | job id → created_ms (listing; trimmed to `max_jobs`) |
//! | `P:jobs:active` | set | ids of unfinished jobs (a restarted coordinator resumes them) |
//! | `P:jobs:weights` | hash | unfinished job id → its weight in the share of the slots |
//! | `P:job:{id}` | string | the job record (JSON) |
//! | `P:job:{id}:delivery` | string | the job record without its rounds' candidate ids, written with it (what a delivery reads) |
//! | `P:job:{id}:inputs` | string | the three input files (JSON) |
//! | `P:job:{id}:cancel` | string | the cancellation reason, once requested |
//! | `P:job:{id}:owner` | string | the coordinator driving the job (lease, PX = lease timeout) |
//! | `P:job:{id}:candidates` | hash | candidate id → candidate record (JSON) |
//! | `P:job:{id}:results` | hash | candidate id → result (JSON), written with HSETNX: first result wins |
//! | `P:job:{id}:finished` | list | the ids of the results, in the order recorded (appended with each) |
//! | `P:job:{id}:deliveries` | hash | candidate id → delivery counter |
//! | `P:job:{id}:events` | stream | the job's event log (MAXLEN ~ `max_events`) |
//! | `P:job:{id}:artifacts` | hash | `{candidate}/{name}` → bytes (only the best candidates' ones) |
//! | `P:job:{id}:artifact_index` | hash | `{candidate}/{name}` → metadata (JSON) |
//! | `P:workers` | set | ids of published worker cards (stale ids dropped on read) |
//! | `P:worker:{id}` | string | a live worker's card (skills, schemas, address), PX = heartbeat timeout |
//! | `P:queue` | stream | candidate entries {job, candidate, weight}; consumer group `dispatch` (MAXLEN ~ `max_queue`) |
//! | `P:queue:dead` | stream | dead-lettered entries {job, candidate, reason} (MAXLEN ~ `max_dead`) |
//!
//! Every `P:job:{id}*` key gets a TTL (`job_ttl`) refreshed on each write.

mod codec;
mod delivered_jobs;
mod queue;
mod records;

use std::time::Duration;

use redis::Value;
use redis::aio::ConnectionManager;

use crate::error::StoreResult;
use crate::model::JobRecord;

pub const GROUP: &str = "dispatch";

#[derive(Debug, Clone)]
pub struct RedisStoreSettings {
    pub url: String,
    /// PEM roots a `rediss://` server's certificate must chain to (none: the system's)
    pub tls_ca: Option<std::path::PathBuf>,
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
            tls_ca: None,
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
    /// the job records last read at deliveries, parsed
    delivered_jobs: delivered_jobs::DeliveredJobs,
}

impl RedisStore {
    /// Connects (retrying until `connect_within` runs out) and creates the consumer group.
    pub async fn connect(
        settings: RedisStoreSettings,
        connect_within: Duration,
    ) -> StoreResult<RedisStore> {
        let client = crate::redis_client::client(&settings.url, settings.tls_ca.as_deref())?;
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
                // a wrong password or URL does not mend by waiting
                Err(error)
                    if started.elapsed() < connect_within
                        && !matches!(
                            error.kind(),
                            redis::ErrorKind::AuthenticationFailed
                                | redis::ErrorKind::InvalidClientConfig
                        ) =>
                {
                    tracing::warn!(%error, "redis not reachable yet; retrying");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(error) => return Err(error.into()),
            }
        };
        let store = RedisStore {
            connection,
            settings,
            delivered_jobs: delivered_jobs::DeliveredJobs::default(),
        };
        store.ensure_group().await?;
        Ok(store)
    }

    pub fn prefix(&self) -> &str {
        &self.settings.prefix
    }

    pub(super) fn key(&self, suffix: &str) -> String {
        format!("{}:{suffix}", self.settings.prefix)
    }

    pub(super) fn job_key(&self, job_id: &str, suffix: &str) -> String {
        if suffix.is_empty() {
            format!("{}:job:{job_id}", self.settings.prefix)
        } else {
            format!("{}:job:{job_id}:{suffix}", self.settings.prefix)
        }
    }

    pub(super) fn conn(&self) -> ConnectionManager {
        self.connection.clone()
    }

    pub(super) fn ttl_ms(&self) -> i64 {
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
    pub(super) async fn queue_command(&self, command: &redis::Cmd) -> StoreResult<Value> {
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

    /// SET of the job record and of its delivery view
    /// ([`delivered_jobs::delivery_view`]), into `pipe`.
    pub(super) fn set_job(&self, pipe: &mut redis::Pipeline, job: &JobRecord) {
        pipe.cmd("SET")
            .arg(self.job_key(&job.job_id, ""))
            .arg(codec::to_json(job))
            .ignore();
        pipe.cmd("SET")
            .arg(self.job_key(&job.job_id, "delivery"))
            .arg(codec::to_json(&delivered_jobs::delivery_view(job)))
            .ignore();
    }

    pub(super) async fn touch_job_keys(&self, pipe: &mut redis::Pipeline, job_id: &str) {
        for suffix in self.job_key_suffixes() {
            pipe.cmd("PEXPIRE")
                .arg(self.job_key(job_id, suffix))
                .arg(self.ttl_ms())
                .ignore();
        }
    }

    /// The suffixes of a job's keys (`P:job:{id}` first): what gets the job's TTL.
    pub(super) fn job_key_suffixes(&self) -> [&'static str; 11] {
        JOB_KEY_SUFFIXES
    }
}

/// The suffixes of a job's keys, `P:job:{id}` (the job record) first.
const JOB_KEY_SUFFIXES: [&str; 11] = [
    "",
    "delivery",
    "inputs",
    "candidates",
    "results",
    "finished",
    "deliveries",
    "events",
    "artifacts",
    "artifact_index",
    "cancel",
];
