//! The corpus of bad inputs `bad_inputs.rs` runs: each case one change to a valid file of
//! ota5 (an edit of its JSON, other bytes, or the file removed) and the text the message must
//! contain. The cases are grouped by the file they break.

use std::path::PathBuf;

use serde_json::Value;

mod netlist_cases;
mod objectives_cases;
mod rules_cases;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum File {
    Netlist,
    Rules,
    Objectives,
}

impl File {
    pub fn name(self) -> &'static str {
        match self {
            File::Netlist => "netlist.json",
            File::Rules => "drc_rules.json",
            File::Objectives => "objectives.json",
        }
    }
}

pub enum Change {
    /// Edit the JSON of a valid file; returns the expected pointer.
    Edit(Box<dyn Fn(&mut Value) -> String>),
    /// Replace the file's bytes; the problem is with the whole document.
    Bytes(Vec<u8>),
    /// Remove the file.
    Delete,
}

pub struct Case {
    pub name: &'static str,
    pub file: File,
    pub change: Change,
    /// Text the message must contain.
    pub message: &'static str,
}

fn edit(
    name: &'static str,
    file: File,
    message: &'static str,
    change: impl Fn(&mut Value) -> String + 'static,
) -> Case {
    Case {
        name,
        file,
        change: Change::Edit(Box::new(change)),
        message,
    }
}

fn bytes(
    name: &'static str,
    file: File,
    message: &'static str,
    content: impl Into<Vec<u8>>,
) -> Case {
    Case {
        name,
        file,
        change: Change::Bytes(content.into()),
        message,
    }
}

pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

pub fn base(file: File) -> Value {
    let path = examples().join("ota5").join(file.name());
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

pub fn device(netlist: &mut Value, index: usize) -> &mut Value {
    &mut netlist["cells"][0]["devices"][index]
}

pub fn push_rule(rules: &mut Value, rule: Value) -> String {
    let list = rules["rules"].as_array_mut().unwrap();
    list.push(rule);
    format!("/rules/{}", list.len() - 1)
}

/// Every case: documents that are not JSON objects and the netlist's, then the rules', then
/// the objectives'.
pub fn corpus() -> Vec<Case> {
    let mut cases = netlist_cases::cases();
    cases.extend(rules_cases::cases());
    cases.extend(objectives_cases::cases());
    cases
}
