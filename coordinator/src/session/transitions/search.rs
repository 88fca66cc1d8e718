//! The search's transitions: the rule-set probe, a draft, results arriving
//! (draft ahead, queue more, record the lost, wait), an iteration evaluated.

use centroid_planner::job_events::EventData;
use centroid_planner::performance::SchematicSimulation;

use super::steps::{
    complete, conclude, end, end_search, keep_round_moving, move_to, notice, passing_through,
    state_change, take_best,
};
use super::{Best, Effect, PhaseSettings, Progress};
use crate::model::{
    Ahead, Drafting, EventKind, JobPhase, JobRecord, JobState, ModelShare, Notice, Outcome, Round,
};
use crate::session::overlap::{
    ahead_room, idle_slots_call_ahead, late_share_by_rule, overlap_next,
};

pub(super) fn rules_probed(
    job: &mut JobRecord,
    ran: bool,
    pitch_um: Option<f64>,
    undrawable: Vec<String>,
    schematic: Option<SchematicSimulation>,
) -> Vec<Effect> {
    job.route_pitch_um = pitch_um;
    job.schematic = schematic.clone();
    let mut effects = Vec::new();
    if ran {
        let data = EventData::RulesProbed {
            route_pitch_um: pitch_um,
            undrawable: undrawable.clone(),
        };
        let message = "probed the rule set (routing pitch, devices)";
        effects.push(Effect::emit(notice(
            job,
            EventKind::StateChanged,
            message,
            data,
        )));
    }
    if let Some(schematic) = schematic {
        let message = match &schematic {
            SchematicSimulation::Measured(simulated) => format!(
                "the schematic simulated: {}",
                simulated
                    .measures
                    .iter()
                    .map(|(name, value)| format!("{name} = {value:.4e}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            SchematicSimulation::Failed { reason } => {
                format!("the schematic's simulation failed: {reason}")
            }
            SchematicSimulation::NotSimulated { reason } => format!("not simulated: {reason}"),
        };
        let data = EventData::SchematicSimulated(Box::new(schematic));
        effects.push(Effect::emit(notice(
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

pub(super) fn drafted(
    job: &mut JobRecord,
    candidates: Vec<String>,
    model_share: Option<ModelShare>,
    window: usize,
    now_ms: u64,
    settings: PhaseSettings,
) -> Vec<Effect> {
    let count = candidates.len() + model_share.as_ref().map_or(0, |share| share.count as usize);
    let queued = candidates.len().min(window.max(1));
    let mut round = Round::queued(candidates, queued, now_ms);
    round.overlap_next = overlap_next(job, settings.overlap_iterations);
    round.model_share = model_share;
    let from = job.state();
    job.phase = JobPhase::Executing(round);

    vec![
        Effect::EnqueueDrafted { queued },
        Effect::emit(state_change(job, from, "executing", Some(count))),
    ]
}

/// Executing: draft ahead when slots would idle; else evaluate what arrived,
/// and move on when all is in, or queue more, or record the lost, or wait.
pub(super) fn searching(
    job: &mut JobRecord,
    mut round: Round,
    progress: &Progress,
    settings: PhaseSettings,
) -> Vec<Effect> {
    if let Some(outstanding) =
        idle_slots_call_ahead(&round, &progress.finished, progress.farm_slots)
    {
        return vec![Effect::DraftAhead {
            iteration: job.iteration + 1,
            hidden: job.iteration,
            outstanding,
        }];
    }
    if share_by_rule_now(job, &round, progress, settings) {
        job.phase = JobPhase::Executing(round);
        return vec![Effect::DraftShareByRule];
    }
    // the iteration ends when its candidates are in, the model's share included
    let all_in = round
        .candidates
        .iter()
        .all(|candidate_id| progress.finished.contains(candidate_id));
    if all_in && round.model_share.is_none() {
        let message = "every candidate of the iteration is in";
        return move_to(job, JobPhase::Evaluating(round), message);
    }
    if all_in && closes_without_the_model(job, &round, settings) {
        let message = "the iteration's rule-based share is in; the model's late answer joins the next iteration";
        return move_to(job, JobPhase::Evaluating(round), message);
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
    job.phase = JobPhase::Executing(round);
    effects
}

/// Whether `round`, its own candidates all in, ends without its model's share
/// still awaited: `[llm] model_share = "when_ready"`, the round ran candidates
/// of its own, and a next iteration can take the share over (in the last
/// iteration the share is drafted rule-based instead, see [`share_by_rule_now`]).
fn closes_without_the_model(job: &JobRecord, round: &Round, settings: PhaseSettings) -> bool {
    settings.model_share_when_ready
        && round.model_share.is_some()
        && !round.candidates.is_empty()
        && !share_cannot_be_carried(job, round)
}

/// Whether no next iteration can take `round`'s awaited model's share over: it
/// is the job's last iteration, or the round has no candidates of its own (it
/// would close having run nothing).
fn share_cannot_be_carried(job: &JobRecord, round: &Round) -> bool {
    job.iteration + 1 >= job.options.max_iterations || round.candidates.is_empty()
}

/// Whether `round`'s model's share — still awaited, the advice late — is to be
/// drafted rule-based now, so the job runs its whole budget without waiting:
/// `[llm] model_share = "when_ready"`, no next iteration can take the share
/// over, and slots would idle (see [`late_share_by_rule`]). The advice, if it
/// comes after, is dropped.
fn share_by_rule_now(
    job: &JobRecord,
    round: &Round,
    progress: &Progress,
    settings: PhaseSettings,
) -> bool {
    settings.model_share_when_ready
        && share_cannot_be_carried(job, round)
        && late_share_by_rule(round, &progress.finished, progress.farm_slots)
}

pub(super) fn drafted_ahead(
    job: &mut JobRecord,
    mut round: Round,
    candidates: Vec<String>,
    model_share: Option<ModelShare>,
    outstanding: usize,
    window: usize,
) -> Vec<Effect> {
    if candidates.is_empty() && model_share.is_none() {
        // planned again (the same way) after this iteration, which then ends the job
        round.ahead = Some(Ahead::default());
        job.phase = JobPhase::Executing(round);
        return vec![Effect::Persist];
    }
    let count = candidates.len();
    let queued = count.min(ahead_room(window, outstanding));
    round.ahead = Some(Ahead {
        candidates,
        enqueued: queued as u32,
        model_share,
    });
    job.phase = JobPhase::Executing(round);
    let next = job.iteration + 1;
    let message = format!(
        "iteration {next} drafted while iteration {} finishes ({outstanding} candidates out)",
        job.iteration
    );
    let data = EventData::DraftedAhead {
        iteration: next,
        candidates: count,
        outstanding,
    };
    vec![
        Effect::EnqueueDrafted { queued },
        Effect::emit(notice(job, EventKind::StateChanged, message, data)),
    ]
}

/// The model's share of a round, as drafted.
pub(super) struct ShareDrafted {
    pub candidates: Vec<String>,
    /// candidates of the round at points the model chose too
    pub chosen_too: Vec<String>,
    /// how many of both are the model's
    pub from_model: usize,
    /// drafted rule-based, the model's advice being late (see [`share_by_rule_now`])
    pub by_rule: bool,
}

/// The model's share drafted: its candidates join the running round (queued at
/// once when the round's own are all queued, as the window leaves room; else
/// after them), and the round may end once they are in too.
pub(super) fn model_share_added(
    job: &mut JobRecord,
    mut round: Round,
    share: ShareDrafted,
    outstanding: usize,
    window: usize,
    now_ms: u64,
) -> Vec<Effect> {
    let ShareDrafted {
        candidates,
        chosen_too,
        from_model,
        by_rule,
    } = share;
    let awaited = round.model_share.take();
    let asked_for = awaited.as_ref().and_then(|awaited| awaited.asked_for);
    let advice_of = awaited.map_or(job.iteration, |awaited| {
        awaited.advice_iteration(job.iteration)
    });
    let cannot_carry = if round.candidates.is_empty() {
        "the iteration has no candidates of its own"
    } else {
        "this is the job's last iteration"
    };
    let all_queued = round.all_queued();
    let queued = if all_queued {
        candidates.len().min(ahead_room(window, outstanding))
    } else {
        0
    };
    let mut effects = Vec::new();
    if !candidates.is_empty() || !chosen_too.is_empty() {
        let advice = match asked_for {
            Some(asked_for) => {
                format!("the planner's advice for iteration {asked_for} arrived late")
            }
            None => "the planner's advice arrived".to_string(),
        };
        let message = if by_rule {
            format!(
                "{} candidates added to iteration {} drafted rule-based: the planner's advice \
                 for iteration {advice_of} is late, slots would idle and {cannot_carry} \
                 (its answer, if it comes, is dropped)",
                candidates.len(),
                job.iteration
            )
        } else {
            format!(
                "{} candidates added to iteration {} when {advice} ({from_model} of the model's)",
                candidates.len(),
                job.iteration
            )
        };
        let data = EventData::ModelShareAdded {
            iteration: job.iteration,
            candidates: candidates.clone(),
            chosen_too,
            from_model,
        };
        effects.push(Effect::emit(notice(job, EventKind::Planner, message, data)));
    }
    if candidates.is_empty() {
        job.phase = JobPhase::Executing(round);
        effects.insert(0, Effect::Persist);
        return effects;
    }
    round.candidates.extend(candidates);
    if all_queued {
        round.enqueued += queued as u32;
        round.started_ms = now_ms;
    }
    job.phase = JobPhase::Executing(round);
    effects.insert(0, Effect::EnqueueDrafted { queued });
    effects
}

pub(super) fn evaluated(
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
    // a model's share still awaited (the round closed without it): the next
    // iteration takes it, recorded with the iteration its advice was asked for
    let carried = round.model_share.map(|awaited| ModelShare {
        count: awaited.count,
        hidden: None,
        asked_for: Some(awaited.advice_iteration(job.iteration)),
    });
    job.iteration += 1;
    let data = EventData::Iteration {
        best_candidate_id: job.best_candidate_id.clone(),
        best_score: job.best_score,
    };
    let iteration = Notice {
        kind: EventKind::Iteration,
        state: JobState::Iterating,
        message: format!("iteration {}", job.iteration),
        data,
    };
    effects.push(Effect::emit(iteration));
    let (phase, message) = match round.ahead {
        Some(ahead) if !ahead.candidates.is_empty() || ahead.model_share.is_some() => {
            let mut next = Round::queued(ahead.candidates, ahead.enqueued as usize, now_ms);
            next.overlap_next = overlap_next(job, settings.overlap_iterations);
            next.model_share = ahead.model_share.or(carried);
            (
                JobPhase::Executing(next),
                "executing the iteration drafted ahead",
            )
        }
        _ => (
            JobPhase::Planning(Drafting { hidden, carried }),
            "planning the next iteration",
        ),
    };
    job.phase = phase;
    let entered = state_change(job, JobState::Iterating, message, None);
    effects.extend([Effect::Persist, Effect::emit(entered)]);
    effects
}
