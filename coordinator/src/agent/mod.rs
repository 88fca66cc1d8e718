//! The LLM planner (seed 000 §4.2, §4.3.3, §4.5; seed 004): the rule-based
//! planner's plans and design space, plus a model that
//!
//! - chooses design points (and optionally a whole plan) for each iteration,
//!   from the circuit, the rules, the objectives, the journal and the critic's
//!   feedback — asked while the previous iteration runs;
//! - explains each finished iteration (the critic) and, when the same failure
//!   repeats, rewrites its own guidance (the meta-prompt agent, versioned);
//! - adjusts a failed step (ReAct: Thought/Action).
//!
//! Every answer is validated ([`answers`]); an invalid one gets one repair
//! round, then the rule-based planner takes over — a fallback, never a failed
//! job. Nothing the model writes runs except as a validated call of a
//! registered skill.

pub mod answers;
mod conversation;
pub mod knowledge;
pub mod plan_checks;
pub mod preview;
mod prompt_sections;
pub mod prompts;
pub mod reflection;
pub mod routing;

use std::sync::{Arc, Mutex};

use centroid_planner::advice::{Advice, AdviceRequest, LlmCall, PlannerMemory, PromptVersion};
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

    async fn advise_now(&self, request: AdviceRequest) -> Advice {
        let mut calls = Vec::new();
        let mut rewritten = None;
        if let Some(reviewed) =
            reflection::reviewable_iteration(&request.journal, request.iteration)
            && !self.was_reviewed(reviewed)
        {
            calls.extend(self.review(&request, reviewed).await);
            let (meta_calls, guidance) = self.rewrite_guidance_if_stuck(request.iteration).await;
            calls.extend(meta_calls);
            rewritten = guidance;
        }
        let PlanningPrompts {
            system,
            user,
            knowledge: found,
        } = self.planning_prompts(&request);
        let Asked {
            value,
            calls: planning_calls,
            failure,
        } = ask(
            &self.client,
            &self.trace_id,
            "planner",
            request.iteration,
            &system,
            &user,
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
        .await;
        calls.extend(planning_calls);
        if let Some(decision) = &value {
            self.memory.lock().expect("planner memory").repeats =
                answers::repeats(&decision.points, &request.journal, &request.space);
        }
        let mut advice = match value {
            Some(decision) => Advice {
                points: decision.points,
                plan: decision.plan,
                calls,
                fallback: None,
                guidance: None,
                recalled: Vec::new(),
                knowledge: Vec::new(),
                avoid: Vec::new(),
                memory: None,
            },
            None => Advice::fallback(failure.unwrap_or_default(), calls),
        };
        advice.guidance = rewritten;
        advice.knowledge = found
            .into_iter()
            .map(|found| (found.chunk.source, found.score))
            .collect();
        advice.memory = Some(self.memory());
        advice
    }

    fn was_reviewed(&self, iteration: u32) -> bool {
        self.memory
            .lock()
            .expect("planner memory")
            .reviewed
            .iter()
            .any(|(reviewed, _)| *reviewed == iteration)
    }

    /// The critic's call on `iteration`; remembers its feedback and the
    /// iteration's failure signature.
    async fn review(&self, request: &AdviceRequest, iteration: u32) -> Vec<LlmCall> {
        let signature = reflection::failure_signature(&request.journal, iteration);
        let (system, user) = prompts::critic(
            &request.task,
            iteration,
            &request.journal,
            &request.space,
            &self.budget(),
        );
        let asked = ask(
            self.client_for("critic", &system, &user),
            &self.trace_id,
            "critic",
            request.iteration,
            &system,
            &user,
            |text| {
                let critique = answers::critique(text)?;
                let summary = critique.feedback.clone();
                Ok((critique, summary))
            },
        )
        .await;
        let mut memory = self.memory.lock().expect("planner memory");
        memory.reviewed.push((iteration, signature));
        if let Some(critique) = asked.value {
            memory.feedback = Some(critique.as_prompt());
        }
        asked.calls
    }

    /// The meta-prompt agent, when the last two reviewed iterations failed the
    /// same way and the current guidance was not written for that failure.
    async fn rewrite_guidance_if_stuck(
        &self,
        iteration: u32,
    ) -> (Vec<LlmCall>, Option<PromptVersion>) {
        let (failure, feedback, current) = {
            let memory = self.memory.lock().expect("planner memory");
            let last: Vec<&String> = memory
                .reviewed
                .iter()
                .rev()
                .take(2)
                .map(|(_, s)| s)
                .collect();
            let stuck = last.len() == 2 && !last[0].is_empty() && last[0] == last[1];
            let current = memory.guidance.last().cloned();
            match (stuck, current) {
                (true, Some(current)) if current.because != *last[0] => (
                    last[0].clone(),
                    memory.feedback.clone().unwrap_or_default(),
                    current,
                ),
                _ => return (Vec::new(), None),
            }
        };
        let budget = self.budget();
        let (system, user) = prompts::meta(&current.text, &failure, &feedback, &budget);
        let limit = budget.system / 2;
        let asked = ask(
            &self.client,
            &self.trace_id,
            "meta",
            iteration,
            &system,
            &user,
            |text| {
                let text = answers::guidance(text, limit)?;
                Ok((
                    text,
                    format!("guidance rewritten after repeated {failure} failures"),
                ))
            },
        )
        .await;
        let guidance = asked.value.map(|text| {
            let guidance = PromptVersion {
                version: current.version + 1,
                text,
                because: failure.clone(),
            };
            self.memory
                .lock()
                .expect("planner memory")
                .guidance
                .push(guidance.clone());
            guidance
        });
        (asked.calls, guidance)
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
