//! The report's `planner` section: which planner planned the job and how the
//! model was used, gathered from the job's `Planner` and `LlmCall` events.

use centroid_proto::v1::{JobEvent, JobEventKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One line of the planner's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranscriptLine {
    pub iteration: u32,
    /// `planner`, `repair`, `critic`, `meta`, `react`, `fallback` or `late` (the
    /// model's advice was not in when the iteration was planned)
    pub role: String,
    pub summary: String,
}

/// A version of the LLM planner's guidance, as the meta-prompt agent wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuidanceVersion {
    pub version: u32,
    pub because: String,
    pub text: String,
}

/// How the job was planned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlannerReport {
    /// `heuristic` or `llm`
    pub kind: String,
    pub model: String,
    /// the planner asked for, when it differs from `kind` (and why)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    pub calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// times the heuristic planner took over (an iteration drafted without the
    /// model's advice, or a step adjusted by the rules)
    pub fallbacks: u32,
    pub transcript: Vec<TranscriptLine>,
    /// guidance rewritten by the meta-prompt agent (version 1 and later)
    pub system_prompts: Vec<GuidanceVersion>,
}

impl PlannerReport {
    /// Gathers the section from a job's events (in order).
    pub fn from_events(events: &[JobEvent]) -> PlannerReport {
        let mut report = PlannerReport {
            kind: "heuristic".into(),
            ..PlannerReport::default()
        };
        for event in events {
            let data: Value = serde_json::from_str(&event.data_json).unwrap_or(Value::Null);
            let text = |value: &Value, key: &str| {
                value
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            match event.kind() {
                JobEventKind::Planner => {
                    if let Some(chosen) = data.get("planner") {
                        report.kind = text(chosen, "kind");
                        report.model = text(chosen, "model");
                        let requested = text(chosen, "requested");
                        if !requested.is_empty() {
                            report.requested =
                                Some(format!("{requested}: {}", text(chosen, "why")));
                        }
                    }
                    if data.get("fallback").is_some() {
                        report.fallbacks += 1;
                        report.transcript.push(TranscriptLine {
                            iteration: event.iteration,
                            role: "fallback".into(),
                            summary: event.message.clone(),
                        });
                    }
                    if data.get("late").is_some() {
                        report.transcript.push(TranscriptLine {
                            iteration: event.iteration,
                            role: "late".into(),
                            summary: event.message.clone(),
                        });
                    }
                    if let Some(prompt) = data.get("system_prompt") {
                        report.system_prompts.push(GuidanceVersion {
                            version: prompt.get("version").and_then(Value::as_u64).unwrap_or(0)
                                as u32,
                            because: text(prompt, "because"),
                            text: text(prompt, "text"),
                        });
                    }
                }
                JobEventKind::LlmCall => {
                    report.calls += 1;
                    let number = |key: &str| data.get(key).and_then(Value::as_u64).unwrap_or(0);
                    report.prompt_tokens += number("prompt_tokens");
                    report.completion_tokens += number("completion_tokens");
                    let outcome = text(&data, "outcome");
                    let summary = match outcome.as_str() {
                        "used" => text(&data, "summary"),
                        _ => format!("{outcome}: {}", text(&data, "reason")),
                    };
                    report.transcript.push(TranscriptLine {
                        iteration: number("iteration") as u32,
                        role: text(&data, "role"),
                        summary,
                    });
                }
                _ => {}
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: JobEventKind, iteration: u32, message: &str, data: Value) -> JobEvent {
        JobEvent {
            kind: kind as i32,
            iteration,
            message: message.into(),
            data_json: data.to_string(),
            ..JobEvent::default()
        }
    }

    #[test]
    fn calls_tokens_and_fallbacks_are_counted_from_the_events() {
        let events = vec![
            event(
                JobEventKind::Planner,
                0,
                "",
                json!({"planner": {"kind": "llm", "model": "m"}}),
            ),
            event(
                JobEventKind::LlmCall,
                0,
                "",
                json!({"role": "planner", "iteration": 0, "prompt_tokens": 100, "completion_tokens": 20, "outcome": "rejected", "reason": "invalid answer: x"}),
            ),
            event(
                JobEventKind::LlmCall,
                0,
                "",
                json!({"role": "repair", "iteration": 0, "prompt_tokens": 130, "completion_tokens": 25, "outcome": "used", "summary": "ABBA first"}),
            ),
            event(
                JobEventKind::Planner,
                1,
                "drafts iteration 1 alone: timeout",
                json!({"fallback": "timeout"}),
            ),
            event(
                JobEventKind::Planner,
                2,
                "",
                json!({"system_prompt": {"version": 1, "because": "drc", "text": "new"}}),
            ),
        ];
        let report = PlannerReport::from_events(&events);
        assert_eq!(report.kind, "llm");
        assert_eq!(report.model, "m");
        assert_eq!(report.calls, 2);
        assert_eq!(report.prompt_tokens, 230);
        assert_eq!(report.completion_tokens, 45);
        assert_eq!(report.fallbacks, 1);
        assert_eq!(report.transcript.len(), 3);
        assert_eq!(report.transcript[0].summary, "rejected: invalid answer: x");
        assert_eq!(report.transcript[1].summary, "ABBA first");
        assert_eq!(report.system_prompts[0].version, 1);
        assert_eq!(report.system_prompts[0].because, "drc");
    }
}
