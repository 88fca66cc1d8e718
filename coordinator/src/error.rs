//! Errors of the coordinator library.

use centroid_schemas::InputIssue;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("corrupt record {key}: {message}")]
    Corrupt { key: String, message: String },
}

#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    #[error("invalid inputs ({} issues)", .0.len())]
    InvalidInputs(Vec<InputIssue>),
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// a limit of the coordinator (jobs in flight, queue length): try later
    #[error("{0}")]
    Limit(String),
    #[error("unknown job {0}")]
    UnknownJob(String),
    #[error("unknown artifact {0}")]
    UnknownArtifact(String),
    #[error("no case {0} in the long-term memory")]
    UnknownCase(String),
    #[error("this coordinator keeps no long-term memory ([coordinator] memory = \"off\")")]
    NoMemory,
    #[error("long-term memory: {0}")]
    Memory(String),
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("configuration: {0}")]
    Config(#[from] centroid_runtime::ConfigError),
    #[error("TLS: {0}")]
    Tls(#[from] centroid_runtime::TlsError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;
