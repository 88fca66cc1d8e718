//! Centroid's inputs: the JSON Schemas of `netlist.json`, `drc_rules.json` and
//! `objectives.json` (seed 001 §5.2–5.4, versions per §5.6), SPICE/CDL netlists read into
//! the same netlist document ([`spice`]), and the typed, checked model
//! built from them — the flattened [`Circuit`] with net types and recognised modules, the
//! [`DrcRuleSet`] with layer roles, and the [`DesignObjectives`].
//!
//! Loading goes JSON → schema version → JSON Schema → serde → semantic checks; every
//! problem names the file, the JSON pointer and what would be valid, and all problems of
//! all files are reported together ([`InputErrors`]).

pub mod bulk_wells;
pub mod circuit;
pub mod device_layers;
pub mod device_sizes;
pub mod drc_rules;
mod flatten;
pub mod issue;
pub mod json_inputs;
pub mod layer_roles;
pub mod module_types;
pub mod modules;
pub mod mom_capacitance;
pub mod net_currents;
mod net_use;
pub mod netlist;
mod netlist_hierarchy;
pub mod objectives;
pub mod parallel_units;
pub mod parasitics;
pub mod passive_sizing;
pub mod performance;
pub mod performance_check;
mod printable_names;
pub mod rule_lookup;
pub mod schema_check;
pub mod series_stacks;
pub mod source;
pub mod spice;
pub mod task_context;
pub mod testbench;
pub mod version;

pub use circuit::{
    Circuit, Device, DeviceParams, DeviceType, Net, NetType, Subcircuit, SubcircuitInstance,
    TerminalRef, infer_net_type,
};
pub use drc_rules::{DerivedLayer, DerivedOp, DrcRule, DrcRuleSet, LayerDef, RuleType};
pub use issue::{InputErrors, InputIssue};
pub use json_inputs::{InputFile, Loaded, load_drc_rules, load_netlist, load_objectives};
pub use module_types::{CircuitModule, ModuleMember, ModuleType};
pub use modules::recognize_modules;
pub use objectives::{DesignConstraints, DesignObjectives, Objective, ObjectiveName};
pub use parallel_units::ParallelUnits;
pub use parasitics::{ParasiticCut, ParasiticLayer, ParasiticOverlap, Parasitics};
pub use performance::{
    PerformanceObjectives, PerformanceSpec, PortRoles, SchematicJunctions, TestbenchKind,
};
pub use series_stacks::SeriesStacks;
pub use spice::{ModelMap, SpiceOptions, is_spice_path};
pub use task_context::{InputPaths, LoadedJob, NetlistOptions, TaskContext, TaskInputs};
pub use testbench::{TESTBENCH_FILE, UserTestbench};
pub use version::{InputKind, ResolvedVersion, SchemaVersion};
