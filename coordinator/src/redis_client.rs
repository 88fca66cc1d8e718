//! The Redis client of a URL, for the work store and the long-term memory alike:
//! plain `redis://`, or `rediss://` (TLS, rustls) whose server certificate chains to
//! the system's roots or to the roots of a PEM file the operator gives (a private CA,
//! as a cluster's Redis usually has).

use std::path::{Path, PathBuf};

use redis::{Client, TlsCertificates};

/// A Redis client that cannot be made from the configuration.
#[derive(Debug, thiserror::Error)]
pub enum RedisClientError {
    #[error("redis TLS roots {path}: {source}")]
    Roots {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
}

/// The client for `url`; with `tls_ca`, a `rediss://` server must present a
/// certificate of those roots (the URL's host is the name checked).
pub fn client(url: &str, tls_ca: Option<&Path>) -> Result<Client, RedisClientError> {
    let Some(path) = tls_ca else {
        return Ok(Client::open(url)?);
    };
    let root_cert = std::fs::read(path).map_err(|source| RedisClientError::Roots {
        path: path.to_path_buf(),
        source,
    })?;
    let certificates = TlsCertificates {
        client_tls: None,
        root_cert: Some(root_cert),
    };
    Ok(Client::build_with_tls(url, certificates)?)
}
