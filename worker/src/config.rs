//! The worker's settings, loaded as every Centroid binary's
//! (`centroid_runtime::binary_settings`): defaults → `centroid.toml`
//! `[worker]` → `CENTROID_<KEY>` → flags. Later layers win. The settings every
//! binary shares (log format, token, TLS, ready file, metrics endpoint) are
//! embedded from the runtime crate.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use centroid_runtime::binary_settings;
use centroid_runtime::{
    BearerToken, BinaryFlags, BinarySettings, CommonFlags, CommonSettings, ConfigError,
    ServerFlags, ServerSettings,
};
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
    /// calls taken beyond the slots, each waiting in the worker for the next slot to
    /// free (its waiting room; default: one per slot; 0 = refuse when every slot is busy)
    #[arg(long, env = "CENTROID_PREFETCH")]
    pub prefetch: Option<usize>,
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
    /// worker id (default: <hostname>-<random>)
    #[arg(long, env = "CENTROID_WORKER_ID")]
    pub worker_id: Option<String>,
    /// foundry DRC decks jobs may name for signoff (`:`-separated KLayout deck files;
    /// a job names one by its file name). A deck is code KLayout runs: install only
    /// decks you trust.
    #[arg(long, env = "CENTROID_SIGNOFF_DECKS")]
    pub signoff_decks: Option<String>,
    /// longest plan a candidate may bring (default 10000)
    #[arg(long, env = "CENTROID_MAX_PLAN_STEPS")]
    pub max_plan_steps: Option<usize>,
    /// BENCH/TEST MODE: start no KLayout; answer every candidate ok after this many ms
    /// (`--slots` of them at once). Only `noop_plan` jobs run on such a worker.
    #[arg(long, env = "CENTROID_SIMULATE_CANDIDATE_MS")]
    pub simulate_candidate_ms: Option<u64>,
    /// file holding the token this worker presents to the coordinator (register,
    /// heartbeat, deregister): its fleet's `worker` principal's. Default: the farm
    /// token of `--token-file` / CENTROID_TOKEN, which calls to this worker must carry
    #[arg(long, env = "CENTROID_REGISTRATION_TOKEN_FILE")]
    pub registration_token_file: Option<PathBuf>,
    /// `--config`, the log format, the token and TLS
    #[command(flatten)]
    #[serde(flatten)]
    pub common: CommonFlags,
    /// TLS client authentication, the ready file, the metrics endpoint
    #[command(flatten)]
    #[serde(flatten)]
    pub server: ServerFlags,
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
    /// calls waiting in the worker for a slot at most; unset = one per slot
    pub prefetch: Option<usize>,
    pub python: PathBuf,
    pub skills_dir: PathBuf,
    pub memory_limit_mb: u64,
    pub drain_grace_ms: u64,
    pub heartbeat_interval_ms: u64,
    pub default_deadline_ms: u64,
    pub startup_timeout_ms: u64,
    pub worker_id: Option<String>,
    /// `:`-separated foundry deck files `signoff.run` may run
    pub signoff_decks: String,
    /// longest plan a candidate may bring (RESOURCE_EXHAUSTED, not retried, above it)
    pub max_plan_steps: usize,
    /// bench/test mode: no KLayout, candidates answered ok after this many ms
    pub simulate_candidate_ms: Option<u64>,
    /// file holding the token presented to the coordinator (unset: `common.token`)
    pub registration_token_file: Option<PathBuf>,
    /// read from `registration_token_file` when loading; never serialized
    #[serde(skip)]
    pub registration_token: Option<BearerToken>,
    /// the log format, the bearer token required on every call to this worker (and
    /// sent with every call to the coordinator unless a registration token is set), TLS
    #[serde(flatten)]
    pub common: CommonSettings,
    /// whether callers must present a certificate, the ready file, the metrics endpoint
    #[serde(flatten)]
    pub server: ServerSettings,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            coordinator: None,
            listen: "127.0.0.1:50061".into(),
            advertise_address: None,
            slots: None,
            prefetch: None,
            python: PathBuf::from(".venv/bin/python"),
            skills_dir: PathBuf::from("worker/skills"),
            memory_limit_mb: 4096,
            drain_grace_ms: 30_000,
            heartbeat_interval_ms: 2_000,
            default_deadline_ms: 300_000,
            startup_timeout_ms: 60_000,
            worker_id: None,
            signoff_decks: String::new(),
            max_plan_steps: 10_000,
            simulate_candidate_ms: None,
            registration_token_file: None,
            registration_token: None,
            common: CommonSettings::default(),
            server: ServerSettings::default(),
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
        let mut config: WorkerConfig =
            binary_settings::load_with_environment(command_line, &environment)?;
        config.slots = Some(config.slots.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        }));
        if let Some(path) = &config.registration_token_file {
            config.registration_token =
                Some(BearerToken::read_file(path).map_err(ConfigError::from)?);
        }
        config.check()?;
        Ok(config)
    }

    /// The token sent with every call to the coordinator: the registration token
    /// when one is configured, else the farm's.
    pub fn coordinator_token(&self) -> Option<BearerToken> {
        self.registration_token
            .clone()
            .or_else(|| self.common.token.clone())
    }

    fn check(&self) -> Result<(), WorkerError> {
        if let Some(worker_id) = &self.worker_id {
            centroid_proto::check_worker_id(worker_id)
                .map_err(|error| ConfigError::Inconsistent(error.message))?;
        }
        if self.slots == Some(0) {
            return Err(ConfigError::Inconsistent("slots must be at least 1".into()).into());
        }
        self.listen_address()?;
        if self.heartbeat_interval_ms == 0 {
            return Err(
                ConfigError::Inconsistent("heartbeat_interval_ms must be above 0".into()).into(),
            );
        }
        Ok(())
    }

    pub fn listen_address(&self) -> Result<SocketAddr, WorkerError> {
        self.listen
            .parse()
            .map_err(|source| WorkerError::ListenAddress {
                address: self.listen.clone(),
                source,
            })
    }

    /// The number of KLayout processes (one per core unless configured).
    pub fn slot_count(&self) -> usize {
        self.slots.unwrap_or(1).max(1)
    }

    /// Places in the waiting room: as configured, else one per slot.
    pub fn prefetch_count(&self) -> usize {
        self.prefetch.unwrap_or_else(|| self.slot_count())
    }

    pub fn memory_limit_bytes(&self) -> u64 {
        self.memory_limit_mb * 1024 * 1024
    }
}

impl BinaryFlags for CommandLine {
    fn common_flags(&self) -> &CommonFlags {
        &self.common
    }
}

impl BinarySettings for WorkerConfig {
    const TABLE: &'static str = "worker";

    fn common_mut(&mut self) -> &mut CommonSettings {
        &mut self.common
    }

    fn tls_client_auth(&self) -> bool {
        self.server.tls_client_auth
    }
}

#[cfg(test)]
mod tests {
    use centroid_runtime::LogFormat;

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
        assert_eq!(config.common.log_format, LogFormat::Text);
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
            common: CommonFlags {
                config: Some(file),
                log_json: true,
                ..CommonFlags::default()
            },
            slots: Some(5),
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
        assert_eq!(config.common.log_format, LogFormat::Json);
    }

    #[test]
    fn a_registration_token_is_what_the_worker_presents_to_the_coordinator() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("fleet-token");
        std::fs::write(&file, "fleet-token\n").unwrap();
        let farm = environment(&[("CENTROID_TOKEN", "farm-token")]);
        let without =
            WorkerConfig::load_with_environment(&CommandLine::default(), farm.clone()).unwrap();
        assert_eq!(
            without.coordinator_token(),
            Some(BearerToken::new("farm-token").unwrap()),
            "without one, the farm's token"
        );
        let command_line = CommandLine {
            registration_token_file: Some(file),
            ..CommandLine::default()
        };
        let with = WorkerConfig::load_with_environment(&command_line, farm).unwrap();
        assert_eq!(
            with.coordinator_token(),
            Some(BearerToken::new("fleet-token").unwrap())
        );
        assert_eq!(
            with.common.token,
            Some(BearerToken::new("farm-token").unwrap()),
            "calls to the worker still need the farm's token"
        );
        let missing = CommandLine {
            registration_token_file: Some(directory.path().join("absent")),
            ..CommandLine::default()
        };
        let error = WorkerConfig::load_with_environment(&missing, HashMap::new()).unwrap_err();
        assert!(error.to_string().contains("absent"), "{error}");
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

    #[test]
    fn the_shared_flags_keep_their_names_and_land_in_the_shared_settings() {
        let command_line = CommandLine::try_parse_from([
            "centroid-worker",
            "--log-format",
            "json",
            "--ready-file",
            "/tmp/ready",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        let config = WorkerConfig::load_with_environment(
            &command_line,
            environment(&[("CENTROID_TOKEN", "farm-token")]),
        )
        .unwrap();
        assert_eq!(config.common.log_format, LogFormat::Json);
        assert_eq!(
            config.common.token,
            Some(centroid_runtime::BearerToken::new("farm-token").unwrap())
        );
        assert_eq!(config.server.ready_file, Some(PathBuf::from("/tmp/ready")));
        assert_eq!(config.server.metrics_listen.as_deref(), Some("127.0.0.1:0"));
        let client_auth_without_root =
            CommandLine::try_parse_from(["centroid-worker", "--tls-client-auth"]).unwrap();
        let error = WorkerConfig::load_with_environment(&client_auth_without_root, HashMap::new())
            .unwrap_err();
        assert!(
            matches!(
                error,
                WorkerError::Config(ConfigError::Tls(
                    centroid_runtime::TlsError::ClientAuthWithoutCa
                ))
            ),
            "{error:?}"
        );
    }
}
