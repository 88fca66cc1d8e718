//! The LLM planner (seed 000 §4.2, §4.3.3, §4.5; seed 004): the rule-based
//! planner's plans and design space, plus a model that
//!
//! - chooses design points (and optionally a whole plan) for each iteration,
//!   from the circuit, the rules, the objectives, the journal and the critic's
//!   feedback — asked once the iteration before is evaluated, while the
//!   iteration's rule-based share runs;
//! - explains each finished iteration (the critic) and, when the same failure
//!   repeats, rewrites its own guidance (the meta-prompt agent, versioned) —
//!   asked at the same time as the planning call, for the next one;
//! - adjusts a failed step (ReAct: Thought/Action).
//!
//! Every answer is validated ([`answers`]); an invalid one gets one repair
//! round, then the rule-based planner takes over — a fallback, never a failed
//! job. Nothing the model writes runs except as a validated call of a
//! registered skill.

pub mod answers;
pub mod call_ledger;
mod conversation;
pub mod knowledge;
pub mod plan_checks;
pub mod preview;
mod prompt_sections;
pub mod prompts;
pub mod reflection;
mod reflection_calls;
pub mod routing;

use std::sync::{Arc, Mutex};

use centroid_planner::advice::{Advice, AdviceRequest, PlannerMemory, PromptVersion};
use centroid_planner::design_point::DesignPoint;
use centroid_planner::design_space::DesignSpace;
use centroid_planner::evaluator::failure_family;
use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::plan::Plan;
use centroid_planner::planner::{
    Adjusted, Adjustment, PlanError, Planner, PlannerFuture, PlannerKind,
};
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_planner::step_failure::StepFailure;
use centroid_schemas::TaskContext;

use crate::llm::{LlmClient, LlmSettings};
use crate::model::{JobInputs, JobRecord};
use crate::planner::{PlannerFactory, raw_inputs};
use conversation::{Asked, ask, shorten};
use prompts::{Budget, PlanningPrompt};
use routing::Tier;

/// Sections of layout knowledge in a planning prompt.
const KNOWLEDGE_CHUNKS: usize = 4;

/// The prompts of one planning call, and the knowledge the user prompt carries.
pub struct PlanningPrompts {
    pub system: String,
    pub user: String,
    pub knowledge: Vec<knowledge::Found>,
}

/// The LLM planner of one job.
pub struct LlmPlanner {
    heuristic: HeuristicPlanner,
    /// the `[llm]` model: planning and the meta-prompt
    client: LlmClient,
    /// the `[llm.light]` model: the critic and ReAct repairs (none = `client`)
    light: Option<LlmClient>,
    memory: Mutex<PlannerMemory>,
    /// the job's trace id, sent with every model call
    trace_id: String,
    /// what the model's plan steps may ask (the job's candidate deadline)
    limits: plan_checks::PlanLimits,
}

impl LlmPlanner {
    pub fn new(heuristic: HeuristicPlanner, client: LlmClient) -> LlmPlanner {
        let memory = PlannerMemory {
            guidance: vec![PromptVersion {
                version: 0,
                text: prompts::DEFAULT_GUIDANCE.to_string(),
                because: String::new(),
            }],
            ..PlannerMemory::default()
        };
        LlmPlanner {
            heuristic,
            client,
            light: None,
            memory: Mutex::new(memory),
            trace_id: String::new(),
            limits: plan_checks::PlanLimits::default(),
        }
    }

    /// The job's candidate deadline: no model-written step may wait longer.
    pub fn with_candidate_deadline(mut self, deadline_ms: u64) -> LlmPlanner {
        self.limits.candidate_deadline_ms = deadline_ms;
        self
    }

    /// Continues from `memory` (a job taken over: what the planner remembered
    /// on the coordinator that drove the job before); `None` starts afresh.
    pub fn with_memory(self, memory: Option<PlannerMemory>) -> LlmPlanner {
        if let Some(memory) = memory.filter(|memory| !memory.guidance.is_empty()) {
            *self.memory.lock().expect("planner memory") = memory;
        }
        self
    }

    /// What the planner remembers now.
    pub fn memory(&self) -> PlannerMemory {
        self.memory.lock().expect("planner memory").clone()
    }

    /// The job's W3C trace id for the model calls (else each call has its own).
    pub fn with_trace_id(mut self, trace_id: &str) -> LlmPlanner {
        self.trace_id = trace_id.to_string();
        self
    }

    /// A light model for the critic and ReAct repairs (seed 004 §6).
    pub fn with_light(mut self, light: Option<LlmClient>) -> LlmPlanner {
        self.light = light;
        self
    }

    /// The model that serves `role` with a prompt of `system` + `user`
    /// ([`routing::serves`]).
    fn client_for(&self, role: &str, system: &str, user: &str) -> &LlmClient {
        let light = self.light.as_ref().map(|light| (light, light.settings()));
        let prompt_tokens =
            crate::llm::tokens::count_tokens(system) + crate::llm::tokens::count_tokens(user);
        match light {
            Some((light, settings))
                if routing::serves(role, prompt_tokens, settings) == Tier::Light =>
            {
                light
            }
            _ => &self.client,
        }
    }

    fn budget(&self) -> Budget {
        Budget::of(self.client.settings())
    }

    fn guidance(&self) -> PromptVersion {
        let memory = self.memory.lock().expect("planner memory");
        memory.guidance.last().cloned().unwrap_or(PromptVersion {
            version: 0,
            text: prompts::DEFAULT_GUIDANCE.to_string(),
            because: String::new(),
        })
    }

    /// Every version of the guidance so far (version 0 first).
    pub fn guidance_history(&self) -> Vec<PromptVersion> {
        self.memory.lock().expect("planner memory").guidance.clone()
    }

    /// The prompts planning `request`'s iteration would send now (with the
    /// critic's last feedback and the current guidance), without asking.
    pub fn planning_prompts(&self, request: &AdviceRequest) -> PlanningPrompts {
        let guidance = self.guidance();
        let budget = self.budget();
        let system = prompts::planning_system(&guidance.text, &request.space, budget.system);
        let (feedback, repeats) = {
            let memory = self.memory.lock().expect("planner memory");
            (
                memory.feedback.clone().unwrap_or_default(),
                memory.repeats.clone(),
            )
        };
        let failures: Vec<String> = request
            .journal
            .iter()
            .filter(|entry| entry.passed == Some(false))
            .filter_map(|entry| entry.reasons.first())
            .map(|reason| failure_family(reason).to_string())
            .collect();
        let found = knowledge::for_circuit(&request.task, &failures, KNOWLEDGE_CHUNKS);
        let knowledge_text: Vec<String> = found
            .iter()
            .map(|found| format!("[{}] {}", found.chunk.source, found.chunk.text))
            .collect();
        let user = PlanningPrompt {
            task: &request.task,
            iteration: request.iteration,
            count: request.count,
            journal: &request.journal,
            feedback: &feedback,
            history: &request.history,
            knowledge: &knowledge_text,
            space: &request.space,
            skills: &request.skills,
            repeats: &repeats,
        }
        .render(budget.user(crate::llm::tokens::count_tokens(&system)));
        PlanningPrompts {
            system,
            user,
            knowledge: found,
        }
    }

    /// The advice for `request`'s iteration: the planning call, the critic's
    /// review of the last completed iteration (when not reviewed yet) and, when
    /// the same failure repeated, the meta-prompt agent — asked at once, none
    /// waiting for another, so an advice costs one model latency. Each prompt is
    /// made from what the planner remembers when asked: the planning prompt
    /// carries the journal as `request` holds it and the critic's feedback of
    /// the review before this one; the critique and a rewritten guidance serve
    /// the next advice. The calls are recorded critic, meta, planner.
    async fn advise_now(&self, request: AdviceRequest) -> Advice {
        let planning = self.planning_prompts(&request);
        let budget = self.budget();
        let (review, stuck) = self.start_review(&request);
        let critic = review.map(|reviewed| {
            let prompts = reflection_calls::critic_prompts(&request, reviewed, &budget);
            (self.client_for("critic", &prompts.0, &prompts.1), prompts)
        });
        let iteration = request.iteration;
        let (critique, rewrite, planned) = tokio::join!(
            async {
                match &critic {
                    Some((client, prompts)) => Some(
                        reflection_calls::critique(client, &self.trace_id, iteration, prompts)
                            .await,
                    ),
                    None => None,
                }
            },
            async {
                match &stuck {
                    Some(stuck) => Some(
                        reflection_calls::rewrite_guidance(
                            &self.client,
                            &self.trace_id,
                            iteration,
                            stuck,
                            &budget,
                        )
                        .await,
                    ),
                    None => None,
                }
            },
            self.plan_points(&request, &planning),
        );
        let mut calls = Vec::new();
        let mut rewritten = None;
        {
            let mut memory = self.memory.lock().expect("planner memory");
            if let (Some(critique), Some(reviewed)) = (critique, review) {
                calls.extend(critique.calls);
                if let Some(critique) = critique.value {
                    memory.feedback =
                        Some(format!("On iteration {reviewed}: {}", critique.as_prompt()));
                }
            }
            if let Some(rewrite) = rewrite {
                calls.extend(rewrite.calls);
                if let Some(guidance) = rewrite.value {
                    memory.guidance.push(guidance.clone());
                    rewritten = Some(guidance);
                }
            }
            if let Some(decision) = &planned.value {
                memory.repeats =
                    answers::repeats(&decision.points, &request.journal, &request.space);
            }
        }
        calls.extend(planned.calls);
        let mut advice = match planned.value {
            Some(decision) => Advice {
                points: decision.points,
                plan: decision.plan,
                calls,
                ..Advice::default()
            },
            None => Advice::fallback(planned.failure.unwrap_or_default(), calls),
        };
        advice.guidance = rewritten;
        advice.knowledge = planning
            .knowledge
            .into_iter()
            .map(|found| (found.chunk.source, found.score))
            .collect();
        advice.memory = Some(self.memory());
        advice
    }

    /// The iteration the critic reviews for `request` — the last completed one
    /// before it, when not reviewed yet — remembered as reviewed with its
    /// failure signature; and then the meta-prompt agent's task, when the
    /// failure repeated.
    fn start_review(
        &self,
        request: &AdviceRequest,
    ) -> (Option<u32>, Option<reflection_calls::Stuck>) {
        let mut memory = self.memory.lock().expect("planner memory");
        let review = reflection::reviewable_iteration(&request.journal, request.iteration)
            .filter(|reviewed| !memory.reviewed.iter().any(|(done, _)| done == reviewed));
        let Some(reviewed) = review else {
            return (None, None);
        };
        let signature = reflection::failure_signature(&request.journal, reviewed);
        memory.reviewed.push((reviewed, signature));
        (Some(reviewed), reflection_calls::stuck(&memory))
    }

    /// The planning call with `prompts`: the model's points (and plan) for
    /// `request`'s iteration, validated, with one repair round.
    async fn plan_points(
        &self,
        request: &AdviceRequest,
        prompts: &PlanningPrompts,
    ) -> Asked<answers::Decision> {
        ask(
            &self.client,
            &self.trace_id,
            "planner",
            request.iteration,
            &prompts.system,
            &prompts.user,
            |text| {
                let decision = answers::decision(
                    text,
                    &request.space,
                    &request.skills,
                    request.count,
                    &self.limits,
                )?;
                let repeated =
                    answers::repeats(&decision.points, &request.journal, &request.space).len();
                let summary = format!(
                    "{} → {} points ({} new, {repeated} repeats){}",
                    shorten(&decision.thought, 200),
                    decision.points.len(),
                    decision.points.len() - repeated,
                    if decision.plan.is_some() {
                        " and a plan"
                    } else {
                        ""
                    }
                );
                Ok((decision, summary))
            },
        )
        .await
    }

    async fn adjust_now(
        &self,
        plan: &Plan,
        step_id: &str,
        failure: &StepFailure,
        skills: &SkillCatalog,
    ) -> Adjusted {
        let guidance = self.guidance();
        let (system, user) = prompts::react(
            &guidance.text,
            plan,
            step_id,
            failure,
            skills,
            &self.budget(),
        );
        let asked = ask(
            self.client_for("react", &system, &user),
            &self.trace_id,
            "react",
            0,
            &system,
            &user,
            |text| {
                let (plan, note) =
                    answers::react_action(text, plan, step_id, skills, &self.limits)?;
                Ok(((plan, note.clone()), note))
            },
        )
        .await;
        match asked.value {
            Some((plan, note)) => Adjusted {
                adjustment: Some(Adjustment { plan, note }),
                calls: asked.calls,
                fallback: None,
            },
            None => {
                let heuristic = self.heuristic.adjust(plan, step_id, failure, skills).await;
                Adjusted {
                    adjustment: heuristic.adjustment,
                    calls: asked.calls,
                    fallback: asked.failure,
                }
            }
        }
    }
}

impl Planner for LlmPlanner {
    fn design_space(&self, context: &TaskContext, skills: &SkillCatalog) -> DesignSpace {
        self.heuristic.design_space(context, skills)
    }

    fn plan(
        &self,
        context: &TaskContext,
        point: &DesignPoint,
        skills: &SkillCatalog,
    ) -> Result<Plan, PlanError> {
        self.heuristic.plan(context, point, skills)
    }

    fn adjust<'a>(
        &'a self,
        plan: &'a Plan,
        step_id: &'a str,
        failure: &'a StepFailure,
        skills: &'a SkillCatalog,
    ) -> PlannerFuture<'a, Adjusted> {
        Box::pin(self.adjust_now(plan, step_id, failure, skills))
    }

    fn kind(&self) -> PlannerKind {
        PlannerKind::Llm {
            model: self.client.model().to_string(),
        }
    }

    fn advise(self: Arc<Self>, request: AdviceRequest) -> PlannerFuture<'static, Advice> {
        Box::pin(async move { self.advise_now(request).await })
    }
}

/// Makes each job's planner: the LLM planner for jobs that ask for it when a
/// model is configured, the rule-based planner otherwise.
pub struct LlmPlanners {
    client: Option<LlmClient>,
    /// the `[llm.light]` model, when one is named
    light: Option<LlmClient>,
}

impl LlmPlanners {
    /// Logs once why jobs asking for the LLM planner get the heuristic one.
    pub fn new(settings: &LlmSettings) -> LlmPlanners {
        let client = match LlmClient::new(settings.clone()) {
            Ok(client) => {
                tracing::info!(model = %client.model(), base_url = %settings.base_url, "LLM planner available");
                Some(client)
            }
            Err(error) => {
                tracing::info!(%error, "no LLM configured: every job uses the heuristic planner");
                None
            }
        };
        let light = match settings.light_settings().map(LlmClient::new) {
            Some(Ok(light)) => {
                tracing::info!(model = %light.model(), base_url = %light.settings().base_url, "light model for the critic and ReAct repairs");
                Some(light)
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "the [llm.light] model is not usable: the [llm] model serves every role");
                None
            }
            None => None,
        };
        LlmPlanners { client, light }
    }
}

impl PlannerFactory for LlmPlanners {
    fn planner_for(&self, job: &JobRecord, inputs: &JobInputs) -> Arc<dyn Planner> {
        let heuristic = HeuristicPlanner::new(raw_inputs(inputs))
            .with_route_pitch(job.route_pitch_um)
            .with_simulation(inputs.simulation(job));
        match &self.client {
            Some(client) if job.options.planner == "llm" => Arc::new(
                LlmPlanner::new(heuristic, client.clone())
                    .with_memory(job.planner_memory.clone())
                    .with_light(self.light.clone())
                    .with_trace_id(&job.trace_id)
                    .with_candidate_deadline(job.options.candidate_deadline_ms),
            ),
            _ => Arc::new(heuristic),
        }
    }
}
