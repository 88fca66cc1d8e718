//! The ota5 example's inputs and the skills of a basic worker, shared by the tests of
//! the rule-based planner on it (`heuristic_planner.rs`, `placement_rows.rs`).

use centroid_schemas::{InputFile, TaskContext, TaskInputs};
use serde_json::Value;

use centroid_planner::heuristic::RawInputs;
use centroid_planner::skill_catalog::SkillCatalog;

/// The ota5 example, loaded.
pub fn ota5() -> (TaskContext, RawInputs) {
    load(
        include_str!("../../../examples/ota5/netlist.json"),
        include_str!("../../../examples/ota5/drc_rules.json"),
        include_str!("../../../examples/ota5/objectives.json"),
    )
}

pub fn load(netlist: &str, rules: &str, objectives: &str) -> (TaskContext, RawInputs) {
    let file = |label: &str, text: &str| InputFile {
        label: label.into(),
        bytes: text.as_bytes().to_vec(),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json", netlist),
        drc_rules: file("drc_rules.json", rules),
        objectives: file("objectives.json", objectives),
    };
    let context = TaskContext::load(&inputs, "t").unwrap();
    (
        context,
        RawInputs {
            drc_rules: serde_json::from_str(rules).unwrap(),
            netlist: serde_json::from_str(netlist).unwrap(),
        },
    )
}

pub fn skills(names: &[&str]) -> SkillCatalog {
    names
        .iter()
        .map(|name| (name.to_string(), Value::Null))
        .collect()
}

pub const BASIC: &[&str] = &[
    "tech.load",
    "layout.create_device",
    "layout.create_common_centroid_pair",
    "layout.add_dummies",
    "layout.place",
    "drc.run",
    "layout.metrics",
    "layout.export",
];
