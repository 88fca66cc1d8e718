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
//! | Planning | Drafted / Exhausted / PlanningFailed | Executing / Concluding / Ending failed |
//! | Executing | ResultsSeen | Executing (draft ahead, draft a late share by rule, queue more, record lost, wait) / Evaluating (all in, the model's share too — or, "when ready", without a late one) |
//! | Executing | DraftedAhead | Executing (the next iteration queued) |
//! | Executing | ModelShareDrafted | Executing (the model's share added to the round) |
//! | Executing | ShareDraftedByRule | Executing (the late model's share, drafted rule-based, added: "when ready", last iteration) |
//! | Evaluating | IterationEvaluated | Planning / Executing (drafted ahead) / ChoosingSignoff / Ending / Concluding |
//! | ChoosingSignoff | SignoffChosen | Signoff / Concluding |
//! | Signoff | ResultsSeen | Signoff / JudgingSignoff |
//! | JudgingSignoff | SignoffJudged | Ending completed / Concluding |
//! | Concluding | Concluded | Ending completed / failed |
//! | Ending | Ended | Finished |
//! | a search phase | TimeBudgetSpent | ChoosingSignoff / Concluding |
//! | any but Finished | Unparsable | Ending failed |
//! | any but Finished | Cancelled | Finished cancelled |

use std::collections::HashSet;
use std::sync::Arc;

use centroid_planner::job_events::EventData;
use centroid_planner::performance::SchematicSimulation;

mod ending;
mod search;
mod steps;

use ending::{cancel, concluded, ended, signoff_chosen, signoff_judged, signoff_waiting};
use search::{
    ShareDrafted, drafted, drafted_ahead, evaluated, model_share_added, rules_probed, searching,
};
pub(super) use steps::final_notice;
use steps::{conclude, end, end_search, move_to, notice};

use crate::model::{EventKind, JobPhase, JobRecord, ModelShare, Notice, Outcome};

/// The coordinator's settings a transition reads.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PhaseSettings {
    /// draft the next iteration while the last candidates of one run
    pub overlap_iterations: bool,
    /// `[llm] model_share = "when_ready"`: an iteration whose rule-based share
    /// is in closes without a late model's share, which joins the next one
    pub model_share_when_ready: bool,
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
    /// ids of the job's candidates with a result (the driver's copy, shared)
    pub finished: Arc<HashSet<String>>,
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
        /// the schematic's simulation, when the probe ran one
        schematic: Option<SchematicSimulation>,
    },
    /// the iteration's candidates were drafted (queued longest-looking first);
    /// `model_share`: the model's share follows when its advice arrives
    Drafted {
        candidates: Vec<String>,
        model_share: Option<ModelShare>,
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
        model_share: Option<ModelShare>,
        outstanding: usize,
        window: usize,
    },
    /// the model's share of the running iteration, drafted when the advice
    /// arrived (none: nothing could be drafted), while `outstanding` of the
    /// round's queued candidates are out; `chosen_too`: candidates of the round
    /// the model chose too; `from_model`: how many of both are the model's
    ModelShareDrafted {
        candidates: Vec<String>,
        chosen_too: Vec<String>,
        from_model: usize,
        outstanding: usize,
        window: usize,
        now_ms: u64,
    },
    /// the model's share of the running iteration, drafted rule-based because
    /// the advice is late and slots would idle (see `Effect::DraftShareByRule`),
    /// while `outstanding` of the round's queued candidates are out
    ShareDraftedByRule {
        candidates: Vec<String>,
        outstanding: usize,
        window: usize,
        now_ms: u64,
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
    Emit(Box<Notice>),
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
    /// draft the running round's awaited model's share rule-based now (its
    /// advice is late), the advice to be dropped when it comes, and report it
    /// as [`PhaseEvent::ShareDraftedByRule`]
    DraftShareByRule,
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

impl Effect {
    /// An event to append.
    pub(crate) fn emit(notice: Notice) -> Effect {
        Effect::Emit(Box::new(notice))
    }
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
        (JobPhase::Init, PhaseEvent::Started) => move_to(job, JobPhase::Parsing, "parsing inputs"),
        (JobPhase::Parsing, PhaseEvent::Parsed { modules, devices }) => {
            let parsed = notice(
                job,
                EventKind::StateChanged,
                "inputs parsed",
                EventData::InputsParsed { modules, devices },
            );
            let mut effects = vec![Effect::emit(parsed)];
            effects.extend(move_to(job, JobPhase::ProbingRules, "planning"));
            effects
        }
        (
            JobPhase::ProbingRules,
            PhaseEvent::RulesProbed {
                ran,
                pitch_um,
                undrawable,
                schematic,
            },
        ) => rules_probed(job, ran, pitch_um, undrawable, schematic),
        (phase, PhaseEvent::TimeBudgetSpent) if phase.is_time_budgeted() => {
            let message = format!("time budget of {} ms spent", job.options.time_budget_ms);
            end_search(job, &message)
        }
        (
            JobPhase::Planning(_),
            PhaseEvent::Drafted {
                candidates,
                model_share,
                window,
                now_ms,
            },
        ) => drafted(job, candidates, model_share, window, now_ms, settings),
        (JobPhase::Planning(_), PhaseEvent::DesignSpaceExhausted) => {
            conclude(job, "the design space is exhausted")
        }
        (JobPhase::Planning(_), PhaseEvent::PlanningFailed { message }) => {
            end(job, Outcome::Failed, &message)
        }
        (JobPhase::Executing(round), PhaseEvent::ResultsSeen(progress)) => {
            searching(job, round, &progress, settings)
        }
        (
            JobPhase::Executing(round),
            PhaseEvent::DraftedAhead {
                candidates,
                model_share,
                outstanding,
                window,
            },
        ) => drafted_ahead(job, round, candidates, model_share, outstanding, window),
        (
            JobPhase::Executing(round),
            PhaseEvent::ModelShareDrafted {
                candidates,
                chosen_too,
                from_model,
                outstanding,
                window,
                now_ms,
            },
        ) => {
            let share = ShareDrafted {
                candidates,
                chosen_too,
                from_model,
                by_rule: false,
            };
            model_share_added(job, round, share, outstanding, window, now_ms)
        }
        (
            JobPhase::Executing(round),
            PhaseEvent::ShareDraftedByRule {
                candidates,
                outstanding,
                window,
                now_ms,
            },
        ) => {
            let share = ShareDrafted {
                candidates,
                chosen_too: Vec::new(),
                from_model: 0,
                by_rule: true,
            };
            model_share_added(job, round, share, outstanding, window, now_ms)
        }
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

#[cfg(test)]
mod tests;
