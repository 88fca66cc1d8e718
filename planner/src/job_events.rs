//! What a job reports: the data of every job event as one typed enum, written by
//! the coordinator into an event's `data_json` and read back by the CLI (progress,
//! report sections) — both sides name fields, neither looks strings up. The JSON
//! is an object tagged by `about` with the fields of its variant; a reader that
//! meets an `about` it does not know (a newer coordinator) skips the event.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::advice::{LlmCall, PromptVersion};
use crate::design_point::DesignPoint;
use crate::evaluation::Evaluation;
use crate::evaluator::Measurements;

/// The data of one job event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "about", rename_all = "snake_case")]
pub enum EventData {
    /// nothing beyond the event's message
    Nothing,
    /// the job was accepted: its options and the circuit as understood
    JobCreated {
        options: Value,
        summary: String,
    },
    /// the job's state changed (`candidates`: how many an iteration holds)
    StateChange {
        from: String,
        to: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        candidates: Option<usize>,
    },
    InputsParsed {
        modules: Vec<String>,
        devices: usize,
    },
    /// the rule set was probed once (routing pitch, devices it cannot draw)
    RulesProbed {
        route_pitch_um: Option<f64>,
        undrawable: Vec<String>,
    },
    /// the schematic was simulated once (the reference of the post-layout measures),
    /// or could not be
    SchematicSimulated(Box<crate::performance::SchematicSimulation>),
    /// the next iteration was drafted while `outstanding` candidates of this one run
    DraftedAhead {
        iteration: u32,
        candidates: usize,
        outstanding: usize,
    },
    /// the model's share of a running iteration was drafted when the planner's
    /// advice arrived and added to it (the model's points or plan, the search
    /// journal's to fill up); `chosen_too`: candidates of the rule-based share at
    /// points the model chose too, recorded as the model's from then on;
    /// `from_model`: how many of both are the model's
    ModelShareAdded {
        iteration: u32,
        candidates: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        chosen_too: Vec<String>,
        from_model: usize,
    },
    /// the foundry deck runs on these candidates (re-runs of `parents`)
    SignoffQueued {
        deck: String,
        candidates: Vec<String>,
        parents: Vec<String>,
    },
    /// the pictures of the kept layouts: asked (`drawn` not yet known) or done
    Pictures(Pictures),
    /// an iteration's plans were drafted
    PlansDrafted {
        candidates: Vec<PlannedCandidate>,
        design_space_size: u64,
    },
    CandidateDispatched {
        worker_id: String,
        delivery: u32,
    },
    /// a try failed and the candidate runs again after `retry_in_ms`
    CandidateRetried {
        worker_id: String,
        retry_in_ms: u64,
    },
    /// the candidate's worker was lost mid-run: its lease lapses and it runs again
    WorkerLost {
        worker_id: String,
    },
    CandidateFinished(CandidateFinished),
    /// a failed step was adjusted (ReAct) and the candidate runs again
    StepAdjusted {
        step_id: String,
    },
    Evaluated(Box<Evaluation>),
    /// a new iteration begins with this best so far
    Iteration {
        best_candidate_id: String,
        best_score: f64,
    },
    /// which planner plans the job
    PlannerChosen {
        planner: PlannerChoice,
    },
    /// the rule-based planner took over (an iteration, or a step's adjustment)
    PlannerFallback {
        fallback: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        iteration: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_id: Option<String>,
    },
    /// the meta-prompt agent rewrote the planner's guidance
    GuidanceRewritten {
        system_prompt: PromptVersion,
    },
    /// the layout knowledge the planner's prompt carried
    KnowledgeUsed {
        knowledge: Vec<KnowledgeSource>,
    },
    LlmCall(LlmCall),
    /// what the long-term memory recalled at the first planning
    Recalled {
        memory: String,
        similar_cases: Vec<SimilarCase>,
        failure_patterns: Vec<FailureSeen>,
    },
    StoredCase {
        stored_case: String,
    },
    StoredFailure {
        stored_failure: String,
    },
    /// the long-term memory could not be read or written (the job goes on)
    MemoryTrouble {
        memory_error: String,
    },
    /// the job ended
    Ended {
        outcome: String,
        best_candidate_id: String,
        best_score: f64,
        best_passed: bool,
        iterations: u32,
    },
}

/// The pictures phase: `drawn` and `seconds` once it is over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pictures {
    pub pictures: PictureCount,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PictureCount {
    pub wanted: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drawn: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// One candidate of a drafted iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedCandidate {
    pub candidate_id: String,
    pub origin: String,
    pub parent_id: String,
    pub design_point: DesignPoint,
    /// the skills of its plan's steps, in order
    pub steps: Vec<String>,
}

/// A candidate's run as recorded: how it went and what it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateFinished {
    pub ok: bool,
    pub status: String,
    pub worker_id: String,
    pub attempts: u32,
    pub duration_ms: u64,
    pub metrics: MeasuredFigures,
    pub adjustments: Vec<String>,
}

/// The figures of a candidate's run the progress and the logs show.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeasuredFigures {
    pub drc_ran: bool,
    pub drc_violations: i64,
    pub lvs: Option<bool>,
    pub bbox_area_um2: Option<f64>,
    pub device_area_um2: Option<f64>,
    pub matching_score: Option<f64>,
}

impl From<&Measurements> for MeasuredFigures {
    fn from(measured: &Measurements) -> MeasuredFigures {
        MeasuredFigures {
            drc_ran: measured.drc_ran,
            drc_violations: measured.drc_violations,
            lvs: measured.lvs,
            bbox_area_um2: measured.bbox_area_um2,
            device_area_um2: measured.device_area_um2,
            matching_score: measured.matching_score,
        }
    }
}

/// Which planner plans a job (`requested` and `why` when it is not the one asked for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannerChoice {
    /// `heuristic` or `llm`
    pub kind: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A section of layout knowledge in a prompt, with its retrieval score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeSource {
    pub source: String,
    pub score: f64,
}

/// A similar earlier case the memory recalled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarCase {
    pub job_id: String,
    pub circuit: String,
    pub similarity: f64,
    pub point: DesignPoint,
}

/// A failure pattern of a similar circuit the memory recalled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureSeen {
    pub id: String,
    pub kind: String,
    pub similarity: f64,
}

impl EventData {
    /// The data of an event's `data_json`; `None` when it is not one this build
    /// knows (an older or newer coordinator wrote it).
    pub fn parse(data_json: &str) -> Option<EventData> {
        serde_json::from_str(data_json).ok()
    }

    /// The JSON an event carries.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("event data serializes")
    }

    /// A best score the event reports (an evaluation, an iteration, the end).
    pub fn score(&self) -> Option<f64> {
        match self {
            EventData::Evaluated(evaluation) => Some(evaluation.score),
            EventData::Iteration { best_score, .. } | EventData::Ended { best_score, .. } => {
                Some(*best_score)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_data_is_a_tagged_object_with_its_fields_by_name() {
        let data = EventData::RulesProbed {
            route_pitch_um: Some(0.46),
            undrawable: vec![],
        };
        let value = data.to_value();
        assert_eq!(value["about"], "rules_probed");
        assert_eq!(
            value["route_pitch_um"], 0.46,
            "fields stay at the top level"
        );
        assert_eq!(EventData::parse(&value.to_string()), Some(data));
        let pictures = EventData::Pictures(Pictures {
            pictures: PictureCount {
                wanted: 3,
                drawn: None,
                seconds: None,
            },
        });
        let value = pictures.to_value();
        assert_eq!(value["pictures"]["wanted"], 3);
        assert!(value["pictures"].get("drawn").is_none());
        assert_eq!(EventData::parse(&value.to_string()), Some(pictures));
    }

    #[test]
    fn an_event_this_build_does_not_know_is_skipped() {
        assert_eq!(EventData::parse(r#"{"about": "from_the_future"}"#), None);
        assert_eq!(EventData::parse("null"), None);
        assert_eq!(
            EventData::parse(r#"{"about": "nothing"}"#),
            Some(EventData::Nothing)
        );
    }
}
