//! `centroid-worker`: serves the Worker gRPC service over a pool of KLayout
//! processes; SIGTERM drains (in-flight candidates finish within the grace
//! period), deregisters and exits 0. With `--simulate-candidate-ms` (bench and
//! test mode only) it starts no KLayout and answers candidates after that delay.

use anyhow::Context;
use std::sync::Arc;

use centroid_runtime::{OperationsProbe, announce_server, init_logging};
use centroid_worker::WorkerConfig;
use centroid_worker::config::CommandLine;
use centroid_worker::error::WorkerError;
use centroid_worker::node::Node;
use centroid_worker::simulation::{SimulatedNode, SimulatedProbe};
use centroid_worker::state::WorkerProbe;
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::oneshot;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command_line = CommandLine::parse();
    let config = WorkerConfig::load(&command_line).context("loading the configuration")?;
    init_logging(config.common.log_format, "info");

    let listen_address = config.listen_address()?;
    let listener = tokio::net::TcpListener::bind(listen_address)
        .await
        .with_context(|| format!("binding {listen_address}"))?;
    if let Some(delay_ms) = config.simulate_candidate_ms {
        return simulate(&config, listener, delay_ms).await;
    }
    let mut node = Node::start(&config, listener)
        .await
        .context("starting the worker")?;
    let probe: Arc<dyn OperationsProbe> = Arc::new(WorkerProbe(node.state.clone()));
    announce_server(&config.server, node.local_address, probe).await?;

    if let Some(refusal) = wait_for_stop(node.registration_refused.take(), "draining").await? {
        tracing::error!(error = %refusal, "stopping: the coordinator refused this worker");
        node.stop().await.ok();
        return Err(anyhow::Error::new(refusal).context("registering with the coordinator"));
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

/// Bench/test mode: a simulated worker until SIGTERM or SIGINT.
async fn simulate(
    config: &centroid_worker::WorkerConfig,
    listener: tokio::net::TcpListener,
    delay_ms: u64,
) -> anyhow::Result<()> {
    let delay = std::time::Duration::from_millis(delay_ms);
    let mut node = SimulatedNode::start(config, listener, delay)
        .await
        .context("starting the simulated worker")?;
    let probe: Arc<dyn OperationsProbe> = Arc::new(SimulatedProbe(node.state.clone()));
    announce_server(&config.server, node.local_address, probe).await?;
    if let Some(refusal) = wait_for_stop(node.registration_refused.take(), "stopping").await? {
        if let Err(error) = node.stop().await {
            tracing::warn!(%error, "stopping the simulated worker failed");
        }
        return Err(anyhow::Error::new(refusal).context("registering with the coordinator"));
    }
    node.stop().await.context("stopping the simulated worker")
}

/// Waits for SIGTERM or SIGINT (logged with what follows: `then`), or for the
/// coordinator refusing this worker's registration: `Some(refusal)`.
async fn wait_for_stop(
    refused: Option<oneshot::Receiver<WorkerError>>,
    then: &str,
) -> anyhow::Result<Option<WorkerError>> {
    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let registration_refused = async {
        match refused {
            Some(refused) => refused.await.ok(),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = terminate.recv() => tracing::info!("SIGTERM: {then}"),
        _ = interrupt.recv() => tracing::info!("SIGINT: {then}"),
        Some(refusal) = registration_refused => return Ok(Some(refusal)),
    }
    Ok(None)
}
