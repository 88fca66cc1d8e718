//! One logging set-up for every binary: `tracing` to stderr, filtered by
//! `CENTROID_LOG` (an `EnvFilter` directive such as `info` or
//! `centroid_coordinator=debug,warn`), as text or as one JSON object per line.
//!
//! JSON lines have the shape of seed 000 §4.6.2 ([`log_entry`]): `timestamp`,
//! `level`, `session_id`, `trace_id`, `candidate_id`, `event_type`, `message`,
//! `data`, `duration_ms` — the ids taken from the spans around an event, so one
//! grep for a trace or candidate id follows it through every process.

use std::io::IsTerminal;

use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

use super::log_entry;

/// The variable holding the log filter.
pub const LOG_FILTER_VARIABLE: &str = "CENTROID_LOG";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber; `default_filter` applies when `CENTROID_LOG`
/// is unset or invalid. A second call keeps the first subscriber (the in-process
/// coordinator and worker of `centroid run` log through the CLI's).
pub fn init_logging(format: LogFormat, default_filter: &str) {
    let filter = EnvFilter::try_from_env(LOG_FILTER_VARIABLE)
        .unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _already_installed = match format {
        LogFormat::Json => builder
            .fmt_fields(log_entry::span_fields())
            .event_format(log_entry::SeedJsonFormat)
            .try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<LogFormat, String> {
        match text {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("log format `{other}`: expected `text` or `json`")),
        }
    }
}
