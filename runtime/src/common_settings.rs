//! The settings every Centroid binary shares, with their flags, keys and
//! variables, written once and embedded in each binary's own
//! (`#[command(flatten)]` in its command line, `#[serde(flatten)]` in its settings):
//!
//! - [`CommonSettings`] (coordinator, worker, CLI): `log_format` (`--log-format`,
//!   `--log-json`), `token_file` (`--token-file`, else `CENTROID_TOKEN`), the TLS
//!   files `tls_cert`, `tls_key`, `tls_ca`; the token and the TLS read from them once;
//! - [`ServerSettings`] (the coordinator and the worker, which serve gRPC):
//!   `tls_client_auth`, `ready_file`, `metrics_listen`.
//!
//! The flags are `global`, so a binary with subcommands (the CLI) takes them after
//! any subcommand; a binary without is unaffected.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::auth::BearerToken;
use crate::config_layers::ConfigError;
use crate::logging::LogFormat;
use crate::tls::{Tls, TlsFiles};

/// The flags of [`CommonSettings`], and `--config`.
#[derive(Debug, Clone, Default, PartialEq, clap::Args, Serialize)]
pub struct CommonFlags {
    /// configuration file (default: $CENTROID_CONFIG, else ./centroid.toml when it exists)
    #[arg(long, global = true)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// log format on stderr: text or json
    #[arg(long, env = "CENTROID_LOG_FORMAT", global = true)]
    pub log_format: Option<LogFormat>,
    /// shorthand for --log-format json
    #[arg(long, global = true)]
    #[serde(skip)]
    pub log_json: bool,
    /// file holding the farm's bearer token (else CENTROID_TOKEN): a server requires it
    /// on every call, a client sends it with every call
    #[arg(long, env = "CENTROID_TOKEN_FILE", global = true)]
    pub token_file: Option<PathBuf>,
    /// PEM certificate this process serves TLS with and presents to the servers it
    /// calls (mutual TLS)
    #[arg(long, env = "CENTROID_TLS_CERT", global = true)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert
    #[arg(long, env = "CENTROID_TLS_KEY", global = true)]
    pub tls_key: Option<PathBuf>,
    /// PEM root the peers' certificates must chain to (with it, calls go over TLS)
    #[arg(long, env = "CENTROID_TLS_CA", global = true)]
    pub tls_ca: Option<PathBuf>,
}

/// The flags of [`ServerSettings`].
#[derive(Debug, Clone, Default, PartialEq, clap::Args, Serialize)]
pub struct ServerFlags {
    /// refuse callers without a certificate of --tls-ca (mutual TLS)
    #[arg(long, env = "CENTROID_TLS_CLIENT_AUTH", num_args = 0..=1, default_missing_value = "true")]
    pub tls_client_auth: Option<bool>,
    /// write the bound address to this file once serving
    #[arg(long, env = "CENTROID_READY_FILE")]
    pub ready_file: Option<PathBuf>,
    /// serve /metrics (Prometheus), /healthz and /readyz over HTTP on this address
    #[arg(long, env = "CENTROID_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

/// The settings of every binary after layering; `token` and `tls` are read from
/// the files once ([`CommonSettings::read_credentials`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommonSettings {
    pub log_format: LogFormat,
    /// file holding the bearer token
    pub token_file: Option<PathBuf>,
    /// TLS (`crate::tls`): the certificate and key served with and presented, the
    /// root the peers must chain to
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_ca: Option<PathBuf>,
    /// the bearer token (from `token_file` or `CENTROID_TOKEN`); never serialized,
    /// never printed
    #[serde(skip)]
    pub token: Option<BearerToken>,
    /// TLS read from `tls_*` once; `None` = plain TCP. Never serialized or printed
    #[serde(skip)]
    pub tls: Option<Tls>,
}

/// The settings of a binary that serves gRPC, after layering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerSettings {
    /// callers must present a certificate of `tls_ca`
    pub tls_client_auth: bool,
    pub ready_file: Option<PathBuf>,
    /// address of the operator's HTTP endpoint (/metrics, /healthz, /readyz)
    pub metrics_listen: Option<String>,
}

impl CommonSettings {
    /// Reads the token (`token_file`, else `CENTROID_TOKEN` of `environment`) and
    /// the TLS files; `client_auth` is whether a server requires client certificates.
    pub fn read_credentials(
        &mut self,
        client_auth: bool,
        environment: &HashMap<String, String>,
    ) -> Result<(), ConfigError> {
        self.token = BearerToken::configured(self.token_file.as_deref(), environment)?;
        self.tls = TlsFiles::new(
            self.tls_cert.as_deref(),
            self.tls_key.as_deref(),
            self.tls_ca.as_deref(),
            client_auth,
        )
        .load()?;
        Ok(())
    }
}
