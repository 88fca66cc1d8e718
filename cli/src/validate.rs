//! `centroid validate DIR`: load and check the three inputs, print a summary.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use centroid_schemas::{InputPaths, TaskContext};
use clap::Args;

use crate::EXIT_INVALID_INPUT;

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Circuit directory holding netlist.json, drc_rules.json and objectives.json.
    dir: Option<PathBuf>,
    /// netlist.json elsewhere (overrides DIR/netlist.json).
    #[arg(long, value_name = "FILE")]
    netlist: Option<PathBuf>,
    /// drc_rules.json elsewhere (overrides DIR/drc_rules.json).
    #[arg(long, value_name = "FILE")]
    drc: Option<PathBuf>,
    /// objectives.json elsewhere (overrides DIR/objectives.json).
    #[arg(long, value_name = "FILE")]
    objectives: Option<PathBuf>,
    /// Print the checked model as JSON instead of the text summary.
    #[arg(long)]
    json: bool,
}

impl ValidateArgs {
    /// The three paths, or which ones are missing.
    pub fn input_paths(&self) -> Result<InputPaths, String> {
        let from_dir = self.dir.as_deref().map(InputPaths::in_dir);
        let pick = |explicit: &Option<PathBuf>, in_dir: Option<PathBuf>, flag: &str| {
            explicit.clone().or(in_dir).ok_or_else(|| format!("--{flag}"))
        };
        let netlist = pick(&self.netlist, from_dir.as_ref().map(|paths| paths.netlist.clone()), "netlist");
        let drc_rules = pick(&self.drc, from_dir.as_ref().map(|paths| paths.drc_rules.clone()), "drc");
        let objectives = pick(&self.objectives, from_dir.as_ref().map(|paths| paths.objectives.clone()), "objectives");
        match (netlist, drc_rules, objectives) {
            (Ok(netlist), Ok(drc_rules), Ok(objectives)) => Ok(InputPaths { netlist, drc_rules, objectives }),
            (netlist, drc_rules, objectives) => {
                let missing: Vec<String> = [netlist.err(), drc_rules.err(), objectives.err()].into_iter().flatten().collect();
                Err(format!("give a circuit directory or {}", missing.join(", ")))
            }
        }
    }
}

pub fn run(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let paths = match args.input_paths() {
        Ok(paths) => paths,
        Err(message) => {
            eprintln!("error: {message}");
            return Ok(ExitCode::from(EXIT_INVALID_INPUT));
        }
    };
    let context = match TaskContext::load_paths(&paths, "validate") {
        Ok(context) => context,
        Err(errors) => {
            let mut stderr = std::io::stderr().lock();
            writeln!(stderr, "invalid inputs: {} problem{}", errors.issues.len(), if errors.issues.len() == 1 { "" } else { "s" })?;
            for issue in &errors.issues {
                writeln!(stderr, "error: {issue}")?;
            }
            return Ok(ExitCode::from(EXIT_INVALID_INPUT));
        }
    };
    for warning in &context.warnings {
        eprintln!("warning: {warning}");
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut stdout, &context)?;
        writeln!(stdout)?;
    } else {
        writeln!(stdout, "{}", context.circuit.summarize())?;
        writeln!(stdout, "{}", context.drc_rules.summarize())?;
        write!(stdout, "{}", context.objectives.summarize())?;
        writeln!(stdout, "\nvalid: {}, {}, {}", paths.netlist.display(), paths.drc_rules.display(), paths.objectives.display())?;
    }
    Ok(ExitCode::SUCCESS)
}
