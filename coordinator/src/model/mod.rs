//! The records the coordinator persists (as JSON) in its [`crate::store::Store`]:
//! jobs, their inputs, candidates, results, events and artifact metadata; the
//! design point and plan of a candidate ([`design`]) and its evaluation
//! ([`evaluation`]); records read for a listing, without plans ([`listing`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;

mod design;
mod evaluation;
mod listing;

pub use design::{DesignPoint, Plan, PlanStep};
pub use evaluation::{Evaluation, SignoffVerdict};
pub use listing::{candidate_listed, result_listed};

/// The session state machine of seed 000 §4.1. A job ends in `Done` with an
/// [`Outcome`]; `Completed` / `Failed` are passed through on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Init,
    Parsing,
    Planning,
    Executing,
    Evaluating,
    /// the best candidates go through the foundry's deck (when the job names one)
    Signoff,
    Passed,
    Iterating,
    Completed,
    Failed,
    Done,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Init => "init",
            JobState::Parsing => "parsing",
            JobState::Planning => "planning",
            JobState::Executing => "executing",
            JobState::Evaluating => "evaluating",
            JobState::Signoff => "signoff",
            JobState::Passed => "passed",
            JobState::Iterating => "iterating",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Done => "done",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Failed,
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Options of one job (SubmitJob's `JobOptions` after defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobOptions {
    pub candidates_per_iteration: u32,
    pub max_iterations: u32,
    pub seed: u64,
    pub time_budget_ms: u64,
    pub candidate_deadline_ms: u64,
    #[serde(default)]
    pub noop_plan: bool,
    #[serde(default)]
    pub sleep_ms: u64,
    /// the foundry deck the best candidates go through before the job ends
    /// (a name among the workers' configured decks); empty = none
    #[serde(default)]
    pub signoff_deck: String,
    /// `heuristic` (also when empty) or `llm`
    #[serde(default)]
    pub planner: String,
    /// iterations in a row without a better candidate, once one passed, before the
    /// search ends (0 counts as 1)
    #[serde(default)]
    pub patience: u32,
}

/// The three input files as text, kept so that a restarted coordinator can parse them again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInputs {
    pub netlist_json: String,
    pub drc_rules_json: String,
    pub objectives_json: String,
}

impl JobInputs {
    /// The files as the input loader takes them (labelled with their usual names).
    pub fn task_inputs(&self) -> centroid_schemas::TaskInputs {
        let file = |label: &str, text: &str| centroid_schemas::InputFile {
            label: label.into(),
            bytes: text.as_bytes().to_vec(),
        };
        centroid_schemas::TaskInputs {
            netlist: file("netlist.json", &self.netlist_json),
            drc_rules: file("drc_rules.json", &self.drc_rules_json),
            objectives: file("objectives.json", &self.objectives_json),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: String,
    pub name: String,
    pub state: JobState,
    #[serde(default)]
    pub outcome: Option<Outcome>,
    #[serde(default)]
    pub error: String,
    pub options: JobOptions,
    pub created_ms: u64,
    pub updated_ms: u64,
    /// when the job first left INIT (the time budget counts from here)
    pub started_ms: u64,
    /// current iteration, from 0
    pub iteration: u32,
    #[serde(default)]
    pub best_candidate_id: String,
    #[serde(default)]
    pub best_score: f64,
    #[serde(default)]
    pub best_passed: bool,
    /// a cancellation was requested
    #[serde(default)]
    pub cancel_requested: bool,
    #[serde(default)]
    pub cancel_reason: String,
    /// `route.info`'s pitch for this job's rule set, once probed
    #[serde(default)]
    pub route_pitch_um: Option<f64>,
    #[serde(default)]
    pub route_probed: bool,
    /// iterations in a row that found no better candidate
    #[serde(default)]
    pub stale_iterations: u32,
    /// when the current iteration's candidates were enqueued
    #[serde(default)]
    pub iteration_started_ms: u64,
    /// ids of the current iteration's candidates (in SIGNOFF: the signoff candidates)
    #[serde(default)]
    pub iteration_candidates: Vec<String>,
    /// the signoff candidates were enqueued
    #[serde(default)]
    pub signoff_enqueued: bool,
    /// how many of `iteration_candidates` are in the work queue; the rest follow as
    /// results come in, so that jobs share the slots (`None`: all, as older records)
    #[serde(default)]
    pub iteration_enqueued: Option<u32>,
    /// the job's W3C trace id (32 hex digits; the submitter's `traceparent`, else a
    /// fresh one): sent with every call made for the job, `trace_id` in every log line
    #[serde(default)]
    pub trace_id: String,
    /// the next iteration is drafted without this iteration's evaluations, so that it
    /// can start while this one's last candidates run (overlapping iterations);
    /// decided when this iteration was planned, so an early and a late draft agree
    #[serde(default)]
    pub overlap_next: bool,
    /// the next iteration, drafted early (while this one's last candidates run)
    #[serde(default)]
    pub next_iteration: Option<NextIteration>,
}

/// An iteration drafted while the one before it still runs: its candidates are
/// stored and partly queued; it becomes the current iteration after the one before
/// it was evaluated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NextIteration {
    pub candidates: Vec<String>,
    /// how many of `candidates` are in the work queue
    pub enqueued: u32,
}

impl JobRecord {
    /// A new job in INIT, created and started at `now_ms`.
    pub fn new(job_id: String, name: String, options: JobOptions, now_ms: u64) -> JobRecord {
        JobRecord {
            job_id,
            name,
            state: JobState::Init,
            outcome: None,
            error: String::new(),
            options,
            created_ms: now_ms,
            updated_ms: now_ms,
            started_ms: now_ms,
            iteration: 0,
            best_candidate_id: String::new(),
            best_score: 0.0,
            best_passed: false,
            cancel_requested: false,
            cancel_reason: String::new(),
            route_pitch_um: None,
            route_probed: false,
            stale_iterations: 0,
            iteration_started_ms: 0,
            iteration_candidates: Vec::new(),
            signoff_enqueued: false,
            iteration_enqueued: None,
            trace_id: centroid_runtime::trace_context::new_trace_id(),
            overlap_next: false,
            next_iteration: None,
        }
    }

    pub fn is_finished(&self) -> bool {
        self.state == JobState::Done
    }
}

/// How a candidate came to be (seed 003: draft new, improve the best, repair the failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Draft,
    Improve,
    Repair,
    /// a kept candidate run again through the foundry's deck
    Signoff,
    /// the best design point of a similar earlier job (long-term memory)
    Memory,
    /// a design point chosen by the LLM planner
    Llm,
    /// a whole plan written by the LLM planner (validated; not a point of the space)
    LlmPlan,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Draft => "draft",
            Origin::Improve => "improve",
            Origin::Repair => "repair",
            Origin::Signoff => "signoff",
            Origin::Memory => "memory",
            Origin::Llm => "llm",
            Origin::LlmPlan => "llm_plan",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateStatus {
    Queued,
    Finished,
    Failed,
    DeadLettered,
    Abandoned,
}

impl CandidateStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CandidateStatus::Queued => "queued",
            CandidateStatus::Finished => "finished",
            CandidateStatus::Failed => "failed",
            CandidateStatus::DeadLettered => "dead_lettered",
            CandidateStatus::Abandoned => "abandoned",
        }
    }
}

/// A candidate as generated by the search (its spec; the result is stored apart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    pub candidate_id: String,
    pub job_id: String,
    pub iteration: u32,
    #[serde(default)]
    pub parent_id: String,
    pub origin: Origin,
    pub design_point: DesignPoint,
    pub plan: Plan,
    /// skills the plan needs (a worker must advertise all of them)
    pub required_skills: Vec<String>,
    /// set by the evaluator once the result is in
    #[serde(default)]
    pub evaluation: Option<Evaluation>,
}

/// One step's outcome as reported by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    pub step_id: String,
    pub skill: String,
    pub ok: bool,
    #[serde(default)]
    pub error_code: String,
    #[serde(default)]
    pub error_message: String,
    pub data: Value,
    pub duration_ms: u64,
}

/// What a candidate's run produced (recorded once: a late duplicate is ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateResult {
    pub candidate_id: String,
    pub status: CandidateStatus,
    pub ok: bool,
    #[serde(default)]
    pub worker_id: String,
    pub attempts: u32,
    #[serde(default)]
    pub error_code: String,
    #[serde(default)]
    pub error_message: String,
    #[serde(default)]
    pub steps: Vec<StepOutcome>,
    #[serde(default)]
    pub artifacts: Vec<ArtifactMeta>,
    pub duration_ms: u64,
    /// how long the candidate's last run held its worker slot (the worker's own
    /// clock: session reset, steps, artifacts); 0 when no run answered
    #[serde(default)]
    pub slot_ms: u64,
    pub finished_ms: u64,
    /// the plan as finally run (after ReAct adjustments)
    #[serde(default)]
    pub plan: Option<Plan>,
    /// ReAct adjustments made on the way
    #[serde(default)]
    pub adjustments: Vec<String>,
}

impl CandidateResult {
    /// A result for a candidate that did not run to the end on a worker (dead
    /// lettered, abandoned, lost): no steps, no artifacts, no plan.
    pub fn without_run(
        candidate_id: &str,
        status: CandidateStatus,
        error_code: &str,
        error_message: &str,
    ) -> CandidateResult {
        CandidateResult {
            candidate_id: candidate_id.to_string(),
            status,
            ok: false,
            worker_id: String::new(),
            attempts: 0,
            error_code: error_code.to_string(),
            error_message: error_message.to_string(),
            steps: Vec::new(),
            artifacts: Vec::new(),
            duration_ms: 0,
            slot_ms: 0,
            finished_ms: now_ms(),
            plan: None,
            adjustments: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtifactMeta {
    pub candidate_id: String,
    pub name: String,
    pub media_type: String,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    StateChanged,
    PlanCreated,
    CandidateDispatched,
    CandidateFinished,
    CandidateRetried,
    Evaluation,
    Iteration,
    WaitingForWorkers,
    Completed,
    Failed,
    Cancelled,
    CandidateDeadLettered,
    StepAdjusted,
    LlmCall,
    Planner,
    Memory,
}

impl EventKind {
    /// Whether this event ends the job's log (WatchJob stops after it).
    pub fn is_last(self) -> bool {
        matches!(
            self,
            EventKind::Completed | EventKind::Failed | EventKind::Cancelled
        )
    }
}

/// One entry of a job's event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub kind: EventKind,
    pub timestamp_ms: u64,
    pub state: JobState,
    #[serde(default)]
    pub candidate_id: String,
    pub iteration: u32,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub data: Value,
    #[serde(default)]
    pub last: bool,
}

/// A delivery of a candidate from the work queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntry {
    pub entry_id: String,
    pub job_id: String,
    pub candidate_id: String,
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|duration| duration.as_millis() as u64)
        .unwrap_or_default()
}

/// What a coordinator publishes about a live worker so that other coordinators
/// sharing the store can plan with its skills (and list it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerCard {
    pub worker_id: String,
    pub address: String,
    pub slots: u32,
    pub skills: Vec<String>,
    /// input schemas by skill
    #[serde(default)]
    pub schemas: std::collections::HashMap<String, Value>,
    pub klayout_version: String,
    pub hostname: String,
    /// the coordinator the worker registered with
    pub coordinator: String,
    pub last_seen_ms: u64,
}
