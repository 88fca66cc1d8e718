//! Drafting an iteration of a job: the planner crate's drafting
//! ([`centroid_planner::drafting`]) told what it needs of the job's record.

use centroid_planner::advice::Advice;
use centroid_planner::candidate::CandidateRecord;
use centroid_planner::drafting::{Draft, IterationToDraft};
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_schemas::TaskContext;

use crate::model::JobRecord;

/// What drafting needs of `job`'s current iteration.
pub fn iteration_to_draft(job: &JobRecord) -> IterationToDraft {
    IterationToDraft {
        job_id: job.job_id.clone(),
        iteration: job.iteration,
        candidates_per_iteration: job.options.candidates_per_iteration,
        seed: job.options.seed,
        noop_plan: job.options.noop_plan,
        sleep_ms: job.options.sleep_ms,
    }
}

/// The candidates of `job`'s current iteration, given the candidates so far and
/// the planner's advice. Empty when the design space is exhausted.
pub fn draft_iteration(
    planner: &dyn Planner,
    task: &TaskContext,
    skills: &SkillCatalog,
    job: &JobRecord,
    so_far: &[CandidateRecord],
    advice: &Advice,
) -> Draft {
    centroid_planner::drafting::draft_iteration(
        planner,
        task,
        skills,
        &iteration_to_draft(job),
        so_far,
        advice,
    )
}
