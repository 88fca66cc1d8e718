//! PLANNING: the skills the workers offer, the rule-set probe (once per job: the
//! routing pitch, and whether every device can be drawn), the next candidates from the search journal, one plan per candidate,
//! and the iteration enqueued atomically with the job record.

use std::sync::Arc;
use std::time::Duration;

use centroid_schemas::TaskContext;
use serde_json::{Value, json};

use super::{Driver, Flow, ending};
use crate::context::Context;
use crate::drafting::draft_iteration;
use crate::model::{CandidateRecord, EventKind, JobRecord, JobState, Outcome, now_ms};
use crate::planner::SkillCatalog;
use crate::planner::heuristic::routing_advertised;
use crate::planner::rules_probe::{ProbeFindings, ProbeStep, rules_probe_plan};
use crate::planner::work_estimate::longest_first;
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
        let context = self.context.clone();
        // listening before looking: a worker registering in between still wakes us
        let registered = context.registry.slots_changed.notified();
        tokio::pin!(registered);
        registered.as_mut().enable();
        let Some(skills) = self.live_skills(job).await else {
            tokio::select! {
                _ = registered => {}
                _ = self.wait_a_little(Duration::from_millis(200)) => {}
            }
            return Flow::Continue;
        };
        if !job.options.noop_plan && !job.route_probed && probe_advertised(&skills) {
            let findings =
                probe_rules(&context, job, &self.inputs.drc_rules_json, task, &skills).await;
            job.route_pitch_um = findings.pitch_um;
            job.route_probed = true;
            if context
                .with_store_retry("write job", || context.store.put_job(job))
                .await
                .is_none()
            {
                return Flow::Stop;
            }
            let data =
                json!({"route_pitch_um": job.route_pitch_um, "undrawable": findings.undrawable});
            context
                .emit(
                    job,
                    EventKind::StateChanged,
                    "",
                    "probed the rule set (routing pitch, devices)",
                    data,
                )
                .await;
            if !findings.undrawable.is_empty() {
                let message = format!(
                    "the rule set cannot draw these devices (no candidate was run): {}",
                    findings.undrawable.join("; ")
                );
                ending::finish(&context, job, Outcome::Failed, &message).await;
                return Flow::Stop;
            }
        }
        // drafted without the last iteration's evaluations when it was decided so as
        // that iteration was planned (overlapping iterations): the same draft whether
        // made early, while that iteration ran, or now
        let hidden = job.overlap_next.then(|| job.iteration.wrapping_sub(1));
        job.overlap_next = super::overlap::overlap_next(job, context.config.overlap_iterations);
        let Some(drafted) = self.draft(job, task, &skills, hidden).await else {
            return Flow::Stop;
        };
        let candidates = match drafted {
            Drafted::Candidates(candidates) => candidates,
            Drafted::Exhausted => {
                ending::conclude(&context, job, "the design space is exhausted").await;
                return Flow::Stop;
            }
            Drafted::Failed(message) => {
                ending::finish(&context, job, Outcome::Failed, &message).await;
                return Flow::Stop;
            }
        };
        job.state = JobState::Executing;
        job.iteration_started_ms = now_ms();
        job.iteration_candidates = candidates
            .iter()
            .map(|candidate| candidate.candidate_id.clone())
            .collect();
        job.next_iteration = None;
        job.updated_ms = now_ms();
        // a window of the iteration goes into the queue; the rest follows as results
        // come in (EXECUTING), so that jobs running at once share the slots
        let queued = candidates.len().min(queue_window(&context).await);
        job.iteration_enqueued = Some(queued as u32);
        if self.enqueue(job, &candidates, queued).await.is_none() {
            return Flow::Stop;
        }
        let data = json!({"from": "planning", "to": "executing", "candidates": candidates.len()});
        context
            .emit(job, EventKind::StateChanged, "", "executing", data)
            .await;
        Flow::Continue
    }

    /// Drafts the candidates of `job.iteration` (planner's advice, memory, the search
    /// journal — with the evaluations of iteration `hidden` left out), reports their
    /// plans and asks the planner's advice for the iteration after. `None` on shutdown.
    pub(super) async fn draft(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        skills: &SkillCatalog,
        hidden: Option<u32>,
    ) -> Option<Drafted> {
        let context = self.context.clone();
        let planner = context.planner_with_inputs(job, &self.inputs);
        let mut so_far = self.journal.read(&context, &job.job_id).await?;
        for candidate in &mut so_far {
            if Some(candidate.iteration) == hidden {
                candidate.evaluation = None;
            }
        }
        let (recalled, avoid) = self.recall(job, task, &so_far).await;
        let mut advice = self.advice(job, task, &planner, skills, &so_far).await;
        advice.recalled = recalled;
        advice.avoid = avoid;
        let draft = draft_iteration(planner.as_ref(), task, skills, job, &so_far, &advice);
        if draft.candidates.is_empty() {
            return Some(match draft.plan_error {
                None => Drafted::Exhausted,
                Some(error) => Drafted::Failed(error.to_string()),
            });
        }
        report_plans(&context, job, &draft.candidates, draft.design_space_size).await;
        let mut journal = so_far;
        journal.extend(draft.candidates.iter().cloned());
        self.ask_ahead(job, task, &planner, skills, &journal);
        // the order they are queued in: the longer-looking ones first
        let mut candidates = draft.candidates;
        longest_first(&mut candidates);
        Some(Drafted::Candidates(candidates))
    }

    /// The skills of the live workers — this coordinator's, or, when it has none,
    /// those of the workers of other coordinators sharing the store (their
    /// dispatchers take the candidates from the shared queue). `None` while there
    /// is no live worker anywhere.
    pub(super) async fn live_skills(&mut self, job: &JobRecord) -> Option<SkillCatalog> {
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

/// Whether the workers offer what the rule-set probe runs.
fn probe_advertised(skills: &SkillCatalog) -> bool {
    skills.contains_key("tech.load")
        && (routing_advertised(skills) || skills.contains_key("layout.create_device"))
}

/// `tech.load`, `route.info` and one `layout.create_device` per device size on a
/// worker (see [`crate::planner::rules_probe`]). A probe that cannot run finds
/// nothing: the candidates then go unrouted and meet any undrawable device themselves.
async fn probe_rules(
    context: &Arc<Context>,
    job: &JobRecord,
    drc_rules_json: &str,
    task: &TaskContext,
    skills: &SkillCatalog,
) -> ProbeFindings {
    let rules: Value = serde_json::from_str(drc_rules_json).unwrap_or(Value::Null);
    let probe = rules_probe_plan(&rules, &task.circuit, skills);
    let response = match worker_calls::probe(
        context,
        job,
        &probe.plan,
        ROUTE_PROBE_DEADLINE,
        Vec::new(),
    )
    .await
    {
        Ok(response) => response,
        Err(error) => {
            tracing::warn!(session_id = %job.job_id, %error, "rule-set probe failed; candidates will not be routed");
            return ProbeFindings::default();
        }
    };
    let findings = probe.findings(response.steps.iter().map(|step| {
        ProbeStep {
            step_id: &step.step_id,
            skill: &step.skill,
            ok: step.ok,
            error_code: step
                .error
                .as_ref()
                .map(|error| error.error_code().wire_name())
                .unwrap_or(""),
            error_message: step
                .error
                .as_ref()
                .map(|error| error.message.as_str())
                .unwrap_or(""),
            data: serde_json::from_str(&step.data_json).ok(),
        }
    }));
    tracing::info!(session_id = %job.job_id, pitch = ?findings.pitch_um, undrawable = findings.undrawable.len(), "rule set probed");
    findings
}

/// What drafting an iteration gave.
pub(super) enum Drafted {
    Candidates(Vec<CandidateRecord>),
    /// every point of the design space was tried
    Exhausted,
    /// no candidate could be planned: the last planning error
    Failed(String),
}

/// How many candidates of one job may wait in the work queue at once: what the
/// dispatchers read ahead for all live slots of the farm, so a lone job keeps every
/// slot busy while another job's candidates get in line behind a window, not
/// behind the whole iteration.
pub(super) async fn queue_window(context: &Context) -> usize {
    (farm_slots(context).await * crate::dispatcher::ENTRIES_PER_SLOT
        + crate::dispatcher::EXTRA_ENTRIES)
        .max(1)
}

/// The slots of the live workers — this coordinator's, else those the shared store
/// lists for the workers of other coordinators.
pub(super) async fn farm_slots(context: &Context) -> usize {
    (match context.registry.alive_slots() {
        0 => context
            .store
            .worker_cards()
            .await
            .map(|cards| cards.iter().map(|card| card.slots).sum::<u32>())
            .unwrap_or(0),
        slots => slots,
    }) as usize
}
