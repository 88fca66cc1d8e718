//! The prompts a job's first iteration would send the model, built without
//! asking it (`centroid plan --planner llm --print-prompts`): the CLI links no
//! coordinator code, so it sends a [`PreviewRequest`] to
//! `centroid-coordinator print-prompts` on stdin and prints the answer.

use std::sync::Arc;

use centroid_planner::advice::{AdviceRequest, CallMessage};
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_schemas::{InputErrors, TaskContext};
use serde::{Deserialize, Serialize};

use super::LlmPlanner;
use crate::llm::{LlmClient, LlmError, LlmSettings};
use crate::model::JobInputs;
use crate::planner::raw_inputs;

/// Stands for a model not configured: the prompts are built, nothing is asked.
const NO_MODEL: &str = "(no model configured)";

/// What the first iteration's prompts are built from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreviewRequest {
    /// the job's three files as it would submit them
    pub inputs: JobInputs,
    /// the skills the workers offer (name → input schema)
    pub skills: SkillCatalog,
    /// the rule set's routing pitch, when probed
    pub route_pitch_um: Option<f64>,
    /// candidates per iteration (the model is asked for half)
    pub candidates: u32,
}

/// One call the job would make.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreviewedCall {
    pub role: String,
    pub iteration: u32,
    pub model: String,
    pub messages: Vec<CallMessage>,
}

/// Why the prompts could not be built.
#[derive(Debug, thiserror::Error)]
pub enum PreviewError {
    #[error(transparent)]
    Inputs(#[from] InputErrors),
    #[error(transparent)]
    Client(#[from] LlmError),
}

/// The first iteration's planning call (the first iteration asks nothing else:
/// the critic has no iteration to review yet), within `settings`' budget.
pub fn first_iteration(
    request: &PreviewRequest,
    settings: &LlmSettings,
) -> Result<Vec<PreviewedCall>, PreviewError> {
    let task = Arc::new(TaskContext::load(&request.inputs.task_inputs(), "plan")?);
    let heuristic =
        HeuristicPlanner::new(raw_inputs(&request.inputs)).with_route_pitch(request.route_pitch_um);
    let space = heuristic.design_space(&task, &request.skills);
    let mut settings = settings.clone();
    if !settings.is_configured() {
        // the client is only made to carry the budget: it is never asked
        settings.base_url = "http://127.0.0.1:9/v1".into();
        settings.model = NO_MODEL.into();
    }
    let model = settings.model.clone();
    let planner = LlmPlanner::new(heuristic, LlmClient::new(settings)?);
    let advice = AdviceRequest {
        job_id: "plan".into(),
        iteration: 0,
        count: (request.candidates as usize / 2).max(1),
        task,
        skills: request.skills.clone(),
        space,
        journal: Vec::new(),
        history: Vec::new(),
    };
    let prompts = planner.planning_prompts(&advice);
    let message = |role: &str, content: String| CallMessage {
        role: role.into(),
        content,
    };
    Ok(vec![PreviewedCall {
        role: "planner".into(),
        iteration: 0,
        model,
        messages: vec![
            message("system", prompts.system),
            message("user", prompts.user),
        ],
    }])
}
