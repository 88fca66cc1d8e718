//! The records the coordinator persists (as JSON) in its [`crate::store::Store`]:
//! jobs, their inputs, candidates, results, events and artifact metadata;
//! records read for a listing, without plans ([`listing`]). A candidate, its
//! design point, plan, evaluation and steps' outcomes are the planner crate's
//! records (re-exported here).

use centroid_planner::run_report::RunReport;
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod event_json;
mod job_phase;
mod listing;

pub use centroid_planner::candidate::{CandidateRecord, Origin};
pub use centroid_planner::design_point::DesignPoint;
pub use centroid_planner::evaluation::{Evaluation, SignoffVerdict};
pub use centroid_planner::plan::{Plan, PlanStep};
pub use centroid_planner::run_report::StepOutcome;
pub use event_json::EventJson;
pub use job_phase::{Ahead, Drafting, JobPhase, JobState, ModelShare, Notice, Outcome, Round};
pub use listing::{candidate_listed, result_listed};

/// Options of one job (SubmitJob's `JobOptions` after defaults).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// the job's weight in the share of the slots among running jobs (0 counts as 1)
    #[serde(default)]
    pub priority: u32,
}

impl JobOptions {
    /// The job's weight in the share of the slots: its priority, at least 1.
    pub fn weight(&self) -> u32 {
        self.priority.max(1)
    }
}

/// The three input files as text, kept so that a restarted coordinator can parse them again,
/// and the user's testbench (empty: none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobInputs {
    pub netlist_json: String,
    pub drc_rules_json: String,
    pub objectives_json: String,
    #[serde(default)]
    pub testbench_sp: String,
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

    /// The user's testbench as an input file (`None` when the job has none).
    pub fn testbench(&self) -> Option<centroid_schemas::InputFile> {
        (!self.testbench_sp.is_empty()).then(|| centroid_schemas::InputFile {
            label: centroid_schemas::TESTBENCH_FILE.into(),
            bytes: self.testbench_sp.as_bytes().to_vec(),
        })
    }

    /// What the job's planner needs to plan simulations (with the record's schematic).
    pub fn simulation(&self, job: &JobRecord) -> centroid_planner::performance::JobSimulation {
        centroid_planner::performance::JobSimulation {
            testbench: (!self.testbench_sp.is_empty()).then(|| self.testbench_sp.clone()),
            schematic: job.schematic.clone(),
        }
    }
}

/// A job: its identity (id, name, options, trace id) and history (iteration,
/// best candidate, patience, routing pitch, error); where it stands is its
/// [`JobPhase`]. Written only by the job's driver (`session`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub job_id: String,
    pub name: String,
    pub options: JobOptions,
    /// the job's W3C trace id (32 hex digits; the submitter's `traceparent`, else a
    /// fresh one): sent with every call made for the job, `trace_id` in every log line
    #[serde(default)]
    pub trace_id: String,
    pub created_ms: u64,
    pub updated_ms: u64,
    /// when the job first left INIT (the time budget counts from here)
    pub started_ms: u64,
    pub phase: JobPhase,
    /// current iteration, from 0
    pub iteration: u32,
    #[serde(default)]
    pub error: String,
    #[serde(default)]
    pub best_candidate_id: String,
    #[serde(default)]
    pub best_score: f64,
    #[serde(default)]
    pub best_passed: bool,
    /// iterations in a row that found no better candidate
    #[serde(default)]
    pub stale_iterations: u32,
    /// `route.info`'s pitch for this job's rule set, once probed
    #[serde(default)]
    pub route_pitch_um: Option<f64>,
    /// the schematic's simulation (the probe's), the reference of every candidate's
    /// post-layout measures
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schematic: Option<centroid_planner::performance::SchematicSimulation>,
    /// a cancellation was seen by the job's driver
    #[serde(default)]
    pub cancel_requested: bool,
    #[serde(default)]
    pub cancel_reason: String,
    /// the principal that submitted the job; `None` in records written before jobs
    /// had owners (only admins see those)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// the LLM planner's memory (critique, guidance versions, iterations
    /// reviewed), so a coordinator taking the job over continues it
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planner_memory: Option<centroid_planner::advice::PlannerMemory>,
}

impl JobRecord {
    /// A new job in INIT, created and started at `now_ms`.
    pub fn new(job_id: String, name: String, options: JobOptions, now_ms: u64) -> JobRecord {
        JobRecord {
            job_id,
            name,
            options,
            trace_id: centroid_runtime::trace_context::new_trace_id(),
            created_ms: now_ms,
            updated_ms: now_ms,
            started_ms: now_ms,
            phase: JobPhase::Init,
            iteration: 0,
            error: String::new(),
            best_candidate_id: String::new(),
            best_score: 0.0,
            best_passed: false,
            stale_iterations: 0,
            route_pitch_um: None,
            schematic: None,
            cancel_requested: false,
            planner_memory: None,
            cancel_reason: String::new(),
            owner: None,
        }
    }

    /// The state users see.
    pub fn state(&self) -> JobState {
        self.phase.state()
    }

    /// The outcome, once the job is finished.
    pub fn outcome(&self) -> Option<Outcome> {
        self.phase.outcome()
    }

    pub fn is_finished(&self) -> bool {
        matches!(self.phase, JobPhase::Finished { .. })
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

/// The evaluator judges a run by its error and its steps.
impl RunReport for CandidateResult {
    fn failure(&self) -> Option<(&str, &str)> {
        (!self.ok).then_some((&self.error_code, &self.error_message))
    }

    fn steps(&self) -> &[StepOutcome] {
        &self.steps
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
    /// the data as JSON text (`null`: none), serialised once
    #[serde(default)]
    pub data: EventJson,
    #[serde(default)]
    pub last: bool,
}

/// A delivery of a candidate from the work queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueEntry {
    pub entry_id: String,
    pub job_id: String,
    pub candidate_id: String,
    /// the job's weight in the share of the slots (entries written before weights
    /// existed read as 1)
    pub weight: u32,
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
