//! `centroid run DIR`: the whole pipeline on this machine — an in-process coordinator
//! and store, S local KLayout processes — then the output folder.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;

use crate::inputs::{InputArgs, report_input_errors};
use crate::jobs_client::{ClientError, Jobs, job_options};
use crate::local_cluster::LocalCluster;
use crate::output::write_output;
use crate::progress::Progress;
use crate::{EXIT_INVALID_INPUT, exit_for_report};

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    inputs: InputArgs,
    /// Output folder (default: out/<name of DIR>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Candidates per iteration (default: the coordinator's).
    #[arg(long)]
    candidates: Option<u32>,
    /// Maximum iterations (default: objectives.json's max_iterations).
    #[arg(long)]
    iterations: Option<u32>,
    /// Local KLayout processes (default: number of cores).
    #[arg(long)]
    slots: Option<usize>,
    /// Seed of the candidate generator: same seed, same candidates.
    #[arg(long)]
    seed: Option<u64>,
    /// Wall-clock budget of the job in seconds.
    #[arg(long)]
    time_budget: Option<u64>,
}

pub async fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let Some(checked) = args.inputs.load_or_report() else {
        return Ok(ExitCode::from(EXIT_INVALID_INPUT));
    };
    let name = args.inputs.job_name(&checked.context);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&name));
    let slots = args.slots.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
    });

    let cluster = LocalCluster::start(slots).await?;
    let cluster_ready_s = started.elapsed().as_secs_f64();
    let outcome = run_on(
        &cluster.address,
        &checked,
        args,
        &name,
        &out,
        started,
        cluster_ready_s,
    )
    .await;
    cluster.stop().await;
    let report = match outcome {
        Ok(done) => done,
        Err(RunError::Invalid(errors)) => {
            report_input_errors(&errors);
            return Ok(ExitCode::from(EXIT_INVALID_INPUT));
        }
        Err(RunError::Other(error)) => return Err(error),
    };
    println!("{}", crate::remote::result_line(&report, &out));
    Ok(exit_for_report(&report))
}

enum RunError {
    Invalid(centroid_schemas::InputErrors),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for RunError {
    fn from(error: anyhow::Error) -> Self {
        RunError::Other(error)
    }
}

async fn run_on(
    address: &str,
    checked: &crate::inputs::CheckedInputs,
    args: &RunArgs,
    name: &str,
    out: &std::path::Path,
    started: Instant,
    cluster_ready_s: f64,
) -> Result<crate::report::Report, RunError> {
    let jobs = Jobs::connect(address).await?;
    let request = checked.submit_request(
        name.to_owned(),
        job_options(
            args.candidates,
            args.iterations,
            args.seed,
            args.time_budget,
        ),
    );
    let searched = Instant::now();
    let submitted = match jobs.submit(request).await {
        Ok(submitted) => submitted,
        Err(ClientError::InvalidInputs(errors)) => return Err(RunError::Invalid(errors)),
        Err(error) => return Err(RunError::Other(anyhow::anyhow!("{error}"))),
    };
    let mut progress = Progress::new(&submitted.job_id);
    jobs.watch(&submitted.job_id, |event| progress.on_event(event))
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    progress.finish();
    let mut timings = BTreeMap::new();
    timings.insert("start_local_cluster".to_owned(), cluster_ready_s);
    timings.insert("search".to_owned(), searched.elapsed().as_secs_f64());
    timings.insert("total".to_owned(), started.elapsed().as_secs_f64());
    Ok(write_output(&jobs, &submitted.job_id, out, timings).await?)
}
