//! Where a job stands: one enum whose variants carry what each phase needs
//! (the candidates of the iteration being searched, how many of them are
//! queued, an iteration drafted ahead, the outcome of an ending job). The job
//! record ([`super::JobRecord`]) keeps the job's identity and history; the
//! phase is the only place its progress lives. How a phase moves on is
//! `session::transitions` (pure functions, unit-tested).
//!
//! The states of seed 000 §4.1 that users see ([`JobState`]: in events,
//! GetJob, the CLI) are a view of the phase ([`JobPhase::state`]).

use centroid_planner::job_events::EventData;
use serde::{Deserialize, Serialize};

use super::EventKind;

/// The phase of a job (persisted with the job record after every transition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "snake_case")]
pub enum JobPhase {
    /// submitted; nothing done yet
    Init,
    /// the inputs are parsed and their modules recognised
    Parsing,
    /// waiting for a live worker, then probing the rule set once (routing
    /// pitch, whether every device can be drawn)
    ProbingRules,
    /// drafting the candidates of the job's current iteration
    Planning(Drafting),
    /// the current iteration's candidates run on the farm
    Executing(Round),
    /// every candidate of the current iteration is in: evaluate and decide
    Evaluating(Round),
    /// the search ended: choose the candidates the foundry deck runs on
    ChoosingSignoff,
    /// the foundry deck runs on the chosen candidates
    Signoff(Round),
    /// every deck run is in: the best clean candidate wins
    JudgingSignoff(Round),
    /// the search ended without a passing best that improves: completed when a
    /// candidate produced a layout, failed otherwise
    Concluding { message: String },
    /// the job ends with `outcome`: remembered, pictures of the kept layouts
    Ending { outcome: Outcome, message: String },
    /// done; nothing runs for it any more
    Finished { outcome: Outcome },
}

/// How an iteration is drafted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drafting {
    /// the iteration whose evaluations the draft leaves out: the one before,
    /// when this iteration was decided to overlap it (an early and a late draft
    /// then agree, whatever the slot count)
    #[serde(default)]
    pub hidden: Option<u32>,
    /// an iteration closed without its model's share (`[llm] model_share =
    /// "when_ready"`): the share carried to the next iteration, whose
    /// rule-based share is then the whole iteration
    #[serde(default)]
    pub carried: Option<ModelShare>,
}

/// The candidates of one round of runs (an iteration of the search, or the
/// foundry deck's runs) and how far they are queued.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// ids, in the order they are queued (longest-looking first)
    pub candidates: Vec<String>,
    /// how many of `candidates` are in the work queue; the rest follow as
    /// results come in, so that jobs running at once share the slots
    pub enqueued: u32,
    /// when candidates were last put into the queue (the clock of a stall)
    pub started_ms: u64,
    /// the next iteration is drafted without this one's evaluations, so that
    /// it can start while this one's last candidates run; decided when this
    /// iteration was planned
    #[serde(default)]
    pub overlap_next: bool,
    /// the next iteration, drafted while this one's last candidates run
    #[serde(default)]
    pub ahead: Option<Ahead>,
    /// the model's share of this iteration, still to be drafted when the
    /// planner's advice arrives (its candidates are then added to this round)
    #[serde(default)]
    pub model_share: Option<ModelShare>,
}

/// The model's share of an iteration whose rule-based share runs already: how
/// many candidates it adds (the model's points first, the search journal's to
/// fill up), the iteration whose evaluations its draft leaves out beside
/// its own (see [`Drafting::hidden`]), and — for a late answer carried over
/// from an iteration that closed without it — the iteration it was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelShare {
    pub count: u32,
    #[serde(default)]
    pub hidden: Option<u32>,
    /// the iteration whose advice this share awaits, when not the round's own
    /// (a late answer: it joins the iteration running when it arrives)
    #[serde(default)]
    pub asked_for: Option<u32>,
}

impl ModelShare {
    /// The iteration whose advice the share awaits, in a round of `iteration`.
    pub fn advice_iteration(&self, iteration: u32) -> u32 {
        self.asked_for.unwrap_or(iteration)
    }
}

/// An iteration drafted while the one before it still runs: stored, partly
/// queued; it becomes the current iteration once the one before is evaluated.
/// No candidates: its draft found nothing, so it is planned again (the same
/// way) after the iteration before, which then ends the search.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ahead {
    pub candidates: Vec<String>,
    /// how many of `candidates` are in the work queue
    pub enqueued: u32,
    /// the model's share of it, still to be drafted
    #[serde(default)]
    pub model_share: Option<ModelShare>,
}

impl Round {
    /// A round of `candidates` of which the first `enqueued` were just queued.
    pub fn queued(candidates: Vec<String>, enqueued: usize, now_ms: u64) -> Round {
        Round {
            enqueued: enqueued.min(candidates.len()) as u32,
            candidates,
            started_ms: now_ms,
            overlap_next: false,
            ahead: None,
            model_share: None,
        }
    }

    /// Whether every candidate of the round is in the queue.
    pub fn all_queued(&self) -> bool {
        self.enqueued as usize >= self.candidates.len()
    }

    /// The queued candidates of the round.
    pub fn queued_candidates(&self) -> &[String] {
        &self.candidates[..(self.enqueued as usize).min(self.candidates.len())]
    }
}

impl Ahead {
    /// The queued candidates of the iteration drafted ahead.
    pub fn queued_candidates(&self) -> &[String] {
        &self.candidates[..(self.enqueued as usize).min(self.candidates.len())]
    }
}

/// The session state machine of seed 000 §4.1 as users see it. A job ends in
/// `Done` with an [`Outcome`]; `Completed` / `Failed` are passed through on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Init,
    Parsing,
    Planning,
    Executing,
    Evaluating,
    /// the best candidates go through the foundry's deck (when the job names one)
    Signoff,
    Passed,
    Iterating,
    Completed,
    Failed,
    Done,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Init => "init",
            JobState::Parsing => "parsing",
            JobState::Planning => "planning",
            JobState::Executing => "executing",
            JobState::Evaluating => "evaluating",
            JobState::Signoff => "signoff",
            JobState::Passed => "passed",
            JobState::Iterating => "iterating",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Done => "done",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Failed,
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

impl JobPhase {
    /// The state users see for this phase.
    pub fn state(&self) -> JobState {
        match self {
            JobPhase::Init => JobState::Init,
            JobPhase::Parsing => JobState::Parsing,
            JobPhase::ProbingRules | JobPhase::Planning(_) => JobState::Planning,
            JobPhase::Executing(_) => JobState::Executing,
            JobPhase::Evaluating(_) => JobState::Evaluating,
            JobPhase::ChoosingSignoff | JobPhase::Signoff(_) | JobPhase::JudgingSignoff(_) => {
                JobState::Signoff
            }
            JobPhase::Concluding { .. } => JobState::Evaluating,
            JobPhase::Ending {
                outcome: Outcome::Completed,
                ..
            } => JobState::Completed,
            JobPhase::Ending { .. } => JobState::Failed,
            JobPhase::Finished { .. } => JobState::Done,
        }
    }

    /// The outcome of a finished job.
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            JobPhase::Finished { outcome } => Some(*outcome),
            _ => None,
        }
    }

    /// Phases the job's time budget ends: the search's, but an evaluation
    /// (short, and it names the iteration's best) — signoff and the end run on.
    pub fn is_time_budgeted(&self) -> bool {
        matches!(
            self,
            JobPhase::ProbingRules | JobPhase::Planning(_) | JobPhase::Executing(_)
        )
    }
}

/// A job event a transition reports, in the state it names (a state passed
/// through on the way, such as ITERATING, has no phase of its own).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub kind: EventKind,
    pub state: JobState,
    pub message: String,
    pub data: EventData,
}
