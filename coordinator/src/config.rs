//! The coordinator's settings, layered as every Centroid binary does
//! (`centroid_runtime::config_layers`): defaults → `centroid.toml`
//! `[coordinator]` → `CENTROID_<KEY>` → flags. Later layers win.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use centroid_runtime::{BearerToken, LogFormat, Tls, TlsFiles, TlsFlags, layered};
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
    /// configuration file (default: $CENTROID_CONFIG, else ./centroid.toml when it exists)
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// address to serve gRPC on (port 0 picks a free port)
    #[arg(long, env = "CENTROID_LISTEN")]
    pub listen: Option<String>,
    /// Redis URL, e.g. redis://127.0.0.1:6379; "memory" keeps everything in-process
    #[arg(long, env = "CENTROID_REDIS")]
    pub redis: Option<String>,
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
    /// how long a job's keys live after its last write, in s
    #[arg(long, env = "CENTROID_JOB_TTL_S")]
    pub job_ttl_s: Option<u64>,
    /// log format: text or json
    #[arg(long, env = "CENTROID_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
    /// shorthand for --log-format json
    #[arg(long)]
    #[serde(skip)]
    pub log_json: bool,
    /// write the bound address to this file once serving
    #[arg(long, env = "CENTROID_READY_FILE")]
    pub ready_file: Option<PathBuf>,
    /// file holding the farm's bearer token (else CENTROID_TOKEN); every RPC must carry it
    #[arg(long, env = "CENTROID_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    #[command(flatten)]
    #[serde(flatten)]
    pub tls: TlsFlags,
    /// serve /metrics (Prometheus), /healthz and /readyz over HTTP on this address
    #[arg(long, env = "CENTROID_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// long-term memory: "off", a directory, or empty for Redis (with a Redis store)
    #[arg(long, env = "CENTROID_MEMORY")]
    pub memory: Option<String>,
}

/// The coordinator's settings after layering. `Default` is the built-in layer
/// and does no I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CoordinatorConfig {
    pub listen: String,
    /// Redis URL or "memory"
    pub redis: String,
    pub key_prefix: String,
    pub consumer: Option<String>,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_timeout_ms: u64,
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
    pub log_format: LogFormat,
    pub ready_file: Option<PathBuf>,
    /// file holding the bearer token
    pub token_file: Option<PathBuf>,
    /// TLS (`centroid_runtime::tls`): certificate and key served with and presented,
    /// the root peers must chain to, whether callers must present a certificate
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_ca: Option<PathBuf>,
    pub tls_client_auth: bool,
    /// address of the operator's HTTP endpoint (/metrics, /healthz, /readyz)
    pub metrics_listen: Option<String>,
    /// the bearer token every RPC must carry (from `token_file` or `CENTROID_TOKEN`);
    /// never serialized, never printed
    #[serde(skip)]
    pub token: Option<BearerToken>,
    /// TLS read from `tls_*` once; `None` = plain TCP. Never serialized or printed
    #[serde(skip)]
    pub tls: Option<Tls>,
    /// the model of the LLM planner (`[coordinator.llm]`, `CENTROID_LLM_BASE_URL`,
    /// `CENTROID_LLM_MODEL`, `CENTROID_LLM_API_KEY`, `CENTROID_LLM_MAX_CONTEXT_TOKENS`, …);
    /// not configured = every job is planned by the heuristic planner
    pub llm: LlmSettings,
    /// the long-term memory: "" = on Redis when the store is Redis (none with the
    /// in-process store), "off", or a directory (an on-disk memory)
    pub memory: String,
    /// cases kept at most in the long-term memory (the least used go first)
    pub memory_max_cases: u32,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            listen: "127.0.0.1:50051".into(),
            redis: "redis://127.0.0.1:6379".into(),
            key_prefix: "centroid".into(),
            consumer: None,
            heartbeat_interval_ms: 2_000,
            heartbeat_timeout_ms: 10_000,
            lease_timeout_ms: 15_000,
            max_deliveries: 6,
            candidates_per_iteration: 4,
            overlap_iterations: true,
            candidate_deadline_ms: 300_000,
            rpc_grace_ms: 5_000,
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
            log_format: LogFormat::Text,
            ready_file: None,
            token_file: None,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            tls_client_auth: false,
            metrics_listen: None,
            token: None,
            tls: None,
            llm: LlmSettings::default(),
            memory: String::new(),
            memory_max_cases: centroid_planner::case_memory::DEFAULT_MAX_CASES as u32,
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
        let mut flags = command_line.clone();
        if flags.log_json {
            flags.log_format = Some(LogFormat::Json);
        }
        let mut config: CoordinatorConfig = layered(
            "coordinator",
            &CoordinatorConfig::default(),
            command_line.config.as_deref(),
            &environment,
            &flags,
        )
        .map_err(|error| CoordinatorError::Config(error.to_string()))?;
        config.token = BearerToken::configured(config.token_file.as_deref(), &environment)
            .map_err(|error| CoordinatorError::Config(error.to_string()))?;
        config.tls = TlsFiles::new(
            config.tls_cert.as_deref(),
            config.tls_key.as_deref(),
            config.tls_ca.as_deref(),
            config.tls_client_auth,
        )
        .load()
        .map_err(|error| CoordinatorError::Config(error.to_string()))?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), CoordinatorError> {
        if self.lease_timeout_ms <= self.heartbeat_timeout_ms {
            return Err(CoordinatorError::Config(format!(
                "lease_timeout_ms ({}) must exceed heartbeat_timeout_ms ({})",
                self.lease_timeout_ms, self.heartbeat_timeout_ms
            )));
        }
        if self.heartbeat_timeout_ms <= self.heartbeat_interval_ms {
            return Err(CoordinatorError::Config(
                "heartbeat_timeout_ms must exceed heartbeat_interval_ms".into(),
            ));
        }
        if self.max_deliveries == 0 || self.candidates_per_iteration == 0 {
            return Err(CoordinatorError::Config(
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

    pub fn consumer_name(&self) -> String {
        self.consumer.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|name| name.trim().to_string())
                .unwrap_or_else(|_| "localhost".into());
            format!("coordinator-{host}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_override_in_order_file_environment_flags() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(
            &file,
            "[coordinator]\nkey_prefix = \"file\"\nmax_deliveries = 9\ncandidates_per_iteration = 7\n",
        )
        .unwrap();
        let command_line = CommandLine {
            config: Some(file),
            candidates_per_iteration: Some(2),
            log_json: true,
            ..CommandLine::default()
        };
        let environment = HashMap::from([
            ("CENTROID_KEY_PREFIX".to_string(), "env".to_string()),
            (
                "CENTROID_CANDIDATES_PER_ITERATION".to_string(),
                "5".to_string(),
            ),
            ("CENTROID_RETRY_MAX_MS".to_string(), "123".to_string()),
        ]);
        let config = CoordinatorConfig::load_with_environment(&command_line, environment).unwrap();
        assert_eq!(config.candidates_per_iteration, 2, "flag beats environment");
        assert_eq!(config.key_prefix, "env", "environment beats file");
        assert_eq!(config.max_deliveries, 9, "file beats default");
        assert_eq!(
            config.retry_max_ms, 123,
            "a key without a flag is still an environment key"
        );
        assert_eq!(config.log_format, LogFormat::Json, "--log-json");
        assert_eq!(config.listen, "127.0.0.1:50051");
    }

    #[test]
    fn the_defaults_pass_the_checks_and_layering_nothing_keeps_them() {
        let directory = tempfile::tempdir().unwrap();
        let empty = directory.path().join("empty.toml");
        std::fs::write(&empty, "").unwrap();
        let command_line = CommandLine {
            config: Some(empty),
            ..CommandLine::default()
        };
        let config =
            CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).unwrap();
        assert_eq!(config, CoordinatorConfig::default());
        CoordinatorConfig::default().check().unwrap();
    }

    #[test]
    fn lease_must_exceed_heartbeat_timeout() {
        let command_line = CommandLine {
            lease_timeout_ms: Some(1000),
            heartbeat_timeout_ms: Some(2000),
            ..CommandLine::default()
        };
        assert!(CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).is_err());
    }
}
