//! `centroid-coordinator`: serves the Coordinator (workers) and Jobs (CLI) gRPC
//! services over a Redis store (or an in-process one with `--redis memory`).
//! SIGTERM/SIGINT stop serving; unfinished jobs stay in Redis and resume on the
//! next start.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use centroid_coordinator::agent::preview::{self, PreviewRequest};
use centroid_coordinator::config::CommandLine;
use centroid_coordinator::memory::redis_cases::RedisMemory;
use centroid_coordinator::store::redis::RedisStoreSettings;
use centroid_coordinator::store::{InProcessStore, RedisStore, Store};
use centroid_coordinator::{Coordinator, CoordinatorConfig, service};
use centroid_planner::case_memory::CaseMemory;
use centroid_planner::case_memory::disk::DiskMemory;
use centroid_runtime::{OperationsProbe, announce_server, init_logging};
use clap::Parser;
use tokio::signal::unix::{SignalKind, signal};

/// mimalloc, not glibc's malloc: the coordinator allocates and frees small records,
/// strings and futures per candidate dispatched (issue 29: glibc's malloc and free
/// were ~16 % of its CPU at 1,000 slots). It gives freed memory back to the system on
/// its own (`heap_trim` is for glibc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The first argument that makes the binary print a job's first prompts
/// (`centroid plan --planner llm --print-prompts`) instead of serving.
const PRINT_PROMPTS: &str = "print-prompts";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some(PRINT_PROMPTS) {
        return print_prompts();
    }
    let command_line = CommandLine::parse();
    let config = CoordinatorConfig::load(&command_line).context("loading the configuration")?;
    init_logging(config.common.log_format, "info");

    let store: Arc<dyn Store> = if config.redis == "memory" {
        // info, not warn: `centroid run` starts every coordinator this way (and shows
        // warnings only), an operator sees it at the default level
        tracing::info!("in-process store: jobs do not survive a restart");
        Arc::new(InProcessStore::new())
    } else {
        let settings = RedisStoreSettings {
            url: config.redis.clone(),
            tls_ca: config.redis_tls_ca.clone(),
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
    let memory = long_term_memory(&config).await?;
    let coordinator = Coordinator::start_with_memory(config.clone(), store, memory)
        .await
        .context("starting the coordinator")?;
    tracing::info!(address = %local_address, redis = %config.redis_for_logs(), consumer = %config.consumer_name(), "coordinator serving");
    let probe: Arc<dyn OperationsProbe> = Arc::new(coordinator.clone());
    announce_server(&config.server, local_address, probe).await?;

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

/// Reads a `PreviewRequest` on stdin and prints, as one JSON array, the calls a
/// job's first iteration would make with the configured `[llm]` budget; no
/// model is asked.
fn print_prompts() -> anyhow::Result<()> {
    let config = CoordinatorConfig::load_with_environment(
        &CommandLine::default(),
        std::env::vars().collect(),
    )
    .context("loading the configuration")?;
    let request: PreviewRequest =
        serde_json::from_reader(std::io::stdin().lock()).context("reading the request on stdin")?;
    let calls = preview::first_iteration(&request, &config.llm)?;
    println!("{}", serde_json::to_string(&calls)?);
    Ok(())
}

/// The long-term memory the configuration names (see `CoordinatorConfig::memory`).
async fn long_term_memory(
    config: &CoordinatorConfig,
) -> anyhow::Result<Option<Arc<dyn CaseMemory>>> {
    let cap = config.memory_max_cases as usize;
    let memory: Option<Arc<dyn CaseMemory>> = match config.memory.as_str() {
        "off" => None,
        "" if config.redis == "memory" => None,
        "" => Some(Arc::new(
            RedisMemory::connect(
                &config.redis,
                config.redis_tls_ca.as_deref(),
                &config.key_prefix,
            )
            .await
            .context("connecting the long-term memory to redis")?
            .with_caps(cap, cap),
        )),
        directory => Some(Arc::new(
            DiskMemory::open(std::path::Path::new(directory))
                .context("opening the long-term memory")?
                .with_caps(cap, cap),
        )),
    };
    match &memory {
        Some(memory) => tracing::info!(memory = %memory.describe(), "long-term memory"),
        None => tracing::info!("no long-term memory: jobs start from scratch"),
    }
    Ok(memory)
}
