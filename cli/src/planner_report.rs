//! The report's `planner` section: which planner planned the job and how the
//! model was used, gathered from the job's `Planner` and `LlmCall` events —
//! every call counted (by outcome, role and model) — and the full record of the
//! calls for `planner_transcript.jsonl`.

use std::collections::BTreeMap;

use centroid_planner::LlmCall;
use centroid_planner::job_events::EventData;
use centroid_proto::v1::JobEvent;
use serde::{Deserialize, Serialize};

/// One line of the planner's transcript.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptLine {
    pub iteration: u32,
    /// `planner`, `repair`, `critic`, `meta`, `react` or `fallback`
    pub role: String,
    pub summary: String,
    /// the model that served the call (empty for a note that is no call)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
    /// `used`, `rejected`, `failed`, `dropped` or `dropped-late` (empty for a note)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
    #[serde(default)]
    pub prompt_tokens: u32,
    #[serde(default)]
    pub completion_tokens: u32,
    #[serde(default)]
    pub duration_ms: u64,
}

/// One line of `planner_transcript.jsonl`: a model call with its whole prompt
/// and raw answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub role: String,
    pub iteration: u32,
    pub model: String,
    /// the messages sent, in order
    pub prompt: Vec<centroid_planner::CallMessage>,
    /// the model's raw answer (empty when none came)
    pub answer: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    pub duration_ms: u64,
    /// `used`, `rejected`, `failed` or `dropped`
    pub outcome: String,
    /// why it was not used (empty when used)
    pub reason: String,
}

impl CallRecord {
    fn of(call: &LlmCall) -> CallRecord {
        CallRecord {
            role: call.role.clone(),
            iteration: call.iteration,
            model: call.model.clone(),
            prompt: call.messages.clone(),
            answer: call.answer.clone(),
            prompt_tokens: call.prompt_tokens,
            completion_tokens: call.completion_tokens,
            duration_ms: call.duration_ms,
            outcome: call.outcome.clone(),
            reason: call.reason.clone(),
        }
    }
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
    /// every model call made, whatever became of it
    pub calls: u32,
    /// the calls by outcome: `used`, `rejected`, `failed`, `dropped`, `dropped-late`
    #[serde(default)]
    pub calls_by_outcome: BTreeMap<String, u32>,
    /// the calls by role: `planner`, `repair`, `critic`, `meta`, `react`
    #[serde(default)]
    pub calls_by_role: BTreeMap<String, u32>,
    /// the calls by the model that served them
    #[serde(default)]
    pub calls_by_model: BTreeMap<String, u32>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// times the heuristic planner took over (an iteration drafted without the
    /// model's advice, or a step adjusted by the rules)
    pub fallbacks: u32,
    pub transcript: Vec<TranscriptLine>,
    /// guidance rewritten by the meta-prompt agent (version 1 and later)
    pub system_prompts: Vec<GuidanceVersion>,
    /// every call in full, for `planner_transcript.jsonl` (not in report.json)
    #[serde(skip)]
    pub records: Vec<CallRecord>,
}

impl PlannerReport {
    /// Gathers the section from a job's events (in order).
    pub fn from_events(events: &[JobEvent]) -> PlannerReport {
        let mut report = PlannerReport {
            kind: "heuristic".into(),
            ..PlannerReport::default()
        };
        for event in events {
            let Some(data) = EventData::parse(&event.data_json) else {
                continue;
            };
            let note = |role: &str| TranscriptLine {
                iteration: event.iteration,
                role: role.into(),
                summary: event.message.clone(),
                ..TranscriptLine::default()
            };
            match data {
                EventData::PlannerChosen { planner } => {
                    report.kind = planner.kind;
                    report.model = planner.model;
                    if let Some(requested) = planner.requested {
                        let why = planner.why.unwrap_or_default();
                        report.requested = Some(format!("{requested}: {why}"));
                    }
                }
                EventData::PlannerFallback { .. } => {
                    report.fallbacks += 1;
                    report.transcript.push(note("fallback"));
                }
                EventData::GuidanceRewritten { system_prompt } => {
                    report.system_prompts.push(GuidanceVersion {
                        version: system_prompt.version,
                        because: system_prompt.because,
                        text: system_prompt.text,
                    });
                }
                EventData::LlmCall(call) => report.add_call(call),
                _ => {}
            }
        }
        report
    }

    fn add_call(&mut self, call: LlmCall) {
        self.calls += 1;
        *self
            .calls_by_outcome
            .entry(call.outcome.clone())
            .or_default() += 1;
        *self.calls_by_role.entry(call.role.clone()).or_default() += 1;
        *self.calls_by_model.entry(call.model.clone()).or_default() += 1;
        self.prompt_tokens += u64::from(call.prompt_tokens);
        self.completion_tokens += u64::from(call.completion_tokens);
        self.records.push(CallRecord::of(&call));
        let summary = match call.outcome.as_str() {
            "used" => call.summary,
            outcome => format!("{outcome}: {}", call.reason),
        };
        self.transcript.push(TranscriptLine {
            iteration: call.iteration,
            role: call.role,
            summary,
            model: call.model,
            outcome: call.outcome,
            prompt_tokens: call.prompt_tokens,
            completion_tokens: call.completion_tokens,
            duration_ms: call.duration_ms,
        });
    }

    /// `planner_transcript.jsonl`: one JSON line per model call.
    pub fn transcript_jsonl(&self) -> Result<String, serde_json::Error> {
        let mut text = String::new();
        for record in &self.records {
            text.push_str(&serde_json::to_string(record)?);
            text.push('\n');
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use centroid_planner::job_events::PlannerChoice;
    use centroid_planner::{LlmCall, PromptVersion};
    use centroid_proto::v1::JobEventKind;

    fn event(kind: JobEventKind, iteration: u32, message: &str, data: EventData) -> JobEvent {
        JobEvent {
            kind: kind as i32,
            iteration,
            message: message.into(),
            data_json: data.to_value().to_string(),
            ..JobEvent::default()
        }
    }

    fn call(
        role: &str,
        tokens: (u32, u32),
        outcome: &str,
        reason: &str,
        summary: &str,
    ) -> EventData {
        EventData::LlmCall(LlmCall {
            role: role.into(),
            iteration: 0,
            model: "m".into(),
            prompt_tokens: tokens.0,
            completion_tokens: tokens.1,
            usage_estimated: false,
            duration_ms: 5,
            attempts: 1,
            outcome: outcome.into(),
            reason: reason.into(),
            summary: summary.into(),
            trace_id: String::new(),
            messages: vec![centroid_planner::CallMessage {
                role: "user".into(),
                content: format!("prompt of the {role}"),
            }],
            answer: format!("answer to the {role}"),
        })
    }

    #[test]
    fn calls_tokens_and_fallbacks_are_counted_from_the_events() {
        let chosen = EventData::PlannerChosen {
            planner: PlannerChoice {
                kind: "llm".into(),
                model: "m".into(),
                requested: None,
                why: None,
            },
        };
        let fallback = EventData::PlannerFallback {
            fallback: "timeout".into(),
            iteration: Some(1),
            step_id: None,
        };
        let guidance = EventData::GuidanceRewritten {
            system_prompt: PromptVersion {
                version: 1,
                because: "drc".into(),
                text: "new".into(),
            },
        };
        let events = vec![
            event(JobEventKind::Planner, 0, "", chosen),
            event(
                JobEventKind::LlmCall,
                0,
                "",
                call("planner", (100, 20), "rejected", "invalid answer: x", ""),
            ),
            event(
                JobEventKind::LlmCall,
                0,
                "",
                call("repair", (130, 25), "used", "", "ABBA first"),
            ),
            event(
                JobEventKind::Planner,
                1,
                "drafts iteration 1 alone: timeout",
                fallback,
            ),
            event(JobEventKind::Planner, 2, "", guidance),
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
        assert_eq!(report.calls_by_outcome["rejected"], 1);
        assert_eq!(report.calls_by_outcome["used"], 1);
        assert_eq!(report.calls_by_role["repair"], 1);
        assert_eq!(report.calls_by_model["m"], 2);
        let jsonl = report.transcript_jsonl().unwrap();
        let lines: Vec<serde_json::Value> = jsonl
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "one line per call");
        assert_eq!(lines[0]["prompt"][0]["content"], "prompt of the planner");
        assert_eq!(lines[1]["answer"], "answer to the repair");
        assert_eq!(lines[0]["outcome"], "rejected");
        assert_eq!(lines[0]["reason"], "invalid answer: x");
    }
}
