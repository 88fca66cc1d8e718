//! Layered configuration: defaults → `centroid.toml` (`[coordinator]` table) →
//! `CENTROID_*` environment variables → command-line flags. Later layers win.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use serde::Deserialize;

use crate::error::CoordinatorError;

/// `centroid-coordinator` command line.
#[derive(Debug, Clone, Default, Parser)]
#[command(
    name = "centroid-coordinator",
    version,
    about = "Centroid coordinator: plans layouts and dispatches candidates to workers"
)]
pub struct CommandLine {
    /// configuration file (default: ./centroid.toml when it exists)
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// address to serve gRPC on (port 0 picks a free port)
    #[arg(long)]
    pub listen: Option<String>,
    /// Redis URL, e.g. redis://127.0.0.1:6379; "memory" keeps everything in-process
    #[arg(long)]
    pub redis: Option<String>,
    /// prefix of every Redis key
    #[arg(long)]
    pub key_prefix: Option<String>,
    /// consumer name in the queue's consumer group (default: coordinator-<hostname>)
    #[arg(long)]
    pub consumer: Option<String>,
    #[arg(long)]
    pub heartbeat_interval_ms: Option<u64>,
    #[arg(long)]
    pub heartbeat_timeout_ms: Option<u64>,
    /// queue lease: an entry not renewed for this long is reclaimed (must exceed the heartbeat timeout)
    #[arg(long)]
    pub lease_timeout_ms: Option<u64>,
    #[arg(long)]
    pub max_deliveries: Option<u32>,
    #[arg(long)]
    pub candidates_per_iteration: Option<u32>,
    #[arg(long)]
    pub candidate_deadline_ms: Option<u64>,
    #[arg(long)]
    pub job_ttl_s: Option<u64>,
    /// log as JSON lines (same as CENTROID_LOG_FORMAT=json)
    #[arg(long)]
    pub log_json: bool,
    /// write the bound address to this file once serving
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// The coordinator's settings after layering.
#[derive(Debug, Clone, Deserialize)]
pub struct CoordinatorConfig {
    pub listen: String,
    /// Redis URL or "memory"
    pub redis: String,
    pub key_prefix: String,
    #[serde(default)]
    pub consumer: Option<String>,
    pub heartbeat_interval_ms: u64,
    pub heartbeat_timeout_ms: u64,
    pub lease_timeout_ms: u64,
    pub max_deliveries: u32,
    pub candidates_per_iteration: u32,
    pub candidate_deadline_ms: u64,
    /// extra time granted to a RunCandidate RPC beyond the candidate deadline
    pub rpc_grace_ms: u64,
    pub retry_base_ms: u64,
    pub retry_max_ms: u64,
    /// candidates per job whose artifacts are kept
    pub artifacts_keep: u32,
    /// largest artifact kept, in bytes
    pub artifact_max_bytes: u64,
    pub job_ttl_s: u64,
    pub max_events_per_job: u64,
    pub max_queue_len: u64,
    pub log_format: LogFormat,
    #[serde(default)]
    pub ready_file: Option<PathBuf>,
}

const ENVIRONMENT_KEYS: &[&str] = &[
    "listen",
    "redis",
    "key_prefix",
    "consumer",
    "heartbeat_interval_ms",
    "heartbeat_timeout_ms",
    "lease_timeout_ms",
    "max_deliveries",
    "candidates_per_iteration",
    "candidate_deadline_ms",
    "rpc_grace_ms",
    "retry_base_ms",
    "retry_max_ms",
    "artifacts_keep",
    "artifact_max_bytes",
    "job_ttl_s",
    "max_events_per_job",
    "max_queue_len",
    "log_format",
    "ready_file",
];

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig::load_with_environment(&CommandLine::default(), HashMap::new())
            .expect("defaults are valid")
    }
}

impl CoordinatorConfig {
    pub fn load(command_line: &CommandLine) -> Result<CoordinatorConfig, CoordinatorError> {
        CoordinatorConfig::load_with_environment(command_line, std::env::vars().collect())
    }

    pub fn load_with_environment(
        command_line: &CommandLine,
        environment: HashMap<String, String>,
    ) -> Result<CoordinatorConfig, CoordinatorError> {
        let config_error = |error: config::ConfigError| CoordinatorError::Config(error.to_string());
        let defaults: &[(&str, config::Value)] = &[
            ("listen", "127.0.0.1:50051".into()),
            ("redis", "redis://127.0.0.1:6379".into()),
            ("key_prefix", "centroid".into()),
            ("heartbeat_interval_ms", 2_000i64.into()),
            ("heartbeat_timeout_ms", 10_000i64.into()),
            ("lease_timeout_ms", 15_000i64.into()),
            ("max_deliveries", 6i64.into()),
            ("candidates_per_iteration", 4i64.into()),
            ("candidate_deadline_ms", 300_000i64.into()),
            ("rpc_grace_ms", 5_000i64.into()),
            ("retry_base_ms", 200i64.into()),
            ("retry_max_ms", 10_000i64.into()),
            ("artifacts_keep", 3i64.into()),
            ("artifact_max_bytes", (32i64 * 1024 * 1024).into()),
            ("job_ttl_s", (7i64 * 24 * 3600).into()),
            ("max_events_per_job", 10_000i64.into()),
            ("max_queue_len", 100_000i64.into()),
            ("log_format", "text".into()),
        ];
        let mut builder = config::Config::builder();
        for (key, value) in defaults {
            builder = builder
                .set_default(format!("coordinator.{key}"), value.clone())
                .map_err(config_error)?;
        }
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
                    .set_override(format!("coordinator.{key}"), value.as_str())
                    .map_err(config_error)?;
            }
        }
        let text = |value: &Option<String>| value.clone().map(config::Value::from);
        let number = |value: Option<u64>| value.map(|number| config::Value::from(number as i64));
        let flags: Vec<(&str, Option<config::Value>)> = vec![
            ("listen", text(&command_line.listen)),
            ("redis", text(&command_line.redis)),
            ("key_prefix", text(&command_line.key_prefix)),
            ("consumer", text(&command_line.consumer)),
            (
                "heartbeat_interval_ms",
                number(command_line.heartbeat_interval_ms),
            ),
            (
                "heartbeat_timeout_ms",
                number(command_line.heartbeat_timeout_ms),
            ),
            ("lease_timeout_ms", number(command_line.lease_timeout_ms)),
            (
                "max_deliveries",
                number(command_line.max_deliveries.map(u64::from)),
            ),
            (
                "candidates_per_iteration",
                number(command_line.candidates_per_iteration.map(u64::from)),
            ),
            (
                "candidate_deadline_ms",
                number(command_line.candidate_deadline_ms),
            ),
            ("job_ttl_s", number(command_line.job_ttl_s)),
            (
                "log_format",
                command_line.log_json.then(|| config::Value::from("json")),
            ),
            (
                "ready_file",
                command_line
                    .ready_file
                    .as_ref()
                    .map(|path| config::Value::from(path.display().to_string())),
            ),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                builder = builder
                    .set_override(format!("coordinator.{key}"), value)
                    .map_err(config_error)?;
            }
        }
        let config: CoordinatorConfig = builder
            .build()
            .and_then(|layered| layered.get("coordinator"))
            .map_err(config_error)?;
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
        std::fs::write(&file, "[coordinator]\nkey_prefix = \"file\"\nmax_deliveries = 9\ncandidates_per_iteration = 7\n").unwrap();
        let command_line = CommandLine {
            config: Some(file),
            candidates_per_iteration: Some(2),
            ..CommandLine::default()
        };
        let environment = HashMap::from([
            ("CENTROID_KEY_PREFIX".to_string(), "env".to_string()),
            (
                "CENTROID_CANDIDATES_PER_ITERATION".to_string(),
                "5".to_string(),
            ),
        ]);
        let config = CoordinatorConfig::load_with_environment(&command_line, environment).unwrap();
        assert_eq!(config.candidates_per_iteration, 2, "flag beats environment");
        assert_eq!(config.key_prefix, "env", "environment beats file");
        assert_eq!(config.max_deliveries, 9, "file beats default");
        assert_eq!(config.listen, "127.0.0.1:50051");
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
