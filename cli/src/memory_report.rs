//! The report's `memory` section: what the long-term memory gave the job and what
//! the job left in it, gathered from the job's `Memory` events.

use centroid_planner::job_events::EventData;
use centroid_proto::v1::{JobEvent, JobEventKind};
use serde::{Deserialize, Serialize};

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
            let report = report.get_or_insert_with(MemoryReport::default);
            match EventData::parse(&event.data_json) {
                Some(EventData::Recalled {
                    memory,
                    similar_cases,
                    failure_patterns,
                }) => {
                    report.memory = memory;
                    report
                        .similar_cases
                        .extend(similar_cases.into_iter().map(|case| SimilarCase {
                            job_id: case.job_id,
                            circuit: case.circuit,
                            similarity: case.similarity,
                        }));
                    report
                        .failure_patterns
                        .extend(
                            failure_patterns
                                .into_iter()
                                .map(|failure| FailurePatternSeen {
                                    id: failure.id,
                                    kind: failure.kind,
                                    similarity: failure.similarity,
                                }),
                        );
                }
                Some(EventData::KnowledgeUsed { knowledge }) => {
                    report
                        .knowledge
                        .extend(knowledge.into_iter().map(|used| KnowledgeUsed {
                            source: used.source,
                            score: used.score,
                        }));
                }
                Some(EventData::StoredCase { stored_case }) => {
                    report.stored_case = Some(stored_case)
                }
                Some(EventData::StoredFailure { stored_failure }) => {
                    report.stored_failures.push(stored_failure)
                }
                Some(EventData::MemoryTrouble { memory_error }) => {
                    report.error = Some(memory_error)
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
    use centroid_planner::DesignPoint;
    use centroid_planner::job_events::{FailureSeen, SimilarCase as CaseSeen};

    #[test]
    fn recall_and_storage_are_read_from_the_events() {
        let event = |data: EventData| JobEvent {
            kind: JobEventKind::Memory as i32,
            data_json: data.to_value().to_string(),
            ..JobEvent::default()
        };
        let point: DesignPoint = serde_json::from_value(serde_json::json!({
            "arrangement": "ABBA", "finger_split": 1, "dummies": 1, "guard_ring": false,
            "row_order": 0, "spacing_nm": 0, "aspect_ratio_pct": 100
        }))
        .unwrap();
        let recalled = EventData::Recalled {
            memory: "/m".into(),
            similar_cases: vec![CaseSeen {
                job_id: "job-a".into(),
                circuit: "ota5".into(),
                similarity: 0.97,
                point,
            }],
            failure_patterns: vec![FailureSeen {
                id: "job-b-drc".into(),
                kind: "drc".into(),
                similarity: 0.9,
            }],
        };
        let events = vec![
            event(recalled),
            event(EventData::StoredCase {
                stored_case: "job-c".into(),
            }),
        ];
        let report = MemoryReport::from_events(&events).unwrap();
        assert_eq!(report.memory, "/m");
        assert_eq!(report.similar_cases[0].job_id, "job-a");
        assert_eq!(report.failure_patterns[0].kind, "drc");
        assert_eq!(report.stored_case.as_deref(), Some("job-c"));
        assert!(MemoryReport::from_events(&[]).is_none());
    }
}
