//! The report's `memory` section: what the long-term memory gave the job and what
//! the job left in it, gathered from the job's `Memory` events.

use centroid_proto::v1::{JobEvent, JobEventKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A similar earlier job whose best design point seeded this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarCase {
    pub job_id: String,
    pub circuit: String,
    pub similarity: f64,
}

/// A failure pattern of a similar circuit shown to the planner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailurePatternSeen {
    pub id: String,
    pub kind: String,
    pub similarity: f64,
}

/// A section of layout knowledge retrieved into the prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeUsed {
    pub source: String,
    pub score: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryReport {
    /// where the memory lives
    pub memory: String,
    pub similar_cases: Vec<SimilarCase>,
    pub failure_patterns: Vec<FailurePatternSeen>,
    /// this job's case, when it was stored
    pub stored_case: Option<String>,
    pub stored_failures: Vec<String>,
    /// the layout knowledge the LLM planner's prompt carried
    #[serde(default)]
    pub knowledge: Vec<KnowledgeUsed>,
    /// why the memory could not be used, when it could not
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl MemoryReport {
    /// `None` when the job had no memory (no `Memory` event).
    pub fn from_events(events: &[JobEvent]) -> Option<MemoryReport> {
        let mut report: Option<MemoryReport> = None;
        for event in events
            .iter()
            .filter(|event| event.kind() == JobEventKind::Memory)
        {
            let data: Value = serde_json::from_str(&event.data_json).unwrap_or(Value::Null);
            let report = report.get_or_insert_with(MemoryReport::default);
            let text = |value: &Value, key: &str| {
                value
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let number =
                |value: &Value, key: &str| value.get(key).and_then(Value::as_f64).unwrap_or(0.0);
            if let Some(memory) = data.get("memory").and_then(Value::as_str) {
                report.memory = memory.to_string();
            }
            for case in data["similar_cases"].as_array().into_iter().flatten() {
                report.similar_cases.push(SimilarCase {
                    job_id: text(case, "job_id"),
                    circuit: text(case, "circuit"),
                    similarity: number(case, "similarity"),
                });
            }
            for failure in data["failure_patterns"].as_array().into_iter().flatten() {
                report.failure_patterns.push(FailurePatternSeen {
                    id: text(failure, "id"),
                    kind: text(failure, "kind"),
                    similarity: number(failure, "similarity"),
                });
            }
            for used in data["knowledge"].as_array().into_iter().flatten() {
                report.knowledge.push(KnowledgeUsed {
                    source: text(used, "source"),
                    score: number(used, "score"),
                });
            }
            if let Some(case) = data.get("stored_case").and_then(Value::as_str) {
                report.stored_case = Some(case.to_string());
            }
            if let Some(failure) = data.get("stored_failure").and_then(Value::as_str) {
                report.stored_failures.push(failure.to_string());
            }
            if let Some(error) = data.get("memory_error").and_then(Value::as_str) {
                report.error = Some(error.to_string());
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recall_and_storage_are_read_from_the_events() {
        let event = |data: Value| JobEvent {
            kind: JobEventKind::Memory as i32,
            data_json: data.to_string(),
            ..JobEvent::default()
        };
        let events = vec![
            event(
                json!({"memory": "/m", "similar_cases": [{"job_id": "job-a", "circuit": "ota5", "similarity": 0.97}],
                         "failure_patterns": [{"id": "job-b-drc", "kind": "drc", "similarity": 0.9}]}),
            ),
            event(json!({"stored_case": "job-c"})),
        ];
        let report = MemoryReport::from_events(&events).unwrap();
        assert_eq!(report.memory, "/m");
        assert_eq!(report.similar_cases[0].job_id, "job-a");
        assert_eq!(report.failure_patterns[0].kind, "drc");
        assert_eq!(report.stored_case.as_deref(), Some("job-c"));
        assert!(MemoryReport::from_events(&[]).is_none());
    }
}
