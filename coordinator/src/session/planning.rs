//! PLANNING: the skills the workers offer, the routing pitch (probed once per
//! job), the next candidates from the search journal, one plan per candidate,
//! and the iteration enqueued atomically with the job record.

use std::sync::Arc;
use std::time::Duration;

use centroid_schemas::TaskContext;
use serde_json::{Value, json};

use super::{Driver, Flow, ending};
use crate::context::Context;
use crate::drafting::draft_iteration;
use crate::model::{CandidateRecord, EventKind, JobRecord, JobState, now_ms};
use crate::planner::SkillCatalog;
use crate::planner::heuristic::routing_advertised;
use crate::planner::plan_builder::{route_pitch_of, route_probe_plan};
use crate::registry::skill_catalog_of_cards;
use crate::worker_calls;

/// How long the routing-pitch probe may wait for a slot and run.
const ROUTE_PROBE_DEADLINE: Duration = Duration::from_secs(30);

impl Driver {
    pub(super) async fn plan_iteration(
        &mut self,
        job: &mut JobRecord,
        task: &Arc<TaskContext>,
    ) -> Flow {
        let Some(skills) = self.live_skills(job).await else {
            self.wait_a_little(Duration::from_millis(200)).await;
            return Flow::Continue;
        };
        let context = self.context.clone();
        if !job.options.noop_plan && !job.route_probed && routing_advertised(&skills) {
            job.route_pitch_um =
                probe_route_pitch(&context, job, &self.inputs.drc_rules_json).await;
            job.route_probed = true;
            if context
                .with_store_retry("write job", || context.store.put_job(job))
                .await
                .is_none()
            {
                return Flow::Stop;
            }
            let data = json!({"route_pitch_um": job.route_pitch_um});
            context
                .emit(
                    job,
                    EventKind::StateChanged,
                    "",
                    "probed the routing pitch",
                    data,
                )
                .await;
        }
        let planner = context.planner_with_inputs(job, &self.inputs);
        let Some(so_far) = self.journal.read(&context, &job.job_id).await else {
            return Flow::Stop;
        };
        let (recalled, avoid) = self.recall(job, task, &so_far).await;
        let mut advice = self.advice(job, task, &planner, &skills, &so_far).await;
        advice.recalled = recalled;
        advice.avoid = avoid;
        let draft = draft_iteration(planner.as_ref(), task, &skills, job, &so_far, &advice);
        let candidates = draft.candidates;
        if candidates.is_empty() {
            match draft.plan_error {
                None => ending::conclude(&context, job, "the design space is exhausted").await,
                Some(error) => {
                    let message = error.to_string();
                    ending::finish(&context, job, crate::model::Outcome::Failed, &message).await
                }
            }
            return Flow::Stop;
        }
        report_plans(&context, job, &candidates, draft.design_space_size).await;
        job.state = JobState::Executing;
        job.iteration_started_ms = now_ms();
        job.iteration_candidates = candidates
            .iter()
            .map(|candidate| candidate.candidate_id.clone())
            .collect();
        job.updated_ms = now_ms();
        // a window of the iteration goes into the queue; the rest follows as results
        // come in (EXECUTING), so that jobs running at once share the slots
        let queued = candidates.len().min(queue_window(&context).await);
        job.iteration_enqueued = Some(queued as u32);
        if context
            .with_store_retry("enqueue candidates", || {
                context.store.enqueue_iteration(job, &candidates, queued)
            })
            .await
            .is_none()
        {
            return Flow::Stop;
        }
        context.queue_changed.notify_waiters();
        let mut journal = so_far;
        journal.extend(candidates.iter().cloned());
        self.ask_ahead(job, task, &planner, &skills, &journal);
        tracing::info!(session_id = %job.job_id, iteration = job.iteration, candidates = candidates.len(), "candidates enqueued");
        let data = json!({"from": "planning", "to": "executing", "candidates": candidates.len()});
        context
            .emit(job, EventKind::StateChanged, "", "executing", data)
            .await;
        Flow::Continue
    }

    /// The skills of the live workers — this coordinator's, or, when it has none,
    /// those of the workers of other coordinators sharing the store (their
    /// dispatchers take the candidates from the shared queue). `None` while there
    /// is no live worker anywhere.
    async fn live_skills(&mut self, job: &JobRecord) -> Option<SkillCatalog> {
        let context = &self.context;
        if context.registry.alive_count() > 0 {
            context
                .registry
                .wait_for_schemas(Duration::from_secs(3))
                .await;
            return Some(context.registry.skills());
        }
        let cards = context.store.worker_cards().await.unwrap_or_default();
        if !cards.is_empty() {
            return Some(skill_catalog_of_cards(&cards));
        }
        if !self.waiting_reported {
            self.waiting_reported = true;
            let message = "no live worker: waiting for one to register";
            context
                .emit(job, EventKind::WaitingForWorkers, "", message, Value::Null)
                .await;
        }
        None
    }
}

async fn report_plans(
    context: &Context,
    job: &JobRecord,
    candidates: &[CandidateRecord],
    space_size: u64,
) {
    let first = &candidates[0];
    let listed: Vec<Value> = candidates
        .iter()
        .map(|candidate| {
            json!({
                "candidate_id": candidate.candidate_id,
                "origin": candidate.origin.as_str(),
                "parent_id": candidate.parent_id,
                "design_point": candidate.design_point,
                "steps": candidate.plan.steps.iter().map(|step| step.skill.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let data = json!({"candidates": listed, "design_space_size": space_size});
    let summary = first.plan.summary.clone();
    context
        .emit(
            job,
            EventKind::PlanCreated,
            &first.candidate_id,
            summary,
            data,
        )
        .await;
}

/// `tech.load` + `route.info` on a worker: the pitch the placement leaves between cells.
async fn probe_route_pitch(
    context: &Arc<Context>,
    job: &JobRecord,
    drc_rules_json: &str,
) -> Option<f64> {
    let rules: Value = serde_json::from_str(drc_rules_json).unwrap_or(Value::Null);
    let plan = route_probe_plan(&rules);
    let response = match worker_calls::probe(context, job, &plan, ROUTE_PROBE_DEADLINE).await {
        Ok(response) => response,
        Err(error) => {
            tracing::warn!(session_id = %job.job_id, %error, "routing pitch probe failed; candidates will not be routed");
            return None;
        }
    };
    let pitch = response
        .steps
        .iter()
        .find(|step| step.skill == "route.info" && step.ok)
        .and_then(|step| serde_json::from_str::<Value>(&step.data_json).ok())
        .and_then(|data| route_pitch_of(&data));
    tracing::info!(session_id = %job.job_id, ?pitch, "routing pitch probed");
    pitch
}

/// How many candidates of one job may wait in the work queue at once: what the
/// dispatchers read ahead for all live slots of the farm, so a lone job keeps every
/// slot busy while another job's candidates get in line behind a window, not
/// behind the whole iteration.
pub(super) async fn queue_window(context: &Context) -> usize {
    let slots = match context.registry.alive_slots() {
        0 => context
            .store
            .worker_cards()
            .await
            .map(|cards| cards.iter().map(|card| card.slots).sum::<u32>())
            .unwrap_or(0),
        slots => slots,
    } as usize;
    (slots * crate::dispatcher::ENTRIES_PER_SLOT + crate::dispatcher::EXTRA_ENTRIES).max(1)
}
