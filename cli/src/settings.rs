//! The CLI's own settings, layered as every Centroid binary does
//! (`centroid_runtime::config_layers`): defaults → `centroid.toml` `[cli]`
//! → `CENTROID_<KEY>` → flags. A farm user can put the coordinator's address in
//! the file once instead of exporting it in every shell.

use std::collections::HashMap;
use std::path::PathBuf;

use centroid_runtime::LlmSettings;
use centroid_runtime::{BearerToken, LogFormat, TlsFiles, layered};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::jobs_client::Farm;

/// The flags every subcommand accepts.
#[derive(Debug, Clone, Default, Args, Serialize)]
pub struct GlobalFlags {
    /// Coordinator address, e.g. http://coordinator:50051 (default http://127.0.0.1:50051).
    #[arg(long, env = "CENTROID_COORDINATOR", global = true)]
    pub coordinator: Option<String>,
    /// Configuration file (default: $CENTROID_CONFIG, else ./centroid.toml when it exists).
    #[arg(long, global = true)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Log format on stderr: text or json.
    #[arg(long, env = "CENTROID_LOG_FORMAT", global = true)]
    pub log_format: Option<LogFormat>,
    /// Shorthand for --log-format json.
    #[arg(long, global = true)]
    #[serde(skip)]
    pub log_json: bool,
    /// File holding the farm's bearer token (else CENTROID_TOKEN_FILE or CENTROID_TOKEN).
    #[arg(long, env = "CENTROID_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// PEM root the coordinator's certificate chains to: call it over TLS.
    #[arg(long, env = "CENTROID_TLS_CA", global = true)]
    pub tls_ca: Option<PathBuf>,
    /// PEM client certificate for a coordinator that requires one (mutual TLS).
    #[arg(long, env = "CENTROID_TLS_CERT", global = true)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, env = "CENTROID_TLS_KEY", global = true)]
    pub tls_key: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CliSettings {
    pub coordinator: String,
    pub log_format: LogFormat,
    pub token_file: Option<PathBuf>,
    /// TLS towards the coordinator: its root, and a client certificate for mutual TLS
    pub tls_ca: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// the model of `centroid run`'s in-process coordinator (`[cli.llm]`,
    /// `CENTROID_LLM_BASE_URL`, `CENTROID_LLM_MODEL`, …); a farm's coordinator has its own
    pub llm: LlmSettings,
}

impl Default for CliSettings {
    fn default() -> Self {
        CliSettings {
            coordinator: "http://127.0.0.1:50051".into(),
            log_format: LogFormat::Text,
            token_file: None,
            tls_ca: None,
            tls_cert: None,
            tls_key: None,
            llm: LlmSettings::default(),
        }
    }
}

impl CliSettings {
    pub fn load(flags: &GlobalFlags) -> anyhow::Result<CliSettings> {
        CliSettings::load_with_environment(flags, std::env::vars().collect())
    }

    /// The coordinator, the token its calls need (`token_file`, else `CENTROID_TOKEN`)
    /// and their TLS (`tls_ca`, `tls_cert`, `tls_key`).
    pub fn farm(&self) -> anyhow::Result<Farm> {
        let environment: HashMap<String, String> = std::env::vars().collect();
        let token = BearerToken::configured(self.token_file.as_deref(), &environment)?;
        let tls = TlsFiles::new(
            self.tls_cert.as_deref(),
            self.tls_key.as_deref(),
            self.tls_ca.as_deref(),
            false,
        )
        .load()?;
        Ok(Farm {
            coordinator: self.coordinator.clone(),
            token,
            tls,
        })
    }

    fn load_with_environment(
        flags: &GlobalFlags,
        environment: HashMap<String, String>,
    ) -> anyhow::Result<CliSettings> {
        let mut flags = flags.clone();
        if flags.log_json {
            flags.log_format = Some(LogFormat::Json);
        }
        let config_file = flags.config.clone();
        Ok(layered(
            "cli",
            &CliSettings::default(),
            config_file.as_deref(),
            &environment,
            &flags,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_names_the_coordinator_and_a_flag_beats_it() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(&file, "[cli]\ncoordinator = \"http://farm:50051\"\n").unwrap();
        let from_file = GlobalFlags {
            config: Some(file.clone()),
            ..GlobalFlags::default()
        };
        let settings = CliSettings::load_with_environment(&from_file, HashMap::new()).unwrap();
        assert_eq!(settings.coordinator, "http://farm:50051");
        assert_eq!(settings.log_format, LogFormat::Text);
        let flagged = GlobalFlags {
            config: Some(file),
            coordinator: Some("http://other:1".into()),
            log_json: true,
            ..GlobalFlags::default()
        };
        let settings = CliSettings::load_with_environment(&flagged, HashMap::new()).unwrap();
        assert_eq!(settings.coordinator, "http://other:1");
        assert_eq!(settings.log_format, LogFormat::Json);
    }
}
