//! Errors of the worker library. `main.rs` alone uses anyhow.

use std::io;

/// A failure talking to one skill-server child.
#[derive(Debug, thiserror::Error)]
pub enum SkillProcessError {
    #[error("failed to spawn skill server `{program}`: {source}")]
    Spawn { program: String, source: io::Error },
    #[error("skill server call `{method}` ran past its deadline")]
    Timeout { method: String },
    #[error("skill server exited: {status}")]
    Exited { status: String },
    #[error("skill server broke the protocol: {0}")]
    Protocol(String),
    #[error("skill server answered `{method}` with json-rpc error {code}: {message}")]
    JsonRpc {
        method: String,
        code: i64,
        message: String,
    },
    #[error("skill server i/o failed: {0}")]
    Io(#[from] io::Error),
}

impl SkillProcessError {
    /// Whether the child must be thrown away after this error.
    pub fn child_is_unusable(&self) -> bool {
        !matches!(self, SkillProcessError::JsonRpc { .. })
    }
}

/// A failure of the worker node outside a candidate (startup, configuration...).
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("invalid configuration: {0}")]
    Config(#[from] centroid_runtime::ConfigError),
    #[error("listen address `{address}`: {source}")]
    ListenAddress {
        address: String,
        #[source]
        source: std::net::AddrParseError,
    },
    #[error("TLS: {0}")]
    Tls(#[from] centroid_runtime::TlsError),
    #[error("skill server failed at startup: {0}")]
    Startup(#[from] SkillProcessError),
    #[error("schema of skill `{skill}` does not compile: {message}")]
    SkillSchema { skill: String, message: String },
    #[error("coordinator refused the registration: {0}")]
    RegistrationRefused(String),
    #[error("i/o failed: {0}")]
    Io(#[from] io::Error),
    #[error("grpc transport failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}
