//! What a planner may add to an iteration beyond the search journal's proposals:
//! design points and a whole plan chosen by a model, with the record of every
//! model call that produced them (the session turns the records into job events).
//!
//! The rule-based planner gives no advice; the LLM planner (in the coordinator)
//! does, while the previous iteration's candidates run.

use std::sync::Arc;

use centroid_schemas::TaskContext;
use serde::{Deserialize, Serialize};

use crate::candidate::{CandidateRecord, Origin};
use crate::design_point::DesignPoint;
use crate::design_space::DesignSpace;
use crate::plan::Plan;
use crate::skill_catalog::SkillCatalog;

/// One candidate of the journal as a planning prompt shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub candidate_id: String,
    pub iteration: u32,
    pub origin: Origin,
    pub point: DesignPoint,
    /// `None` while the candidate has no evaluation
    pub passed: Option<bool>,
    pub score: f64,
    pub area_um2: f64,
    pub drc_violations: i64,
    pub lvs: String,
    pub reasons: Vec<String>,
    /// how well the matched devices match (0..1, 1 = perfect)
    #[serde(default)]
    pub matching_score: f64,
    /// the largest centroid error of any matched group (µm), when measured
    #[serde(default)]
    pub centroid_error_um: Option<f64>,
}

impl JournalEntry {
    pub fn of(candidate: &CandidateRecord) -> JournalEntry {
        let evaluation = candidate.evaluation.as_ref();
        JournalEntry {
            candidate_id: candidate.candidate_id.clone(),
            iteration: candidate.iteration,
            origin: candidate.origin,
            point: candidate.design_point.clone(),
            passed: evaluation.map(|evaluation| evaluation.passed),
            score: evaluation.map_or(0.0, |evaluation| evaluation.score),
            area_um2: evaluation.map_or(0.0, |evaluation| evaluation.area_um2),
            drc_violations: evaluation.map_or(-1, |evaluation| evaluation.drc_violations),
            lvs: evaluation
                .map(|evaluation| evaluation.lvs.clone())
                .unwrap_or_default(),
            reasons: evaluation
                .map(|evaluation| evaluation.reasons.clone())
                .unwrap_or_default(),
            matching_score: evaluation.map_or(0.0, |evaluation| evaluation.matching_score),
            centroid_error_um: evaluation
                .and_then(|evaluation| evaluation.layout.as_ref())
                .and_then(|figures| figures.max_centroid_error_um),
        }
    }
}

/// What the planner is asked for: up to `count` design points for `iteration`.
#[derive(Debug, Clone)]
pub struct AdviceRequest {
    pub job_id: String,
    pub iteration: u32,
    pub count: usize,
    pub task: Arc<TaskContext>,
    pub skills: SkillCatalog,
    pub space: DesignSpace,
    /// every candidate so far (evaluated ones carry their verdict)
    pub journal: Vec<JournalEntry>,
    /// similar earlier jobs and failure patterns, one line each (long-term memory)
    pub history: Vec<String>,
}

/// One model call, as the job's events and report show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmCall {
    /// `planner`, `repair`, `critic`, `meta` or `react`
    pub role: String,
    pub iteration: u32,
    pub model: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// the server sent no usage; the figures are counted here
    pub usage_estimated: bool,
    pub duration_ms: u64,
    pub attempts: u32,
    /// `used`, `rejected` (the answer failed validation), `failed` (no answer),
    /// `dropped` (answered, but no iteration took the advice) or `dropped-late`
    /// (its share was drafted by rule before it came, under `model_share = "when_ready"`)
    pub outcome: String,
    /// why the answer was rejected or the call failed (empty when used)
    pub reason: String,
    /// the thought or decision in one line
    pub summary: String,
    /// the W3C trace id sent with the call (`traceparent`)
    pub trace_id: String,
    /// the whole prompt sent (every message, the repair round's included)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<CallMessage>,
    /// the model's raw answer (empty when none came)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub answer: String,
}

/// One message of a model call's prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallMessage {
    /// `system`, `user` or `assistant`
    pub role: String,
    pub content: String,
}

/// A version of the LLM planner's guidance (the part of its system prompt the
/// meta-prompt agent rewrites); version 0 is the built-in one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptVersion {
    pub version: u32,
    pub text: String,
    /// the repeated failure that made the meta-prompt agent write it (empty for 0)
    pub because: String,
}

/// What the LLM planner remembers within a job. The session keeps it in the
/// job's record, so a coordinator taking the job over continues it (the next
/// prompt carries the critic's last feedback and the current guidance).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlannerMemory {
    /// every version of the guidance (version 0 first)
    pub guidance: Vec<PromptVersion>,
    /// the critic's last feedback, as the planning prompt carries it
    pub feedback: Option<String>,
    /// the iterations the critic reviewed, with their failure signatures
    pub reviewed: Vec<(u32, String)>,
    /// the points of the last planning answer that had been tried before (the
    /// next prompt names them)
    pub repeats: Vec<String>,
}

/// What a planner adds to an iteration.
#[derive(Debug, Clone, Default)]
pub struct Advice {
    /// design points inside the space, best first
    pub points: Vec<DesignPoint>,
    /// a whole validated plan to run as one more candidate
    pub plan: Option<Plan>,
    /// the model calls made for this advice
    pub calls: Vec<LlmCall>,
    /// why the heuristic planner drafts this iteration alone (the model failed)
    pub fallback: Option<String>,
    /// the guidance, when the meta-prompt agent rewrote it for this advice
    pub guidance: Option<PromptVersion>,
    /// the best design points of similar earlier jobs (long-term memory), tried first
    pub recalled: Vec<DesignPoint>,
    /// the layout knowledge the prompt carried: (source, BM25 score)
    pub knowledge: Vec<(String, f32)>,
    /// points that failed on similar circuits (long-term memory): not drafted
    pub avoid: Vec<DesignPoint>,
    /// the planner's memory after this advice (the LLM planner's), for the job record
    pub memory: Option<PlannerMemory>,
}

impl Advice {
    /// No advice, because the model could not give one.
    pub fn fallback(reason: impl Into<String>, calls: Vec<LlmCall>) -> Advice {
        Advice {
            fallback: Some(reason.into()),
            calls,
            ..Advice::default()
        }
    }
}
