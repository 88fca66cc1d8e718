//! The report's `planner` section: which planner planned the job and how the
//! model was used, gathered from the job's `Planner` and `LlmCall` events.

use centroid_planner::job_events::EventData;
use centroid_proto::v1::JobEvent;
use serde::{Deserialize, Serialize};

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
            let Some(data) = EventData::parse(&event.data_json) else {
                continue;
            };
            let note = |role: &str| TranscriptLine {
                iteration: event.iteration,
                role: role.into(),
                summary: event.message.clone(),
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
                EventData::AdviceLate { .. } => report.transcript.push(note("late")),
                EventData::GuidanceRewritten { system_prompt } => {
                    report.system_prompts.push(GuidanceVersion {
                        version: system_prompt.version,
                        because: system_prompt.because,
                        text: system_prompt.text,
                    });
                }
                EventData::LlmCall(call) => {
                    report.calls += 1;
                    report.prompt_tokens += u64::from(call.prompt_tokens);
                    report.completion_tokens += u64::from(call.completion_tokens);
                    let summary = match call.outcome.as_str() {
                        "used" => call.summary,
                        outcome => format!("{outcome}: {}", call.reason),
                    };
                    report.transcript.push(TranscriptLine {
                        iteration: call.iteration,
                        role: call.role,
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
    }
}
