//! The job session: the state machine of seed 000 §4.1, persisted in the store
//! after every transition so that a restarted coordinator resumes where it was.
//!
//! INIT → PARSING → PLANNING → EXECUTING → EVALUATING → PASSED | ITERATING
//! (→ PLANNING) … → COMPLETED | FAILED → DONE (outcome completed, failed or
//! cancelled). Per candidate, the step-level states of the seed (STEP_EXEC,
//! STEP_DONE, ReAct adjustment) happen on the dispatcher's side.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use centroid_schemas::TaskContext;
use serde_json::{Value, json};

use crate::artifacts;
use crate::coordinator::{Shared, task_inputs};
use crate::dispatcher;
use crate::evaluator;
use crate::model::{
    CandidateRecord, CandidateResult, CandidateStatus, EventKind, JobRecord, JobState, Outcome,
    now_ms,
};
use crate::model::{Plan, PlanStep};
use crate::planner::heuristic::{RawInputs, noop_plan, routing_advertised};
use crate::planner::{HeuristicPlanner, PlanError, Planner};
use crate::search::Journal;

/// Retries a store call while the store is down; returns from the driver on shutdown.
macro_rules! retry {
    ($shared:expr, $what:expr, $call:expr) => {{
        let mut attempt = 0u32;
        loop {
            match $call.await {
                Ok(value) => break value,
                Err(error) => {
                    if !$shared.store_backoff(attempt, &error, $what).await {
                        return;
                    }
                    attempt += 1;
                }
            }
        }
    }};
}

/// Writes the job record after a transition and reports the transition.
async fn transition(shared: &Shared, job: &mut JobRecord, state: JobState, message: &str) {
    let from = job.state;
    job.state = state;
    job.updated_ms = now_ms();
    let mut attempt = 0;
    while let Err(error) = shared.store.put_job(job).await {
        if !shared.store_backoff(attempt, &error, "write job").await {
            return;
        }
        attempt += 1;
    }
    tracing::info!(session_id = %job.job_id, from = from.as_str(), to = state.as_str(), "state changed");
    shared
        .emit(
            job,
            EventKind::StateChanged,
            "",
            message,
            json!({"from": from.as_str(), "to": state.as_str()}),
        )
        .await;
}

/// Ends the job (DONE with an outcome) and records abandoned candidates.
async fn finish(shared: &Shared, job: &mut JobRecord, outcome: Outcome, message: &str) {
    if outcome == Outcome::Cancelled {
        // candidates without a result are accounted for as abandoned
        let candidates = shared
            .store
            .candidates(&job.job_id)
            .await
            .unwrap_or_default();
        for candidate in candidates {
            let abandoned = CandidateResult {
                candidate_id: candidate.candidate_id.clone(),
                status: CandidateStatus::Abandoned,
                ok: false,
                worker_id: String::new(),
                attempts: 0,
                error_code: "CANCELLED".into(),
                error_message: job.cancel_reason.clone(),
                steps: Vec::new(),
                artifacts: Vec::new(),
                duration_ms: 0,
                finished_ms: now_ms(),
                plan: None,
                adjustments: Vec::new(),
            };
            let _ = shared.store.record_result(&job.job_id, &abandoned).await;
        }
    }
    let final_state = match outcome {
        Outcome::Completed => JobState::Completed,
        _ => JobState::Failed,
    };
    if outcome != Outcome::Cancelled && job.state != final_state {
        transition(shared, job, final_state, message).await;
    }
    job.state = JobState::Done;
    job.outcome = Some(outcome);
    if outcome != Outcome::Completed && job.error.is_empty() {
        job.error = message.to_string();
    }
    job.updated_ms = now_ms();
    let mut attempt = 0;
    while let Err(error) = shared.store.finish_job(job).await {
        if !shared.store_backoff(attempt, &error, "finish job").await {
            return;
        }
        attempt += 1;
    }
    let kind = match outcome {
        Outcome::Completed => EventKind::Completed,
        Outcome::Failed => EventKind::Failed,
        Outcome::Cancelled => EventKind::Cancelled,
    };
    tracing::info!(session_id = %job.job_id, outcome = outcome.as_str(), best = %job.best_candidate_id, "job done");
    shared
        .emit(
            job,
            kind,
            &job.best_candidate_id.clone(),
            message,
            json!({"outcome": outcome.as_str(), "best_candidate_id": job.best_candidate_id, "best_score": job.best_score, "best_passed": job.best_passed, "iterations": job.iteration + 1}),
        )
        .await;
    shared.forget_job_signals(&job.job_id);
    shared.queue_changed.notify_waiters();
}

fn elapsed_budget(job: &JobRecord) -> bool {
    job.options.time_budget_ms > 0
        && now_ms().saturating_sub(job.started_ms) > job.options.time_budget_ms
}

/// Runs a job to its end (or until the coordinator shuts down), holding the job's
/// driver lease: a job is driven by one coordinator at a time.
pub(crate) async fn drive(shared: Arc<Shared>, job_id: String) {
    let lease = shared.config.lease_timeout();
    let mut announced = false;
    loop {
        match shared
            .store
            .lease_job(&job_id, &shared.driver_id, lease)
            .await
        {
            Ok(true) => break,
            Ok(false) => {
                if !announced {
                    announced = true;
                    tracing::info!(session_id = %job_id, "another coordinator drives this job; waiting for its lease to lapse");
                }
            }
            Err(error) => tracing::warn!(session_id = %job_id, %error, "cannot take the job lease"),
        }
        let mut shutdown = shared.shutdown.subscribe();
        tokio::select! {
            _ = tokio::time::sleep(lease / 3) => {}
            _ = shutdown.wait_for(|stopping| *stopping) => return,
        }
        if let Ok(Some(job)) = shared.store.get_job(&job_id).await
            && job.is_finished()
        {
            return;
        }
    }
    let (lost_sender, lost) = tokio::sync::watch::channel(false);
    let renewer = {
        let shared = shared.clone();
        let job_id = job_id.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(lease / 3).await;
                match shared
                    .store
                    .lease_job(&job_id, &shared.driver_id, lease)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(session_id = %job_id, "lost the job lease to another coordinator");
                        lost_sender.send_replace(true);
                        return;
                    }
                    Err(error) => {
                        tracing::warn!(session_id = %job_id, %error, "cannot renew the job lease")
                    }
                }
            }
        })
    };
    drive_leased(shared.clone(), job_id.clone(), lost).await;
    renewer.abort();
    let _ = shared.store.release_job(&job_id, &shared.driver_id).await;
}

async fn drive_leased(
    shared: Arc<Shared>,
    job_id: String,
    lost: tokio::sync::watch::Receiver<bool>,
) {
    let Some(inputs) = retry!(shared, "read inputs", shared.store.get_inputs(&job_id)) else {
        tracing::warn!(session_id = %job_id, "job has no inputs (expired?); dropping it");
        return;
    };
    let mut cancel = shared.cancel_signal(&job_id);
    let parsed = TaskContext::load(&task_inputs(&inputs), job_id.clone());
    let raw = RawInputs {
        drc_rules: serde_json::from_str(&inputs.drc_rules_json).unwrap_or(Value::Null),
        netlist: serde_json::from_str(&inputs.netlist_json).unwrap_or(Value::Null),
    };
    let mut waiting_reported = false;

    loop {
        if shared.is_shutting_down() || *lost.borrow() {
            return;
        }
        let Some(mut job) = retry!(shared, "read job", shared.store.get_job(&job_id)) else {
            return;
        };
        if job.is_finished() {
            return;
        }
        if !job.cancel_requested
            && let Some(reason) = retry!(
                shared,
                "read cancel",
                shared.store.cancel_requested(&job_id)
            )
        {
            job.cancel_requested = true;
            job.cancel_reason = reason;
        }
        if job.cancel_requested {
            // a cancellation requested through another coordinator (or before a
            // restart) stops this one's in-flight calls too: their workers are told
            shared.signal_cancel(&job_id);
            let reason = job.cancel_reason.clone();
            finish(&shared, &mut job, Outcome::Cancelled, &reason).await;
            return;
        }
        let context = match &parsed {
            Ok(context) => context,
            Err(errors) => {
                job.error = format!("inputs no longer parse: {} issues", errors.issues.len());
                finish(&shared, &mut job, Outcome::Failed, "inputs no longer parse").await;
                return;
            }
        };
        if elapsed_budget(&job)
            && matches!(
                job.state,
                JobState::Planning | JobState::Executing | JobState::Iterating
            )
        {
            let message = format!("time budget of {} ms spent", job.options.time_budget_ms);
            conclude(&shared, &mut job, &message).await;
            return;
        }
        match job.state {
            JobState::Init => {
                transition(&shared, &mut job, JobState::Parsing, "parsing inputs").await
            }
            JobState::Parsing => {
                let modules: Vec<String> = context
                    .circuit
                    .modules
                    .iter()
                    .map(|module| module.describe())
                    .collect();
                shared
                    .emit(
                        &job,
                        EventKind::StateChanged,
                        "",
                        "inputs parsed",
                        json!({"modules": modules, "devices": context.circuit.devices.len()}),
                    )
                    .await;
                transition(&shared, &mut job, JobState::Planning, "planning").await;
            }
            JobState::Planning => {
                // workers of other coordinators sharing the store count too: their
                // dispatchers take the candidates from the shared queue
                let remote_skills = if shared.registry.alive_count() == 0 {
                    let cards = shared.store.worker_cards().await.unwrap_or_default();
                    (!cards.is_empty()).then(|| {
                        let mut skills = crate::planner::SkillCatalog::new();
                        for card in cards {
                            for skill in card.skills {
                                let schema =
                                    card.schemas.get(&skill).cloned().unwrap_or(Value::Null);
                                skills.entry(skill).or_insert(schema);
                            }
                        }
                        skills
                    })
                } else {
                    None
                };
                if shared.registry.alive_count() == 0 && remote_skills.is_none() {
                    if !waiting_reported {
                        waiting_reported = true;
                        shared
                            .emit(
                                &job,
                                EventKind::WaitingForWorkers,
                                "",
                                "no live worker: waiting for one to register",
                                Value::Null,
                            )
                            .await;
                    }
                    wait_a_little(&shared, &mut cancel, Duration::from_millis(200)).await;
                    continue;
                }
                shared
                    .registry
                    .wait_for_schemas(Duration::from_secs(3))
                    .await;
                let skills = remote_skills.unwrap_or_else(|| shared.registry.skills());
                if !job.options.noop_plan && !job.route_probed && routing_advertised(&skills) {
                    job.route_pitch_um = probe_route_pitch(&shared, &job_id, &raw).await;
                    job.route_probed = true;
                    retry!(shared, "write job", shared.store.put_job(&job));
                    shared
                        .emit(
                            &job,
                            EventKind::StateChanged,
                            "",
                            "probed the routing pitch",
                            json!({"route_pitch_um": job.route_pitch_um}),
                        )
                        .await;
                }
                let planner =
                    HeuristicPlanner::new(raw.clone()).with_route_pitch(job.route_pitch_um);
                let space = planner.design_space(context, &skills);
                let candidates_so_far =
                    retry!(shared, "read candidates", shared.store.candidates(&job_id));
                let journal = Journal::from_candidates(&candidates_so_far);
                let proposals = journal.propose(
                    &space,
                    job.options.candidates_per_iteration as usize,
                    job.options.seed,
                    job.iteration,
                );
                if proposals.is_empty() {
                    conclude(&shared, &mut job, "the design space is exhausted").await;
                    return;
                }
                let mut candidates = Vec::new();
                let mut plan_error: Option<PlanError> = None;
                for (index, proposal) in proposals.into_iter().enumerate() {
                    let plan = if job.options.noop_plan {
                        Ok(noop_plan(job.options.sleep_ms))
                    } else {
                        planner.plan(context, &proposal.point, &skills)
                    };
                    match plan {
                        Ok(plan) => {
                            let required_skills: Vec<String> = plan
                                .steps
                                .iter()
                                .map(|step| step.skill.clone())
                                .collect::<HashSet<_>>()
                                .into_iter()
                                .collect();
                            candidates.push(CandidateRecord {
                                candidate_id: format!("{job_id}-i{}-c{index}", job.iteration),
                                job_id: job_id.clone(),
                                iteration: job.iteration,
                                parent_id: proposal.parent_id,
                                origin: proposal.origin,
                                design_point: proposal.point,
                                plan,
                                required_skills,
                                evaluation: None,
                            });
                        }
                        Err(error) => plan_error = Some(error),
                    }
                }
                if candidates.is_empty() {
                    let message = plan_error
                        .map(|error| error.to_string())
                        .unwrap_or_else(|| "no plan".into());
                    finish(&shared, &mut job, Outcome::Failed, &message).await;
                    return;
                }
                let first = &candidates[0];
                shared
                    .emit(
                        &job,
                        EventKind::PlanCreated,
                        &first.candidate_id,
                        first.plan.summary.clone(),
                        json!({
                            "candidates": candidates.iter().map(|candidate| json!({
                                "candidate_id": candidate.candidate_id,
                                "origin": candidate.origin.as_str(),
                                "parent_id": candidate.parent_id,
                                "design_point": candidate.design_point,
                                "steps": candidate.plan.steps.iter().map(|step| step.skill.clone()).collect::<Vec<_>>(),
                            })).collect::<Vec<_>>(),
                            "design_space_size": space.size(),
                        }),
                    )
                    .await;
                job.state = JobState::Executing;
                job.iteration_enqueued = true;
                job.iteration_started_ms = now_ms();
                job.iteration_candidates = candidates
                    .iter()
                    .map(|candidate| candidate.candidate_id.clone())
                    .collect();
                job.updated_ms = now_ms();
                retry!(
                    shared,
                    "enqueue candidates",
                    shared.store.enqueue_iteration(&job, &candidates)
                );
                shared.queue_changed.notify_waiters();
                tracing::info!(session_id = %job_id, iteration = job.iteration, candidates = candidates.len(), "candidates enqueued");
                shared
                    .emit(&job, EventKind::StateChanged, "", "executing", json!({"from": "planning", "to": "executing", "candidates": candidates.len()}))
                    .await;
            }
            JobState::Executing => {
                let finished: HashSet<String> =
                    retry!(shared, "read result ids", shared.store.result_ids(&job_id))
                        .into_iter()
                        .collect();
                let iteration_candidates: Vec<String> = if job.iteration_candidates.is_empty() {
                    // a record written before iteration_candidates existed
                    let candidates =
                        retry!(shared, "read candidates", shared.store.candidates(&job_id));
                    candidates
                        .into_iter()
                        .filter(|candidate| candidate.iteration == job.iteration)
                        .map(|candidate| candidate.candidate_id)
                        .collect()
                } else {
                    job.iteration_candidates.clone()
                };
                let missing: Vec<&String> = iteration_candidates
                    .iter()
                    .filter(|candidate_id| !finished.contains(*candidate_id))
                    .collect();
                let waiting = missing.len();
                // a candidate whose entry was lost (e.g. Redis lost data) must not hang the job:
                // past every delivery's deadline it is recorded as lost
                let stall_limit_ms = job
                    .options
                    .candidate_deadline_ms
                    .saturating_add(shared.config.rpc_grace_ms)
                    * (shared.config.max_deliveries as u64 + 1)
                    + shared.config.lease_timeout_ms;
                let stalled = job.iteration_started_ms > 0
                    && now_ms().saturating_sub(job.iteration_started_ms) > stall_limit_ms;
                if waiting > 0 && stalled {
                    for candidate_id in &missing {
                        let lost = CandidateResult {
                            candidate_id: candidate_id.to_string(),
                            status: CandidateStatus::Failed,
                            ok: false,
                            worker_id: String::new(),
                            attempts: 0,
                            error_code: "LOST".into(),
                            error_message: format!("no result within {stall_limit_ms} ms"),
                            steps: Vec::new(),
                            artifacts: Vec::new(),
                            duration_ms: 0,
                            finished_ms: now_ms(),
                            plan: None,
                            adjustments: Vec::new(),
                        };
                        retry!(
                            shared,
                            "record lost candidate",
                            shared.store.record_result(&job_id, &lost)
                        );
                        tracing::warn!(session_id = %job_id, candidate_id = %candidate_id, "candidate lost: no result in time");
                    }
                    continue;
                }
                if waiting == 0 {
                    transition(
                        &shared,
                        &mut job,
                        JobState::Evaluating,
                        "every candidate of the iteration is in",
                    )
                    .await;
                } else {
                    wait_a_little(&shared, &mut cancel, Duration::from_millis(250)).await;
                }
            }
            JobState::Evaluating => {
                let candidates =
                    retry!(shared, "read candidates", shared.store.candidates(&job_id));
                let results = retry!(shared, "read results", shared.store.results(&job_id));
                let mut evaluated = Vec::new();
                for mut candidate in candidates {
                    if candidate.iteration == job.iteration
                        && candidate.evaluation.is_none()
                        && let Some(result) = results.get(&candidate.candidate_id)
                    {
                        let evaluation = evaluator::evaluate(&context.objectives, result);
                        candidate.evaluation = Some(evaluation.clone());
                        retry!(
                            shared,
                            "write evaluation",
                            shared.store.put_candidate(&candidate)
                        );
                        shared
                            .emit(
                                &job,
                                EventKind::Evaluation,
                                &candidate.candidate_id,
                                if evaluation.passed {
                                    "passed".to_string()
                                } else {
                                    format!("not passed: {}", evaluation.reasons.join("; "))
                                },
                                serde_json::to_value(&evaluation).unwrap_or(Value::Null),
                            )
                            .await;
                    }
                    evaluated.push(candidate);
                }
                let journal = Journal::from_candidates(&evaluated);
                let previous = (job.best_passed, job.best_score);
                if let Some(best) = journal.best() {
                    let evaluation = best.evaluation.as_ref().expect("best has an evaluation");
                    job.best_candidate_id = best.candidate_id.clone();
                    job.best_score = evaluation.score;
                    job.best_passed = evaluation.passed;
                }
                let improved = (job.best_passed, job.best_score) > (previous.0, previous.1 + 1e-9)
                    && !job.best_candidate_id.is_empty();
                job.iterations_without_improvement = if improved {
                    0
                } else {
                    job.iterations_without_improvement + 1
                };
                artifacts::keep_best(&shared, &job_id, &evaluated).await;
                let last_iteration = job.iteration + 1 >= job.options.max_iterations;
                if job.best_passed && (!improved || last_iteration) {
                    transition(
                        &shared,
                        &mut job,
                        JobState::Passed,
                        "the best candidate passed and no longer improves",
                    )
                    .await;
                } else if last_iteration {
                    let message =
                        format!("max_iterations ({}) reached", job.options.max_iterations);
                    conclude(&shared, &mut job, &message).await;
                    return;
                } else {
                    transition(&shared, &mut job, JobState::Iterating, "iterating").await;
                }
            }
            JobState::Passed => {
                transition(&shared, &mut job, JobState::Completed, "completed").await;
            }
            JobState::Iterating => {
                job.iteration += 1;
                job.iteration_enqueued = false;
                shared
                    .emit(&job, EventKind::Iteration, "", format!("iteration {}", job.iteration), json!({"best_candidate_id": job.best_candidate_id, "best_score": job.best_score}))
                    .await;
                transition(
                    &shared,
                    &mut job,
                    JobState::Planning,
                    "planning the next iteration",
                )
                .await;
            }
            JobState::Completed => {
                let message = if job.best_passed {
                    "completed: the best candidate passed".to_string()
                } else {
                    "completed".to_string()
                };
                finish(&shared, &mut job, Outcome::Completed, &message).await;
                return;
            }
            JobState::Failed => {
                let message = job.error.clone();
                finish(&shared, &mut job, Outcome::Failed, &message).await;
                return;
            }
            JobState::Done => return,
        }
    }
}

/// The end without a passing best that improves no more: completed with the best
/// layout when there is one (seed 000: max iterations → accept the current result),
/// failed when no candidate produced a layout.
async fn conclude(shared: &Shared, job: &mut JobRecord, message: &str) {
    let results = shared.store.results(&job.job_id).await.unwrap_or_default();
    let any_layout = results.values().any(|result| result.ok);
    if job.best_passed || any_layout {
        if !job.best_passed {
            job.error = format!("{message}; the best candidate did not pass");
        }
        finish(shared, job, Outcome::Completed, message).await;
    } else {
        finish(
            shared,
            job,
            Outcome::Failed,
            &format!("{message}; no candidate produced a layout"),
        )
        .await;
    }
}

async fn wait_a_little(
    shared: &Shared,
    cancel: &mut tokio::sync::watch::Receiver<bool>,
    duration: Duration,
) {
    tokio::select! {
        _ = tokio::time::sleep(duration) => {}
        _ = shared.progress.notified() => {}
        _ = cancel.wait_for(|cancelled| *cancelled) => {}
    }
}

/// `tech.load` + `route.info` on a worker: the pitch the placement leaves between cells.
async fn probe_route_pitch(shared: &Arc<Shared>, job_id: &str, raw: &RawInputs) -> Option<f64> {
    let step = |step_id: &str, skill: &str, arguments: Value| PlanStep {
        step_id: step_id.into(),
        skill: skill.into(),
        arguments,
        optional: false,
        output_cell: String::new(),
    };
    let plan = Plan {
        summary: "routing pitch probe".into(),
        steps: vec![
            step("p1_tech_load", "tech.load", json!({"rules": raw.drc_rules})),
            step("p2_route_info", "route.info", json!({})),
        ],
    };
    let response = dispatcher::probe(shared, job_id, &plan, Duration::from_secs(30)).await?;
    let pitch = response
        .steps
        .iter()
        .find(|step| step.skill == "route.info" && step.ok)
        .and_then(|step| serde_json::from_str::<Value>(&step.data_json).ok())
        .and_then(|data| data.get("pitch_um").and_then(Value::as_f64));
    tracing::info!(session_id = job_id, ?pitch, "routing pitch probed");
    pitch
}
