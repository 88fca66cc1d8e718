//! One way every binary loads its settings: defaults → its `centroid.toml` table →
//! `CENTROID_<KEY>` → its flags ([`crate::config_layers`]), then `--log-json`, and
//! the token and TLS read once ([`CommonSettings::read_credentials`]).

use std::collections::HashMap;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::common_settings::{CommonFlags, CommonSettings};
use crate::config_layers::{ConfigError, layered};
use crate::logging::LogFormat;

/// A binary's settings: its table and the common settings it embeds.
pub trait BinarySettings: Serialize + DeserializeOwned + Default {
    /// The binary's table in `centroid.toml` (`coordinator`, `worker`, `cli`).
    const TABLE: &'static str;

    fn common_mut(&mut self) -> &mut CommonSettings;

    /// Whether the binary's server requires client certificates (a client: `false`).
    fn tls_client_auth(&self) -> bool;
}

/// A binary's command line: serializes to the keys its flags set (unset = `null`)
/// and embeds the common flags.
pub trait BinaryFlags: Serialize {
    fn common_flags(&self) -> &CommonFlags;
}

/// Layers the defaults, the file, the process environment and `flags`.
pub fn load<Settings: BinarySettings>(flags: &impl BinaryFlags) -> Result<Settings, ConfigError> {
    load_with_environment(flags, &std::env::vars().collect())
}

/// As [`load`], with the environment given (for tests and in-process binaries).
pub fn load_with_environment<Settings: BinarySettings>(
    flags: &impl BinaryFlags,
    environment: &HashMap<String, String>,
) -> Result<Settings, ConfigError> {
    let common_flags = flags.common_flags();
    let mut settings: Settings = layered(
        Settings::TABLE,
        &Settings::default(),
        common_flags.config.as_deref(),
        environment,
        flags,
    )?;
    if common_flags.log_json {
        settings.common_mut().log_format = LogFormat::Json;
    }
    let client_auth = settings.tls_client_auth();
    settings
        .common_mut()
        .read_credentials(client_auth, environment)?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use clap::Parser;
    use serde::Deserialize;

    use super::*;
    use crate::auth::BearerToken;
    use crate::common_settings::{ServerFlags, ServerSettings};
    use crate::config_layers::CONFIG_FILE_VARIABLE;
    use crate::tls::TlsError;

    #[derive(Debug, Default, Parser, Serialize)]
    struct ServerCommandLine {
        #[command(flatten)]
        #[serde(flatten)]
        common: CommonFlags,
        #[command(flatten)]
        #[serde(flatten)]
        server: ServerFlags,
        #[arg(long)]
        slots: Option<u32>,
    }

    impl BinaryFlags for ServerCommandLine {
        fn common_flags(&self) -> &CommonFlags {
            &self.common
        }
    }

    #[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Server {
        slots: u32,
        #[serde(flatten)]
        common: CommonSettings,
        #[serde(flatten)]
        server: ServerSettings,
    }

    impl BinarySettings for Server {
        const TABLE: &'static str = "server";

        fn common_mut(&mut self) -> &mut CommonSettings {
            &mut self.common
        }

        fn tls_client_auth(&self) -> bool {
            self.server.tls_client_auth
        }
    }

    fn environment(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        let mut environment: HashMap<String, String> = pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        // no file named: ./centroid.toml if any (the crate's directory has none)
        environment
            .entry(CONFIG_FILE_VARIABLE.to_string())
            .or_default();
        environment
    }

    fn parse(arguments: &[&str]) -> ServerCommandLine {
        ServerCommandLine::try_parse_from(
            std::iter::once("server").chain(arguments.iter().copied()),
        )
        .unwrap()
    }

    fn write_ca(directory: &Path) -> PathBuf {
        let key = rcgen::KeyPair::generate().unwrap();
        let root = rcgen::CertificateParams::new(vec!["root".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let path = directory.join("ca.pem");
        std::fs::write(&path, root.pem()).unwrap();
        path
    }

    #[test]
    fn every_common_key_comes_from_its_variable_even_flattened() {
        let directory = tempfile::tempdir().unwrap();
        let ca = write_ca(directory.path());
        let token_file = directory.path().join("token");
        std::fs::write(&token_file, "from-file\n").unwrap();
        let environment = environment(&[
            ("CENTROID_LOG_FORMAT", "json"),
            ("CENTROID_TOKEN_FILE", token_file.to_str().unwrap()),
            ("CENTROID_TLS_CA", ca.to_str().unwrap()),
            ("CENTROID_TLS_CLIENT_AUTH", "true"),
            ("CENTROID_READY_FILE", "/tmp/ready"),
            ("CENTROID_METRICS_LISTEN", "127.0.0.1:9"),
            ("CENTROID_SLOTS", "3"),
        ]);
        let settings: Server =
            load_with_environment(&ServerCommandLine::default(), &environment).unwrap();
        assert_eq!(settings.slots, 3);
        assert_eq!(settings.common.log_format, LogFormat::Json);
        assert_eq!(settings.common.tls_ca, Some(ca));
        assert!(
            settings.server.tls_client_auth,
            "a boolean of a flattened table"
        );
        assert_eq!(
            settings.server.ready_file,
            Some(PathBuf::from("/tmp/ready"))
        );
        assert_eq!(
            settings.server.metrics_listen.as_deref(),
            Some("127.0.0.1:9")
        );
        assert_eq!(
            settings.common.token,
            Some(BearerToken::new("from-file").unwrap())
        );
        assert!(settings.common.tls.is_some(), "the PEM is read at load");
    }

    #[test]
    fn the_file_then_the_environment_then_the_flags_win() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(
            &file,
            "[server]\nready_file = \"/file/ready\"\nmetrics_listen = \"file:1\"\nlog_format = \"json\"\n",
        )
        .unwrap();
        let environment = environment(&[
            ("CENTROID_METRICS_LISTEN", "env:2"),
            ("CENTROID_TOKEN", "from-env"),
        ]);
        let file_flag = format!("--config={}", file.display());
        let settings: Server = load_with_environment(&parse(&[&file_flag]), &environment).unwrap();
        assert_eq!(
            settings.server.ready_file,
            Some(PathBuf::from("/file/ready"))
        );
        assert_eq!(settings.server.metrics_listen.as_deref(), Some("env:2"));
        assert_eq!(settings.common.log_format, LogFormat::Json);
        assert_eq!(
            settings.common.token,
            Some(BearerToken::new("from-env").unwrap()),
            "CENTROID_TOKEN without a token file"
        );
        let flags = parse(&[
            &file_flag,
            "--metrics-listen",
            "flag:3",
            "--log-format",
            "text",
            "--ready-file",
            "/flag/ready",
        ]);
        let settings: Server = load_with_environment(&flags, &environment).unwrap();
        assert_eq!(settings.server.metrics_listen.as_deref(), Some("flag:3"));
        assert_eq!(
            settings.server.ready_file,
            Some(PathBuf::from("/flag/ready"))
        );
        assert_eq!(settings.common.log_format, LogFormat::Text);
        let settings: Server = load_with_environment(
            &parse(&["--log-format", "text", "--log-json"]),
            &environment,
        )
        .unwrap();
        assert_eq!(
            settings.common.log_format,
            LogFormat::Json,
            "--log-json wins"
        );
    }

    #[test]
    fn unusable_credentials_are_typed_errors() {
        let directory = tempfile::tempdir().unwrap();
        let ca = write_ca(directory.path());
        let half = parse(&["--tls-cert", ca.to_str().unwrap()]);
        let error = load_with_environment::<Server>(&half, &environment(&[])).unwrap_err();
        assert!(
            matches!(error, ConfigError::Tls(TlsError::Half { .. })),
            "{error:?}"
        );
        let no_root = parse(&["--tls-client-auth"]);
        let error = load_with_environment::<Server>(&no_root, &environment(&[])).unwrap_err();
        assert!(
            matches!(error, ConfigError::Tls(TlsError::ClientAuthWithoutCa)),
            "{error:?}"
        );
        let missing_token = parse(&["--token-file", "/nonexistent/token"]);
        let error = load_with_environment::<Server>(&missing_token, &environment(&[])).unwrap_err();
        assert!(matches!(error, ConfigError::Token(_)), "{error:?}");
        let error =
            load_with_environment::<Server>(&parse(&[]), &environment(&[("CENTROID_SLOTS", "x")]))
                .unwrap_err();
        assert!(
            matches!(&error, ConfigError::Invalid { key: Some(key), .. } if key == "slots"),
            "{error:?}"
        );
        assert!(error.to_string().contains("CENTROID_SLOTS"), "{error}");
        assert!(
            std::error::Error::source(&error).is_some(),
            "the cause is kept"
        );
    }
}
