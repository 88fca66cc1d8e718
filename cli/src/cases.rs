//! `centroid cases list|show ID|forget ID [--memory DIR | --farm]`: the long-term
//! memory of `centroid run` (a directory), or with `--farm` the farm's (its
//! coordinator's, over gRPC).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use centroid_planner::case_memory::disk::DiskMemory;
use centroid_planner::case_memory::{Case, CaseMemory};
use centroid_proto::v1::CaseSummary;
use clap::{Args, Subcommand};

use crate::jobs_client::{ClientError, Farm, Jobs};

#[derive(Debug, Args)]
pub struct CasesArgs {
    #[command(subcommand)]
    action: CasesAction,
    /// The memory directory (default: $XDG_DATA_HOME/centroid/memory or
    /// ~/.local/share/centroid/memory).
    #[arg(long, value_name = "DIR", global = true, conflicts_with = "farm")]
    memory: Option<PathBuf>,
    /// The farm's memory, through its coordinator (--coordinator, [cli] coordinator).
    #[arg(long, global = true)]
    farm: bool,
}

fn print_rows(rows: &[CaseSummary]) {
    println!(
        "{:<20} {:<24} {:<14} {:>7} {:>10} {:>10} {:>5}",
        "job", "circuit", "tech", "score", "area µm²", "1st pass", "uses"
    );
    for row in rows {
        println!(
            "{:<20} {:<24} {:<14} {:>7.4} {:>10.1} {:>10} {:>5}",
            row.job_id,
            row.circuit,
            row.tech,
            row.score,
            row.area_um2,
            row.candidates_to_first_pass,
            row.uses
        );
    }
}

/// A case of the on-disk memory as the farm's coordinator lists one.
fn summary(case: Case) -> CaseSummary {
    CaseSummary {
        job_id: case.job_id,
        circuit: case.circuit,
        tech: case.tech,
        score: case.score,
        area_um2: case.area_um2,
        candidates_to_first_pass: case.candidates_to_first_pass,
        uses: case.uses,
        stored_ms: case.stored_ms,
    }
}

/// `cases` against the farm's coordinator.
async fn on_farm(action: &CasesAction, farm: &Farm) -> anyhow::Result<ExitCode> {
    let jobs = Jobs::connect(farm).await?;
    let missing = |error: ClientError| -> anyhow::Result<ExitCode> {
        eprintln!("error: {error}");
        Ok(ExitCode::FAILURE)
    };
    match action {
        CasesAction::List => match jobs.cases().await {
            Ok(cases) => {
                print_rows(&cases);
                Ok(ExitCode::SUCCESS)
            }
            Err(error) => missing(error),
        },
        CasesAction::Show { job_id } => match jobs.case(job_id).await {
            Ok(json) => {
                let value: serde_json::Value = serde_json::from_str(&json)?;
                println!("{}", serde_json::to_string_pretty(&value)?);
                Ok(ExitCode::SUCCESS)
            }
            Err(error) => missing(error),
        },
        CasesAction::Forget { job_id } => match jobs.forget_case(job_id).await {
            Ok(()) => {
                println!("forgot {job_id}");
                Ok(ExitCode::SUCCESS)
            }
            Err(error) => missing(error),
        },
    }
}

#[derive(Debug, Subcommand)]
enum CasesAction {
    /// One line per stored case.
    List,
    /// A case as JSON (signature, best design point, score, objectives).
    Show { job_id: String },
    /// Removes a case.
    Forget { job_id: String },
}

pub async fn run(args: &CasesArgs, farm: &Farm) -> anyhow::Result<ExitCode> {
    if args.farm {
        return on_farm(&args.action, farm).await;
    }
    let directory = match &args.memory {
        Some(directory) => directory.clone(),
        None => DiskMemory::default_root()
            .context("no --memory and neither XDG_DATA_HOME nor HOME is set")?,
    };
    let memory = DiskMemory::open(&directory)?;
    match &args.action {
        CasesAction::List => {
            let rows: Vec<CaseSummary> = memory.cases().await?.into_iter().map(summary).collect();
            print_rows(&rows);
            Ok(ExitCode::SUCCESS)
        }
        CasesAction::Show { job_id } => {
            let cases = memory.cases().await?;
            let Some(case) = cases.iter().find(|case| case.job_id == *job_id) else {
                eprintln!("error: no case {job_id} in {}", directory.display());
                return Ok(ExitCode::FAILURE);
            };
            println!("{}", serde_json::to_string_pretty(case)?);
            Ok(ExitCode::SUCCESS)
        }
        CasesAction::Forget { job_id } => {
            if memory.forget(job_id).await? {
                println!("forgot {job_id}");
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("error: no case {job_id} in {}", directory.display());
                Ok(ExitCode::FAILURE)
            }
        }
    }
}
