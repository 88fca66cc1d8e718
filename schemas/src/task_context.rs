//! Loading the three input files into a [`TaskContext`], with every problem of
//! every file reported together. Each JSON file is checked by [`crate::json_inputs`];
//! a SPICE/CDL netlist (by its extension) is first read into the netlist document
//! netlist.json would hold (`spice`), then checked the same way.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::bulk_wells::check_bulk_wells;
use crate::circuit::Circuit;
use crate::device_layers::check_devices_drawable;
use crate::device_sizes::check_device_sizes;
use crate::drc_rules::DrcRuleSet;
use crate::flatten::definition_pointer;
use crate::issue::{InputErrors, InputIssue};
use crate::json_inputs::{InputFile, Loaded, load_drc_rules, load_netlist, load_objectives};
use crate::net_currents::{Labels, carry_currents, check_net_currents};
use crate::objectives::DesignObjectives;
use crate::source::read_input_file;
use crate::spice::{
    ModelMap, SpiceLocations, SpiceOptions, is_spice_path, load_spice_netlist_located,
};
use crate::version::InputKind;

/// The three input files of a job.
#[derive(Debug, Clone)]
pub struct TaskInputs {
    pub netlist: InputFile,
    pub drc_rules: InputFile,
    pub objectives: InputFile,
}

/// Paths of the three input files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputPaths {
    pub netlist: PathBuf,
    pub drc_rules: PathBuf,
    pub objectives: PathBuf,
}

impl InputPaths {
    /// `DIR/netlist.json` (or, when there is none, the first of `DIR/netlist.sp`,
    /// `.spice`, `.cir`, `.cdl` that exists), `DIR/drc_rules.json`, `DIR/objectives.json`.
    pub fn in_dir(dir: &Path) -> Self {
        let json = dir.join(InputKind::Netlist.file_name());
        let netlist = if json.exists() {
            json
        } else {
            Self::spice_netlists_in(dir)
                .into_iter()
                .next()
                .unwrap_or(json)
        };
        Self {
            netlist,
            drc_rules: dir.join(InputKind::DrcRules.file_name()),
            objectives: dir.join(InputKind::Objectives.file_name()),
        }
    }

    /// The SPICE netlists a circuit directory may hold instead of netlist.json, that exist.
    pub fn spice_netlists_in(dir: &Path) -> Vec<PathBuf> {
        crate::spice::SPICE_EXTENSIONS
            .iter()
            .map(|extension| dir.join(format!("netlist.{extension}")))
            .filter(|path| path.is_file())
            .collect()
    }
}

/// How a netlist is read beyond its own text (SPICE/CDL netlists only).
#[derive(Debug, Clone, Default)]
pub struct NetlistOptions {
    /// The subcircuit to lay out (default: the last one no subcircuit instantiates).
    pub top: Option<String>,
    /// `--model-map FILE`: model names → device types, after the rule set's `models` table.
    pub model_map: Option<ModelMap>,
}

/// A loaded job: the checked context, and the inputs as a coordinator receives them
/// (a SPICE netlist converted to netlist.json text).
#[derive(Debug, Clone)]
pub struct LoadedJob {
    pub context: TaskContext,
    pub inputs: TaskInputs,
}

impl TaskInputs {
    /// Reads the three files; every unreadable file is reported.
    pub fn read(paths: &InputPaths) -> Result<Self, InputErrors> {
        let read = |path: &Path| {
            read_input_file(path).map(|bytes| InputFile {
                label: path.display().to_string(),
                bytes,
            })
        };
        match (
            read(&paths.netlist),
            read(&paths.drc_rules),
            read(&paths.objectives),
        ) {
            (Ok(netlist), Ok(drc_rules), Ok(objectives)) => Ok(Self {
                netlist,
                drc_rules,
                objectives,
            }),
            (netlist, drc_rules, objectives) => Err(InputErrors::merge(
                [netlist.err(), drc_rules.err(), objectives.err()]
                    .into_iter()
                    .flatten(),
            )
            .expect("at least one read failed")),
        }
    }
}

/// What a job works on (seed 001 appendix E).
#[derive(Debug, Clone, Serialize)]
pub struct TaskContext {
    pub circuit: Circuit,
    pub drc_rules: DrcRuleSet,
    pub objectives: DesignObjectives,
    pub session_id: String,
    /// Things worth knowing that do not stop the job (e.g. a newer minor schema version).
    pub warnings: Vec<InputIssue>,
}

/// The rule set's `models` table, also from a rule set that fails its checks (so that a
/// SPICE netlist's models are not reported unknown because of an unrelated rule problem).
fn rule_set_models(file: &InputFile, loaded: &Result<Loaded<DrcRuleSet>, InputErrors>) -> ModelMap {
    if let Ok(loaded) = loaded {
        return ModelMap::new(
            loaded
                .value
                .models
                .iter()
                .map(|(name, device_type)| (name.as_str(), *device_type)),
        );
    }
    let document: serde_json::Value =
        serde_json::from_slice(&file.bytes).unwrap_or(serde_json::Value::Null);
    let models = document
        .get("models")
        .and_then(serde_json::Value::as_object);
    ModelMap::new(models.into_iter().flatten().filter_map(|(name, value)| {
        let device_type = crate::spice::device_type_named(value.as_str()?)?;
        Some((name.as_str(), device_type))
    }))
}

/// The netlist as loaded: the circuit, the netlist.json text, and for a SPICE netlist
/// where that JSON came from.
type LoadedNetlist = (Loaded<Circuit>, InputFile, Option<SpiceLocations>);

/// Loads the netlist, JSON or SPICE (by its label's extension); also returns it as JSON.
fn load_any_netlist(
    file: &InputFile,
    options: &NetlistOptions,
    rule_set_models: &ModelMap,
    rules: Option<&DrcRuleSet>,
) -> Result<LoadedNetlist, InputErrors> {
    if is_spice_path(Path::new(&file.label)) {
        let spice_options = SpiceOptions {
            top: options.top.as_deref(),
            rules,
            rule_set_models: Some(rule_set_models),
            model_map: options.model_map.as_ref(),
        };
        return load_spice_netlist_located(file, &spice_options)
            .map(|(loaded, json, locations)| (loaded, json, Some(locations)));
    }
    if options.top.is_some() {
        return Err(InputErrors::single(
            &file.label,
            "/top",
            "--top applies to SPICE netlists; a JSON netlist names its top cell in \"top\"",
        ));
    }
    load_netlist(file).map(|loaded| (loaded, file.clone(), None))
}

/// What the circuit needs of the rule set, checked the same way for `validate`, `run` and
/// SubmitJob: the layer roles of its device types, the sizes the generators can draw, the
/// bulk nets the wells can keep apart. What no candidate could draw is refused before
/// anything runs.
fn check_drawable(
    circuit: &Circuit,
    rules: &DrcRuleSet,
    rules_label: &str,
    netlist: &InputFile,
) -> Vec<InputIssue> {
    let label = netlist.label.as_str();
    let mut issues = check_devices_drawable(circuit, rules, rules_label, label);
    // Issues about devices point at the first one's definition in the netlist.
    let document: serde_json::Value =
        serde_json::from_slice(&netlist.bytes).unwrap_or(serde_json::Value::Null);
    let pointer_of = |device_id: &str| definition_pointer(&document, device_id).unwrap_or_default();
    if issues.is_empty() {
        // (a size check needs the layers the device types need)
        issues.extend(check_device_sizes(circuit, rules, label, &pointer_of));
    }
    issues.extend(check_bulk_wells(
        circuit,
        rules,
        (rules_label, label),
        &pointer_of,
    ));
    issues
}

impl TaskContext {
    /// Loads all three inputs; the errors of every file are reported together.
    pub fn load(
        inputs: &TaskInputs,
        session_id: impl Into<String>,
    ) -> Result<TaskContext, InputErrors> {
        Self::load_with(inputs, &NetlistOptions::default(), session_id).map(|job| job.context)
    }

    /// Loads all three inputs, a SPICE netlist read with `options`; returns the context
    /// and the inputs with the netlist as netlist.json text.
    pub fn load_with(
        inputs: &TaskInputs,
        options: &NetlistOptions,
        session_id: impl Into<String>,
    ) -> Result<LoadedJob, InputErrors> {
        let drc_rules = load_drc_rules(&inputs.drc_rules);
        let models = rule_set_models(&inputs.drc_rules, &drc_rules);
        let loaded_rules = drc_rules.as_ref().ok().map(|loaded| &loaded.value);
        let netlist = load_any_netlist(&inputs.netlist, options, &models, loaded_rules);
        let objectives = load_objectives(&inputs.objectives);
        let ((netlist, netlist_json, locations), drc_rules, objectives) =
            match (netlist, drc_rules, objectives) {
                (Ok(netlist), Ok(drc_rules), Ok(objectives)) => (netlist, drc_rules, objectives),
                (netlist, drc_rules, objectives) => {
                    return Err(InputErrors::merge(
                        [netlist.err(), drc_rules.err(), objectives.err()]
                            .into_iter()
                            .flatten(),
                    )
                    .expect("at least one file failed"));
                }
            };
        let mut issues = check_drawable(
            &netlist.value,
            &drc_rules.value,
            &inputs.drc_rules.label,
            &netlist_json,
        );
        issues.extend(check_net_currents(
            &netlist.value,
            &drc_rules.value,
            &objectives.value,
            &Labels {
                netlist: &inputs.netlist.label,
                drc_rules: &inputs.drc_rules.label,
                objectives: &inputs.objectives.label,
            },
        ));
        if !issues.is_empty() {
            let issues = match locations {
                Some(locations) => locations.locate(issues),
                None => issues,
            };
            return Err(InputErrors { issues });
        }
        let mut circuit = netlist.value;
        carry_currents(&mut circuit, &objectives.value);
        let mut warnings = netlist.warnings;
        warnings.extend(drc_rules.warnings);
        warnings.extend(objectives.warnings);
        let context = TaskContext {
            circuit,
            drc_rules: drc_rules.value,
            objectives: objectives.value,
            session_id: session_id.into(),
            warnings,
        };
        Ok(LoadedJob {
            context,
            inputs: TaskInputs {
                netlist: netlist_json,
                drc_rules: inputs.drc_rules.clone(),
                objectives: inputs.objectives.clone(),
            },
        })
    }

    /// Reads the three files and loads them.
    pub fn load_paths(
        paths: &InputPaths,
        session_id: impl Into<String>,
    ) -> Result<TaskContext, InputErrors> {
        TaskContext::load(&TaskInputs::read(paths)?, session_id)
    }
}
