//! The Centroid planner: what a candidate layout is and how the search finds the
//! next ones, without the service around it. The design space of a task and its
//! points, the rule-based planner turning a point into a plan of skill calls and
//! adjusting a failed step (ReAct), drafting an iteration, the candidate journal
//! as a search tree, the evaluator's score, the layout figures, and the long-term
//! case memory.
//!
//! Pure: no async runtime, no store, no RPC (the coordinator brings those);
//! deterministic for a seed. The code map is in `ARCHITECTURE.md`.

pub mod advice;
pub mod candidate;
pub mod candidate_plan;
pub mod case_memory;
pub mod design_point;
pub mod design_space;
pub mod device_units;
pub mod drafting;
pub mod electrical;
pub mod evaluation;
pub mod evaluator;
pub mod figures;
pub mod heuristic;
pub mod hierarchy;
pub mod job_events;
pub mod kind_order;
pub mod performance;
pub mod placement_order;
pub mod plan;
pub mod plan_builder;
pub mod planner;
pub mod point_from_json;
pub mod random;
pub mod react;
pub mod row_arrangement;
pub mod rules_probe;
pub mod run_report;
pub mod search;
pub mod skill_catalog;
pub mod step_failure;
pub mod work_estimate;

pub use advice::{
    Advice, AdviceRequest, CallMessage, JournalEntry, LlmCall, PlannerMemory, PromptVersion,
};
pub use candidate::{CandidateRecord, Origin};
pub use design_point::DesignPoint;
pub use design_space::DesignSpace;
pub use evaluation::{Evaluation, PerformanceShare, SignoffVerdict};
pub use heuristic::{HeuristicPlanner, RawInputs};
pub use plan::{Plan, PlanStep};
pub use planner::{Adjusted, Adjustment, PlanError, Planner, PlannerFuture, PlannerKind};
pub use run_report::{RunReport, StepOutcome};
pub use skill_catalog::SkillCatalog;
pub use step_failure::StepFailure;
