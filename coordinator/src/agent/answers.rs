//! Parsing and validating what the model answers. Nothing a model writes is used
//! unless it passes here: design values must lie inside the design space, plan
//! steps must name registered skills with arguments that obey their JSON
//! Schemas. Each function returns the list of problems, worded for the repair
//! round ("candidates[1].arrangement: …").

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

use crate::model::{DesignPoint, Plan, PlanStep};
use crate::planner::{DesignSpace, SkillCatalog};

/// Problems found in an answer, one line each.
pub type Problems = Vec<String>;

/// A planning answer that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub thought: String,
    pub points: Vec<DesignPoint>,
    pub plan: Option<Plan>,
}

/// The critic's verdict on an iteration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Critique {
    pub feedback: String,
    pub suggestions: Vec<String>,
}

impl Critique {
    /// As the next planning prompt shows it.
    pub fn as_prompt(&self) -> String {
        let mut text = self.feedback.clone();
        for suggestion in &self.suggestions {
            text.push_str("\n- ");
            text.push_str(suggestion);
        }
        text
    }
}

/// The JSON object in a model's answer: the whole text, else the text inside a
/// fenced block, else from the first `{` to the last `}`.
pub fn json_object(text: &str) -> Result<Map<String, Value>, Problems> {
    let trimmed = text.trim();
    let fenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|inner| inner.rsplit_once("```"))
        .map(|(inner, _)| inner.trim());
    let braces = match (trimmed.find('{'), trimmed.rfind('}')) {
        (Some(start), Some(end)) if start < end => Some(&trimmed[start..=end]),
        _ => None,
    };
    for candidate in [Some(trimmed), fenced, braces].into_iter().flatten() {
        if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(candidate) {
            return Ok(object);
        }
    }
    let shown: String = trimmed.chars().take(80).collect();
    Err(vec![format!(
        "the answer is not one JSON object (it starts with {shown:?})"
    )])
}

/// A planning answer: design points inside `space` (at most `count`, no
/// duplicates) and/or a whole plan of registered skills.
pub fn decision(
    text: &str,
    space: &DesignSpace,
    skills: &SkillCatalog,
    count: usize,
) -> Result<Decision, Problems> {
    let object = json_object(text)?;
    let mut problems = Problems::new();
    let mut points = Vec::new();
    match object.get("candidates") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match design_point(item, space) {
                    Ok(point) if !points.contains(&point) && points.len() < count => {
                        points.push(point)
                    }
                    Ok(_) => {}
                    Err(mut found) => {
                        for problem in &mut found {
                            *problem = format!("candidates[{index}].{problem}");
                        }
                        problems.extend(found);
                    }
                }
            }
        }
        Some(_) => problems.push("candidates: expected an array of design points".into()),
    }
    let plan = match object.get("plan") {
        None | Some(Value::Null) => None,
        Some(value) => match plan(value, skills) {
            Ok(plan) => Some(plan),
            Err(found) => {
                problems.extend(found.into_iter().map(|problem| format!("plan.{problem}")));
                None
            }
        },
    };
    if problems.is_empty() && points.is_empty() && plan.is_none() {
        problems.push("no candidates and no plan: give at least one design point".into());
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Decision {
        thought: text_field(&object, "thought"),
        points,
        plan,
    })
}

/// One design point; a missing coordinate takes the default point's value.
pub fn design_point(value: &Value, space: &DesignSpace) -> Result<DesignPoint, Problems> {
    let Value::Object(object) = value else {
        return Err(vec!["expected an object".into()]);
    };
    let default = space.default_point();
    let mut problems = Problems::new();
    let mut number = |name: &str, allowed: &[u32], fallback: u32| -> u32 {
        match object.get(name) {
            None => fallback,
            Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if allowed.contains(&n) => n,
                _ => {
                    problems.push(format!("{name}: {value} is not one of {allowed:?}"));
                    fallback
                }
            },
        }
    };
    let finger_split = number("finger_split", &space.finger_splits, default.finger_split);
    let dummies = number("dummies", &space.dummies, default.dummies);
    let orders: Vec<u32> = (0..space.row_orders.max(1)).collect();
    let row_order = number("row_order", &orders, default.row_order);
    let spacing_nm = number("spacing_nm", &space.spacings_nm, default.spacing_nm);
    let aspect_ratio_pct = number(
        "aspect_ratio_pct",
        &space.aspect_ratios_pct,
        default.aspect_ratio_pct,
    );
    let arrangement = match object.get("arrangement") {
        None => default.arrangement.clone(),
        Some(Value::String(name)) if space.arrangements.contains(name) => name.clone(),
        Some(value) => {
            problems.push(format!(
                "arrangement: {value} is not one of {:?}",
                space.arrangements
            ));
            default.arrangement.clone()
        }
    };
    let guard_ring = match object.get("guard_ring") {
        None => default.guard_ring,
        Some(Value::Bool(flag)) if space.guard_rings.contains(flag) => *flag,
        Some(value) => {
            problems.push(format!(
                "guard_ring: {value} is not one of {:?}",
                space.guard_rings
            ));
            default.guard_ring
        }
    };
    let (order, rows, module_arrangements) = placement_genes(object, space, &mut problems);
    let module_dummies = group_genes(object, "module_dummies", space, &mut problems, |value| {
        value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| space.dummies.contains(n))
    });
    let module_rings = group_genes(object, "module_rings", space, &mut problems, |value| {
        value
            .as_bool()
            .filter(|ring| space.guard_rings.contains(ring))
    });
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(DesignPoint {
        arrangement,
        finger_split,
        dummies,
        guard_ring,
        row_order,
        spacing_nm,
        aspect_ratio_pct,
        order,
        rows,
        module_arrangements,
        module_dummies,
        module_rings,
    })
}

/// An optional map `name` of matched module → value (`module_dummies`,
/// `module_rings`): every module one of the space's groups, every value one that
/// `allowed` accepts. Absent: the global value for every module.
fn group_genes<T>(
    object: &Map<String, Value>,
    name: &str,
    space: &DesignSpace,
    problems: &mut Problems,
    allowed: impl Fn(&Value) -> Option<T>,
) -> BTreeMap<String, T> {
    let mut genes = BTreeMap::new();
    let Some(value) = object.get(name).filter(|value| !value.is_null()) else {
        return genes;
    };
    let Some(entries) = value.as_object() else {
        problems.push(format!(
            "{name}: {value} is not an object of matched module → value"
        ));
        return genes;
    };
    for (module, gene) in entries {
        match allowed(gene) {
            Some(gene) if space.groups.contains(module) => {
                genes.insert(module.clone(), gene);
            }
            _ => problems.push(format!(
                "{name}.{module}: {gene} is not allowed; modules: {:?}, dummies {:?}, rings {:?}",
                space.groups, space.dummies, space.guard_rings
            )),
        }
    }
    genes
}

/// The optional placement genes of an answered point: `order` (device ids of the
/// space), `rows` (kind → rows, at most the kind's `max_rows`) and
/// `module_arrangements` (matched module → arrangement). Absent: the default.
fn placement_genes(
    object: &Map<String, Value>,
    space: &DesignSpace,
    problems: &mut Problems,
) -> (Vec<String>, BTreeMap<String, u32>, BTreeMap<String, String>) {
    let known: HashSet<&String> = space.kinds.iter().flat_map(|kind| &kind.devices).collect();
    let mut order = Vec::new();
    match object.get("order") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(device) if known.contains(&device.to_string()) => {
                        order.push(device.to_string())
                    }
                    _ => problems.push(format!(
                        "order[{index}]: {item} is not a device of the circuit"
                    )),
                }
            }
        }
        Some(value) => problems.push(format!("order: {value} is not an array of device ids")),
    }
    let mut rows = BTreeMap::new();
    if let Some(value) = object.get("rows").filter(|value| !value.is_null()) {
        for (kind, count) in value.as_object().into_iter().flatten() {
            let limit = space.kinds.iter().find(|known| known.kind == *kind);
            match (limit, count.as_u64()) {
                (Some(limit), Some(count)) if (1..=u64::from(limit.max_rows)).contains(&count) => {
                    if count > 1 {
                        rows.insert(kind.clone(), count as u32);
                    }
                }
                _ => problems.push(format!(
                    "rows.{kind}: {count} is not a row count of a device kind of the circuit"
                )),
            }
        }
    }
    let mut module_arrangements = BTreeMap::new();
    if let Some(value) = object
        .get("module_arrangements")
        .filter(|value| !value.is_null())
    {
        for (module, arrangement) in value.as_object().into_iter().flatten() {
            match arrangement.as_str() {
                Some(name) if space.modules.contains(module) && space.arrangements.iter().any(|known| known == name) => {
                    module_arrangements.insert(module.clone(), name.to_string());
                }
                _ => problems.push(format!(
                    "module_arrangements.{module}: {arrangement} is not one of {:?} for a matched module",
                    space.arrangements
                )),
            }
        }
    }
    (order, rows, module_arrangements)
}

/// A plan in seed 000's format `{plan_summary, steps[{step_id, name, skill_name,
/// params, expected_output, dependencies}]}`: ids unique, dependencies on earlier
/// steps, every skill registered, params valid against its schema.
pub fn plan(value: &Value, skills: &SkillCatalog) -> Result<Plan, Problems> {
    let Some(steps) = value.get("steps").and_then(Value::as_array) else {
        return Err(vec!["steps: expected an array of steps".into()]);
    };
    if steps.is_empty() {
        return Err(vec!["steps: the plan has no step".into()]);
    }
    let mut problems = Problems::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut plan_steps = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let at = |field: &str| format!("steps[{index}].{field}");
        let step_id = step
            .get("step_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if step_id.is_empty() {
            problems.push(format!("{}: missing", at("step_id")));
        } else if !seen.insert(step_id.clone()) {
            problems.push(format!("{}: {step_id:?} is used twice", at("step_id")));
        }
        for dependency in step
            .get("dependencies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let known = dependency
                .as_str()
                .is_some_and(|id| seen.contains(id) && id != step_id);
            if !known {
                problems.push(format!(
                    "{}: {dependency} is not an earlier step",
                    at("dependencies")
                ));
            }
        }
        let skill = step
            .get("skill_name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = step
            .get("params")
            .cloned()
            .unwrap_or(Value::Object(Map::new()));
        match skill_call(skill, &params, skills) {
            Ok(()) => plan_steps.push(PlanStep {
                step_id,
                skill: skill.to_string(),
                arguments: params,
                optional: false,
                output_cell: String::new(),
            }),
            Err(found) => problems.extend(found.into_iter().map(|problem| at(&problem))),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Plan {
        summary: value
            .get("plan_summary")
            .and_then(Value::as_str)
            .unwrap_or("plan written by the LLM planner")
            .to_string(),
        steps: plan_steps,
    })
}

/// A call of a registered skill whose params obey its input schema.
pub fn skill_call(skill: &str, params: &Value, skills: &SkillCatalog) -> Result<(), Problems> {
    let Some(schema) = skills.get(skill) else {
        let mut known: Vec<&String> = skills.keys().collect();
        known.sort();
        return Err(vec![format!(
            "skill_name: {skill:?} is not a skill of the live workers ({known:?})"
        )]);
    };
    if !params.is_object() {
        return Err(vec!["params: expected an object".into()]);
    }
    if schema.is_null() {
        return Ok(());
    }
    let validator = jsonschema::validator_for(schema)
        .map_err(|error| vec![format!("skill_name: {skill}'s schema is unusable: {error}")])?;
    let problems: Problems = validator
        .iter_errors(params)
        .map(|error| format!("params{}: {error}", error.instance_path().as_str()))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The critic's answer `{qualitative_feedback, suggestions[]}`.
pub fn critique(text: &str) -> Result<Critique, Problems> {
    let object = json_object(text)?;
    let feedback = text_field(&object, "qualitative_feedback");
    if feedback.is_empty() {
        return Err(vec!["qualitative_feedback: missing or empty".into()]);
    }
    let suggestions = object
        .get("suggestions")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(Critique {
        feedback,
        suggestions,
    })
}

/// The meta-prompt agent's answer `{system_prompt}`: new guidance, not empty and
/// at most `max_tokens` long.
pub fn guidance(text: &str, max_tokens: usize) -> Result<String, Problems> {
    let object = json_object(text)?;
    let prompt = text_field(&object, "system_prompt");
    if prompt.is_empty() {
        return Err(vec!["system_prompt: missing or empty".into()]);
    }
    let tokens = crate::llm::tokens::count_tokens(&prompt);
    if tokens > max_tokens {
        return Err(vec![format!(
            "system_prompt: {tokens} tokens; at most {max_tokens}"
        )]);
    }
    Ok(prompt)
}

/// ReAct's answer `{thought, action: {step_id, skill_name, params}}`: the plan
/// with the failed step replaced, and the note "Thought: …; Action: …".
pub fn react_action(
    text: &str,
    plan: &Plan,
    step_id: &str,
    skills: &SkillCatalog,
) -> Result<(Plan, String), Problems> {
    let object = json_object(text)?;
    let Some(action) = object.get("action").and_then(Value::as_object) else {
        return Err(vec!["action: expected an object".into()]);
    };
    let named = action
        .get("step_id")
        .and_then(Value::as_str)
        .unwrap_or(step_id);
    if named != step_id {
        return Err(vec![format!(
            "action.step_id: {named:?}; only the failed step {step_id:?} may change"
        )]);
    }
    let skill = action
        .get("skill_name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = action.get("params").cloned().unwrap_or(Value::Null);
    skill_call(skill, &params, skills).map_err(|found| {
        found
            .into_iter()
            .map(|p| format!("action.{p}"))
            .collect::<Problems>()
    })?;
    let mut adjusted = plan.clone();
    let Some(step) = adjusted
        .steps
        .iter_mut()
        .find(|step| step.step_id == step_id)
    else {
        return Err(vec![format!("the plan has no step {step_id:?}")]);
    };
    if step.arguments == params && step.skill == skill {
        return Err(vec![
            "action: the same call that failed; change something".into(),
        ]);
    }
    step.skill = skill.to_string();
    step.arguments = params;
    let thought = text_field(&object, "thought");
    Ok((adjusted, format!("Thought: {thought}; Action: {skill}")))
}

fn text_field(object: &Map<String, Value>, name: &str) -> String {
    object
        .get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string()
}
