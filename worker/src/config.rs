//! Layered configuration: defaults → `centroid.toml` (`[worker]` table) →
//! `CENTROID_*` environment variables → command-line flags. Later layers win.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use serde::Deserialize;

use crate::error::WorkerError;

/// `centroid-worker` command line. Every flag overrides the same key of the
/// file and the environment.
#[derive(Debug, Clone, Default, Parser)]
#[command(
    name = "centroid-worker",
    version,
    about = "Centroid worker node: runs candidate layouts on a pool of headless KLayout processes"
)]
pub struct CommandLine {
    /// configuration file (default: ./centroid.toml when it exists)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// coordinator gRPC URL, e.g. http://127.0.0.1:50051; without it the worker runs standalone
    #[arg(long)]
    pub coordinator: Option<String>,
    /// address to serve the Worker gRPC service on (port 0 picks a free port)
    #[arg(long)]
    pub listen: Option<String>,
    /// address the coordinator should use to reach this worker (default: http://<bound address>)
    #[arg(long)]
    pub advertise_address: Option<String>,
    /// number of KLayout processes (default: number of cores)
    #[arg(long)]
    pub slots: Option<usize>,
    /// Python interpreter with the klayout module
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// directory holding the centroid_skills package
    #[arg(long)]
    pub skills_dir: Option<PathBuf>,
    /// address-space cap of each KLayout process in MiB (0 = none)
    #[arg(long)]
    pub memory_limit_mb: Option<u64>,
    /// how long in-flight candidates may run on after SIGTERM or Drain, in ms
    #[arg(long)]
    pub drain_grace_ms: Option<u64>,
    /// heartbeat period in ms
    #[arg(long)]
    pub heartbeat_interval_ms: Option<u64>,
    /// deadline of a candidate whose request gives none, in ms
    #[arg(long)]
    pub default_deadline_ms: Option<u64>,
    /// log as JSON lines (same as CENTROID_LOG_FORMAT=json)
    #[arg(long)]
    pub log_json: bool,
    /// write the bound address to this file once the worker serves
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// worker id (default: <hostname>-<random>)
    #[arg(long)]
    pub worker_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// The worker's settings after layering.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkerConfig {
    #[serde(default)]
    pub coordinator: Option<String>,
    pub listen: String,
    #[serde(default)]
    pub advertise_address: Option<String>,
    pub slots: usize,
    pub python: PathBuf,
    pub skills_dir: PathBuf,
    pub memory_limit_mb: u64,
    pub drain_grace_ms: u64,
    pub heartbeat_interval_ms: u64,
    pub default_deadline_ms: u64,
    pub startup_timeout_ms: u64,
    pub log_format: LogFormat,
    #[serde(default)]
    pub ready_file: Option<PathBuf>,
    #[serde(default)]
    pub worker_id: Option<String>,
}

/// Keys read from `CENTROID_<KEY>` environment variables.
const ENVIRONMENT_KEYS: &[&str] = &[
    "coordinator",
    "listen",
    "advertise_address",
    "slots",
    "python",
    "skills_dir",
    "memory_limit_mb",
    "drain_grace_ms",
    "heartbeat_interval_ms",
    "default_deadline_ms",
    "startup_timeout_ms",
    "log_format",
    "ready_file",
    "worker_id",
];

impl WorkerConfig {
    /// Layers defaults, the file, the process environment and `command_line`.
    pub fn load(command_line: &CommandLine) -> Result<WorkerConfig, WorkerError> {
        WorkerConfig::load_with_environment(command_line, std::env::vars().collect())
    }

    /// As [`WorkerConfig::load`], with the environment given (for tests).
    pub fn load_with_environment(
        command_line: &CommandLine,
        environment: HashMap<String, String>,
    ) -> Result<WorkerConfig, WorkerError> {
        let config_error = |error: config::ConfigError| WorkerError::Config(error.to_string());
        let default_slots = std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1) as i64;
        let mut builder = config::Config::builder()
            .set_default("worker.listen", "127.0.0.1:50061")
            .and_then(|builder| builder.set_default("worker.slots", default_slots))
            .and_then(|builder| builder.set_default("worker.python", ".venv/bin/python"))
            .and_then(|builder| builder.set_default("worker.skills_dir", "worker/skills"))
            .and_then(|builder| builder.set_default("worker.memory_limit_mb", 4096))
            .and_then(|builder| builder.set_default("worker.drain_grace_ms", 30_000))
            .and_then(|builder| builder.set_default("worker.heartbeat_interval_ms", 2_000))
            .and_then(|builder| builder.set_default("worker.default_deadline_ms", 300_000))
            .and_then(|builder| builder.set_default("worker.startup_timeout_ms", 60_000))
            .and_then(|builder| builder.set_default("worker.log_format", "text"))
            .map_err(config_error)?;

        let (config_file, required) = match &command_line.config {
            Some(path) => (path.clone(), true),
            None => match environment.get("CENTROID_CONFIG") {
                Some(path) => (PathBuf::from(path), true),
                None => (PathBuf::from("centroid.toml"), false),
            },
        };
        builder = builder.add_source(
            config::File::from(config_file)
                .format(config::FileFormat::Toml)
                .required(required),
        );

        for key in ENVIRONMENT_KEYS {
            let variable = format!("CENTROID_{}", key.to_ascii_uppercase());
            if let Some(value) = environment.get(&variable).filter(|value| !value.is_empty()) {
                builder = builder
                    .set_override(format!("worker.{key}"), value.as_str())
                    .map_err(config_error)?;
            }
        }

        let mut flag_overrides: Vec<(&str, config::Value)> = Vec::new();
        let mut flag = |key: &'static str, value: Option<config::Value>| {
            if let Some(value) = value {
                flag_overrides.push((key, value));
            }
        };
        let text = |value: &Option<String>| value.clone().map(config::Value::from);
        let path = |value: &Option<PathBuf>| {
            value
                .as_ref()
                .map(|path| config::Value::from(path.display().to_string()))
        };
        let number = |value: Option<u64>| value.map(|number| config::Value::from(number as i64));
        flag("coordinator", text(&command_line.coordinator));
        flag("listen", text(&command_line.listen));
        flag("advertise_address", text(&command_line.advertise_address));
        flag(
            "slots",
            number(command_line.slots.map(|slots| slots as u64)),
        );
        flag("python", path(&command_line.python));
        flag("skills_dir", path(&command_line.skills_dir));
        flag("memory_limit_mb", number(command_line.memory_limit_mb));
        flag("drain_grace_ms", number(command_line.drain_grace_ms));
        flag(
            "heartbeat_interval_ms",
            number(command_line.heartbeat_interval_ms),
        );
        flag(
            "default_deadline_ms",
            number(command_line.default_deadline_ms),
        );
        flag(
            "log_format",
            command_line.log_json.then(|| config::Value::from("json")),
        );
        flag("ready_file", path(&command_line.ready_file));
        flag("worker_id", text(&command_line.worker_id));
        for (key, value) in flag_overrides {
            builder = builder
                .set_override(format!("worker.{key}"), value)
                .map_err(config_error)?;
        }

        let config: WorkerConfig = builder
            .build()
            .and_then(|layered| layered.get("worker"))
            .map_err(config_error)?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), WorkerError> {
        if self.slots == 0 {
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
        assert!(config.slots >= 1);
        assert_eq!(config.memory_limit_mb, 4096);
        assert_eq!(config.log_format, LogFormat::Text);
        assert!(config.coordinator.is_none());
    }

    #[test]
    fn layers_override_in_order_file_environment_flags() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(&file, "[worker]\nslots = 3\nlisten = \"127.0.0.1:1\"\ndrain_grace_ms = 7\nmemory_limit_mb = 100\n").unwrap();
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
            ]),
        )
        .unwrap();
        assert_eq!(config.slots, 5, "flag beats environment and file");
        assert_eq!(config.drain_grace_ms, 9, "environment beats file");
        assert_eq!(config.memory_limit_mb, 100, "file beats default");
        assert_eq!(config.listen, "127.0.0.1:1");
        assert_eq!(config.python, PathBuf::from("/opt/py"));
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
}
