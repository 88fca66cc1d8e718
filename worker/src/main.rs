//! `centroid-worker`: serves the Worker gRPC service over a pool of KLayout
//! processes; SIGTERM drains (in-flight candidates finish within the grace
//! period), deregisters and exits 0.

use anyhow::Context;
use centroid_runtime::{OperationsProbe, init_logging, serve_operations};
use centroid_worker::WorkerConfig;
use centroid_worker::config::CommandLine;
use centroid_worker::node::Node;
use centroid_worker::state::WorkerProbe;
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command_line = CommandLine::parse();
    let config = WorkerConfig::load(&command_line).context("loading the configuration")?;
    init_logging(config.common.log_format, "info");

    let listen_address = config.listen_address()?;
    let listener = tokio::net::TcpListener::bind(listen_address)
        .await
        .with_context(|| format!("binding {listen_address}"))?;
    let mut node = Node::start(&config, listener)
        .await
        .context("starting the worker")?;
    if let Some(address) = &config.server.metrics_listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("binding the metrics endpoint {address}"))?;
        tracing::info!(address = %listener.local_addr()?, "serving /metrics, /healthz, /readyz");
        let probe: std::sync::Arc<dyn OperationsProbe> =
            std::sync::Arc::new(WorkerProbe(node.state.clone()));
        tokio::spawn(serve_operations(listener, probe, std::future::pending()));
    }
    if let Some(ready_file) = &config.server.ready_file {
        write_ready_file(ready_file, &node.local_address.to_string())?;
    }

    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let registration_refused = async {
        match node.registration_refused.take() {
            Some(refused) => refused.await.ok(),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: draining"),
        _ = interrupt.recv() => tracing::info!("SIGINT: draining"),
        Some(refusal) = registration_refused => {
            tracing::error!(error = %refusal, "stopping: the coordinator refused this worker");
            node.stop().await.ok();
            return Err(anyhow::Error::new(refusal).context("registering with the coordinator"));
        }
    }
    let report = node.state.drain(node.state.default_drain_grace()).await;
    tracing::info!(
        finished = report.finished,
        failed_back = report.failed_back,
        "exiting"
    );
    node.stop().await.context("stopping the server")?;
    Ok(())
}

/// Writes the bound address atomically (temp file + rename), so a reader never sees half of it.
fn write_ready_file(path: &std::path::Path, address: &str) -> anyhow::Result<()> {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, address)
        .with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}
