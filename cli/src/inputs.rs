//! The three input files on the command line: a circuit directory and/or single files,
//! loaded and checked before anything runs or is submitted. A SPICE/CDL netlist is
//! converted here, on the client: what is submitted is always netlist.json text.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use centroid_schemas::performance_check::check_job_testbench;
use centroid_schemas::source::read_input_file;
use centroid_schemas::{
    InputErrors, InputFile, InputIssue, InputPaths, ModelMap, NetlistOptions, TESTBENCH_FILE,
    TaskContext, TaskInputs, is_spice_path,
};
use clap::Args;

#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Circuit directory holding netlist.json (or netlist.sp, .spice, .cir, .cdl, .scs),
    /// drc_rules.json and objectives.json.
    pub dir: Option<PathBuf>,
    /// The netlist elsewhere (overrides DIR's): netlist.json, or SPICE/CDL by its
    /// extension (.sp, .spice, .cir, .cdl; .scs for Spectre).
    #[arg(long, value_name = "FILE")]
    pub netlist: Option<PathBuf>,
    /// drc_rules.json elsewhere (overrides DIR/drc_rules.json).
    #[arg(long, value_name = "FILE")]
    pub drc: Option<PathBuf>,
    /// objectives.json elsewhere (overrides DIR/objectives.json).
    #[arg(long, value_name = "FILE")]
    pub objectives: Option<PathBuf>,
    /// The testbench elsewhere (overrides DIR/testbench.sp): a SPICE deck
    /// instantiating the circuit, whose `.meas` names are the performance measures.
    #[arg(long, value_name = "FILE")]
    pub testbench: Option<PathBuf>,
    #[command(flatten)]
    pub spice: SpiceArgs,
}

/// How a SPICE/CDL netlist is read.
#[derive(Debug, Clone, Default, Args)]
pub struct SpiceArgs {
    /// SPICE netlists: the subcircuit to lay out (default: the last one no subcircuit instantiates).
    #[arg(long, value_name = "NAME")]
    pub top: Option<String>,
    /// SPICE netlists: a JSON object mapping model names to nmos, pmos, resistor or
    /// capacitor (after the rule set's "models" table, before the usual names).
    #[arg(long, value_name = "FILE")]
    pub model_map: Option<PathBuf>,
}

impl SpiceArgs {
    /// The netlist options, reading the model map; its problems are returned.
    pub fn netlist_options(&self) -> Result<NetlistOptions, InputErrors> {
        let model_map = match &self.model_map {
            Some(path) => {
                let bytes = read_input_file(path)?;
                Some(ModelMap::from_json(&path.display().to_string(), &bytes)?)
            }
            None => None,
        };
        Ok(NetlistOptions {
            top: self.top.clone(),
            model_map,
        })
    }
}

/// Inputs that passed every check, with their contents as submitted (a SPICE netlist
/// converted to netlist.json text).
pub struct CheckedInputs {
    pub paths: InputPaths,
    pub raw: TaskInputs,
    pub context: TaskContext,
    /// the user's testbench (`None`: the circuit has none)
    pub testbench: Option<InputFile>,
}

impl InputArgs {
    /// The three paths, or which flags are missing.
    pub fn input_paths(&self) -> Result<InputPaths, String> {
        if let (Some(dir), None) = (&self.dir, &self.netlist) {
            check_one_netlist(dir)?;
        }
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

    /// The testbench's path: `--testbench`, else DIR/testbench.sp when it exists.
    pub fn testbench_path(&self) -> Option<PathBuf> {
        self.testbench.clone().or_else(|| {
            self.dir
                .as_deref()
                .map(|dir| dir.join(TESTBENCH_FILE))
                .filter(|path| path.exists())
        })
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
        let options = self.spice.netlist_options();
        let read = TaskInputs::read(&paths);
        let testbench = self
            .testbench_path()
            .map(|path| read_testbench(&path))
            .transpose();
        let loaded = match (read, options, testbench) {
            (Ok(raw), Ok(options), Ok(testbench)) => TaskContext::load_with(&raw, &options, "cli")
                .and_then(|job| {
                    let label = paths.objectives.display().to_string();
                    let warnings = check_job_testbench(&job.context, &label, testbench.as_ref())?;
                    Ok((job, testbench, warnings))
                }),
            (read, options, testbench) => Err(InputErrors::merge(
                [read.err(), options.err(), testbench.err()]
                    .into_iter()
                    .flatten(),
            )
            .unwrap_or(InputErrors { issues: Vec::new() })),
        };
        match loaded {
            Ok((job, testbench, testbench_warnings)) => {
                if self.spice.model_map.is_some() && !is_spice_path(&paths.netlist) {
                    eprintln!(
                        "warning: --model-map is ignored: {} is a JSON netlist (device types are written in it)",
                        paths.netlist.display()
                    );
                }
                report_warnings(&job.context.warnings);
                report_warnings(&testbench_warnings);
                Some(CheckedInputs {
                    paths,
                    raw: job.inputs,
                    context: job.context,
                    testbench,
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
            testbench_sp: self.testbench.as_ref().map(text).unwrap_or_default(),
        }
    }
}

/// Reads a testbench file, labelled with its path (problems name file and line).
fn read_testbench(path: &Path) -> Result<InputFile, InputErrors> {
    let bytes = read_input_file(path)?;
    Ok(InputFile {
        label: path.display().to_string(),
        bytes,
    })
}

/// A circuit directory holds one netlist: netlist.json or one SPICE netlist.
fn check_one_netlist(dir: &Path) -> Result<(), String> {
    let mut found = InputPaths::spice_netlists_in(dir);
    let json = dir.join("netlist.json");
    if json.exists() {
        found.insert(0, json);
    }
    if found.len() > 1 {
        let names: Vec<String> = found
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        return Err(format!(
            "{} holds more than one netlist ({}); keep one or choose with --netlist FILE",
            dir.display(),
            names.join(", ")
        ));
    }
    Ok(())
}

/// Prints warnings on stderr, one per line.
pub fn report_warnings(warnings: &[InputIssue]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
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
