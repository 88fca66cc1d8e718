//! The rule-based ReAct adjustment: after a step failed with INVALID_PARAM,
//! NOT_FOUND or CONFLICT, change the plan so that the next try can succeed.
//!
//! The decision keys on the error's code and its machine-readable
//! `details.reason` (set by the skills, see [`reasons`]), never on message text.

use serde_json::{Value, json};

use crate::plan::Plan;
use crate::planner::Adjustment;
use crate::step_failure::{StepFailure, codes};

/// `error.details.reason` values the skills set and this planner relies on. A
/// test runs the real skill server and provokes each of them.
pub mod reasons {
    /// `layout.create_common_centroid_pair`: the arrangement needs an even unit
    /// count per device (ABBA, 2-D).
    pub const ODD_UNIT_COUNT: &str = "odd_unit_count";
    /// `layout.place`: two placed cells overlap.
    pub const OVERLAP: &str = "overlap";
    /// `layout.place`: two placed cells are closer than the rules allow.
    pub const TOO_CLOSE: &str = "too_close";
    /// any skill: the arguments failed its input schema (`details.pointer` says where).
    pub const SCHEMA: &str = "schema";

    /// (skill, reason) pairs the adjustment relies on.
    pub const RELIED_ON: &[(&str, &str)] = &[
        ("layout.create_common_centroid_pair", ODD_UNIT_COUNT),
        ("layout.place", OVERLAP),
        ("layout.place", TOO_CLOSE),
        ("debug.sleep", SCHEMA),
    ];
}

/// Gap added to every placement gap per adjustment, in µm, and the largest row gap tried.
const GAP_STEP_UM: f64 = 0.5;
const MAX_ROW_GAP_UM: f64 = 2.0;

/// Arguments that carry the step's meaning; a schema complaint about them is not
/// fixed by dropping them.
const ESSENTIAL_ARGUMENTS: &[&str] = &[
    "cell",
    "cell_name",
    "device_a",
    "device_b",
    "devices",
    "rules",
    "rows",
    "path",
];

/// The adjusted plan after `step_id` failed with `failure`; `None` when no rule applies.
pub fn adjust(plan: &Plan, step_id: &str, failure: &StepFailure) -> Option<Adjustment> {
    let index = plan.steps.iter().position(|step| step.step_id == step_id)?;
    let step = &plan.steps[index];
    let reason = failure.reason();
    let code = failure.code.as_str();
    let mut adjusted = plan.clone();
    let note = |action: &str| format!("{step_id}: {}; {action}", failure.message);

    // A pair whose unit count does not fit the arrangement: fall back to ABAB.
    if step.skill == "layout.create_common_centroid_pair"
        && reason == reasons::ODD_UNIT_COUNT
        && step.arguments.get("arrangement").and_then(Value::as_str) != Some("ABAB")
    {
        adjusted.steps[index].arguments["arrangement"] = json!("ABAB");
        return Some(Adjustment {
            plan: adjusted,
            note: note("arrangement → ABAB"),
        });
    }
    // Placement conflicts: open the gaps.
    if step.skill == "layout.place"
        && (code == codes::CONFLICT || reason == reasons::OVERLAP || reason == reasons::TOO_CLOSE)
    {
        let arguments = &mut adjusted.steps[index].arguments;
        let row_gap = arguments
            .get("row_gap")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        if row_gap >= MAX_ROW_GAP_UM {
            return None;
        }
        arguments["row_gap"] = json!(row_gap + GAP_STEP_UM);
        if let Some(rows) = arguments.get_mut("rows").and_then(Value::as_array_mut) {
            for row in rows {
                let gap = row.get("gap").and_then(Value::as_f64).unwrap_or(0.0);
                row["gap"] = json!(gap + GAP_STEP_UM);
            }
        }
        return Some(Adjustment {
            plan: adjusted,
            note: note("gaps +0.5 µm"),
        });
    }
    // A schema complaint about one optional argument: drop the argument.
    if code == codes::INVALID_PARAM
        && reason == reasons::SCHEMA
        && let Some(name) = offending_argument(failure)
        && let Some(fields) = adjusted.steps[index].arguments.as_object_mut()
        && fields.contains_key(&name)
        && !ESSENTIAL_ARGUMENTS.contains(&name.as_str())
    {
        fields.remove(&name);
        return Some(Adjustment {
            plan: adjusted,
            note: note(&format!("dropped argument {name}")),
        });
    }
    // An optional step that fails: leave it out; later steps use its input cell.
    if step.optional {
        let removed = adjusted.steps.remove(index);
        if !removed.output_cell.is_empty()
            && let Some(input_cell) = removed.arguments.get("cell").and_then(Value::as_str)
        {
            let replacement = Value::String(input_cell.to_string());
            for later in adjusted.steps.iter_mut().skip(index) {
                replace_string(&mut later.arguments, &removed.output_cell, &replacement);
            }
        }
        return Some(Adjustment {
            plan: adjusted,
            note: note("optional step left out"),
        });
    }
    None
}

/// The top-level argument a schema error points at (`details.pointer`, a JSON
/// pointer such as `/count` or `/rows/0/gap`).
fn offending_argument(failure: &StepFailure) -> Option<String> {
    let pointer = failure.details.get("pointer").and_then(Value::as_str)?;
    let name = pointer.strip_prefix('/')?.split('/').next()?;
    (!name.is_empty()).then(|| name.replace("~1", "/").replace("~0", "~"))
}

fn replace_string(value: &mut Value, from: &str, to: &Value) {
    match value {
        Value::String(text) if text == from => *value = to.clone(),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_string(item, from, to)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| replace_string(field, from, to)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::PlanStep;

    fn plan(skill: &str, arguments: Value) -> Plan {
        Plan {
            summary: String::new(),
            steps: vec![PlanStep {
                step_id: "s1".into(),
                skill: skill.into(),
                arguments,
                optional: false,
                output_cell: String::new(),
            }],
        }
    }

    fn failure(code: &str, details: Value) -> StepFailure {
        StepFailure {
            code: code.into(),
            message: "failed".into(),
            details,
        }
    }

    #[test]
    fn a_placement_conflict_opens_the_gaps_by_its_code_alone() {
        let placed = plan("layout.place", json!({"rows": [{"gap": 0.0}]}));
        let adjusted = adjust(&placed, "s1", &failure(codes::CONFLICT, Value::Null)).unwrap();
        assert_eq!(adjusted.plan.steps[0].arguments["row_gap"], json!(0.5));
        assert_eq!(
            adjusted.plan.steps[0].arguments["rows"][0]["gap"],
            json!(0.5)
        );
        assert_eq!(
            adjust(&placed, "s1", &failure("INTERNAL_ERROR", Value::Null)),
            None,
            "another code without a reason: no rule applies"
        );
    }

    #[test]
    fn a_schema_complaint_drops_an_optional_argument_never_an_essential_one() {
        let step = plan("debug.sleep", json!({"cell": "top", "extra": 1}));
        let about = |pointer: &str| {
            failure(
                codes::INVALID_PARAM,
                json!({"reason": reasons::SCHEMA, "pointer": pointer}),
            )
        };
        let adjusted = adjust(&step, "s1", &about("/extra")).unwrap();
        assert_eq!(adjusted.plan.steps[0].arguments, json!({"cell": "top"}));
        assert_eq!(adjust(&step, "s1", &about("/cell")), None);
        let not_invalid = failure(
            codes::CONFLICT,
            json!({"reason": reasons::SCHEMA, "pointer": "/extra"}),
        );
        assert_eq!(adjust(&step, "s1", &not_invalid), None);
    }
}
