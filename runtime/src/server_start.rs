//! What a server binary (coordinator, worker) does once its gRPC listener is
//! bound: serve the operator's endpoint when `metrics_listen` is set, and write
//! its address into the ready file when one is named (atomically: a temporary
//! file renamed, so a reader never sees half an address).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::common_settings::ServerSettings;
use crate::operations::{OperationsProbe, serve_operations};

/// What can stop a server from announcing itself.
#[derive(Debug, thiserror::Error)]
pub enum AnnounceError {
    #[error("binding the metrics endpoint {address}: {source}")]
    OperationsEndpoint {
        address: String,
        source: std::io::Error,
    },
    #[error("writing the ready file {}: {source}", path.display())]
    ReadyFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Starts the operator's endpoint (answered by `probe`) and writes `serving` (the
/// bound gRPC address) into the ready file, as `settings` ask.
pub async fn announce_server(
    settings: &ServerSettings,
    serving: SocketAddr,
    probe: Arc<dyn OperationsProbe>,
) -> Result<(), AnnounceError> {
    if let Some(address) = &settings.metrics_listen {
        let endpoint_error = |source| AnnounceError::OperationsEndpoint {
            address: address.clone(),
            source,
        };
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(endpoint_error)?;
        let bound = listener.local_addr().map_err(endpoint_error)?;
        tracing::info!(address = %bound, "serving /metrics, /healthz, /readyz");
        tokio::spawn(serve_operations(listener, probe, std::future::pending()));
    }
    if let Some(ready_file) = &settings.ready_file {
        write_ready_file(ready_file, &serving.to_string()).map_err(|source| {
            AnnounceError::ReadyFile {
                path: ready_file.clone(),
                source,
            }
        })?;
    }
    Ok(())
}

/// Writes `address` into `path` through a temporary file renamed into place.
fn write_ready_file(path: &Path, address: &str) -> std::io::Result<()> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, address)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_file_holds_the_whole_address_and_no_temporary_is_left() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("ready");
        write_ready_file(&path, "127.0.0.1:4242").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "127.0.0.1:4242");
        assert!(!path.with_extension("tmp").exists());
        let missing = directory.path().join("no/such/dir/ready");
        assert!(write_ready_file(&missing, "x").is_err());
    }
}
