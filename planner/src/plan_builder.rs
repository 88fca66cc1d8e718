//! Building a plan step by step, fitted to the skills the workers advertise:
//! properties a closed schema does not declare are dropped, and a step whose
//! required properties the planner cannot fill is left out (with a note).

use serde_json::{Map, Value, json};

use crate::plan::{Plan, PlanStep};
use crate::skill_catalog::SkillCatalog;

/// The cell every placed (and routed) layout ends in.
pub const TOP_CELL: &str = "TOP";

/// Placeholder the worker replaces by the candidate's scratch directory.
pub const CANDIDATE_DIR: &str = "${CANDIDATE_DIR}";

/// A device id as the skills accept it (`^[A-Za-z0-9_.$:-]+$`): flattened ids such as
/// `X1/M1` become `X1_M1`, used alike by the generators, the router and LVS.
pub fn skill_id(device_id: &str) -> String {
    device_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.$:-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A cell name made of letters, digits and `_`.
pub fn cell_name(prefix: &str, id: &str) -> String {
    let safe: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{prefix}_{safe}")
}

/// Drops properties a closed schema does not declare. `None` when a required
/// property is missing (the step cannot be called as planned).
pub fn fit_to_schema(arguments: Value, schema: &Value) -> Option<Value> {
    let Value::Object(mut fields) = arguments else {
        return Some(arguments);
    };
    let Some(schema) = schema.as_object() else {
        return Some(Value::Object(fields));
    };
    if let Some(properties) = schema.get("properties").and_then(Value::as_object)
        && schema.get("additionalProperties") == Some(&Value::Bool(false))
    {
        fields.retain(|name, _| properties.contains_key(name));
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let missing = required
            .iter()
            .filter_map(Value::as_str)
            .any(|name| !fields.contains_key(name));
        if missing {
            return None;
        }
    }
    Some(Value::Object(fields))
}

/// The steps of a plan under construction and the notes on what was left out.
pub struct PlanBuilder<'a> {
    skills: &'a SkillCatalog,
    pub steps: Vec<PlanStep>,
    pub notes: Vec<String>,
}

impl<'a> PlanBuilder<'a> {
    pub fn new(skills: &'a SkillCatalog) -> PlanBuilder<'a> {
        PlanBuilder {
            skills,
            steps: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub fn has(&self, skill: &str) -> bool {
        self.skills.contains_key(skill)
    }

    /// Whether the workers' `skill` takes `argument` (a property of its schema).
    pub fn takes(&self, skill: &str, argument: &str) -> bool {
        self.skills.get(skill).is_some_and(|schema| {
            schema
                .get("properties")
                .and_then(Value::as_object)
                .is_some_and(|properties| properties.contains_key(argument))
        })
    }

    /// Whether the workers' `skill` takes `field` inside its object argument `argument`.
    pub fn takes_field(&self, skill: &str, argument: &str, field: &str) -> bool {
        self.skills.get(skill).is_some_and(|schema| {
            schema
                .pointer(&format!("/properties/{argument}/properties"))
                .and_then(Value::as_object)
                .is_some_and(|properties| properties.contains_key(field))
        })
    }

    /// Adds a step (fitted to the schema); returns whether it was added.
    pub fn push(
        &mut self,
        skill: &str,
        arguments: Value,
        optional: bool,
        output_cell: &str,
    ) -> bool {
        let schema = self.skills.get(skill).cloned().unwrap_or(Value::Null);
        let Some(arguments) = fit_to_schema(arguments, &schema) else {
            self.notes.push(format!(
                "left out {skill}: its schema needs arguments the planner cannot fill"
            ));
            return false;
        };
        let step_id = format!("s{:02}_{}", self.steps.len() + 1, skill.replace('.', "_"));
        self.steps.push(PlanStep {
            step_id,
            skill: skill.to_string(),
            arguments,
            optional,
            output_cell: output_cell.to_string(),
        });
        true
    }
}

/// The plan used with `noop_plan`: one `debug.noop` (or `debug.sleep`) step.
pub fn noop_plan(sleep_ms: u64) -> Plan {
    let (skill, arguments) = match sleep_ms {
        0 => ("debug.noop", Value::Object(Map::new())),
        _ => ("debug.sleep", json!({"seconds": sleep_ms as f64 / 1000.0})),
    };
    Plan {
        summary: "debug plan".into(),
        steps: vec![PlanStep {
            step_id: format!("s01_{}", skill.replace('.', "_")),
            skill: skill.into(),
            arguments,
            optional: false,
            output_cell: String::new(),
        }],
    }
}
