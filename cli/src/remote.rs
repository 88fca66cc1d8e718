//! The thin-client commands against a running coordinator: `submit`, `watch`,
//! `status`, `result`, `cancel`, `workers`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use clap::Args;

use crate::inputs::{InputArgs, report_input_errors};
use crate::jobs_client::{ClientError, Jobs, job_options};
use crate::output::write_output;
use crate::progress::Progress;
use crate::report::Report;
use crate::{EXIT_INVALID_INPUT, exit_for_report};

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Candidates per iteration (default: the coordinator's).
    #[arg(long)]
    candidates: Option<u32>,
    /// Maximum iterations (default: objectives.json's max_iterations).
    #[arg(long)]
    iterations: Option<u32>,
    /// Seed of the candidate generator.
    #[arg(long)]
    seed: Option<u64>,
    /// Wall-clock budget of the job in seconds.
    #[arg(long)]
    time_budget: Option<u64>,
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

/// One line saying where the result is and whether it is good.
pub fn result_line(report: &Report, out: &Path) -> String {
    match &report.best {
        Some(best) => format!(
            "{status}: best {id} score {score:.4} {verdict} → {out}",
            status = report.status.as_str(),
            id = best.candidate_id,
            score = best.score,
            verdict = if best.passed {
                "passed (DRC and LVS clean, constraints met)"
            } else {
                "did not pass"
            },
            out = out.display()
        ),
        None => format!(
            "{}: no layout{} → {}",
            report.status.as_str(),
            report
                .message
                .as_deref()
                .map(|message| format!(" ({message})"))
                .unwrap_or_default(),
            out.display()
        ),
    }
}

fn default_out(job_id: &str) -> PathBuf {
    PathBuf::from("out").join(job_id)
}

fn rpc(error: ClientError) -> anyhow::Error {
    anyhow!("{error}")
}

pub async fn submit(coordinator: &str, args: &SubmitArgs) -> anyhow::Result<ExitCode> {
    let Some(checked) = args.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    let jobs = Jobs::connect(coordinator).await?;
    let request = checked.submit_request(
        args.inputs.job_name(&checked.context),
        job_options(
            args.candidates,
            args.iterations,
            args.seed,
            args.time_budget,
        ),
    );
    let submitted = match jobs.submit(request).await {
        Ok(submitted) => submitted,
        Err(ClientError::InvalidInputs(errors)) => {
            report_input_errors(&errors);
            return Ok(ExitCode::from(EXIT_INVALID_INPUT));
        }
        Err(error) => return Err(rpc(error)),
    };
    println!("{}", submitted.job_id);
    if !args.wait {
        return Ok(ExitCode::SUCCESS);
    }
    let mut progress = Progress::new(&submitted.job_id);
    jobs.watch(&submitted.job_id, |event| progress.on_event(event))
        .await
        .map_err(rpc)?;
    progress.finish();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&submitted.job_id));
    let report = write_output(&jobs, &submitted.job_id, &out, BTreeMap::new()).await?;
    println!("{}", result_line(&report, &out));
    Ok(exit_for_report(&report))
}

pub async fn watch(coordinator: &str, args: &JobArg) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(coordinator).await?;
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

pub async fn status(coordinator: &str, args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(coordinator).await?;
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
            job.iteration + 1,
            job.candidates_finished,
            job.candidates_total,
            job.best_score,
            if job.best_passed { "yes" } else { "no" }
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn result(coordinator: &str, args: &ResultArgs) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(coordinator).await?;
    let out = args.out.clone().unwrap_or_else(|| default_out(&args.job));
    let report = write_output(&jobs, &args.job, &out, BTreeMap::new()).await?;
    println!("{}", result_line(&report, &out));
    Ok(exit_for_report(&report))
}

pub async fn cancel(coordinator: &str, args: &JobArg) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(coordinator).await?;
    let response = jobs
        .cancel(&args.job, "cancelled from the command line")
        .await
        .map_err(rpc)?;
    println!("{}: {} {}", args.job, response.state, response.outcome);
    Ok(ExitCode::SUCCESS)
}

pub async fn workers(coordinator: &str) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(coordinator).await?;
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
