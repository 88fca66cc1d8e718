//! The prompts of the LLM planner (seed 000 §4.2.3), built within the model's
//! context budget (§4.2.5): the system prompt (guidance, the design space, the
//! answer format, the live workers' skills) and the user prompts of planning,
//! the critic, the meta-prompt agent and ReAct. Every part is counted with the
//! real tokenizer; parts are kept by priority and truncated with a marker.

use std::fmt::Write as _;

use centroid_planner::advice::JournalEntry;
use centroid_planner::design_space::DesignSpace;
use centroid_planner::plan::Plan;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_planner::step_failure::StepFailure;
use centroid_schemas::TaskContext;
use serde_json::Value;

use crate::llm::LlmSettings;
use crate::llm::tokens::{PromptPart, count_tokens, fit_prompt};

/// The planner's guidance before any meta-prompt rewrite (version 0).
pub const DEFAULT_GUIDANCE: &str = "You are the layout planner of Centroid, an analog IC layout \
engine that lays out a circuit many times in parallel and keeps the best DRC- and LVS-clean \
layout. You choose design points: how matched devices are arranged (common centroid ABBA, \
interleaved ABAB, two-dimensional 2D), how device fingers are split into unit instances, \
dummies at row ends, guard rings, the order of device rows, extra spacing and the aspect ratio \
of the placement. Think like a layout engineer: common centroid and dummies for matched pairs \
and mirrors, compact placement for area, more spacing only where DRC failed. Learn from the \
journal: keep what passed with a high score, change what failed, and never repeat a point \
already tried.";

/// Tokens kept free for the framing of each message (role markers).
const MESSAGE_OVERHEAD: usize = 8;

/// How the tokens of the context window are shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// tokens for the system prompt
    pub system: usize,
    /// tokens for system + user prompts together
    pub prompt: usize,
}

impl Budget {
    /// The window minus the answer's reserve (at most a quarter of the window);
    /// the system prompt gets at most half of what remains.
    pub fn of(settings: &LlmSettings) -> Budget {
        let window = settings.max_context_tokens as usize;
        let reserve = (settings.max_tokens as usize).min(window / 4);
        let prompt = window.saturating_sub(reserve + 2 * MESSAGE_OVERHEAD);
        Budget {
            system: prompt / 2,
            prompt,
        }
    }

    /// What the user prompt may use next to a system prompt of `system_tokens`.
    pub fn user(&self, system_tokens: usize) -> usize {
        self.prompt.saturating_sub(system_tokens)
    }
}

/// The system prompt of planning: guidance, the space, the answer format, the skills.
pub fn planning_system(
    guidance: &str,
    space: &DesignSpace,
    skills: &SkillCatalog,
    budget: usize,
) -> String {
    let format = "Answer with one JSON object and nothing else:\n\
{\"thought\": \"what you learned and why you choose these points\",\n \
\"candidates\": [{\"arrangement\": \"...\", \"finger_split\": 1, \"dummies\": 1, \
\"guard_ring\": false, \"row_order\": 0, \"spacing_nm\": 0, \"aspect_ratio_pct\": 100, \
\"order\": [\"<device ids, left to right>\"], \"rows\": {\"<kind>\": 2}, \
\"module_arrangements\": {\"<module>\": \"ABBA\"}, \"module_dummies\": {\"<module>\": 2}, \
\"module_rings\": {\"<module>\": true}, \"why\": \"...\"}],\n \
\"plan\": null}\n\
Every value must be one of the allowed values; order, rows, module_arrangements, \
module_dummies and module_rings are optional (absent: the default order, one row per kind, \
the global arrangement, dummies and guard ring). \"plan\" is optional: a whole plan in the \
format {\"plan_summary\": \"...\", \"steps\": [{\"step_id\": \"s1\", \"name\": \"...\", \
\"skill_name\": \"<a skill below>\", \"params\": {}, \"expected_output\": \"...\", \
\"dependencies\": []}]} whose params obey the skill's schema; leave it null unless you \
are sure.";
    fit_prompt(
        vec![
            part("Role", 0, guidance, 64),
            part(
                "Design space (allowed values)",
                0,
                &describe_space(space),
                64,
            ),
            part("Answer format", 0, format, 64),
            part(
                "Skills of the live workers",
                2,
                &describe_skills(skills),
                32,
            ),
        ],
        budget,
    )
    .text
}

/// The user prompt of planning iteration `iteration`.
pub struct PlanningPrompt<'a> {
    pub task: &'a TaskContext,
    pub iteration: u32,
    pub count: usize,
    pub journal: &'a [JournalEntry],
    pub feedback: &'a str,
    /// similar earlier jobs and failure patterns (long-term memory), one line each
    pub history: &'a [String],
    /// sections of layout knowledge, `[source] text` each
    pub knowledge: &'a [String],
}

impl PlanningPrompt<'_> {
    pub fn render(&self, budget: usize) -> String {
        let circuit = &self.task.circuit;
        let ids: Vec<&str> = circuit
            .devices
            .iter()
            .map(|device| device.id.as_str())
            .collect();
        let task = format!(
            "Iteration {} of the search for circuit {} ({} devices, process {}). Propose up to {} \
             new design points, best first.",
            self.iteration,
            circuit.name,
            circuit.devices.len(),
            self.task.drc_rules.tech,
            self.count
        );
        let mut parts = vec![
            part("Task", 0, &task, 32),
            part("Device ids", 0, &ids.join(", "), 16),
            part(
                "Circuit (devices, nets, recognised modules)",
                1,
                &circuit.summarize(),
                64,
            ),
            part("Objectives", 1, &objectives(self.task), 32),
            part(
                "Journal (candidates so far)",
                2,
                &journal_lines(self.journal),
                64,
            ),
            part("Design rules", 3, &rules(self.task), 32),
        ];
        if !self.history.is_empty() {
            parts.push(part(
                "Historical cases (similar earlier jobs and their failures)",
                2,
                &self.history.join("\n"),
                32,
            ));
        }
        if !self.knowledge.is_empty() {
            parts.push(part(
                "Layout knowledge (retrieved notes)",
                3,
                &self.knowledge.join("\n\n"),
                32,
            ));
        }
        if !self.feedback.is_empty() {
            parts.push(part(
                "Critic's feedback on the last iteration",
                1,
                self.feedback,
                32,
            ));
        }
        fit_prompt(parts, budget).text
    }
}

/// The critic's prompts: the evaluation of one iteration to explain.
pub fn critic(
    task: &TaskContext,
    iteration: u32,
    journal: &[JournalEntry],
    budget: &Budget,
) -> (String, String) {
    let system = "You are the critic of an analog layout search. Read the evaluation of one \
iteration and explain it: what made candidates fail or score low, and what the planner should \
change next. Answer with one JSON object: {\"qualitative_feedback\": \"...\", \"suggestions\": \
[\"...\"]}.";
    let reviewed: Vec<JournalEntry> = journal
        .iter()
        .filter(|entry| entry.iteration == iteration)
        .cloned()
        .collect();
    let user = fit_prompt(
        vec![
            part(
                "Iteration",
                0,
                &format!("iteration {iteration} of circuit {}", task.circuit.name),
                8,
            ),
            part("Its candidates", 0, &journal_lines(&reviewed), 64),
            part("Objectives", 1, &objectives(task), 32),
        ],
        budget.user(count_tokens(system)),
    )
    .text;
    (system.to_string(), user)
}

/// The meta-prompt agent's prompts: rewrite the guidance after a repeated failure.
pub fn meta(guidance: &str, failure: &str, feedback: &str, budget: &Budget) -> (String, String) {
    let system = "You improve the system prompt of an analog layout planner. The same failure \
repeated over iterations. Rewrite the planner's guidance so that it avoids the failure; keep it \
short and concrete. Answer with one JSON object: {\"system_prompt\": \"...\"}.";
    let user = fit_prompt(
        vec![
            part("Repeated failure", 0, failure, 16),
            part("Current guidance", 0, guidance, 64),
            part("Critic's feedback", 1, feedback, 32),
        ],
        budget.user(count_tokens(system)),
    )
    .text;
    (system.to_string(), user)
}

/// ReAct's prompts (seed 000 §4.2.3, second template): the completed steps, the
/// failed step and its error; the model returns Thought and Action.
pub fn react(
    guidance: &str,
    plan: &Plan,
    step_id: &str,
    failure: &StepFailure,
    skills: &SkillCatalog,
    budget: &Budget,
) -> (String, String) {
    let system = format!(
        "{guidance}\n\nA step of a layout plan failed. Think about the error, then give one \
adjusted step. Answer with one JSON object: {{\"thought\": \"...\", \"action\": \
{{\"step_id\": \"{step_id}\", \"skill_name\": \"...\", \"params\": {{}}}}}}. The action \
replaces the failed step; its params must obey the skill's schema."
    );
    let mut completed = String::new();
    let mut failed = String::new();
    for step in &plan.steps {
        if step.step_id == step_id {
            failed = format!(
                "{} {} {}",
                step.step_id,
                step.skill,
                compact(&step.arguments)
            );
            break;
        }
        let _ = writeln!(completed, "- {} {} (ok)", step.step_id, step.skill);
    }
    let failed_skill = plan
        .steps
        .iter()
        .find(|step| step.step_id == step_id)
        .map(|step| step.skill.clone())
        .unwrap_or_default();
    let schema = skills.get(&failed_skill).cloned().unwrap_or(Value::Null);
    let error_text = format!(
        "{}: {} (details {})",
        failure.code,
        failure.message,
        compact(&failure.details)
    );
    let user = fit_prompt(
        vec![
            part("Failed step", 0, &failed, 32),
            part("Error", 0, &error_text, 32),
            part("Schema of its skill", 1, &compact(&schema), 32),
            part("Completed steps", 2, &completed, 16),
        ],
        budget.user(count_tokens(&system)),
    )
    .text;
    (system, user)
}

fn part(title: &str, priority: u32, text: &str, min_tokens: usize) -> PromptPart {
    PromptPart {
        title: title.to_string(),
        priority,
        text: text.to_string(),
        min_tokens,
    }
}

fn describe_space(space: &DesignSpace) -> String {
    let mut text = format!(
        "arrangement: {:?}\nfinger_split: {:?}\ndummies: {:?}\nguard_ring: {:?}\n\
         row_order: 0..{}\nspacing_nm: {:?}\naspect_ratio_pct: {:?}",
        space.arrangements,
        space.finger_splits,
        space.dummies,
        space.guard_rings,
        space.row_orders.max(1) - 1,
        space.spacings_nm,
        space.aspect_ratios_pct
    );
    for kind in &space.kinds {
        let _ = write!(
            text,
            "\norder of the {} row (default, left to right): {:?}; rows: 1..{}",
            kind.kind, kind.devices, kind.max_rows
        );
    }
    if !space.modules.is_empty() {
        let _ = write!(text, "\nmodule_arrangements for: {:?}", space.modules);
    }
    if !space.groups.is_empty() {
        let _ = write!(
            text,
            "\nmodule_dummies and module_rings for: {:?}",
            space.groups
        );
    }
    text
}

/// One line per skill: name, description, parameters (name, type, required).
fn describe_skills(skills: &SkillCatalog) -> String {
    let mut names: Vec<&String> = skills.keys().collect();
    names.sort();
    let mut text = String::new();
    for name in names {
        let schema = &skills[name];
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let params: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(param, spec)| {
                        let kind = spec.get("type").map(compact).unwrap_or_default();
                        let mark = if required.contains(&param.as_str()) {
                            "*"
                        } else {
                            ""
                        };
                        format!("{param}{mark}:{}", kind.trim_matches('"'))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(text, "- {name}: {description} ({})", params.join(", "));
    }
    text
}

fn objectives(task: &TaskContext) -> String {
    serde_json::to_string(&task.objectives).unwrap_or_default()
}

fn rules(task: &TaskContext) -> String {
    let mut text = String::new();
    for rule in &task.drc_rules.rules {
        let _ = write!(
            text,
            "{} {} {}",
            rule.id,
            rule.rule_type.as_str(),
            rule.layer
        );
        if let Some(other) = &rule.layer2 {
            let _ = write!(text, "/{other}");
        }
        if let Some(min) = rule.min {
            let _ = write!(text, " min={min:e}");
        }
        text.push('\n');
    }
    text
}

/// The journal, best passing candidates first, one line each.
fn journal_lines(entries: &[JournalEntry]) -> String {
    let mut sorted: Vec<&JournalEntry> = entries.iter().collect();
    sorted.sort_by(|left, right| {
        right
            .passed
            .cmp(&left.passed)
            .then(right.score.total_cmp(&left.score))
    });
    let mut text = String::new();
    for entry in sorted {
        let point = &entry.point;
        let verdict = match entry.passed {
            None => "not evaluated".to_string(),
            Some(passed) => format!(
                "{} score={:.3} area={:.1}um2 drc={} lvs={}{}",
                if passed { "PASSED" } else { "FAILED" },
                entry.score,
                entry.area_um2,
                entry.drc_violations,
                if entry.lvs.is_empty() {
                    "-"
                } else {
                    &entry.lvs
                },
                if entry.reasons.is_empty() {
                    String::new()
                } else {
                    format!(" because {}", entry.reasons.join("; "))
                }
            ),
        };
        // the per-module dummies and rings only where a point has them (most do not)
        let mut per_module = String::new();
        if !point.module_dummies.is_empty() {
            let _ = write!(per_module, " module_dummies={:?}", point.module_dummies);
        }
        if !point.module_rings.is_empty() {
            let _ = write!(per_module, " module_rings={:?}", point.module_rings);
        }
        let _ = writeln!(
            text,
            "- {} it{} {}: {} split={} dummies={} ring={} row_order={} spacing={}nm aspect={}% folded={:?} modules={:?}{} → {}",
            entry.candidate_id,
            entry.iteration,
            entry.origin.as_str(),
            point.arrangement,
            point.finger_split,
            point.dummies,
            point.guard_ring,
            point.row_order,
            point.spacing_nm,
            point.aspect_ratio_pct,
            point.rows,
            point.module_arrangements,
            per_module,
            verdict
        );
    }
    text
}

fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use centroid_planner::candidate::Origin;
    use centroid_planner::design_point::DesignPoint;

    fn entry(point: DesignPoint) -> JournalEntry {
        JournalEntry {
            candidate_id: "j-i0-c1".into(),
            iteration: 0,
            origin: Origin::Draft,
            point,
            passed: Some(true),
            score: 0.6,
            area_um2: 200.0,
            drc_violations: 0,
            lvs: "match".into(),
            reasons: Vec::new(),
        }
    }

    #[test]
    fn a_journal_line_names_per_module_dummies_and_rings_only_where_a_point_has_them() {
        let point: DesignPoint = serde_json::from_value(serde_json::json!({
            "arrangement": "ABBA", "finger_split": 2, "dummies": 1, "guard_ring": false,
            "row_order": 0, "spacing_nm": 0, "aspect_ratio_pct": 100
        }))
        .unwrap();
        let plain = journal_lines(&[entry(point.clone())]);
        assert!(plain.contains("dummies=1 ring=false"), "{plain}");
        assert!(!plain.contains("module_dummies") && !plain.contains("module_rings"));
        let mut own = point;
        own.module_dummies = [("cm1".to_string(), 0)].into();
        let line = journal_lines(&[entry(own)]);
        assert!(line.contains("module_dummies={\"cm1\": 0}"), "{line}");
        assert!(!line.contains("module_rings"), "{line}");
    }
}
