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

use crate::agent::prompt_sections as sections;
use crate::llm::LlmSettings;
use crate::llm::tokens::{PromptPart, count_tokens, fit_prompt};

/// The planner's guidance before any meta-prompt rewrite (version 0).
pub const DEFAULT_GUIDANCE: &str = "You are the layout planner of Centroid, an analog IC layout \
engine that lays out a circuit many times in parallel and keeps the best DRC- and LVS-clean \
layout. You choose design points: values of the knobs listed under \"Design space\" (only \
those, only their allowed values). Think like a layout engineer: symmetric arrangements for \
matched pairs and mirrors, compact placement for area, more spacing only where DRC failed. \
Learn from the journal: keep what passed with a high score, change what failed, and never \
repeat a point already tried.";

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

/// The system prompt of planning: guidance, the space, the answer format (its
/// example made of this job's allowed values). The skills a plan may call go
/// last in the user prompt: the journal and critique come before them.
pub fn planning_system(guidance: &str, space: &DesignSpace, budget: usize) -> String {
    let example = serde_json::to_string(&sections::example_point(space)).unwrap_or_default();
    let format = format!(
        "Answer with one JSON object and nothing else:\n\
{{\"thought\": \"what you learned and why you choose these points\",\n \
\"candidates\": [{example}],\n \"plan\": null}}\n\
Every value must be one of the allowed values; every knob is optional (absent: the value of \
the example above for global knobs, the global value for per-module ones, the default order, \
one row per kind). \"plan\" is optional: a whole plan in the format {{\"plan_summary\": \
\"...\", \"steps\": [{{\"step_id\": \"s1\", \"name\": \"...\", \"skill_name\": \
\"<a skill listed in the user prompt>\", \"params\": {{}}, \"expected_output\": \"...\", \
\"dependencies\": []}}]}} whose params obey the skill's schema; leave it null unless you are \
sure."
    );
    fit_prompt(
        vec![
            part("Role", 0, guidance, 64),
            part(
                "Design space (allowed values)",
                0,
                &sections::design_space(space),
                64,
            ),
            part("Answer format", 0, &format, 64),
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
    /// the job's design space (the journal shows its free knobs)
    pub space: &'a DesignSpace,
    /// the skills of the live workers (a plan may call the non-debug ones)
    pub skills: &'a SkillCatalog,
    /// the points of the model's last answer that had been tried before
    pub repeats: &'a [String],
}

impl PlanningPrompt<'_> {
    pub fn render(&self, budget: usize) -> String {
        let circuit = &self.task.circuit;
        let ids: Vec<String> = circuit
            .devices
            .iter()
            .map(|device| sections::quoted(&device.id))
            .collect();
        let task = format!(
            "Iteration {} of the search for circuit {} ({} devices, process {}). Propose up to {} \
             new design points, best first.",
            self.iteration,
            sections::quoted(&circuit.name),
            circuit.devices.len(),
            self.task.drc_rules.tech,
            self.count
        );
        let mut parts = vec![
            part("Task", 0, &task, 32),
            part("Device ids", 0, &ids.join(", "), 16),
            part(
                "Circuit (devices, nets, recognised modules; names quoted)",
                2,
                &sections::circuit(self.task),
                64,
            ),
            part("Objectives", 1, &objectives(self.task), 32),
            part(
                "Journal (candidates so far)",
                1,
                &journal_lines(self.journal, Some(self.space)),
                64,
            ),
            part(
                "Design rules (µm, by layer)",
                3,
                &sections::rules(self.task),
                32,
            ),
            part(
                "Skills a plan may call",
                4,
                &sections::skills(self.skills),
                32,
            ),
        ];
        if !self.repeats.is_empty() {
            parts.push(part(
                "Repeats in your last answer (tried before; not drawn again)",
                1,
                &self.repeats.join("\n"),
                16,
            ));
        }
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
                "Critic's feedback on the last iteration it reviewed",
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
    space: &DesignSpace,
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
                &format!(
                    "iteration {iteration} of circuit {}",
                    sections::quoted(&task.circuit.name)
                ),
                8,
            ),
            part(
                "Its candidates",
                0,
                &journal_lines(&reviewed, Some(space)),
                64,
            ),
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

fn objectives(task: &TaskContext) -> String {
    serde_json::to_string(&task.objectives).unwrap_or_default()
}

/// The journal, best passing candidates first, one line each: the point as
/// JSON (with `space`, only its free knobs), then the verdict with area,
/// matching and centroid error, DRC and LVS.
fn journal_lines(entries: &[JournalEntry], space: Option<&DesignSpace>) -> String {
    let mut sorted: Vec<&JournalEntry> = entries.iter().collect();
    sorted.sort_by(|left, right| {
        right
            .passed
            .cmp(&left.passed)
            .then(right.score.total_cmp(&left.score))
    });
    if sorted.is_empty() {
        return "(no candidate yet)".into();
    }
    let mut text = String::new();
    for entry in sorted {
        let verdict = match entry.passed {
            None => "not evaluated yet".to_string(),
            Some(passed) => {
                let mut verdict = format!(
                    "{} score={:.3} area={:.1} µm² matching={:.3}",
                    if passed { "PASSED" } else { "FAILED" },
                    entry.score,
                    entry.area_um2,
                    entry.matching_score,
                );
                if let Some(error) = entry.centroid_error_um {
                    let _ = write!(verdict, " centroid_error={error:.4} µm");
                }
                let drc = if entry.drc_violations < 0 {
                    "not run".to_string()
                } else {
                    entry.drc_violations.to_string()
                };
                let lvs = if entry.lvs.is_empty() {
                    "not run"
                } else {
                    &entry.lvs
                };
                let _ = write!(verdict, " DRC violations={drc} LVS={lvs}");
                if !entry.reasons.is_empty() {
                    let _ = write!(verdict, " because {}", entry.reasons.join("; "));
                }
                verdict
            }
        };
        let _ = writeln!(
            text,
            "- {} iteration {} {}: {} → {verdict}",
            sections::quoted(&entry.candidate_id),
            entry.iteration,
            entry.origin.as_str(),
            sections::point_json(&entry.point, space),
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
            matching_score: 0.9,
            centroid_error_um: Some(0.02),
        }
    }

    #[test]
    fn a_journal_line_has_the_order_the_figures_and_only_the_free_knobs() {
        let point: DesignPoint = serde_json::from_value(serde_json::json!({
            "arrangement": "ABBA", "finger_split": 2, "dummies": 1, "guard_ring": false,
            "row_order": 0, "spacing_nm": 0, "aspect_ratio_pct": 100, "order": ["M2", "M1"]
        }))
        .unwrap();
        let mut space = DesignSpace {
            arrangements: vec!["ABBA".into(), "ABAB".into()],
            finger_splits: vec![1, 2],
            dummies: vec![0, 1],
            guard_rings: vec![false],
            row_orders: 1,
            spacings_nm: vec![0, 200],
            aspect_ratios_pct: vec![100],
            kinds: Vec::new(),
            modules: Vec::new(),
            bound: Vec::new(),
            groups: Vec::new(),
            hierarchies: Vec::new(),
            top_devices: Vec::new(),
            blocks: Default::default(),
            pack_ranks: Vec::new(),
        };
        let line = journal_lines(&[entry(point.clone())], Some(&space));
        for expected in [
            "\"j-i0-c1\" iteration 0",
            "\"order\":[\"M2\",\"M1\"]",
            "\"dummies\":1",
            "area=200.0 µm² matching=0.900 centroid_error=0.0200 µm DRC violations=0 LVS=match",
        ] {
            assert!(line.contains(expected), "{expected} not in {line}");
        }
        assert!(
            !line.contains("guard_ring") && !line.contains("row_order"),
            "{line}"
        );
        space.guard_rings = vec![false, true];
        let line = journal_lines(&[entry(point)], Some(&space));
        assert!(line.contains("\"guard_ring\":false"), "{line}");
    }
}
