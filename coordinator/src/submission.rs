//! A submission checked and turned into a job's options: the caller's options
//! against the coordinator's limits (RESOURCE_EXHAUSTED when the farm is full,
//! INVALID_PARAM when the job asks for too much), defaults filled in.

use centroid_schemas::{InputIssue, TaskContext};

use crate::config::CoordinatorConfig;
use crate::error::CoordinatorError;
use crate::model::JobOptions;
use crate::store::Store;

/// What the caller may set per job (zeros mean "the default").
#[derive(Debug, Clone, Default)]
pub struct SubmitOptions {
    pub name: String,
    pub candidates_per_iteration: u32,
    pub max_iterations: u32,
    pub seed: u64,
    pub time_budget_ms: u64,
    pub candidate_deadline_ms: u64,
    pub noop_plan: bool,
    pub sleep_ms: u64,
    /// a foundry deck by name (see `JobOptions::signoff_deck`); empty = none
    pub signoff_deck: String,
    /// `heuristic`, `llm` or empty (= heuristic)
    pub planner: String,
    /// iterations without a better candidate before a passed search ends (0 = 1)
    pub patience: u32,
    /// the job's weight in the share of the slots (0 = 1, at most [`MAX_PRIORITY`])
    pub priority: u32,
    /// the submitter's trace id (from its `traceparent`); empty = a fresh one
    pub trace_id: String,
    /// the submitting principal's name, kept as the job's owner (`None`: no owner,
    /// the job is for admins only)
    pub owner: Option<String>,
}

/// The highest priority a job may ask for: a job of priority 100 gets a hundred
/// times the slots of a job of priority 1 while both run.
pub const MAX_PRIORITY: u32 = 100;

#[derive(Debug, Clone)]
pub struct Submitted {
    pub job_id: String,
    pub warnings: Vec<InputIssue>,
}

/// Candidates per iteration: the caller's number, else as many as the farm has
/// live slots (so that 8 slots and 800 slots both stay busy), at least the
/// configured `candidates_per_iteration` and at most `max_candidates_per_iteration`.
pub(crate) fn iteration_width(
    config: &CoordinatorConfig,
    alive_slots: u32,
    options: &SubmitOptions,
) -> u32 {
    match options.candidates_per_iteration {
        0 => alive_slots
            .max(config.candidates_per_iteration)
            .min(config.max_candidates_per_iteration),
        count => count,
    }
}

/// RESOURCE_EXHAUSTED (retryable) when the coordinator holds `max_active_jobs`
/// unfinished jobs or the job's first iteration (`width` candidates) would
/// overfill the queue; INVALID_PARAM when an iteration asks for more than
/// `max_candidates_per_iteration`.
pub(crate) async fn check_limits(
    config: &CoordinatorConfig,
    store: &dyn Store,
    options: &SubmitOptions,
    width: u32,
) -> Result<(), CoordinatorError> {
    if options.candidates_per_iteration > config.max_candidates_per_iteration {
        return Err(CoordinatorError::InvalidOptions(format!(
            "{} candidates per iteration; the limit is {} (max_candidates_per_iteration)",
            options.candidates_per_iteration, config.max_candidates_per_iteration
        )));
    }
    let active = store.active_jobs().await?.len();
    if active >= config.max_active_jobs as usize {
        return Err(CoordinatorError::Limit(format!(
            "{active} jobs are running; the limit is {} (max_active_jobs): submit again when one ends",
            config.max_active_jobs
        )));
    }
    let queued = store.queue_waiting_count().await? + store.queue_pending_count().await?;
    let wanted = u64::from(width);
    if queued + wanted > config.max_queue_len {
        return Err(CoordinatorError::Limit(format!(
            "the queue holds {queued} candidates and this job wants {wanted} more; the limit is {} (max_queue_len)",
            config.max_queue_len
        )));
    }
    Ok(())
}

/// The job's options: the caller's, checked, with the defaults of `config` and
/// of the objectives (`max_iterations`) filled in.
pub(crate) fn job_options(
    options: &SubmitOptions,
    task: &TaskContext,
    config: &CoordinatorConfig,
    width: u32,
) -> Result<JobOptions, CoordinatorError> {
    if !["", "heuristic", "llm"].contains(&options.planner.as_str()) {
        return Err(CoordinatorError::InvalidOptions(format!(
            "planner {:?}: expected \"heuristic\" or \"llm\"",
            options.planner
        )));
    }
    if options.noop_plan && options.sleep_ms > 3_600_000 {
        return Err(CoordinatorError::InvalidOptions(
            "sleep_ms above one hour".into(),
        ));
    }
    if options.priority > MAX_PRIORITY {
        return Err(CoordinatorError::InvalidOptions(format!(
            "priority {}: expected 1–{MAX_PRIORITY} (0 = 1)",
            options.priority
        )));
    }
    Ok(JobOptions {
        candidates_per_iteration: width,
        max_iterations: match options.max_iterations {
            0 => task.objectives.constraints.max_iterations.max(1),
            limit => limit,
        },
        seed: options.seed,
        time_budget_ms: options.time_budget_ms,
        candidate_deadline_ms: match options.candidate_deadline_ms {
            0 => config.candidate_deadline_ms,
            deadline => deadline,
        },
        noop_plan: options.noop_plan,
        sleep_ms: options.sleep_ms,
        signoff_deck: options.signoff_deck.clone(),
        planner: match options.planner.as_str() {
            "" => "heuristic".into(),
            planner => planner.to_string(),
        },
        patience: options.patience.max(1),
        priority: options.priority.max(1),
    })
}
