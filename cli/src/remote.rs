//! The thin-client commands against a running coordinator: `submit`, `watch`,
//! `status`, `result`, `cancel`, `workers`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::anyhow;
use clap::Args;

use crate::EXIT_INVALID_INPUT;
use crate::follow::{Destination, Followed, JobArgs, conclude, submit_and_follow};
use crate::jobs_client::{ClientError, Farm, Jobs};
use crate::output::write_output;
use crate::progress::Progress;

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    job: JobArgs,
    /// Watch the job, then fetch its result.
    #[arg(long)]
    wait: bool,
    /// Output folder for --wait (default: out/<job id>).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct JobArg {
    /// Job id, as printed by `centroid submit`.
    pub job: String,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Job id; without it, the list of jobs.
    pub job: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResultArgs {
    pub job: String,
    /// Output folder (default: out/<job id>).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn rpc(error: ClientError) -> anyhow::Error {
    anyhow!("{error}")
}

pub async fn submit(farm: &Farm, args: &SubmitArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let Some(checked) = args.job.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    let jobs = Jobs::connect(farm).await?;
    let destination = match args.wait {
        true => Destination::Folder(args.out.clone()),
        false => Destination::None,
    };
    let followed = submit_and_follow(
        &jobs,
        &checked,
        &args.job,
        destination,
        started,
        BTreeMap::new(),
    )
    .await?;
    Ok(conclude(followed))
}

pub async fn watch(farm: &Farm, args: &JobArg) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(farm).await?;
    let mut progress = Progress::new(&args.job);
    jobs.watch(&args.job, |event| progress.on_event(event))
        .await
        .map_err(rpc)?;
    progress.finish();
    let view = jobs.get(&args.job).await.map_err(rpc)?;
    let outcome = view.job.map(|job| job.outcome).unwrap_or_default();
    println!("{}: {outcome}", args.job);
    Ok(if outcome == "completed" {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub async fn status(farm: &Farm, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(farm).await?;
    let summaries = match &args.job {
        Some(job_id) => vec![
            jobs.get(job_id)
                .await
                .map_err(rpc)?
                .job
                .ok_or_else(|| anyhow!("no job summary"))?,
        ],
        None => jobs.list().await.map_err(rpc)?,
    };
    println!(
        "{:<38} {:<20} {:<11} {:<10} {:>5} {:>11} {:>8} {:<6}",
        "JOB", "NAME", "STATE", "OUTCOME", "ITER", "CANDIDATES", "BEST", "PASSED"
    );
    for job in summaries {
        println!(
            "{:<38} {:<20} {:<11} {:<10} {:>5} {:>5}/{:<5} {:>8.4} {:<6}",
            job.job_id,
            job.name,
            job.state,
            if job.outcome.is_empty() {
                "-"
            } else {
                &job.outcome
            },
            job.iteration,
            job.candidates_finished,
            job.candidates_total,
            job.best_score,
            if job.best_passed { "yes" } else { "no" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn result(farm: &Farm, args: &ResultArgs) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(farm).await?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&args.job));
    let report = write_output(&jobs, &args.job, &out, BTreeMap::new()).await?;
    Ok(conclude(Followed::Finished {
        report: Box::new(report),
        out,
    }))
}

pub async fn cancel(farm: &Farm, args: &JobArg) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(farm).await?;
    let response = jobs
        .cancel(&args.job, "cancelled from the command line")
        .await
        .map_err(rpc)?;
    println!("{}: {} {}", args.job, response.state, response.outcome);
    Ok(ExitCode::SUCCESS)
}

pub async fn workers(farm: &Farm) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(farm).await?;
    let response = jobs.workers().await.map_err(rpc)?;
    println!(
        "{:<28} {:<28} {:>5} {:>5} {:>7} {:<6} {:<9} {:<10}",
        "WORKER", "ADDRESS", "SLOTS", "FREE", "RUNNING", "ALIVE", "DRAINING", "KLAYOUT"
    );
    for worker in response.workers {
        let info = worker.info.unwrap_or_default();
        println!(
            "{:<28} {:<28} {:>5} {:>5} {:>7} {:<6} {:<9} {:<10}",
            info.worker_id,
            info.address,
            info.slots,
            worker.free_slots,
            worker.running,
            if worker.alive { "yes" } else { "no" },
            if worker.draining { "yes" } else { "no" },
            info.klayout_version
        );
    }
    Ok(ExitCode::SUCCESS)
}
