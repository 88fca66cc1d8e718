//! `centroid run DIR`: the whole pipeline on this machine — a child coordinator with
//! its in-process store, S local KLayout processes — then the output folder, through
//! the same submit-and-follow path as `centroid submit --wait`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use centroid_planner::case_memory::disk::DiskMemory;
use clap::Args;

use crate::EXIT_INVALID_INPUT;
use crate::follow::{Destination, JobArgs, conclude, submit_and_follow};
use crate::jobs_client::Jobs;
use crate::local_cluster::LocalCluster;
use crate::settings::CliSettings;

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    job: JobArgs,
    /// Output folder (default: out/<name of DIR>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Local KLayout processes (default: number of cores).
    #[arg(long)]
    slots: Option<usize>,
    /// Long-term memory: similar earlier jobs seed this one, and this one is kept
    /// (default: $XDG_DATA_HOME/centroid/memory or ~/.local/share/centroid/memory).
    #[arg(long, value_name = "DIR", conflicts_with = "no_memory")]
    memory: Option<PathBuf>,
    /// Neither read nor write the long-term memory.
    #[arg(long)]
    no_memory: bool,
}

pub async fn run(args: &RunArgs, settings: &CliSettings) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let Some(checked) = args.job.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    let name = args.job.inputs.job_name(&checked.context);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&name));
    let slots = args.slots.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    });

    let signoff_deck = match &args.job.signoff_deck {
        Some(deck) => Some(
            deck.canonicalize()
                .with_context(|| format!("--signoff-deck {}: no such deck file", deck.display()))?,
        ),
        None => None,
    };
    let memory = match (&args.memory, args.no_memory) {
        (_, true) => None,
        (Some(directory), false) => Some(directory.clone()),
        (None, false) => DiskMemory::default_root(),
    };
    // the coordinator keeps the memory; a directory it would refuse is refused here,
    // before anything starts
    if let Some(directory) = &memory {
        DiskMemory::open(directory)?;
    }
    let cluster = LocalCluster::start(
        slots,
        signoff_deck.as_deref(),
        &settings.llm,
        memory.as_deref(),
        settings.common.log_format,
    )
    .await?;
    let mut timings = BTreeMap::new();
    timings.insert(
        "start_local_cluster".to_owned(),
        started.elapsed().as_secs_f64(),
    );
    let followed = match Jobs::connect(&cluster.farm).await {
        Ok(jobs) => {
            let destination = Destination::Folder(Some(out));
            submit_and_follow(&jobs, &checked, &args.job, destination, started, timings).await
        }
        Err(error) => Err(error),
    };
    cluster.stop().await;
    Ok(conclude(followed?))
}
