//! The worker's settings, layered as every Centroid binary does
//! (`centroid_runtime::config_layers`): defaults → `centroid.toml`
//! `[worker]` → `CENTROID_<KEY>` → flags. Later layers win.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use centroid_runtime::{BearerToken, LogFormat, Tls, TlsFiles, TlsFlags, layered};
use clap::Parser;
use serde::{Deserialize, Serialize};

use crate::error::WorkerError;

/// `centroid-worker` command line. Every flag overrides the same key of the
/// file and the environment.
#[derive(Debug, Clone, Default, Parser, Serialize)]
#[command(
    name = "centroid-worker",
    version,
    about = "Centroid worker node: runs candidate layouts on a pool of headless KLayout processes"
)]
pub struct CommandLine {
    /// configuration file (default: $CENTROID_CONFIG, else ./centroid.toml when it exists)
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// coordinator gRPC URL, e.g. http://127.0.0.1:50051; without it the worker runs standalone
    #[arg(long, env = "CENTROID_COORDINATOR")]
    pub coordinator: Option<String>,
    /// address to serve the Worker gRPC service on (port 0 picks a free port)
    #[arg(long, env = "CENTROID_LISTEN")]
    pub listen: Option<String>,
    /// address the coordinator should use to reach this worker (default: http://<bound address>)
    #[arg(long, env = "CENTROID_ADVERTISE_ADDRESS")]
    pub advertise_address: Option<String>,
    /// number of KLayout processes (default: number of cores)
    #[arg(long, env = "CENTROID_SLOTS")]
    pub slots: Option<usize>,
    /// Python interpreter with the klayout module
    #[arg(long, env = "CENTROID_PYTHON")]
    pub python: Option<PathBuf>,
    /// directory holding the centroid_skills package
    #[arg(long, env = "CENTROID_SKILLS_DIR")]
    pub skills_dir: Option<PathBuf>,
    /// address-space cap of each KLayout process in MiB (0 = none)
    #[arg(long, env = "CENTROID_MEMORY_LIMIT_MB")]
    pub memory_limit_mb: Option<u64>,
    /// how long in-flight candidates may run on after SIGTERM or Drain, in ms
    #[arg(long, env = "CENTROID_DRAIN_GRACE_MS")]
    pub drain_grace_ms: Option<u64>,
    /// heartbeat period in ms
    #[arg(long, env = "CENTROID_HEARTBEAT_INTERVAL_MS")]
    pub heartbeat_interval_ms: Option<u64>,
    /// deadline of a candidate whose request gives none, in ms
    #[arg(long, env = "CENTROID_DEFAULT_DEADLINE_MS")]
    pub default_deadline_ms: Option<u64>,
    /// log format: text or json
    #[arg(long, env = "CENTROID_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
    /// shorthand for --log-format json
    #[arg(long)]
    #[serde(skip)]
    pub log_json: bool,
    /// write the bound address to this file once the worker serves
    #[arg(long, env = "CENTROID_READY_FILE")]
    pub ready_file: Option<PathBuf>,
    /// worker id (default: <hostname>-<random>)
    #[arg(long, env = "CENTROID_WORKER_ID")]
    pub worker_id: Option<String>,
    /// foundry DRC decks jobs may name for signoff (`:`-separated KLayout deck files;
    /// a job names one by its file name). A deck is code KLayout runs: install only
    /// decks you trust.
    #[arg(long, env = "CENTROID_SIGNOFF_DECKS")]
    pub signoff_decks: Option<String>,
    /// file holding the farm's bearer token (else CENTROID_TOKEN): required on every
    /// call to this worker and sent with every call to the coordinator
    #[arg(long, env = "CENTROID_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,
    #[command(flatten)]
    #[serde(flatten)]
    pub tls: TlsFlags,
    /// serve /metrics (Prometheus), /healthz and /readyz over HTTP on this address
    #[arg(long, env = "CENTROID_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// longest plan a candidate may bring (default 10000)
    #[arg(long, env = "CENTROID_MAX_PLAN_STEPS")]
    pub max_plan_steps: Option<usize>,
}

/// The worker's settings after layering. `Default` is the built-in layer and
/// does no I/O.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerConfig {
    pub coordinator: Option<String>,
    pub listen: String,
    pub advertise_address: Option<String>,
    /// KLayout processes; unset = one per core (resolved when loading)
    pub slots: Option<usize>,
    pub python: PathBuf,
    pub skills_dir: PathBuf,
    pub memory_limit_mb: u64,
    pub drain_grace_ms: u64,
    pub heartbeat_interval_ms: u64,
    pub default_deadline_ms: u64,
    pub startup_timeout_ms: u64,
    pub log_format: LogFormat,
    pub ready_file: Option<PathBuf>,
    pub worker_id: Option<String>,
    /// `:`-separated foundry deck files `signoff.run` may run
    pub signoff_decks: String,
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
    /// longest plan a candidate may bring (RESOURCE_EXHAUSTED, not retried, above it)
    pub max_plan_steps: usize,
    /// the bearer token (from `token_file` or `CENTROID_TOKEN`); never serialized or printed
    #[serde(skip)]
    pub token: Option<BearerToken>,
    /// TLS read from `tls_*` once; `None` = plain TCP. Never serialized or printed
    #[serde(skip)]
    pub tls: Option<Tls>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            coordinator: None,
            listen: "127.0.0.1:50061".into(),
            advertise_address: None,
            slots: None,
            python: PathBuf::from(".venv/bin/python"),
            skills_dir: PathBuf::from("worker/skills"),
            memory_limit_mb: 4096,
            drain_grace_ms: 30_000,
            heartbeat_interval_ms: 2_000,
            default_deadline_ms: 300_000,
            startup_timeout_ms: 60_000,
            log_format: LogFormat::Text,
            ready_file: None,
            worker_id: None,
            signoff_decks: String::new(),
            token_file: None,
            tls_cert: None,
            tls_key: None,
            tls_ca: None,
            tls_client_auth: false,
            metrics_listen: None,
            max_plan_steps: 10_000,
            token: None,
            tls: None,
        }
    }
}

impl WorkerConfig {
    /// Layers the defaults, the file, the process environment and `command_line`.
    pub fn load(command_line: &CommandLine) -> Result<WorkerConfig, WorkerError> {
        WorkerConfig::load_with_environment(command_line, std::env::vars().collect())
    }

    /// As [`WorkerConfig::load`], with the environment given (for tests).
    pub fn load_with_environment(
        command_line: &CommandLine,
        environment: HashMap<String, String>,
    ) -> Result<WorkerConfig, WorkerError> {
        let mut flags = command_line.clone();
        if flags.log_json {
            flags.log_format = Some(LogFormat::Json);
        }
        let mut config: WorkerConfig = layered(
            "worker",
            &WorkerConfig::default(),
            command_line.config.as_deref(),
            &environment,
            &flags,
        )
        .map_err(|error| WorkerError::Config(error.to_string()))?;
        config.token = BearerToken::configured(config.token_file.as_deref(), &environment)
            .map_err(|error| WorkerError::Config(error.to_string()))?;
        config.tls = TlsFiles::new(
            config.tls_cert.as_deref(),
            config.tls_key.as_deref(),
            config.tls_ca.as_deref(),
            config.tls_client_auth,
        )
        .load()
        .map_err(|error| WorkerError::Config(error.to_string()))?;
        config.slots = Some(config.slots.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        }));
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), WorkerError> {
        if self.slots == Some(0) {
            return Err(WorkerError::Config("slots must be at least 1".into()));
        }
        self.listen_address()?;
        if self.heartbeat_interval_ms == 0 {
            return Err(WorkerError::Config(
                "heartbeat_interval_ms must be above 0".into(),
            ));
        }
        Ok(())
    }

    pub fn listen_address(&self) -> Result<SocketAddr, WorkerError> {
        self.listen.parse().map_err(|error| {
            WorkerError::Config(format!("listen address `{}`: {error}", self.listen))
        })
    }

    /// The number of KLayout processes (one per core unless configured).
    pub fn slot_count(&self) -> usize {
        self.slots.unwrap_or(1).max(1)
    }

    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_mb * 1024 * 1024
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn defaults_apply_without_file_environment_or_flags() {
        let config =
            WorkerConfig::load_with_environment(&CommandLine::default(), HashMap::new()).unwrap();
        assert_eq!(config.listen, "127.0.0.1:50061");
        assert!(config.slot_count() >= 1, "one per core");
        assert_eq!(config.memory_limit_mb, 4096);
        assert_eq!(config.log_format, LogFormat::Text);
        assert!(config.coordinator.is_none());
    }

    #[test]
    fn layers_override_in_order_file_environment_flags() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(
            &file,
            "[worker]\nslots = 3\nlisten = \"127.0.0.1:1\"\ndrain_grace_ms = 7\nmemory_limit_mb = 100\n",
        )
        .unwrap();
        let command_line = CommandLine {
            config: Some(file),
            slots: Some(5),
            log_json: true,
            ..CommandLine::default()
        };
        let config = WorkerConfig::load_with_environment(
            &command_line,
            environment(&[
                ("CENTROID_SLOTS", "4"),
                ("CENTROID_DRAIN_GRACE_MS", "9"),
                ("CENTROID_PYTHON", "/opt/py"),
                ("CENTROID_STARTUP_TIMEOUT_MS", "11"),
            ]),
        )
        .unwrap();
        assert_eq!(config.slot_count(), 5, "flag beats environment and file");
        assert_eq!(config.drain_grace_ms, 9, "environment beats file");
        assert_eq!(config.memory_limit_mb, 100, "file beats default");
        assert_eq!(config.listen, "127.0.0.1:1");
        assert_eq!(config.python, PathBuf::from("/opt/py"));
        assert_eq!(config.startup_timeout_ms, 11, "a key without a flag");
        assert_eq!(config.log_format, LogFormat::Json);
    }

    #[test]
    fn zero_slots_is_refused() {
        let command_line = CommandLine {
            slots: Some(0),
            ..CommandLine::default()
        };
        assert!(WorkerConfig::load_with_environment(&command_line, HashMap::new()).is_err());
    }

    #[test]
    fn a_bad_listen_address_is_refused() {
        let command_line = CommandLine {
            listen: Some("not an address".into()),
            ..CommandLine::default()
        };
        let error = WorkerConfig::load_with_environment(&command_line, HashMap::new()).unwrap_err();
        assert!(error.to_string().contains("not an address"), "{error}");
    }
}
