//! The coordinator's settings, loaded as every Centroid binary's
//! (`centroid_runtime::binary_settings`): defaults → `centroid.toml`
//! `[coordinator]` → `CENTROID_<KEY>` → flags. Later layers win. The settings
//! every binary shares (log format, token, TLS, ready file, metrics endpoint) are
//! embedded from the runtime crate.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use centroid_runtime::binary_settings;
use centroid_runtime::{
    BearerToken, BinaryFlags, BinarySettings, CommonFlags, CommonSettings, ConfigError, Principals,
    ServerFlags, ServerSettings,
};
use clap::Parser;
use serde::{Deserialize, Serialize};

use crate::error::CoordinatorError;
use crate::llm::LlmSettings;

/// `centroid-coordinator` command line. Every flag overrides the same key of the
/// file and the environment.
#[derive(Debug, Clone, Default, Parser, Serialize)]
#[command(
    name = "centroid-coordinator",
    version,
    about = "Centroid coordinator: plans layouts and dispatches candidates to workers"
)]
pub struct CommandLine {
    /// address to serve gRPC on (port 0 picks a free port)
    #[arg(long, env = "CENTROID_LISTEN")]
    pub listen: Option<String>,
    /// Redis URL, e.g. redis://127.0.0.1:6379; "memory" keeps everything in-process
    #[arg(long, env = "CENTROID_REDIS")]
    pub redis: Option<String>,
    /// PEM file of the root certificate(s) a `rediss://` Redis's certificate must chain
    /// to (default: the system's roots)
    #[arg(long, env = "CENTROID_REDIS_TLS_CA")]
    pub redis_tls_ca: Option<PathBuf>,
    /// prefix of every Redis key
    #[arg(long, env = "CENTROID_KEY_PREFIX")]
    pub key_prefix: Option<String>,
    /// consumer name in the queue's consumer group (default: coordinator-<hostname>)
    #[arg(long, env = "CENTROID_CONSUMER")]
    pub consumer: Option<String>,
    /// heartbeat period told to workers, in ms
    #[arg(long, env = "CENTROID_HEARTBEAT_INTERVAL_MS")]
    pub heartbeat_interval_ms: Option<u64>,
    /// a worker silent for this long is declared dead, in ms
    #[arg(long, env = "CENTROID_HEARTBEAT_TIMEOUT_MS")]
    pub heartbeat_timeout_ms: Option<u64>,
    /// a dead worker leaves the registry (and ListWorkers) this long after it died, in ms
    #[arg(long, env = "CENTROID_DEAD_WORKER_GRACE_MS")]
    pub dead_worker_grace_ms: Option<u64>,
    /// queue lease: an entry not renewed for this long is reclaimed (must exceed the heartbeat timeout)
    #[arg(long, env = "CENTROID_LEASE_TIMEOUT_MS")]
    pub lease_timeout_ms: Option<u64>,
    /// deliveries of one candidate before it is dead-lettered
    #[arg(long, env = "CENTROID_MAX_DELIVERIES")]
    pub max_deliveries: Option<u32>,
    /// candidates per iteration of a job that does not say
    #[arg(long, env = "CENTROID_CANDIDATES_PER_ITERATION")]
    pub candidates_per_iteration: Option<u32>,
    /// draft a job's next iteration while the last candidates of the current one run,
    /// so the slots stay busy between iterations (true|false; default true)
    #[arg(long, env = "CENTROID_OVERLAP_ITERATIONS", num_args = 0..=1, default_missing_value = "true")]
    pub overlap_iterations: Option<bool>,
    /// deadline of one candidate on a worker, in ms
    #[arg(long, env = "CENTROID_CANDIDATE_DEADLINE_MS")]
    pub candidate_deadline_ms: Option<u64>,
    /// a job's entries may wait in a worker's waiting room (prefetch) while its
    /// recent candidates took at most this many ms on their workers (0 = never)
    #[arg(long, env = "CENTROID_PREFETCH_BELOW_MS")]
    pub prefetch_below_ms: Option<u64>,
    /// how long a job's keys live after its last write, in s
    #[arg(long, env = "CENTROID_JOB_TTL_S")]
    pub job_ttl_s: Option<u64>,
    /// long-term memory: "off", a directory, or empty for Redis (with a Redis store)
    #[arg(long, env = "CENTROID_MEMORY")]
    pub memory: Option<String>,
    /// principals file: each user's, worker's and admin's role and token hash
    /// (`[[principal]]` name, role, token_sha256), beside the shared token
    #[arg(long, env = "CENTROID_PRINCIPALS")]
    pub principals: Option<PathBuf>,
    /// file holding the token sent with every call to a worker (what the workers'
    /// `--token-file` holds); default: the farm's token (`--token-file`)
    #[arg(long, env = "CENTROID_WORKER_CALL_TOKEN_FILE")]
    pub worker_call_token_file: Option<PathBuf>,
    /// `--config`, the log format, the token and TLS
    #[command(flatten)]
    #[serde(flatten)]
    pub common: CommonFlags,
    /// TLS client authentication, the ready file, the metrics endpoint
    #[command(flatten)]
    #[serde(flatten)]
    pub server: ServerFlags,
}

/// The coordinator's settings after layering. `Default` is the built-in layer
/// and does no I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CoordinatorConfig {
    pub listen: String,
    /// Redis URL or "memory"; `rediss://` for TLS
    pub redis: String,
    /// roots a `rediss://` Redis's certificate must chain to (PEM), instead of the system's
    pub redis_tls_ca: Option<PathBuf>,
    pub key_prefix: String,
    pub consumer: Option<String>,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_timeout_ms: u64,
    /// how long a dead worker stays listed before the registry forgets it
    pub dead_worker_grace_ms: u64,
    pub lease_timeout_ms: u64,
    pub max_deliveries: u32,
    pub candidates_per_iteration: u32,
    /// a job's next iteration is drafted from the evaluations before the current
    /// one and starts while the current one's last candidates run (the slots stay
    /// busy between iterations; the search stays deterministic for a seed)
    pub overlap_iterations: bool,
    pub candidate_deadline_ms: u64,
    /// extra time granted to a RunCandidate RPC beyond the candidate deadline
    pub rpc_grace_ms: u64,
    /// an entry may take a place in a worker's waiting room (its prefetch) only while
    /// its job's recent candidates took at most this long on their workers; 0 = never
    /// (see `candidate_times`)
    pub prefetch_below_ms: u64,
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    /// candidates per job whose artifacts are kept
    pub artifacts_keep: u32,
    /// the best candidates a job's foundry deck runs on (jobs with a signoff deck)
    pub signoff_candidates: u32,
    /// largest artifact kept, in bytes
    pub artifact_max_bytes: u64,
    pub job_ttl_s: u64,
    pub max_events_per_job: u64,
    /// longest work queue: a job whose first iteration would not fit is refused
    pub max_queue_len: u64,
    /// unfinished jobs at once: more are refused (RESOURCE_EXHAUSTED) until some end
    pub max_active_jobs: u32,
    /// most candidates one iteration of a job may ask for
    pub max_candidates_per_iteration: u32,
    /// the log format, the bearer token every RPC must carry, TLS
    #[serde(flatten)]
    pub common: CommonSettings,
    /// whether callers must present a certificate, the ready file, the metrics endpoint
    #[serde(flatten)]
    pub server: ServerSettings,
    /// the model of the LLM planner (`[coordinator.llm]`, `CENTROID_LLM_BASE_URL`,
    /// `CENTROID_LLM_MODEL`, `CENTROID_LLM_API_KEY`, `CENTROID_LLM_MAX_CONTEXT_TOKENS`, …);
    /// not configured = every job is planned by the heuristic planner
    pub llm: LlmSettings,
    /// the long-term memory: "" = on Redis when the store is Redis (none with the
    /// in-process store), "off", or a directory (an on-disk memory)
    pub memory: String,
    /// cases kept at most in the long-term memory (the least used go first)
    pub memory_max_cases: u32,
    /// the principals file (`centroid_runtime::principals`); none = the shared
    /// token alone (its holder is an admin)
    pub principals: Option<PathBuf>,
    /// the principals read from `principals` once, at load; never serialized
    #[serde(skip)]
    pub access: Option<Arc<Principals>>,
    /// file holding the token sent with every call to a worker (unset: `common.token`)
    pub worker_call_token_file: Option<PathBuf>,
    /// read from `worker_call_token_file` once, at load; never serialized
    #[serde(skip)]
    pub worker_call_token: Option<BearerToken>,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            listen: "127.0.0.1:50051".into(),
            redis: "redis://127.0.0.1:6379".into(),
            redis_tls_ca: None,
            key_prefix: "centroid".into(),
            consumer: None,
            heartbeat_interval_ms: 2_000,
            heartbeat_timeout_ms: 10_000,
            dead_worker_grace_ms: 30_000,
            lease_timeout_ms: 15_000,
            max_deliveries: 6,
            candidates_per_iteration: 4,
            overlap_iterations: true,
            candidate_deadline_ms: 300_000,
            rpc_grace_ms: 5_000,
            prefetch_below_ms: 1_000,
            retry_base_ms: 200,
            retry_max_ms: 10_000,
            artifacts_keep: 3,
            signoff_candidates: 3,
            artifact_max_bytes: 32 * 1024 * 1024,
            job_ttl_s: 7 * 24 * 3600,
            max_events_per_job: 10_000,
            max_queue_len: 100_000,
            max_active_jobs: 200,
            max_candidates_per_iteration: 10_000,
            common: CommonSettings::default(),
            server: ServerSettings::default(),
            llm: LlmSettings::default(),
            memory: String::new(),
            memory_max_cases: centroid_planner::case_memory::DEFAULT_MAX_CASES as u32,
            principals: None,
            access: None,
            worker_call_token_file: None,
            worker_call_token: None,
        }
    }
}

impl CoordinatorConfig {
    /// Layers the defaults, the file, the process environment and `command_line`.
    pub fn load(command_line: &CommandLine) -> Result<CoordinatorConfig, CoordinatorError> {
        CoordinatorConfig::load_with_environment(command_line, std::env::vars().collect())
    }

    /// As [`CoordinatorConfig::load`], with the environment given (for tests).
    pub fn load_with_environment(
        command_line: &CommandLine,
        environment: HashMap<String, String>,
    ) -> Result<CoordinatorConfig, CoordinatorError> {
        let mut config: CoordinatorConfig =
            binary_settings::load_with_environment(command_line, &environment)?;
        config.check()?;
        if let Some(path) = &config.principals {
            let principals = Principals::read_file(path).map_err(ConfigError::from)?;
            config.access = Some(Arc::new(principals));
        }
        if let Some(path) = &config.worker_call_token_file {
            config.worker_call_token =
                Some(BearerToken::read_file(path).map_err(ConfigError::from)?);
        }
        Ok(config)
    }

    /// The token sent with every call to a worker: the worker-call token when one
    /// is configured, else the farm's.
    pub fn worker_call_token(&self) -> Option<BearerToken> {
        self.worker_call_token
            .clone()
            .or_else(|| self.common.token.clone())
    }

    fn check(&self) -> Result<(), ConfigError> {
        if let Some(roots) = &self.redis_tls_ca
            && !self.redis.starts_with("rediss://")
        {
            return Err(ConfigError::Inconsistent(format!(
                "redis_tls_ca ({}) is given but the Redis URL {} is not TLS: write rediss://host:port",
                roots.display(),
                self.redis_for_logs()
            )));
        }
        if self.lease_timeout_ms <= self.heartbeat_timeout_ms {
            return Err(ConfigError::Inconsistent(format!(
                "lease_timeout_ms ({}) must exceed heartbeat_timeout_ms ({})",
                self.lease_timeout_ms, self.heartbeat_timeout_ms
            )));
        }
        if self.heartbeat_timeout_ms <= self.heartbeat_interval_ms {
            return Err(ConfigError::Inconsistent(
                "heartbeat_timeout_ms must exceed heartbeat_interval_ms".into(),
            ));
        }
        if self.max_deliveries == 0 || self.candidates_per_iteration == 0 {
            return Err(ConfigError::Inconsistent(
                "max_deliveries and candidates_per_iteration must be at least 1".into(),
            ));
        }
        Ok(())
    }

    pub fn heartbeat_timeout(&self) -> Duration {
        Duration::from_millis(self.heartbeat_timeout_ms)
    }

    pub fn lease_timeout(&self) -> Duration {
        Duration::from_millis(self.lease_timeout_ms)
    }

    /// The Redis URL as logs may show it: a password in it replaced by `***`.
    pub fn redis_for_logs(&self) -> String {
        redact_url_password(&self.redis)
    }

    pub fn consumer_name(&self) -> String {
        self.consumer.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|name| name.trim().to_string())
                .unwrap_or_else(|_| "localhost".into());
            format!("coordinator-{host}")
        })
    }
}

/// `url` with the password of its user information (`scheme://user:password@host`,
/// `redis://:password@host`) replaced by `***`; anything else unchanged.
fn redact_url_password(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|index| index + 3) else {
        return url.to_string();
    };
    let authority_end = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |index| scheme_end + index);
    let Some(at) = url[scheme_end..authority_end]
        .rfind('@')
        .map(|index| scheme_end + index)
    else {
        return url.to_string();
    };
    match url[scheme_end..at]
        .find(':')
        .map(|index| scheme_end + index)
    {
        Some(colon) => format!("{}:***{}", &url[..colon], &url[at..]),
        None => url.to_string(),
    }
}

impl BinaryFlags for CommandLine {
    fn common_flags(&self) -> &CommonFlags {
        &self.common
    }
}

impl BinarySettings for CoordinatorConfig {
    const TABLE: &'static str = "coordinator";

    fn common_mut(&mut self) -> &mut CommonSettings {
        &mut self.common
    }

    fn tls_client_auth(&self) -> bool {
        self.server.tls_client_auth
    }
}

#[cfg(test)]
mod tests;
