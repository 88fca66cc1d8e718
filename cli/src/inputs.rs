//! The three input files on the command line: a circuit directory and/or single files,
//! loaded and checked before anything runs or is submitted.

use std::io::Write as _;
use std::path::PathBuf;

use centroid_schemas::{InputErrors, InputPaths, TaskContext, TaskInputs};
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Circuit directory holding netlist.json, drc_rules.json and objectives.json.
    pub dir: Option<PathBuf>,
    /// netlist.json elsewhere (overrides DIR/netlist.json).
    #[arg(long, value_name = "FILE")]
    pub netlist: Option<PathBuf>,
    /// drc_rules.json elsewhere (overrides DIR/drc_rules.json).
    #[arg(long, value_name = "FILE")]
    pub drc: Option<PathBuf>,
    /// objectives.json elsewhere (overrides DIR/objectives.json).
    #[arg(long, value_name = "FILE")]
    pub objectives: Option<PathBuf>,
}

/// Inputs that passed every check, with their raw contents (what gets submitted).
pub struct CheckedInputs {
    pub paths: InputPaths,
    pub raw: TaskInputs,
    pub context: TaskContext,
}

impl InputArgs {
    /// The three paths, or which flags are missing.
    pub fn input_paths(&self) -> Result<InputPaths, String> {
        let from_dir = self.dir.as_deref().map(InputPaths::in_dir);
        let pick = |explicit: &Option<PathBuf>, in_dir: Option<PathBuf>, flag: &str| {
            explicit
                .clone()
                .or(in_dir)
                .ok_or_else(|| format!("--{flag}"))
        };
        let netlist = pick(
            &self.netlist,
            from_dir.as_ref().map(|paths| paths.netlist.clone()),
            "netlist",
        );
        let drc_rules = pick(
            &self.drc,
            from_dir.as_ref().map(|paths| paths.drc_rules.clone()),
            "drc",
        );
        let objectives = pick(
            &self.objectives,
            from_dir.as_ref().map(|paths| paths.objectives.clone()),
            "objectives",
        );
        match (netlist, drc_rules, objectives) {
            (Ok(netlist), Ok(drc_rules), Ok(objectives)) => Ok(InputPaths {
                netlist,
                drc_rules,
                objectives,
            }),
            (netlist, drc_rules, objectives) => {
                let missing: Vec<String> = [netlist.err(), drc_rules.err(), objectives.err()]
                    .into_iter()
                    .flatten()
                    .collect();
                Err(format!(
                    "give a circuit directory or {}",
                    missing.join(", ")
                ))
            }
        }
    }

    /// A name for the job: the directory's name, else the netlist file's stem.
    pub fn job_name(&self, context: &TaskContext) -> String {
        self.dir
            .as_deref()
            .and_then(|dir| dir.canonicalize().ok())
            .and_then(|dir| {
                dir.file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| context.circuit.name.clone())
    }

    /// Reads and checks the inputs. On a problem, prints every issue and returns `None`.
    pub fn load_or_report(&self) -> Option<CheckedInputs> {
        let paths = match self.input_paths() {
            Ok(paths) => paths,
            Err(message) => {
                eprintln!("error: {message}");
                return None;
            }
        };
        let loaded = TaskInputs::read(&paths)
            .and_then(|raw| TaskContext::load(&raw, "cli").map(|context| (raw, context)));
        match loaded {
            Ok((raw, context)) => {
                for warning in &context.warnings {
                    eprintln!("warning: {warning}");
                }
                Some(CheckedInputs {
                    paths,
                    raw,
                    context,
                })
            }
            Err(errors) => {
                report_input_errors(&errors);
                None
            }
        }
    }
}

impl CheckedInputs {
    /// The SubmitJob request carrying these inputs, as read from disk.
    pub fn submit_request(
        &self,
        name: String,
        options: centroid_proto::v1::JobOptions,
    ) -> centroid_proto::v1::SubmitJobRequest {
        let text =
            |file: &centroid_schemas::InputFile| String::from_utf8_lossy(&file.bytes).into_owned();
        centroid_proto::v1::SubmitJobRequest {
            netlist_json: text(&self.raw.netlist),
            drc_rules_json: text(&self.raw.drc_rules),
            objectives_json: text(&self.raw.objectives),
            options: Some(options),
            name,
        }
    }
}

/// Prints every problem on stderr, one per line.
pub fn report_input_errors(errors: &InputErrors) {
    let mut stderr = std::io::stderr().lock();
    let count = errors.issues.len();
    let _ = writeln!(
        stderr,
        "invalid inputs: {count} problem{}",
        if count == 1 { "" } else { "s" }
    );
    for issue in &errors.issues {
        let _ = writeln!(stderr, "error: {issue}");
    }
}
