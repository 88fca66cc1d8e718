//! Parsing and validating what the model answers. Nothing a model writes is used
//! unless it passes here: design values must lie inside the design space, plan
//! steps must name registered skills with arguments that obey their JSON
//! Schemas. Each function returns the list of problems, worded for the repair
//! round ("candidates[1].arrangement: …").

use std::collections::HashSet;

use serde_json::{Map, Value};

use centroid_planner::advice::JournalEntry;
use centroid_planner::design_point::DesignPoint;
use centroid_planner::design_space::DesignSpace;
use centroid_planner::plan::{Plan, PlanStep};
use centroid_planner::point_from_json::design_point;
use centroid_planner::skill_catalog::SkillCatalog;

use crate::agent::plan_checks::{PlanLimits, check_arguments, is_debug};

pub use centroid_planner::point_from_json::Problems;

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
    limits: &PlanLimits,
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
        Some(value) => match plan(value, skills, limits) {
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

/// The points of `points` already in the journal, compared in the design
/// space's canonical spelling (a point written with defaults left out, or with
/// a module value equal to the global one, is the same layout), each as the
/// model's JSON with the journal's candidate id.
pub fn repeats(
    points: &[DesignPoint],
    journal: &[JournalEntry],
    space: &DesignSpace,
) -> Vec<String> {
    let tried: Vec<(String, &str)> = journal
        .iter()
        .map(|entry| {
            (
                space.canonical(&entry.point).key(),
                entry.candidate_id.as_str(),
            )
        })
        .collect();
    points
        .iter()
        .filter_map(|point| {
            let key = space.canonical(point).key();
            tried.iter().find(|(seen, _)| *seen == key).map(|(_, id)| {
                format!(
                    "{} (drawn before as {id:?})",
                    serde_json::to_string(point).unwrap_or_default()
                )
            })
        })
        .collect()
}

/// A plan in seed 000's format `{plan_summary, steps[{step_id, name, skill_name,
/// params, expected_output, dependencies}]}`: ids unique, dependencies on earlier
/// steps, every skill registered and not a debug skill, params valid against
/// its schema and within `limits`.
pub fn plan(value: &Value, skills: &SkillCatalog, limits: &PlanLimits) -> Result<Plan, Problems> {
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
        match skill_call(skill, &params, skills, limits) {
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

/// A call of a registered, non-debug skill whose params obey its input schema
/// and `limits` (files in the scratch directory, durations within the deadline).
pub fn skill_call(
    skill: &str,
    params: &Value,
    skills: &SkillCatalog,
    limits: &PlanLimits,
) -> Result<(), Problems> {
    if is_debug(skill) {
        return Err(vec![format!(
            "skill_name: {skill:?} is a debug skill (tests only); a plan may not call it"
        )]);
    }
    let Some(schema) = skills.get(skill) else {
        let mut known: Vec<&String> = skills.keys().filter(|name| !is_debug(name)).collect();
        known.sort();
        return Err(vec![format!(
            "skill_name: {skill:?} is not a skill of the live workers ({known:?})"
        )]);
    };
    if !params.is_object() {
        return Err(vec!["params: expected an object".into()]);
    }
    let mut problems = check_arguments(schema, params, limits);
    if !schema.is_null() {
        let validator = jsonschema::validator_for(schema)
            .map_err(|error| vec![format!("skill_name: {skill}'s schema is unusable: {error}")])?;
        problems.extend(
            validator
                .iter_errors(params)
                .map(|error| format!("params{}: {error}", error.instance_path().as_str())),
        );
    }
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
    limits: &PlanLimits,
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
    skill_call(skill, &params, skills, limits).map_err(|found| {
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
