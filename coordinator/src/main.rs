//! `centroid-coordinator`: serves the Coordinator (workers) and Jobs (CLI) gRPC
//! services over a Redis store (or an in-process one with `--redis memory`).
//! SIGTERM/SIGINT stop serving; unfinished jobs stay in Redis and resume on the
//! next start.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use centroid_coordinator::config::CommandLine;
use centroid_coordinator::store::redis::RedisStoreSettings;
use centroid_coordinator::store::{MemoryStore, RedisStore, Store};
use centroid_coordinator::{Coordinator, CoordinatorConfig, service};
use centroid_proto::runtime::{OperationsProbe, init_logging, serve_operations};
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command_line = CommandLine::parse();
    let config = CoordinatorConfig::load(&command_line).context("loading the configuration")?;
    init_logging(config.log_format, "info");

    let store: Arc<dyn Store> = if config.redis == "memory" {
        tracing::warn!("in-process store: jobs do not survive a restart");
        Arc::new(MemoryStore::new())
    } else {
        let settings = RedisStoreSettings {
            url: config.redis.clone(),
            prefix: config.key_prefix.clone(),
            job_ttl: Duration::from_secs(config.job_ttl_s),
            max_events: config.max_events_per_job,
            max_queue: config.max_queue_len,
            ..RedisStoreSettings::default()
        };
        Arc::new(
            RedisStore::connect(settings, Duration::from_secs(30))
                .await
                .context("connecting to redis")?,
        )
    };
    let (listener, local_address) = service::bind(&config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let coordinator = Coordinator::start(config.clone(), store)
        .await
        .context("starting the coordinator")?;
    tracing::info!(address = %local_address, redis = %config.redis, consumer = %config.consumer_name(), "coordinator serving");
    if let Some(address) = &config.metrics_listen {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("binding the metrics endpoint {address}"))?;
        tracing::info!(address = %listener.local_addr()?, "serving /metrics, /healthz, /readyz");
        let probe: Arc<dyn OperationsProbe> = Arc::new(coordinator.clone());
        tokio::spawn(serve_operations(listener, probe, std::future::pending()));
    }
    if let Some(ready_file) = &config.ready_file {
        let temporary = ready_file.with_extension("tmp");
        std::fs::write(&temporary, local_address.to_string())
            .with_context(|| format!("writing {}", temporary.display()))?;
        std::fs::rename(&temporary, ready_file)
            .with_context(|| format!("renaming to {}", ready_file.display()))?;
    }

    let mut terminate =
        signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let stop = async move {
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM: stopping"),
            _ = interrupt.recv() => tracing::info!("SIGINT: stopping"),
        }
    };
    service::serve(coordinator.clone(), listener, stop)
        .await
        .context("serving")?;
    coordinator.shutdown().await;
    Ok(())
}
