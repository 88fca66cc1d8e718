//! `centroid`: the command-line interface of Centroid. `run` does the whole job on this
//! machine; `submit`, `watch`, `status`, `result`, `cancel` and `workers` are a thin
//! client of a farm's coordinator; `validate` checks inputs.

mod cases;
mod convert;
mod coordinator_process;
mod failure_causes;
mod follow;
mod inputs;
mod jobs_client;
mod layer_properties;
mod local_cluster;
mod markup;
mod mcp;
mod memory_report;
mod output;
mod plan;
mod planner_report;
mod progress;
mod remote;
mod report;
mod report_blocks;
mod report_building;
mod report_html;
mod report_performance;
mod report_sections;
mod run;
mod settings;
mod validate;

use std::process::ExitCode;

use centroid_runtime::init_logging;
use clap::{Parser, Subcommand};

use crate::failure_causes::every_candidate_failed;
use crate::report::{JobStatus, Report};

/// Exit status for invalid input files.
pub const EXIT_INVALID_INPUT: u8 = 2;
/// Exit status when the job ran but has no passing layout: its best did not pass, or
/// every candidate failed (the report groups their reasons by cause).
pub const EXIT_NOT_PASSED: u8 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "centroid",
    version,
    about = "Analog layout exploration on a compute farm"
)]
struct Cli {
    #[command(flatten)]
    global: settings::GlobalFlags,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a circuit's inputs and print what Centroid understood of them.
    Validate(validate::ValidateArgs),
    /// Print a SPICE/CDL netlist as the netlist.json Centroid reads it as.
    Convert(convert::ConvertArgs),
    /// Run the whole job on this machine and write the output folder.
    Run(run::RunArgs),
    /// Print the plans of a job's first iteration without running them.
    Plan(plan::PlanArgs),
    /// Submit a job to the coordinator; prints its id.
    Submit(remote::SubmitArgs),
    /// Follow a job's progress until it ends.
    Watch(remote::JobArg),
    /// Show one job, or list the jobs.
    Status(remote::StatusArgs),
    /// Fetch a finished job's result into an output folder.
    Result(remote::ResultArgs),
    /// Cancel a job.
    Cancel(remote::JobArg),
    /// List the workers registered with the coordinator.
    Workers,
    /// The long-term memory of `centroid run`: list, show or forget cases.
    Cases(cases::CasesArgs),
    /// Serve the KLayout skills to an MCP client over stdio (Model Context Protocol).
    Mcp(mcp::McpArgs),
}

/// 0 when the best layout passed, 3 when the job completed without a passing layout
/// or failed because every candidate failed, 1 otherwise.
pub fn exit_for_report(report: &Report) -> ExitCode {
    match (
        report.status,
        report.best.as_ref().is_some_and(|best| best.passed),
    ) {
        (JobStatus::Completed, true) => ExitCode::SUCCESS,
        (JobStatus::Completed, false) => ExitCode::from(EXIT_NOT_PASSED),
        (JobStatus::Failed, _) if every_candidate_failed(&report.candidates) => {
            ExitCode::from(EXIT_NOT_PASSED)
        }
        _ => ExitCode::FAILURE,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let settings = match settings::CliSettings::load(&cli.global) {
        Ok(settings) => settings,
        Err(error) => {
            eprintln!("error: configuration: {error:#}");
            return ExitCode::FAILURE;
        }
    };
    // the CLI is quiet unless asked: its output is on stdout, logs on stderr
    init_logging(settings.common.log_format, "warn");
    if let Command::Validate(args) = &cli.command {
        return finish(validate::run(args));
    }
    if let Command::Convert(args) = &cli.command {
        return finish(convert::run(args));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let farm = settings.farm();
    let outcome = runtime.block_on(async {
        match &cli.command {
            Command::Validate(_) | Command::Convert(_) => unreachable!("handled above"),
            Command::Run(args) => run::run(args, &settings).await,
            Command::Plan(args) => plan::plan(args, &settings.llm).await,
            Command::Submit(args) => remote::submit(&farm, args).await,
            Command::Watch(args) => remote::watch(&farm, args).await,
            Command::Status(args) => remote::status(&farm, args).await,
            Command::Result(args) => remote::result(&farm, args).await,
            Command::Cancel(args) => remote::cancel(&farm, args).await,
            Command::Workers => remote::workers(&farm).await,
            Command::Cases(args) => cases::run(args, &farm).await,
            Command::Mcp(args) => mcp::run(args).await,
        }
    });
    finish(outcome)
}

fn finish(outcome: anyhow::Result<ExitCode>) -> ExitCode {
    match outcome {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn report(status: &str, errors: &[Option<&str>]) -> Report {
        let candidates: Vec<_> = errors
            .iter()
            .enumerate()
            .map(|(index, error)| {
                json!({"id": format!("c{index}"), "parent": null, "iteration": 1, "score": null,
                       "passed": false, "metrics": null,
                       "error": error.map(|message| json!({"code": "ERROR", "message": message}))})
            })
            .collect();
        serde_json::from_value(json!({
            "job_id": "job-1", "circuit": "c", "tech": "t", "status": status, "message": null,
            "iterations": 1, "candidates_evaluated": 0, "best": null,
            "candidates": candidates, "timings": {}
        }))
        .unwrap()
    }

    #[test]
    fn a_job_whose_every_candidate_failed_exits_3_and_one_that_could_not_run_1() {
        let all_failed = report(
            "failed",
            &[Some("row ROW1 refused"), Some("row ROW0 refused")],
        );
        assert_eq!(
            exit_for_report(&all_failed),
            ExitCode::from(EXIT_NOT_PASSED)
        );
        assert_eq!(
            exit_for_report(&report("failed", &[])),
            ExitCode::FAILURE,
            "no candidate ran"
        );
        let one_ran = report("failed", &[Some("refused"), None]);
        assert_eq!(exit_for_report(&one_ran), ExitCode::FAILURE);
        assert_eq!(
            exit_for_report(&report("completed", &[Some("refused")])),
            ExitCode::from(EXIT_NOT_PASSED)
        );
    }
}
