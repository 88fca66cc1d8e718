//! PROBING RULES and PLANNING: the skills the workers offer, the rule-set probe
//! (once per job: the routing pitch, and whether every device can be drawn), the
//! next candidates from the search journal, one plan per candidate.

use std::sync::Arc;
use std::time::Duration;

use centroid_planner::job_events::{EventData, PlannedCandidate};
use centroid_schemas::TaskContext;
use serde_json::Value;

use super::Driver;
use super::advice::model_share_count;
use super::overlap::job_window;
use super::transitions::PhaseEvent;
use crate::context::{Context, Interrupted};
use crate::drafting::iteration_to_draft;
use crate::model::{
    CandidateRecord, Drafting, EventKind, JobInputs, JobRecord, ModelShare, now_ms,
};
use crate::registry::skill_catalog_of_cards;
use crate::worker_calls::{self, error_reason, error_text, request_files};
use centroid_planner::advice::Advice;
use centroid_planner::drafting::{DraftPart, draft_part};
use centroid_planner::heuristic::routing_advertised;
use centroid_planner::performance::steps::SIM_TIMEOUT_S;
use centroid_planner::rules_probe::{ProbeFindings, ProbeStep, rules_probe_plan};
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_planner::work_estimate::longest_first;

/// How long the routing-pitch probe may wait for a slot and run.
const ROUTE_PROBE_DEADLINE: Duration = Duration::from_secs(30);
/// The extra time a probe simulating the schematic may take (ngspice reads the
/// process's models once, then simulates).
const SCHEMATIC_PROBE_EXTRA: Duration = Duration::from_secs(SIM_TIMEOUT_S as u64);

impl Driver {
    /// The rule set probed once, on a worker, before the first iteration;
    /// `None` while no worker is live.
    pub(super) async fn probe_rules(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
    ) -> Result<Option<PhaseEvent>, Interrupted> {
        let Some(skills) = self.skills_or_wait(job).await? else {
            return Ok(None);
        };
        if job.options.noop_plan || !probe_advertised(&skills) {
            return Ok(Some(PhaseEvent::RulesProbed {
                ran: false,
                pitch_um: None,
                undrawable: Vec::new(),
                schematic: None,
            }));
        }
        let findings = run_probe(&self.context, job, &self.inputs, task, &skills).await;
        Ok(Some(PhaseEvent::RulesProbed {
            ran: true,
            pitch_um: findings.pitch_um,
            undrawable: findings.undrawable,
            schematic: findings.schematic,
        }))
    }

    /// The candidates of `job.iteration` drafted (kept in `self.drafted` for the
    /// transition's `EnqueueDrafted`); `None` while no worker is live.
    pub(super) async fn plan_iteration(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        drafting: &Drafting,
    ) -> Result<Option<PhaseEvent>, Interrupted> {
        let Some(skills) = self.skills_or_wait(job).await? else {
            return Ok(None);
        };
        let event = match self.draft(job, task, &skills, drafting).await? {
            Drafted::Candidates {
                candidates,
                model_share,
            } => {
                if model_share.is_some() && drafting.carried.is_none() {
                    // the model plans its share from every evaluation in (a
                    // share carried over awaits the advice asked before: none
                    // is asked while it is outstanding)
                    let context = self.context.clone();
                    let fresh = self.journal.read(&context, &job.job_id).await?;
                    self.ask_advice(job, job.iteration, task, &skills, &fresh)
                        .await?;
                }
                let ids = candidates
                    .iter()
                    .map(|candidate| candidate.candidate_id.clone())
                    .collect();
                self.drafted = candidates;
                PhaseEvent::Drafted {
                    candidates: ids,
                    model_share,
                    window: queue_window(&self.context, job).await,
                    now_ms: now_ms(),
                }
            }
            Drafted::Exhausted => PhaseEvent::DesignSpaceExhausted,
            Drafted::Failed(message) => PhaseEvent::PlanningFailed { message },
        };
        Ok(Some(event))
    }

    /// The skills of the live workers; `None` after a short wait (or a worker
    /// registering) while there is none.
    async fn skills_or_wait(
        &mut self,
        job: &JobRecord,
    ) -> Result<Option<SkillCatalog>, Interrupted> {
        let context = self.context.clone();
        // listening before looking: a worker registering in between still wakes us
        let registered = context.registry.slots_changed.notified();
        tokio::pin!(registered);
        registered.as_mut().enable();
        let skills = self.live_skills(job).await?;
        if skills.is_none() {
            tokio::select! {
                _ = registered => {}
                _ = self.wait_a_little(Duration::from_millis(200)) => {}
            }
        }
        Ok(skills)
    }

    /// Drafts the rule-based share of `job.iteration` (memory, the search journal
    /// — with the evaluations of iteration `drafting.hidden` left out), reports
    /// their plans; the model's share, when the LLM plans the job, follows when
    /// its advice arrives ([`super::model_share`]). With a share carried over
    /// from the iteration before (which closed without it), that share is this
    /// iteration's model's share and the rule-based share is the whole
    /// iteration, so the job runs its whole budget.
    pub(super) async fn draft(
        &mut self,
        job: &JobRecord,
        task: &Arc<TaskContext>,
        skills: &SkillCatalog,
        drafting: &Drafting,
    ) -> Result<Drafted, Interrupted> {
        let hidden = drafting.hidden;
        let context = self.context.clone();
        let planner = context.planner_with_inputs(job, &self.inputs);
        self.announce_planner_once(job, &planner.kind()).await?;
        let mut so_far = self.journal.read(&context, &job.job_id).await?;
        for candidate in &mut so_far {
            if Some(candidate.iteration) == hidden {
                candidate.evaluation = None;
            }
        }
        self.skills = Some(skills.clone());
        let (recalled, avoid) = self.recall(job, task, &so_far).await?;
        self.avoid.extend(avoid.iter().cloned());
        let to_draft = iteration_to_draft(job);
        let (model_share, own_share) = match &drafting.carried {
            Some(carried) => (Some(carried.clone()), 0),
            None => {
                let own = model_share_count(job, &planner.kind()).map(|count| ModelShare {
                    count: count.min(to_draft.candidates_per_iteration),
                    hidden,
                    asked_for: None,
                });
                let count = own.as_ref().map_or(0, |share| share.count as usize);
                (own, count)
            }
        };
        let part = DraftPart {
            count: to_draft.candidates_per_iteration as usize - own_share,
            first_index: 0,
            part: 0,
        };
        if part.count == 0 {
            // the model's share is the whole iteration
            return Ok(Drafted::Candidates {
                candidates: Vec::new(),
                model_share,
            });
        }
        let advice = Advice {
            recalled,
            avoid,
            ..Advice::default()
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
        if draft.candidates.is_empty() {
            return Ok(match draft.plan_error {
                None => Drafted::Exhausted,
                Some(error) => Drafted::Failed(error.to_string()),
            });
        }
        report_plans(&context, job, &draft.candidates, draft.design_space_size).await?;
        // the order they are queued in: the longer-looking ones first
        let mut candidates = draft.candidates;
        longest_first(&mut candidates);
        Ok(Drafted::Candidates {
            candidates,
            model_share,
        })
    }

    /// The skills of the live workers — this coordinator's, or, when it has none,
    /// those of the workers of other coordinators sharing the store (their
    /// dispatchers take the candidates from the shared queue). `None` while there
    /// is no live worker anywhere.
    pub(super) async fn live_skills(
        &mut self,
        job: &JobRecord,
    ) -> Result<Option<SkillCatalog>, Interrupted> {
        let context = &self.context;
        if context.registry.alive_count() > 0 {
            context
                .registry
                .wait_for_schemas(crate::registry::SCHEMAS_WAIT)
                .await;
            return Ok(Some(context.registry.skills()));
        }
        let cards = context
            .with_store_retry("read worker cards", || context.store.worker_cards())
            .await?;
        if !cards.is_empty() {
            return Ok(Some(skill_catalog_of_cards(&cards)));
        }
        if !self.waiting_reported {
            self.waiting_reported = true;
            let message = "no live worker: waiting for one to register";
            context
                .emit(
                    job,
                    EventKind::WaitingForWorkers,
                    "",
                    message,
                    EventData::Nothing,
                )
                .await?;
        }
        Ok(None)
    }
}

/// Reports the plans of drafted `candidates` (at least one).
pub(super) async fn report_plans(
    context: &Context,
    job: &JobRecord,
    candidates: &[CandidateRecord],
    space_size: u64,
) -> Result<(), Interrupted> {
    let first = &candidates[0];
    let listed: Vec<PlannedCandidate> = candidates
        .iter()
        .map(|candidate| PlannedCandidate {
            candidate_id: candidate.candidate_id.clone(),
            origin: candidate.origin.as_str().into(),
            parent_id: candidate.parent_id.clone(),
            design_point: candidate.design_point.clone(),
            steps: candidate
                .plan
                .steps
                .iter()
                .map(|step| step.skill.clone())
                .collect(),
        })
        .collect();
    let data = EventData::PlansDrafted {
        candidates: listed,
        design_space_size: space_size,
    };
    let summary = first.plan.summary.clone();
    context
        .emit(
            job,
            EventKind::PlanCreated,
            &first.candidate_id,
            summary,
            data,
        )
        .await
}

/// Whether the workers offer what the rule-set probe runs.
fn probe_advertised(skills: &SkillCatalog) -> bool {
    skills.contains_key("tech.load")
        && (routing_advertised(skills) || skills.contains_key("layout.create_device"))
}

/// `tech.load`, `route.info` and one `layout.create_device` per device size on a
/// worker (see [`centroid_planner::rules_probe`]), and for a job measuring performance
/// the schematic's simulation (the user's testbench sent along). A probe that cannot
/// run finds nothing: the candidates then go unrouted and meet any undrawable device
/// themselves, and their measures have no schematic to be compared with.
async fn run_probe(
    context: &Arc<Context>,
    job: &JobRecord,
    inputs: &JobInputs,
    task: &TaskContext,
    skills: &SkillCatalog,
) -> ProbeFindings {
    let rules: Value = serde_json::from_str(&inputs.drc_rules_json).unwrap_or(Value::Null);
    let setup = inputs.simulation(job).setup(task);
    let probe = rules_probe_plan(&rules, &task.circuit, skills, setup.as_ref());
    let mut deadline = ROUTE_PROBE_DEADLINE;
    if probe.simulates {
        deadline += SCHEMATIC_PROBE_EXTRA;
    }
    let files = request_files(&probe.plan, inputs);
    let response = match worker_calls::probe(context, job, &probe.plan, deadline, files).await {
        Ok(response) => response,
        Err(error) => {
            tracing::warn!(session_id = %job.job_id, %error, "rule-set probe failed; candidates will not be routed");
            return ProbeFindings::default();
        }
    };
    // each failed step's `details.reason` and its message with the file and line
    let errors: Vec<(String, String)> = response
        .steps
        .iter()
        .map(|step| {
            step.error
                .as_ref()
                .map(|error| (error_reason(error), error_text(error)))
                .unwrap_or_default()
        })
        .collect();
    let findings = probe.findings(response.steps.iter().zip(&errors).map(
        |(step, (reason, text))| {
            ProbeStep {
                step_id: &step.step_id,
                skill: &step.skill,
                ok: step.ok,
                error_code: step
                    .error
                    .as_ref()
                    .map(|error| error.error_code().wire_name())
                    .unwrap_or(""),
                error_message: text,
                error_reason: reason,
                data: serde_json::from_str(&step.data_json).ok(),
            }
        },
    ));
    tracing::info!(session_id = %job.job_id, pitch = ?findings.pitch_um, undrawable = findings.undrawable.len(), schematic = ?findings.schematic.is_some(), "rule set probed");
    findings
}

/// What drafting an iteration gave.
pub(super) enum Drafted {
    /// the rule-based share (the whole iteration but for `model_share`, still
    /// to be drafted when the planner's advice arrives)
    Candidates {
        candidates: Vec<CandidateRecord>,
        model_share: Option<ModelShare>,
    },
    /// every point of the design space was tried
    Exhausted,
    /// no candidate could be planned: the last planning error
    Failed(String),
}

/// How many candidates of one job may be out in the work queue at once: its
/// share ([`job_window`]) of what the dispatchers read ahead for all live slots
/// of the farm, so that jobs running at once share the slots candidate by
/// candidate in proportion to their weights, and a lone job keeps every slot
/// busy. While the farm's load cannot be read the job counts as alone (the next
/// look reads again).
pub(super) async fn queue_window(context: &Context, job: &JobRecord) -> usize {
    let farm_window = (farm_slots(context).await * crate::dispatcher::ENTRIES_PER_SLOT
        + crate::dispatcher::EXTRA_ENTRIES)
        .max(1);
    let weight = job.options.weight();
    let active_weight = match context.farm_load.read(context.store.as_ref()).await {
        Ok(load) => load.active_weight,
        Err(error) => {
            tracing::warn!(%error, "cannot read the farm's load; the job's window is the whole farm's for now");
            u64::from(weight)
        }
    };
    job_window(farm_window, weight, active_weight)
}

/// The slots of the live workers — this coordinator's, else those the shared store
/// lists for the workers of other coordinators (none while they cannot be read:
/// the window is then its smallest, and the next look reads again).
pub(super) async fn farm_slots(context: &Context) -> usize {
    (match context.registry.alive_slots() {
        0 => match context.store.worker_cards().await {
            Ok(cards) => cards.iter().map(|card| card.slots).sum::<u32>(),
            Err(error) => {
                tracing::warn!(%error, "cannot read the worker cards; counting no slot for now");
                0
            }
        },
        slots => slots,
    }) as usize
}
