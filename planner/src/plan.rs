//! A candidate's plan: the skill calls a worker runs in order on one KLayout
//! process.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One skill call of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanStep {
    pub step_id: String,
    pub skill: String,
    pub arguments: Value,
    /// the plan still makes sense without this step (the ReAct adjustment may drop it)
    #[serde(default)]
    pub optional: bool,
    /// the cell this step creates from its `cell` argument (a wrapper such as a guard
    /// ring); when the step is dropped, later steps use the `cell` argument instead
    #[serde(default)]
    pub output_cell: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Plan {
    pub summary: String,
    pub steps: Vec<PlanStep>,
}
