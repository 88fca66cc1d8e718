//! `centroid cases list|show ID|forget ID [--memory DIR]`: the long-term memory of
//! `centroid run` (a farm's memory lives in its Redis).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use centroid_coordinator::memory::CaseMemory;
use centroid_coordinator::memory::disk::DiskMemory;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct CasesArgs {
    #[command(subcommand)]
    action: CasesAction,
    /// The memory directory (default: $XDG_DATA_HOME/centroid/memory or
    /// ~/.local/share/centroid/memory).
    #[arg(long, value_name = "DIR", global = true)]
    memory: Option<PathBuf>,
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

pub async fn run(args: &CasesArgs) -> anyhow::Result<ExitCode> {
    let directory = match &args.memory {
        Some(directory) => directory.clone(),
        None => DiskMemory::default_root()
            .context("no --memory and neither XDG_DATA_HOME nor HOME is set")?,
    };
    let memory = DiskMemory::open(&directory)?;
    match &args.action {
        CasesAction::List => {
            let cases = memory.cases().await?;
            println!(
                "{:<20} {:<24} {:<14} {:>7} {:>10} {:>10} {:>5}",
                "job", "circuit", "tech", "score", "area µm²", "1st pass", "uses"
            );
            for case in cases {
                println!(
                    "{:<20} {:<24} {:<14} {:>7.4} {:>10.1} {:>10} {:>5}",
                    case.job_id,
                    case.circuit,
                    case.tech,
                    case.score,
                    case.area_um2,
                    case.candidates_to_first_pass,
                    case.uses
                );
            }
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
