//! Submitting a job and following it into the output folder: the one code path
//! that `centroid run` (against its local cluster) and `centroid submit [--wait]`
//! (against a farm's coordinator) share once a coordinator is reachable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use centroid_planner::job_events::{EventData, PictureCount, Pictures};
use centroid_proto::v1::{JobEvent, JobEventKind, JobOptions};
use clap::Args;

use crate::inputs::{CheckedInputs, InputArgs, report_input_errors};
use crate::jobs_client::{ClientError, Jobs};
use crate::output::write_output;
use crate::progress::Progress;
use crate::report::Report;
use crate::{EXIT_INVALID_INPUT, exit_for_report};

/// What a job is made of: its inputs and the options of its search.
#[derive(Debug, Args)]
pub struct JobArgs {
    #[command(flatten)]
    pub inputs: InputArgs,
    /// Candidates per iteration (default: the coordinator's).
    #[arg(long)]
    pub candidates: Option<u32>,
    /// Maximum iterations (default: objectives.json's max_iterations).
    #[arg(long)]
    pub iterations: Option<u32>,
    /// Seed of the candidate generator: same seed, same candidates.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Wall-clock budget of the job in seconds.
    #[arg(long)]
    pub time_budget: Option<u64>,
    /// A foundry KLayout DRC deck the best candidates must pass before the job ends.
    /// `run`: the deck file (run by this machine's `klayout` binary). `submit`: the
    /// deck's file name among the decks the farm's workers have installed
    /// (worker setting signoff_decks).
    #[arg(long, value_name = "DECK")]
    pub signoff_deck: Option<PathBuf>,
    /// Who chooses the design points: `heuristic` (rule-based, offline) or `llm`
    /// (the model of the coordinator's [llm] settings — for `run`, CENTROID_LLM_*
    /// or [cli.llm]; the heuristic planner takes over whenever the model fails).
    #[arg(long, value_enum, default_value_t = PlannerChoice::Heuristic)]
    pub planner: PlannerChoice,
    /// Once a candidate passed, search on until this many iterations in a row
    /// found no better one (default 1; a farm exploring a layout wants more).
    #[arg(long, value_name = "ITERATIONS")]
    pub patience: Option<u32>,
    /// The job's weight in the share of the farm's slots while other jobs run
    /// (1–100, default 1): slots are shared candidate by candidate in proportion.
    #[arg(long, value_name = "WEIGHT", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub priority: Option<u32>,
    /// How long one candidate may run on its slot before it is stopped and retried
    /// (default: the coordinator's `candidate_deadline_ms`, 300 s); a block of
    /// hundreds of devices drawn flat may need more.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub candidate_deadline: Option<u64>,
}

/// `--planner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PlannerChoice {
    Heuristic,
    Llm,
}

impl PlannerChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            PlannerChoice::Heuristic => "heuristic",
            PlannerChoice::Llm => "llm",
        }
    }
}

impl JobArgs {
    /// The deck's name as jobs and workers know it: its file name.
    pub fn signoff_deck_name(&self) -> String {
        self.signoff_deck
            .as_ref()
            .and_then(|deck| deck.file_name())
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The search options the job is submitted with (0 = the coordinator's default).
    pub fn job_options(&self) -> JobOptions {
        JobOptions {
            candidates_per_iteration: self.candidates.unwrap_or(0),
            max_iterations: self.iterations.unwrap_or(0),
            seed: self.seed.unwrap_or(0),
            time_budget_ms: self.time_budget.map_or(0, |seconds| seconds * 1000),
            candidate_deadline_ms: self.candidate_deadline.map_or(0, |seconds| seconds * 1000),
            signoff_deck: self.signoff_deck_name(),
            planner: self.planner.as_str().to_owned(),
            patience: self.patience.unwrap_or(0),
            priority: self.priority.unwrap_or(0),
            ..JobOptions::default()
        }
    }
}

/// How a submission ended.
pub enum Followed {
    /// the coordinator refused the inputs (nothing runs)
    Invalid(centroid_schemas::InputErrors),
    /// submitted, not followed (`submit` without `--wait`)
    Submitted,
    /// followed to the end, the output folder written
    Finished { report: Box<Report>, out: PathBuf },
}

/// Where the output folder goes once the job id is known.
pub enum Destination {
    /// don't follow: print the job id and return
    None,
    /// this folder, or `out/<job id>` when `None`
    Folder(Option<PathBuf>),
}

/// Submits the checked inputs, prints the job id, then (unless `destination` is
/// `None`) follows the job's events and writes its output folder. `timings` get
/// the search time and the total since `started` added.
pub async fn submit_and_follow(
    jobs: &Jobs,
    checked: &CheckedInputs,
    args: &JobArgs,
    destination: Destination,
    started: Instant,
    mut timings: BTreeMap<String, f64>,
) -> anyhow::Result<Followed> {
    let name = args.inputs.job_name(&checked.context);
    let options = args.job_options();
    let searched = Instant::now();
    let submitted = match jobs.submit(checked.submit_request(name, options)).await {
        Ok(submitted) => submitted,
        Err(ClientError::InvalidInputs(errors)) => return Ok(Followed::Invalid(errors)),
        Err(error) => return Err(anyhow::anyhow!("{error}")),
    };
    println!("{}", submitted.job_id);
    let Destination::Folder(out) = destination else {
        return Ok(Followed::Submitted);
    };
    let out = out.unwrap_or_else(|| PathBuf::from("out").join(&submitted.job_id));
    let mut progress = Progress::new(&submitted.job_id);
    // the search ends where the pictures of the kept candidates begin
    let mut pictures_started: Option<Instant> = None;
    jobs.watch(&submitted.job_id, |event| {
        if pictures_started.is_none() && starts_the_pictures(event) {
            pictures_started = Some(Instant::now());
        }
        progress.on_event(event)
    })
    .await
    .map_err(|error| anyhow::anyhow!("{error}"))?;
    progress.finish();
    let search_ended = pictures_started.unwrap_or_else(Instant::now);
    timings.insert(
        "search".to_owned(),
        search_ended.duration_since(searched).as_secs_f64(),
    );
    if let Some(started) = pictures_started {
        timings.insert("pictures".to_owned(), started.elapsed().as_secs_f64());
    }
    timings.insert("total".to_owned(), started.elapsed().as_secs_f64());
    let report = write_output(jobs, &submitted.job_id, &out, timings).await?;
    Ok(Followed::Finished {
        report: Box::new(report),
        out,
    })
}

/// Whether an event says the pictures of the kept candidates are being drawn
/// (asked, none drawn yet); only state changes are parsed, not every
/// candidate's events.
fn starts_the_pictures(event: &JobEvent) -> bool {
    event.kind == JobEventKind::StateChanged as i32
        && matches!(
            EventData::parse(&event.data_json),
            Some(EventData::Pictures(Pictures {
                pictures: PictureCount { drawn: None, .. }
            }))
        )
}

/// The exit status of a submission, with its last line printed.
pub fn conclude(followed: Followed) -> ExitCode {
    match followed {
        Followed::Invalid(errors) => {
            report_input_errors(&errors);
            ExitCode::from(EXIT_INVALID_INPUT)
        }
        Followed::Submitted => ExitCode::SUCCESS,
        Followed::Finished { report, out } => {
            println!("{}", result_line(&report, &out));
            exit_for_report(&report)
        }
    }
}

/// One line saying where the result is and whether it is good.
pub fn result_line(report: &Report, out: &Path) -> String {
    match &report.best {
        Some(best) => {
            let mut line = format!(
                "{status}: best {id} score {score:.4} {verdict} → {out}",
                status = report.status.as_str(),
                id = best.candidate_id,
                score = best.score,
                verdict = match (best.passed, best.checks.signoff.as_str()) {
                    (true, "clean") =>
                        "passed (DRC, LVS and the foundry deck clean, constraints met)",
                    (true, _) => "passed (DRC and LVS clean, constraints met)",
                    (false, _) => "did not pass",
                },
                out = out.display()
            );
            if let Some(smallest) = report
                .smallest_passing
                .as_ref()
                .filter(|smallest| smallest.candidate_id != best.candidate_id)
            {
                line.push_str(&format!(
                    "\n  the smallest passing layout is {} ({:.1} µm²)",
                    smallest.candidate_id, smallest.area_um2
                ));
            }
            line
        }
        None => {
            let mut line = format!(
                "{}: no layout{} → {}",
                report.status.as_str(),
                report
                    .message
                    .as_deref()
                    .map(|message| format!(" ({message})"))
                    .unwrap_or_default(),
                out.display()
            );
            for failure in &report.failures {
                let first = failure.candidates.first().map(String::as_str).unwrap_or("");
                line.push_str(&format!(
                    "\n  {} × {} (e.g. {first}: {})",
                    failure.count, failure.cause, failure.example
                ));
            }
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::JobArgs;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        job: JobArgs,
    }

    fn options(arguments: &[&str]) -> centroid_proto::v1::JobOptions {
        let mut line = vec!["centroid", "examples/ota5"];
        line.extend_from_slice(arguments);
        Command::try_parse_from(line).unwrap().job.job_options()
    }

    #[test]
    fn flags_become_the_options_submitted() {
        let given = options(&[
            "--candidates",
            "6",
            "--iterations",
            "2",
            "--seed",
            "9",
            "--time-budget",
            "30",
            "--candidate-deadline",
            "900",
            "--priority",
            "3",
            "--patience",
            "2",
        ]);
        assert_eq!(given.candidates_per_iteration, 6);
        assert_eq!(given.max_iterations, 2);
        assert_eq!(given.seed, 9);
        assert_eq!(given.time_budget_ms, 30_000);
        assert_eq!(given.candidate_deadline_ms, 900_000);
        assert_eq!(given.priority, 3);
        assert_eq!(given.patience, 2);
        assert_eq!(given.planner, "heuristic");
    }

    #[test]
    fn unset_flags_leave_the_coordinator_defaults() {
        let given = options(&[]);
        assert_eq!(given.candidate_deadline_ms, 0);
        assert_eq!(given.time_budget_ms, 0);
        assert_eq!(given.candidates_per_iteration, 0);
    }

    #[test]
    fn a_deadline_out_of_range_is_refused() {
        let mut line = vec!["centroid", "examples/ota5", "--candidate-deadline", "0"];
        assert!(Command::try_parse_from(line.clone()).is_err());
        line[3] = "86401";
        assert!(Command::try_parse_from(line).is_err());
    }
}
