//! Drafting an iteration: the search journal proposes design points, the job's
//! planner turns each into a plan. Used by the job session (PLANNING) and by
//! `centroid plan`, which prints the plans without running them — one planner
//! for the coordinator and for the tests of the skill package.

use std::collections::HashSet;

use centroid_schemas::TaskContext;

use crate::model::{CandidateRecord, JobRecord, Plan};
use crate::planner::plan_builder::noop_plan;
use crate::planner::{PlanError, Planner, SkillCatalog};
use crate::search::Journal;

/// An iteration's candidates, as drafted.
#[derive(Debug, Clone)]
pub struct Draft {
    pub candidates: Vec<CandidateRecord>,
    /// the last plan that could not be made (when some could not)
    pub plan_error: Option<PlanError>,
    /// distinct points of the design space
    pub design_space_size: u64,
}

/// The candidates of `job`'s current iteration, given the candidates so far.
/// Empty when the design space is exhausted.
pub fn draft_iteration(
    planner: &dyn Planner,
    task: &TaskContext,
    skills: &SkillCatalog,
    job: &JobRecord,
    so_far: &[CandidateRecord],
) -> Draft {
    let space = planner.design_space(task, skills);
    let proposals = Journal::from_candidates(so_far).propose(
        &space,
        job.options.candidates_per_iteration as usize,
        job.options.seed,
        job.iteration,
    );
    let mut candidates = Vec::new();
    let mut plan_error = None;
    for (index, proposal) in proposals.into_iter().enumerate() {
        let plan = if job.options.noop_plan {
            Ok(noop_plan(job.options.sleep_ms))
        } else {
            planner.plan(task, &proposal.point, skills)
        };
        match plan {
            Ok(plan) => candidates.push(CandidateRecord {
                candidate_id: format!("{}-i{}-c{index}", job.job_id, job.iteration),
                job_id: job.job_id.clone(),
                iteration: job.iteration,
                parent_id: proposal.parent_id,
                origin: proposal.origin,
                design_point: proposal.point,
                required_skills: required_skills(&plan),
                plan,
                evaluation: None,
            }),
            Err(error) => plan_error = Some(error),
        }
    }
    Draft {
        candidates,
        plan_error,
        design_space_size: space.size(),
    }
}

fn required_skills(plan: &Plan) -> Vec<String> {
    let skills: HashSet<&String> = plan.steps.iter().map(|step| &step.skill).collect();
    let mut skills: Vec<String> = skills.into_iter().cloned().collect();
    skills.sort();
    skills
}
