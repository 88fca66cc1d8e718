//! `centroid convert netlist.sp > netlist.json`: a SPICE/CDL netlist as the netlist 1.1.0
//! document Centroid reads it as (the same conversion `validate`, `run` and `submit` do),
//! checked like a netlist.json. The rule set (`--drc FILE`, else the drc_rules.json next
//! to the netlist when there is one) maps model names by its `models` table, before
//! `--model-map FILE` and the usual names, and sizes resistors and capacitors given by
//! their value.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use centroid_schemas::source::read_input_file;
use centroid_schemas::spice::{SPICE_EXTENSIONS, load_spice_netlist};
use centroid_schemas::{
    InputErrors, InputFile, InputPaths, ModelMap, SpiceOptions, is_spice_path, load_drc_rules,
};
use clap::Args;

use crate::EXIT_INVALID_INPUT;
use crate::inputs::{SpiceArgs, report_input_errors, report_warnings};

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The SPICE/CDL (or Spectre) netlist (.sp, .spice, .cir, .cdl, .scs), or a circuit directory holding one.
    netlist: PathBuf,
    /// The rule set whose "models" table maps model names and which sizes R and C given by
    /// value (default: drc_rules.json next to the netlist, when there is one).
    #[arg(long, value_name = "FILE")]
    drc: Option<PathBuf>,
    #[command(flatten)]
    spice: SpiceArgs,
}

pub fn run(args: &ConvertArgs) -> anyhow::Result<ExitCode> {
    match convert(args) {
        Ok(json) => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&json)?;
            writeln!(stdout)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            report_input_errors(&errors);
            Ok(ExitCode::from(EXIT_INVALID_INPUT))
        }
    }
}

/// The netlist.json text of the SPICE netlist, or every problem found.
fn convert(args: &ConvertArgs) -> Result<Vec<u8>, InputErrors> {
    let netlist_path = netlist_path(&args.netlist)?;
    let directory = netlist_path.parent().unwrap_or(Path::new("."));
    let rules_path = args
        .drc
        .clone()
        .or_else(|| Some(directory.join("drc_rules.json")).filter(|path| path.exists()));
    let netlist = read_input_file(&netlist_path).map(|bytes| InputFile {
        label: netlist_path.display().to_string(),
        bytes,
    });
    let rules = rules_path.as_deref().map(|path| {
        let file = read_input_file(path)?;
        load_drc_rules(&InputFile {
            label: path.display().to_string(),
            bytes: file,
        })
    });
    let options = args.spice.netlist_options();
    let (netlist, rules, options) = match (netlist, rules.transpose(), options) {
        (Ok(netlist), Ok(rules), Ok(options)) => (netlist, rules, options),
        (netlist, rules, options) => {
            return Err(InputErrors::merge(
                [netlist.err(), rules.err(), options.err()]
                    .into_iter()
                    .flatten(),
            )
            .unwrap_or(InputErrors { issues: Vec::new() }));
        }
    };
    let rule_set_models = rules.as_ref().map(|loaded| {
        ModelMap::new(
            loaded
                .value
                .models
                .iter()
                .map(|(name, device_type)| (name.as_str(), *device_type)),
        )
    });
    let spice_options = SpiceOptions {
        top: options.top.as_deref(),
        rules: rules.as_ref().map(|loaded| &loaded.value),
        rule_set_models: rule_set_models.as_ref(),
        model_map: options.model_map.as_ref(),
    };
    let (loaded, json) = load_spice_netlist(&netlist, &spice_options)?;
    report_warnings(&loaded.warnings);
    Ok(json.bytes)
}

/// The SPICE netlist named, or the one a directory holds.
fn netlist_path(given: &Path) -> Result<PathBuf, InputErrors> {
    let label = given.display().to_string();
    let path = if given.is_dir() {
        let found = InputPaths::spice_netlists_in(given);
        match found.as_slice() {
            [one] => one.clone(),
            [] => {
                let names: Vec<String> = SPICE_EXTENSIONS
                    .iter()
                    .map(|extension| format!("netlist.{extension}"))
                    .collect();
                return Err(InputErrors::single(
                    &label,
                    "",
                    format!("holds no SPICE netlist ({})", names.join(", ")),
                ));
            }
            _ => {
                return Err(InputErrors::single(
                    &label,
                    "",
                    "holds more than one SPICE netlist; name the file to convert",
                ));
            }
        }
    } else {
        given.to_path_buf()
    };
    if !is_spice_path(&path) {
        return Err(InputErrors::single(
            &path.display().to_string(),
            "",
            format!(
                "convert reads SPICE/CDL netlists (.{}); a netlist.json needs no conversion",
                SPICE_EXTENSIONS.join(", .")
            ),
        ));
    }
    Ok(path)
}
