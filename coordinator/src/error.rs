//! Errors of the coordinator library.

use centroid_planner::case_memory::MemoryError;
use centroid_schemas::InputIssue;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("corrupt record {key}: {message}")]
    Corrupt { key: String, message: String },
    /// a record that must exist (a job's round names it) is not there
    #[error("missing record {key}")]
    Missing { key: String },
    /// no client can be made of the configuration (e.g. unreadable TLS roots)
    #[error(transparent)]
    Client(#[from] crate::redis_client::RedisClientError),
}

impl StoreError {
    /// Whether trying again can mend it: the store is down, restarting or busy
    /// (a connection refused or dropped, a timeout, LOADING, TRYAGAIN …). A
    /// corrupt or missing record, or a command the server refuses for good, is
    /// permanent: retrying would stall whoever waits on it.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Redis(error) => {
                !matches!(error.retry_method(), redis::RetryMethod::NoRetry)
            }
            StoreError::Corrupt { .. } | StoreError::Missing { .. } | StoreError::Client(_) => {
                false
            }
        }
    }
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
    Memory(#[from] MemoryError),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_that_is_down_is_transient_a_bad_record_is_not() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert!(StoreError::Redis(refused.into()).is_transient());
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(StoreError::Redis(reset.into()).is_transient());
        let corrupt = StoreError::Corrupt {
            key: "centroid:job:j".into(),
            message: "expected value at line 1".into(),
        };
        assert!(!corrupt.is_transient());
        assert!(
            !StoreError::Missing {
                key: "candidate c".into()
            }
            .is_transient()
        );
        let refused_for_good: redis::RedisError =
            (redis::ErrorKind::UnexpectedReturnType, "not a string").into();
        assert!(!StoreError::Redis(refused_for_good).is_transient());
    }
}
