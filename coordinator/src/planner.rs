//! The service's choice of planner: a [`PlannerFactory`] makes the planner of a
//! job from its record and inputs ([`HeuristicPlanners`]: the rule-based planner
//! for every job; the LLM planner's factory is in [`crate::agent`]).
//!
//! The planners themselves are the `centroid-planner` crate.

use std::sync::Arc;

use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::planner::Planner;

use crate::model::{JobInputs, JobRecord};

/// Makes the planner of a job; the coordinator holds one and asks it once per
/// job, so that planning and ReAct adjustments of a job share one planner.
pub trait PlannerFactory: Send + Sync + 'static {
    fn planner_for(&self, job: &JobRecord, inputs: &JobInputs) -> Arc<dyn Planner>;
}

/// The rule-based planner for every job.
#[derive(Debug, Clone, Copy, Default)]
pub struct HeuristicPlanners;

impl PlannerFactory for HeuristicPlanners {
    fn planner_for(&self, job: &JobRecord, inputs: &JobInputs) -> Arc<dyn Planner> {
        Arc::new(
            HeuristicPlanner::new(raw_inputs(inputs))
                .with_route_pitch(job.route_pitch_um)
                .with_simulation(inputs.simulation(job)),
        )
    }
}

/// The rule set and netlist of a job as its planner passes them to the skills.
pub fn raw_inputs(inputs: &JobInputs) -> RawInputs {
    RawInputs::from_texts(&inputs.drc_rules_json, &inputs.netlist_json)
}
