//! Drafting an iteration: the planner's advice (design points, a plan) and the
//! search journal propose candidates, the job's planner turns each point into a
//! plan. Used by the job session (PLANNING) and by
//! `centroid plan`, which prints the plans without running them — one planner
//! for the coordinator and for the tests of the skill package.

use std::collections::HashSet;

use centroid_schemas::TaskContext;

use crate::advice::Advice;
use crate::candidate::{CandidateRecord, Origin};
use crate::plan::Plan;
use crate::plan_builder::noop_plan;
use crate::planner::{PlanError, Planner};
use crate::search::{Journal, Proposal};
use crate::skill_catalog::SkillCatalog;

/// What drafting needs to know of the job and its current iteration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IterationToDraft {
    /// the candidates are named `{job_id}-i{iteration}-c{index}`
    pub job_id: String,
    /// the iteration being drafted, from 0
    pub iteration: u32,
    pub candidates_per_iteration: u32,
    /// the search's seed (with the iteration, it fixes the proposals)
    pub seed: u64,
    /// every candidate gets the no-op plan (tests of the dispatch)
    pub noop_plan: bool,
    /// how long the no-op plan sleeps, in ms
    pub sleep_ms: u64,
}

/// An iteration's candidates, as drafted.
#[derive(Debug, Clone)]
pub struct Draft {
    pub candidates: Vec<CandidateRecord>,
    /// the last plan that could not be made (when some could not)
    pub plan_error: Option<PlanError>,
    /// distinct points of the design space
    pub design_space_size: u64,
}

/// Which part of an iteration a draft makes: `count` candidates named from
/// index `first_index` on. An iteration is drafted whole, or — when the LLM
/// plans it — in two parts: the rule-based share at once (part 0), the model's
/// share when its advice arrives (part 1: its points first, the search
/// journal's to fill up, from a random stream of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftPart {
    pub count: usize,
    pub first_index: usize,
    /// 0 for the first part; the random stream of the search is the seed's
    /// mixed with it
    pub part: u64,
}

impl DraftPart {
    /// The whole iteration, in one part.
    pub fn whole(to_draft: &IterationToDraft) -> DraftPart {
        DraftPart {
            count: to_draft.candidates_per_iteration as usize,
            first_index: 0,
            part: 0,
        }
    }
}

/// The candidates of the iteration `to_draft`, given the candidates so far and the
/// planner's advice. Empty when the design space is exhausted.
pub fn draft_iteration(
    planner: &dyn Planner,
    task: &TaskContext,
    skills: &SkillCatalog,
    to_draft: &IterationToDraft,
    so_far: &[CandidateRecord],
    advice: &Advice,
) -> Draft {
    draft_part(
        planner,
        task,
        skills,
        to_draft,
        DraftPart::whole(to_draft),
        so_far,
        advice,
    )
}

/// `part` of the iteration `to_draft`: the advice's points and plan first, the
/// search journal's proposals (never a point of `so_far`) to fill up. Empty when
/// the design space is exhausted.
pub fn draft_part(
    planner: &dyn Planner,
    task: &TaskContext,
    skills: &SkillCatalog,
    to_draft: &IterationToDraft,
    part: DraftPart,
    so_far: &[CandidateRecord],
    advice: &Advice,
) -> Draft {
    let space = planner.design_space(task, skills);
    let count = part.count;
    let written_plan = advice.plan.as_ref().filter(|_| !to_draft.noop_plan);
    let recalled = advice.recalled.iter().map(|point| (point, Origin::Memory));
    let advised = advice.points.iter().map(|point| (point, Origin::Llm));
    let preset: Vec<Proposal> = recalled
        .chain(advised)
        .map(|(point, origin)| Proposal {
            point: point.clone(),
            parent_id: String::new(),
            origin,
        })
        .collect();
    let mut proposals = Journal::from_candidates(so_far).propose(
        &space,
        count
            .saturating_sub(usize::from(written_plan.is_some()))
            .max(1),
        to_draft.seed ^ part.part.wrapping_mul(PART_STREAM),
        to_draft.iteration,
        preset,
        &advice.avoid,
    );
    if written_plan.is_some() {
        // the plan is not a point of the space; the default point only labels it
        proposals.push(Proposal {
            point: space.default_point(),
            parent_id: String::new(),
            origin: Origin::LlmPlan,
        });
    }
    let mut candidates = Vec::new();
    let mut plan_error = None;
    for (index, proposal) in proposals.into_iter().enumerate() {
        let plan = match (proposal.origin, written_plan) {
            (Origin::LlmPlan, Some(plan)) => Ok(plan.clone()),
            _ if to_draft.noop_plan => Ok(noop_plan(to_draft.sleep_ms)),
            _ => planner.plan(task, &proposal.point, skills),
        };
        let index = part.first_index + index;
        match plan {
            Ok(plan) => candidates.push(CandidateRecord {
                candidate_id: format!("{}-i{}-c{index}", to_draft.job_id, to_draft.iteration),
                job_id: to_draft.job_id.clone(),
                iteration: to_draft.iteration,
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

/// Mixed into the seed for the parts after the first (a large odd constant).
const PART_STREAM: u64 = 0x9E37_79B9_7F4A_7C15;

fn required_skills(plan: &Plan) -> Vec<String> {
    let skills: HashSet<&String> = plan.steps.iter().map(|step| &step.skill).collect();
    let mut skills: Vec<String> = skills.into_iter().cloned().collect();
    skills.sort();
    skills
}
