//! The CLI's own settings, loaded as every Centroid binary's
//! (`centroid_runtime::binary_settings`): defaults → `centroid.toml` `[cli]`
//! → `CENTROID_<KEY>` → flags. A farm user can put the coordinator's address in
//! the file once instead of exporting it in every shell. The settings every binary
//! shares (log format, token, TLS) are embedded from the runtime crate.

use centroid_runtime::binary_settings;
use centroid_runtime::{
    BinaryFlags, BinarySettings, CommonFlags, CommonSettings, ConfigError, LlmSettings,
};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::jobs_client::Farm;

/// The flags every subcommand accepts.
#[derive(Debug, Clone, Default, Args, Serialize)]
pub struct GlobalFlags {
    /// Coordinator address, e.g. http://coordinator:50051 (default http://127.0.0.1:50051).
    #[arg(long, env = "CENTROID_COORDINATOR", global = true)]
    pub coordinator: Option<String>,
    /// `--config`, the log format, the token and TLS towards the coordinator
    #[command(flatten)]
    #[serde(flatten)]
    pub common: CommonFlags,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CliSettings {
    pub coordinator: String,
    /// the log format, the farm's token, TLS towards the coordinator (its root, and
    /// a client certificate for mutual TLS)
    #[serde(flatten)]
    pub common: CommonSettings,
    /// the model of `centroid run`'s in-process coordinator (`[cli.llm]`,
    /// `CENTROID_LLM_BASE_URL`, `CENTROID_LLM_MODEL`, …); a farm's coordinator has its own
    pub llm: LlmSettings,
}

impl Default for CliSettings {
    fn default() -> Self {
        CliSettings {
            coordinator: "http://127.0.0.1:50051".into(),
            common: CommonSettings::default(),
            llm: LlmSettings::default(),
        }
    }
}

impl CliSettings {
    pub fn load(flags: &GlobalFlags) -> Result<CliSettings, ConfigError> {
        binary_settings::load(flags)
    }

    /// The coordinator, the token its calls need (`token_file`, else `CENTROID_TOKEN`)
    /// and their TLS (`tls_ca`, `tls_cert`, `tls_key`).
    pub fn farm(&self) -> Farm {
        Farm {
            coordinator: self.coordinator.clone(),
            token: self.common.token.clone(),
            tls: self.common.tls.clone(),
        }
    }
}

impl BinaryFlags for GlobalFlags {
    fn common_flags(&self) -> &CommonFlags {
        &self.common
    }
}

impl BinarySettings for CliSettings {
    const TABLE: &'static str = "cli";

    fn common_mut(&mut self) -> &mut CommonSettings {
        &mut self.common
    }

    /// A client does not authenticate its callers.
    fn tls_client_auth(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use centroid_runtime::LogFormat;

    use super::*;

    #[test]
    fn the_file_names_the_coordinator_and_a_flag_beats_it() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(&file, "[cli]\ncoordinator = \"http://farm:50051\"\n").unwrap();
        let from_file = GlobalFlags {
            common: CommonFlags {
                config: Some(file.clone()),
                ..CommonFlags::default()
            },
            ..GlobalFlags::default()
        };
        let settings: CliSettings =
            binary_settings::load_with_environment(&from_file, &HashMap::new()).unwrap();
        assert_eq!(settings.coordinator, "http://farm:50051");
        assert_eq!(settings.common.log_format, LogFormat::Text);
        let flagged = GlobalFlags {
            common: CommonFlags {
                config: Some(file),
                log_json: true,
                ..CommonFlags::default()
            },
            coordinator: Some("http://other:1".into()),
        };
        let settings: CliSettings =
            binary_settings::load_with_environment(&flagged, &HashMap::new()).unwrap();
        assert_eq!(settings.coordinator, "http://other:1");
        assert_eq!(settings.common.log_format, LogFormat::Json);
    }
}
