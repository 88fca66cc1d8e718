//! The model's share of a running iteration. When the LLM plans a job, an
//! iteration is drafted in two parts: the rule-based share runs at once
//! ([`super::planning`]), and when the planner's advice arrives — or the model's
//! timeout has passed — the model's share is drafted (the model's points and
//! plan first, the search journal's to fill up to its count) and added to the
//! round, which then ends once every candidate, these included, is in. A point
//! the model chose that the rule-based share runs already is recorded as the
//! model's (the search never drafts a point twice).
//!
//! Ordering guarantees, for a seed and the same model answers: an iteration
//! holds the same candidates, with the same ids, whenever the answer arrives
//! (within the timeout) — the rule-based share is `c0…` and is drafted before
//! the model answers; the model's share follows it (`c{rule share}…`) and is
//! drafted from a journal that leaves out the evaluations of its own iteration
//! (and of the one before, when the iteration was drafted ahead), so results
//! arriving meanwhile change nothing. Only when the candidates run changes with
//! the model's latency. The share added is a job event and, with the round, part
//! of the job record written with its candidates in one store call, so a
//! coordinator taking the job over sees it; one taking over before it was added
//! asks the advice again.
//!
//! Under `[llm] model_share = "when_ready"`, where no next iteration can take a
//! late share over (the job's last iteration, or a round of nothing of its own)
//! and slots would idle, the share is drafted rule-based instead — the
//! journal's proposals, ids after the rule-based share's — so the job runs its
//! whole budget without waiting; the advice, if it comes, is dropped-late.

use std::sync::Arc;

use centroid_planner::advice::Advice;
use centroid_planner::candidate::Origin;
use centroid_planner::design_point::DesignPoint;
use centroid_planner::drafting::{DraftPart, draft_part};
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_planner::work_estimate::longest_first;
use centroid_schemas::TaskContext;

use super::Driver;
use super::planning::{queue_window, report_plans};
use super::transitions::PhaseEvent;
use crate::context::Interrupted;
use crate::drafting::iteration_to_draft;
use crate::model::{CandidateRecord, JobPhase, JobRecord, ModelShare, Round, now_ms};

impl Driver {
    /// The model's share of `round` (the current iteration's), drafted once the
    /// advice is in; `None` while it is not (or no worker is live).
    pub(super) async fn draft_model_share(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        round: &Round,
        share: &ModelShare,
    ) -> Result<Option<PhaseEvent>, Interrupted> {
        let skills = match self.skills.clone() {
            Some(skills) => skills,
            None => match self.live_skills(job).await? {
                Some(skills) => skills,
                None => return Ok(None),
            },
        };
        let asked_for = share.advice_iteration(job.iteration);
        let Some(advice) = self.arrived_advice(job, asked_for, task, &skills).await? else {
            return Ok(None);
        };
        self.drafted_share(job, task, &skills, round, share, advice)
            .await
            .map(Some)
    }

    /// The awaited model's share of `round` (the current iteration's) drafted
    /// rule-based — the search journal's proposals, as the rule-based share's —
    /// because its advice is late and slots would idle where no next iteration
    /// can take the share over (`[llm] model_share = "when_ready"`, see
    /// `transitions::search`); the advice, when it comes, is recorded as
    /// dropped-late. `None` while no worker is live.
    pub(super) async fn draft_share_by_rule(
        &mut self,
        job: &JobRecord,
    ) -> Result<Option<PhaseEvent>, Interrupted> {
        let (JobPhase::Executing(round), Ok(task)) = (&job.phase, self.parsed.clone()) else {
            return Ok(None);
        };
        let Some(share) = round.model_share.clone() else {
            return Ok(None);
        };
        let skills = match self.skills.clone() {
            Some(skills) => skills,
            None => match self.live_skills(job).await? {
                Some(skills) => skills,
                None => return Ok(None),
            },
        };
        self.advice_late(share.advice_iteration(job.iteration));
        let event = self
            .drafted_share(job, &task, &skills, round, &share, Advice::default())
            .await?;
        Ok(match event {
            PhaseEvent::ModelShareDrafted {
                candidates,
                outstanding,
                window,
                now_ms,
                ..
            } => Some(PhaseEvent::ShareDraftedByRule {
                candidates,
                outstanding,
                window,
                now_ms,
            }),
            _ => None,
        })
    }

    /// The model's share of `round` drafted with `advice` (its points and plan
    /// first, the journal's to fill up), as a [`PhaseEvent::ModelShareDrafted`].
    async fn drafted_share(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        skills: &SkillCatalog,
        round: &Round,
        share: &ModelShare,
        mut advice: Advice,
    ) -> Result<PhaseEvent, Interrupted> {
        advice.avoid = self.avoid.clone();
        let context = self.context.clone();
        let planner = context.planner_with_inputs(job, &self.inputs);
        // the journal without the evaluations of this iteration (and of the one
        // before, when this one was drafted ahead), whenever the advice arrived
        let mut so_far = self.journal.read(&context, &job.job_id).await?;
        for candidate in &mut so_far {
            if candidate.iteration == job.iteration || Some(candidate.iteration) == share.hidden {
                candidate.evaluation = None;
            }
        }
        let chosen_too = self
            .chosen_too(job, task, skills, &advice.points, &so_far)
            .await?;
        let to_draft = iteration_to_draft(job);
        // after the rule-based share: the iteration's whole count when the
        // share was carried over (see `Driver::draft`)
        let first_index = match share.asked_for {
            Some(_) => to_draft.candidates_per_iteration,
            None => to_draft
                .candidates_per_iteration
                .saturating_sub(share.count),
        };
        let part = DraftPart {
            count: share.count as usize,
            first_index: first_index as usize,
            part: 1,
        };
        let draft = draft_part(
            planner.as_ref(),
            task,
            skills,
            &to_draft,
            part,
            &so_far,
            &advice,
        );
        if let Some(error) = &draft.plan_error {
            tracing::warn!(session_id = %job.job_id, %error, "a point of the model's share could not be planned");
        }
        let mut candidates = draft.candidates;
        if !candidates.is_empty() {
            report_plans(&context, job, &candidates, draft.design_space_size).await?;
        }
        longest_first(&mut candidates);
        let from_model = chosen_too.len()
            + candidates
                .iter()
                .filter(|candidate| matches!(candidate.origin, Origin::Llm | Origin::LlmPlan))
                .count();
        let ids = candidates
            .iter()
            .map(|candidate| candidate.candidate_id.clone())
            .collect();
        self.drafted = candidates;
        let finished = self.finished_ids(&job.job_id).await?;
        let outstanding = round
            .queued_candidates()
            .iter()
            .filter(|candidate_id| !finished.contains(*candidate_id))
            .count();
        Ok(PhaseEvent::ModelShareDrafted {
            candidates: ids,
            chosen_too,
            from_model,
            outstanding,
            window: queue_window(&context, job).await,
            now_ms: now_ms(),
        })
    }

    /// The candidates of the running iteration's rule-based share at a point the
    /// model chose too: recorded as the model's from now on (the search drafts no
    /// point twice, so the model's share cannot hold them again).
    async fn chosen_too(
        &self,
        job: &JobRecord,
        task: &TaskContext,
        skills: &SkillCatalog,
        points: &[DesignPoint],
        so_far: &[CandidateRecord],
    ) -> Result<Vec<String>, Interrupted> {
        let context = &self.context;
        let space = context
            .planner_with_inputs(job, &self.inputs)
            .design_space(task, skills);
        let chosen: Vec<DesignPoint> = points.iter().map(|point| space.canonical(point)).collect();
        let mut chosen_too = Vec::new();
        for candidate in so_far {
            let of_rule_share = candidate.iteration == job.iteration
                && !matches!(candidate.origin, Origin::Llm | Origin::LlmPlan);
            if !of_rule_share || !chosen.contains(&space.canonical(&candidate.design_point)) {
                continue;
            }
            let candidate_id = &candidate.candidate_id;
            let stored = context
                .with_store_retry("read candidate", || {
                    context.store.get_candidate(&job.job_id, candidate_id)
                })
                .await?;
            let mut stored = stored.ok_or_else(|| {
                Interrupted::Store(crate::error::StoreError::Missing {
                    key: format!("job {} candidate {candidate_id}", job.job_id),
                })
            })?;
            stored.origin = Origin::Llm;
            context
                .with_store_retry("write candidate origin", || {
                    context.store.put_candidate(&stored)
                })
                .await?;
            self.journal.set_origin(candidate_id, Origin::Llm);
            chosen_too.push(candidate_id.clone());
        }
        Ok(chosen_too)
    }
}
