//! How a job's phase moves on: `(record, event) → (record, effects)` as one pure
//! function, [`advance`] — no store, no clock, no worker. The job's driver
//! observes what happened (a draft, results arriving, an evaluation, a cancel …)
//! as a [`PhaseEvent`], calls [`advance`], and carries out the [`Effect`]s it
//! returns in order (write the record, append job events, queue candidates …).
//!
//! The table, phase by phase (every other pair is refused as unexpected):
//!
//! | phase | event | next phase |
//! |---|---|---|
//! | Init | Started | Parsing |
//! | Parsing | Parsed | ProbingRules |
//! | ProbingRules | RulesProbed | Planning (Ending failed: undrawable devices) |
//! | Planning | Drafted / Exhausted / PlanningFailed | Searching / Concluding / Ending failed |
//! | Searching | ResultsSeen | Searching (draft ahead, queue more, record lost, wait) / Evaluating |
//! | Searching | DraftedAhead | Searching (the next iteration queued) |
//! | Evaluating | IterationEvaluated | Planning / Searching (drafted ahead) / ChoosingSignoff / Ending / Concluding |
//! | ChoosingSignoff | SignoffChosen | Signoff / Concluding |
//! | Signoff | ResultsSeen | Signoff / JudgingSignoff |
//! | JudgingSignoff | SignoffJudged | Ending completed / Concluding |
//! | Concluding | Concluded | Ending completed / failed |
//! | Ending | Ended | Finished |
//! | a search phase | TimeBudgetSpent | ChoosingSignoff / Concluding |
//! | any but Finished | Unparsable | Ending failed |
//! | any but Finished | Cancelled | Finished cancelled |

use std::collections::HashSet;

use serde_json::{Value, json};

use super::overlap::{ahead_room, idle_slots_call_ahead, missing, overlap_next, top_up};
use crate::model::{
    Ahead, Drafting, EventKind, JobPhase, JobRecord, JobState, Notice, Outcome, Round,
};

/// The coordinator's settings a transition reads.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PhaseSettings {
    /// draft the next iteration while the last candidates of one run
    pub overlap_iterations: bool,
}

/// The best candidate an evaluation found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Best {
    pub candidate_id: String,
    pub score: f64,
    pub passed: bool,
}

/// Where a round's candidates stand, as the driver read it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    /// ids of the job's candidates with a result
    pub finished: HashSet<String>,
    /// live slots of the farm
    pub farm_slots: usize,
    /// how many of one job's candidates may wait in the queue at once
    pub window: usize,
    pub now_ms: u64,
    /// past this long without a result since the round was last queued, the
    /// missing candidates are lost
    pub stall_limit_ms: u64,
}

/// What the driver observed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PhaseEvent {
    Started,
    Parsed {
        modules: Vec<String>,
        devices: usize,
    },
    /// the stored inputs no longer parse
    Unparsable {
        issues: usize,
    },
    /// the rule set was probed (`ran`: a probe ran at all)
    RulesProbed {
        ran: bool,
        pitch_um: Option<f64>,
        undrawable: Vec<String>,
    },
    /// the iteration's candidates were drafted (queued longest-looking first)
    Drafted {
        candidates: Vec<String>,
        window: usize,
        now_ms: u64,
    },
    /// every point of the design space was tried
    DesignSpaceExhausted,
    /// no candidate could be planned
    PlanningFailed {
        message: String,
    },
    ResultsSeen(Progress),
    /// the next iteration, drafted while `outstanding` candidates of this one
    /// are out (no candidates: its draft found nothing)
    DraftedAhead {
        candidates: Vec<String>,
        outstanding: usize,
        window: usize,
    },
    /// the whole iteration is evaluated; the best of the journal so far
    IterationEvaluated {
        best: Option<Best>,
        now_ms: u64,
    },
    SignoffChosen {
        candidates: Vec<String>,
        parents: Vec<String>,
        now_ms: u64,
    },
    /// the foundry deck's runs judged: `ran` when at least one run finished
    /// (`error`: the first failure otherwise); the best clean one
    SignoffJudged {
        ran: bool,
        best: Option<Best>,
        error: String,
    },
    /// whether any candidate produced a layout
    Concluded {
        any_layout: bool,
    },
    /// what ends a job is done (memory, pictures, abandoned candidates)
    Ended,
    TimeBudgetSpent,
    /// a cancellation was requested; the best of what finished
    Cancelled {
        reason: String,
        best: Option<Best>,
    },
}

/// What the driver does after a transition, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Effect {
    /// write the job record
    Persist,
    Emit(Notice),
    /// store the candidates just drafted, queue the first `queued` of them and
    /// write the job record — in one store call
    EnqueueDrafted {
        queued: usize,
    },
    /// queue these stored candidates and write the job record — in one call
    EnqueueMore {
        candidates: Vec<String>,
    },
    /// draft iteration `iteration` now, leaving out `hidden`'s evaluations, and
    /// report it as [`PhaseEvent::DraftedAhead`]
    DraftAhead {
        iteration: u32,
        hidden: u32,
        outstanding: usize,
    },
    /// evaluate these candidates (those with a result and no evaluation yet)
    EvaluateArrived {
        candidates: Vec<String>,
    },
    /// record these candidates as lost: no result in time
    RecordLost {
        candidates: Vec<String>,
        message: String,
    },
    /// nothing to do until a result arrives (or a little while)
    Wait,
    /// write the finished job (it leaves the active jobs)
    Finish,
    /// drop what this process kept for the job
    Forget,
}

/// A phase and event that do not go together (a bug in the driver).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no transition from {phase} on {event}")]
pub(crate) struct Unexpected {
    pub phase: String,
    pub event: String,
}

/// Moves `job` on after `event`; the effects to carry out, in order. The record
/// is left unchanged when the pair is unexpected.
pub(crate) fn advance(
    job: &mut JobRecord,
    event: PhaseEvent,
    settings: PhaseSettings,
) -> Result<Vec<Effect>, Unexpected> {
    let phase = job.phase.clone();
    let before = job.clone();
    let effects = match (phase, event) {
        (JobPhase::Finished { .. }, event) => return Err(unexpected(&before, &event)),
        (_, PhaseEvent::Cancelled { reason, best }) => cancel(job, reason, best),
        (_, PhaseEvent::Unparsable { issues }) => {
            job.error = format!("inputs no longer parse: {issues} issues");
            end(job, Outcome::Failed, "inputs no longer parse")
        }
        (JobPhase::Init, PhaseEvent::Started) => {
            move_to(job, JobPhase::Parsing, "parsing inputs", Value::Null)
        }
        (JobPhase::Parsing, PhaseEvent::Parsed { modules, devices }) => {
            let parsed = notice(
                job,
                EventKind::StateChanged,
                "inputs parsed",
                json!({"modules": modules, "devices": devices}),
            );
            let mut effects = vec![Effect::Emit(parsed)];
            effects.extend(move_to(
                job,
                JobPhase::ProbingRules,
                "planning",
                Value::Null,
            ));
            effects
        }
        (
            JobPhase::ProbingRules,
            PhaseEvent::RulesProbed {
                ran,
                pitch_um,
                undrawable,
            },
        ) => rules_probed(job, ran, pitch_um, undrawable),
        (phase, PhaseEvent::TimeBudgetSpent) if phase.is_time_budgeted() => {
            let message = format!("time budget of {} ms spent", job.options.time_budget_ms);
            end_search(job, &message)
        }
        (
            JobPhase::Planning(_),
            PhaseEvent::Drafted {
                candidates,
                window,
                now_ms,
            },
        ) => drafted(job, candidates, window, now_ms, settings),
        (JobPhase::Planning(_), PhaseEvent::DesignSpaceExhausted) => {
            conclude(job, "the design space is exhausted")
        }
        (JobPhase::Planning(_), PhaseEvent::PlanningFailed { message }) => {
            end(job, Outcome::Failed, &message)
        }
        (JobPhase::Searching(round), PhaseEvent::ResultsSeen(progress)) => {
            searching(job, round, &progress)
        }
        (
            JobPhase::Searching(round),
            PhaseEvent::DraftedAhead {
                candidates,
                outstanding,
                window,
            },
        ) => drafted_ahead(job, round, candidates, outstanding, window),
        (JobPhase::Evaluating(round), PhaseEvent::IterationEvaluated { best, now_ms }) => {
            evaluated(job, round, best, now_ms, settings)
        }
        (
            JobPhase::ChoosingSignoff,
            PhaseEvent::SignoffChosen {
                candidates,
                parents,
                now_ms,
            },
        ) => signoff_chosen(job, candidates, parents, now_ms),
        (JobPhase::Signoff(round), PhaseEvent::ResultsSeen(progress)) => {
            signoff_waiting(job, round, &progress)
        }
        (JobPhase::JudgingSignoff(_), PhaseEvent::SignoffJudged { ran, best, error }) => {
            signoff_judged(job, ran, best, &error)
        }
        (JobPhase::Concluding { message }, PhaseEvent::Concluded { any_layout }) => {
            concluded(job, &message, any_layout)
        }
        (JobPhase::Ending { outcome, message }, PhaseEvent::Ended) => ended(job, outcome, message),
        (_, event) => return Err(unexpected(&before, &event)),
    };
    Ok(effects)
}

fn unexpected(job: &JobRecord, event: &PhaseEvent) -> Unexpected {
    let name = |debug: String| {
        debug
            .split([' ', '(', '{'])
            .next()
            .unwrap_or_default()
            .to_string()
    };
    Unexpected {
        phase: name(format!("{:?}", job.phase)),
        event: name(format!("{event:?}")),
    }
}

/// A notice in the job's current state.
fn notice(job: &JobRecord, kind: EventKind, message: impl Into<String>, data: Value) -> Notice {
    Notice {
        kind,
        state: job.state(),
        message: message.into(),
        data,
    }
}

/// The job enters `phase`: written, and reported as a state change (with
/// `extra` merged into the `{from, to}` data).
fn move_to(job: &mut JobRecord, phase: JobPhase, message: &str, extra: Value) -> Vec<Effect> {
    let from = job.state();
    job.phase = phase;
    vec![
        Effect::Persist,
        Effect::Emit(state_change(job, from, message, extra)),
    ]
}

fn state_change(job: &JobRecord, from: JobState, message: &str, extra: Value) -> Notice {
    let mut data = json!({"from": from.as_str(), "to": job.state().as_str()});
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    notice(job, EventKind::StateChanged, message, data)
}

/// A state users see passed through on the way (no phase of its own).
fn passing_through(job: &JobRecord, state: JobState, message: &str) -> Effect {
    let data = json!({"from": job.state().as_str(), "to": state.as_str()});
    Effect::Emit(Notice {
        kind: EventKind::StateChanged,
        state,
        message: message.into(),
        data,
    })
}

fn end(job: &mut JobRecord, outcome: Outcome, message: &str) -> Vec<Effect> {
    let phase = JobPhase::Ending {
        outcome,
        message: message.to_string(),
    };
    move_to(job, phase, message, Value::Null)
}

fn conclude(job: &mut JobRecord, message: &str) -> Vec<Effect> {
    job.phase = JobPhase::Concluding {
        message: message.to_string(),
    };
    vec![Effect::Persist]
}

/// The search ends: to the foundry deck when the job names one, else concluded.
fn end_search(job: &mut JobRecord, message: &str) -> Vec<Effect> {
    if job.options.signoff_deck.is_empty() {
        return conclude(job, message);
    }
    move_to(job, JobPhase::ChoosingSignoff, message, Value::Null)
}

/// The best candidate passed: the job completes.
fn complete(job: &mut JobRecord, why: &str) -> Vec<Effect> {
    let mut effects = vec![passing_through(job, JobState::Passed, why)];
    job.phase = JobPhase::Ending {
        outcome: Outcome::Completed,
        message: "completed: the best candidate passed".into(),
    };
    let entered = state_change(job, JobState::Passed, "completed", Value::Null);
    effects.extend([Effect::Persist, Effect::Emit(entered)]);
    effects
}

fn take_best(job: &mut JobRecord, best: Option<Best>) {
    if let Some(best) = best {
        job.best_candidate_id = best.candidate_id;
        job.best_score = best.score;
        job.best_passed = best.passed;
    }
}

fn cancel(job: &mut JobRecord, reason: String, best: Option<Best>) -> Vec<Effect> {
    take_best(job, best);
    job.cancel_requested = true;
    if job.error.is_empty() {
        job.error = reason.clone();
    }
    job.cancel_reason = reason;
    job.phase = JobPhase::Finished {
        outcome: Outcome::Cancelled,
    };
    let message = job.cancel_reason.clone();
    vec![
        Effect::Finish,
        Effect::Emit(final_notice(job, Outcome::Cancelled, &message)),
        Effect::Forget,
    ]
}

pub(super) fn final_notice(job: &JobRecord, outcome: Outcome, message: &str) -> Notice {
    let kind = match outcome {
        Outcome::Completed => EventKind::Completed,
        Outcome::Failed => EventKind::Failed,
        Outcome::Cancelled => EventKind::Cancelled,
    };
    let data = json!({
        "outcome": outcome.as_str(),
        "best_candidate_id": job.best_candidate_id,
        "best_score": job.best_score,
        "best_passed": job.best_passed,
        "iterations": job.iteration + 1,
    });
    notice(job, kind, message, data)
}

fn rules_probed(
    job: &mut JobRecord,
    ran: bool,
    pitch_um: Option<f64>,
    undrawable: Vec<String>,
) -> Vec<Effect> {
    job.route_pitch_um = pitch_um;
    let mut effects = Vec::new();
    if ran {
        let data = json!({"route_pitch_um": pitch_um, "undrawable": undrawable});
        let message = "probed the rule set (routing pitch, devices)";
        effects.push(Effect::Emit(notice(
            job,
            EventKind::StateChanged,
            message,
            data,
        )));
    }
    if !undrawable.is_empty() {
        let message = format!(
            "the rule set cannot draw these devices (no candidate was run): {}",
            undrawable.join("; ")
        );
        effects.extend(end(job, Outcome::Failed, &message));
        return effects;
    }
    job.phase = JobPhase::Planning(Drafting::default());
    effects.push(Effect::Persist);
    effects
}

fn drafted(
    job: &mut JobRecord,
    candidates: Vec<String>,
    window: usize,
    now_ms: u64,
    settings: PhaseSettings,
) -> Vec<Effect> {
    let count = candidates.len();
    let queued = count.min(window.max(1));
    let mut round = Round::queued(candidates, queued, now_ms);
    round.overlap_next = overlap_next(job, settings.overlap_iterations);
    let from = job.state();
    job.phase = JobPhase::Searching(round);
    let extra = json!({"candidates": count});
    vec![
        Effect::EnqueueDrafted { queued },
        Effect::Emit(state_change(job, from, "executing", extra)),
    ]
}

/// Searching: draft ahead when slots would idle; else evaluate what arrived,
/// and move on when all is in, or queue more, or record the lost, or wait.
fn searching(job: &mut JobRecord, mut round: Round, progress: &Progress) -> Vec<Effect> {
    if let Some(outstanding) =
        idle_slots_call_ahead(&round, &progress.finished, progress.farm_slots)
    {
        return vec![Effect::DraftAhead {
            iteration: job.iteration + 1,
            hidden: job.iteration,
            outstanding,
        }];
    }
    let all_in = round
        .candidates
        .iter()
        .all(|candidate_id| progress.finished.contains(candidate_id));
    if all_in {
        let message = "every candidate of the iteration is in";
        return move_to(job, JobPhase::Evaluating(round), message, Value::Null);
    }
    let arrived: Vec<String> = round
        .candidates
        .iter()
        .filter(|candidate_id| progress.finished.contains(*candidate_id))
        .cloned()
        .collect();
    let mut effects = Vec::new();
    if !arrived.is_empty() {
        effects.push(Effect::EvaluateArrived {
            candidates: arrived,
        });
    }
    effects.push(keep_round_moving(&mut round, progress));
    job.phase = JobPhase::Searching(round);
    effects
}

/// A round not all in: more of it queued, its lost candidates recorded, or a wait.
fn keep_round_moving(round: &mut Round, progress: &Progress) -> Effect {
    if let Some(candidates) = top_up(round, &progress.finished, progress.window) {
        round.started_ms = progress.now_ms;
        return Effect::EnqueueMore { candidates };
    }
    let stalled = round.started_ms > 0
        && progress.now_ms.saturating_sub(round.started_ms) > progress.stall_limit_ms;
    if stalled {
        let candidates: Vec<String> = missing(round, &progress.finished)
            .into_iter()
            .cloned()
            .collect();
        if !candidates.is_empty() {
            let message = format!("no result within {} ms", progress.stall_limit_ms);
            return Effect::RecordLost {
                candidates,
                message,
            };
        }
    }
    Effect::Wait
}

fn drafted_ahead(
    job: &mut JobRecord,
    mut round: Round,
    candidates: Vec<String>,
    outstanding: usize,
    window: usize,
) -> Vec<Effect> {
    if candidates.is_empty() {
        // planned again (the same way) after this iteration, which then ends the job
        round.ahead = Some(Ahead::default());
        job.phase = JobPhase::Searching(round);
        return vec![Effect::Persist];
    }
    let count = candidates.len();
    let queued = count.min(ahead_room(window, outstanding));
    round.ahead = Some(Ahead {
        candidates,
        enqueued: queued as u32,
    });
    job.phase = JobPhase::Searching(round);
    let next = job.iteration + 1;
    let message = format!(
        "iteration {next} drafted while iteration {} finishes ({outstanding} candidates out)",
        job.iteration
    );
    let data = json!({"iteration": next, "candidates": count, "outstanding": outstanding});
    vec![
        Effect::EnqueueDrafted { queued },
        Effect::Emit(notice(job, EventKind::StateChanged, message, data)),
    ]
}

fn evaluated(
    job: &mut JobRecord,
    round: Round,
    best: Option<Best>,
    now_ms: u64,
    settings: PhaseSettings,
) -> Vec<Effect> {
    let previous = (job.best_passed, job.best_score);
    take_best(job, best);
    let improved = (job.best_passed, job.best_score) > (previous.0, previous.1 + 1e-9)
        && !job.best_candidate_id.is_empty();
    job.stale_iterations = if improved {
        0
    } else {
        job.stale_iterations + 1
    };
    let options = &job.options;
    let last_iteration = job.iteration + 1 >= options.max_iterations;
    let out_of_patience = job.stale_iterations >= options.patience.max(1);
    let search_ends = (job.best_passed && out_of_patience) || last_iteration;
    if search_ends && !options.signoff_deck.is_empty() {
        let message = format!("the search ends; foundry deck {}", options.signoff_deck);
        return end_search(job, &message);
    }
    if search_ends && job.best_passed {
        return complete(job, "the best candidate passed and no longer improves");
    }
    if last_iteration {
        let message = format!("max_iterations ({}) reached", options.max_iterations);
        return conclude(job, &message);
    }
    next_iteration(job, round, now_ms, settings)
}

/// The search goes on: the iteration drafted ahead runs, else the next is planned.
fn next_iteration(
    job: &mut JobRecord,
    round: Round,
    now_ms: u64,
    settings: PhaseSettings,
) -> Vec<Effect> {
    let mut effects = vec![passing_through(job, JobState::Iterating, "iterating")];
    let hidden = round.overlap_next.then_some(job.iteration);
    job.iteration += 1;
    let data = json!({"best_candidate_id": job.best_candidate_id, "best_score": job.best_score});
    let iteration = Notice {
        kind: EventKind::Iteration,
        state: JobState::Iterating,
        message: format!("iteration {}", job.iteration),
        data,
    };
    effects.push(Effect::Emit(iteration));
    let (phase, message) = match round.ahead {
        Some(ahead) if !ahead.candidates.is_empty() => {
            let mut next = Round::queued(ahead.candidates, ahead.enqueued as usize, now_ms);
            next.overlap_next = overlap_next(job, settings.overlap_iterations);
            (
                JobPhase::Searching(next),
                "executing the iteration drafted ahead",
            )
        }
        _ => (
            JobPhase::Planning(Drafting { hidden }),
            "planning the next iteration",
        ),
    };
    job.phase = phase;
    let entered = state_change(job, JobState::Iterating, message, Value::Null);
    effects.extend([Effect::Persist, Effect::Emit(entered)]);
    effects
}

fn signoff_chosen(
    job: &mut JobRecord,
    candidates: Vec<String>,
    parents: Vec<String>,
    now_ms: u64,
) -> Vec<Effect> {
    if candidates.is_empty() {
        return conclude(
            job,
            "no candidate with an exported layout to run the foundry deck on",
        );
    }
    let count = candidates.len();
    let deck = job.options.signoff_deck.clone();
    let data = json!({"deck": deck, "candidates": candidates, "parents": parents});
    job.phase = JobPhase::Signoff(Round::queued(candidates, count, now_ms));
    let message = format!("foundry deck {deck} on {count} candidates");
    vec![
        Effect::EnqueueDrafted { queued: count },
        Effect::Emit(notice(job, EventKind::StateChanged, message, data)),
    ]
}

fn signoff_waiting(job: &mut JobRecord, mut round: Round, progress: &Progress) -> Vec<Effect> {
    let all_in = round
        .candidates
        .iter()
        .all(|candidate_id| progress.finished.contains(candidate_id));
    if all_in {
        job.phase = JobPhase::JudgingSignoff(round);
        return vec![Effect::Persist];
    }
    let effect = keep_round_moving(&mut round, progress);
    job.phase = JobPhase::Signoff(round);
    vec![effect]
}

fn signoff_judged(job: &mut JobRecord, ran: bool, best: Option<Best>, error: &str) -> Vec<Effect> {
    let deck = job.options.signoff_deck.clone();
    if !ran {
        // the search's best stays the best, but it did not pass: the deck never ran
        job.best_passed = false;
        return conclude(
            job,
            &format!("the foundry deck {deck} did not run: {error}"),
        );
    }
    take_best(job, best);
    if job.best_passed {
        return complete(job, "the foundry deck found the best candidate clean");
    }
    conclude(
        job,
        &format!("the foundry deck {deck} passed no kept candidate"),
    )
}

/// Completed with the best layout when there is one (seed 000: max iterations →
/// accept the current result), failed when no candidate produced a layout.
fn concluded(job: &mut JobRecord, message: &str, any_layout: bool) -> Vec<Effect> {
    if job.best_passed || any_layout {
        if !job.best_passed {
            job.error = format!("{message}; the best candidate did not pass");
        }
        return end(job, Outcome::Completed, message);
    }
    end(
        job,
        Outcome::Failed,
        &format!("{message}; no candidate produced a layout"),
    )
}

fn ended(job: &mut JobRecord, outcome: Outcome, message: String) -> Vec<Effect> {
    if outcome != Outcome::Completed && job.error.is_empty() {
        job.error = message.clone();
    }
    job.phase = JobPhase::Finished { outcome };
    vec![
        Effect::Finish,
        Effect::Emit(final_notice(job, outcome, &message)),
        Effect::Forget,
    ]
}

#[cfg(test)]
#[path = "transition_table_tests.rs"]
mod tests;
