//! Planning (seed 000 §4.2): a [`Planner`] turns the task context and one point of
//! the design space into a plan of skill calls, and adjusts a failed step (ReAct).
//! The built-in [`crate::heuristic::HeuristicPlanner`] is rule-based; the
//! coordinator's LLM planner wraps it behind the same trait, adding advice (design
//! points and plans chosen by a model) and model-written adjustments.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use centroid_schemas::TaskContext;

use crate::advice::{Advice, AdviceRequest, LlmCall};
use crate::design_point::DesignPoint;
use crate::design_space::DesignSpace;
use crate::plan::Plan;
use crate::skill_catalog::SkillCatalog;
use crate::step_failure::StepFailure;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("the workers lack skills the plan needs: {0:?}")]
    MissingSkills(Vec<String>),
    #[error("nothing to lay out: {0}")]
    Empty(String),
}

/// A ReAct adjustment: the new plan and what was changed (Thought/Action in one line).
#[derive(Debug, Clone, PartialEq)]
pub struct Adjustment {
    pub plan: Plan,
    pub note: String,
}

/// What a planner's ReAct step produced: the adjustment (when it knows a fix) and
/// the model calls it made on the way (none for the rule-based planner).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Adjusted {
    pub adjustment: Option<Adjustment>,
    pub calls: Vec<LlmCall>,
    /// why the rule-based adjustment was used instead of the model's
    pub fallback: Option<String>,
}

/// A future a planner returns (planners are used as trait objects).
pub type PlannerFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which planner a job runs and, for the LLM planner, with which model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannerKind {
    Heuristic,
    Llm { model: String },
}

pub trait Planner: Send + Sync + 'static {
    /// The design space of this task (what the candidate generator varies).
    fn design_space(&self, context: &TaskContext, skills: &SkillCatalog) -> DesignSpace;
    /// The plan of one candidate.
    fn plan(
        &self,
        context: &TaskContext,
        point: &DesignPoint,
        skills: &SkillCatalog,
    ) -> Result<Plan, PlanError>;
    /// Adjusts the plan after step `step_id` failed with `failure` (INVALID_PARAM,
    /// NOT_FOUND or CONFLICT); `None` when it knows no fix.
    fn adjust<'a>(
        &'a self,
        plan: &'a Plan,
        step_id: &'a str,
        failure: &'a StepFailure,
        skills: &'a SkillCatalog,
    ) -> PlannerFuture<'a, Adjusted>;
    /// Which planner this is.
    fn kind(&self) -> PlannerKind {
        PlannerKind::Heuristic
    }
    /// Design points (and possibly a plan) for an iteration beyond what the search
    /// journal proposes; the rule-based planner has none. Runs while the previous
    /// iteration executes; never fails (a failed model call is a fallback).
    fn advise(self: Arc<Self>, _request: AdviceRequest) -> PlannerFuture<'static, Advice> {
        Box::pin(std::future::ready(Advice::default()))
    }
}
