//! Overlapping iterations and the queue window, as pure rules over a job's
//! record and its current [`Round`].
//!
//! While the last candidates of iteration k run and slots would idle,
//! iteration k+1 is drafted and queued. It is drafted from the evaluations of
//! the iterations before k — k's are left out whether k+1 is drafted early or,
//! when the slots never idled, after k was evaluated — so a job stays
//! deterministic for its seed whatever the slot count. Whether k+1 overlaps k
//! is decided when k is planned ([`overlap_next`]), only where the search
//! cannot end after k, so an iteration drafted ahead always runs.
//!
//! A round's candidates enter the queue a window at a time ([`top_up`]), so
//! that jobs running at once share the slots: each job's window is its weighted
//! share of what the farm's dispatchers read ahead ([`job_window`]).

use std::collections::HashSet;

use crate::model::{JobRecord, Round};

/// Whether the iteration after `job.iteration` (being planned, with the job's
/// best and patience as the iterations before left them) is drafted without
/// this iteration's evaluations, so that it can start while this iteration's
/// last candidates run: overlapping is on, this is not the first iteration (its
/// feedback is worth waiting for), and the search cannot end after this
/// iteration (not the last one; patience cannot run out — it counts only once a
/// candidate passed, and a new pass is an improvement).
pub(crate) fn overlap_next(job: &JobRecord, enabled: bool) -> bool {
    let options = &job.options;
    enabled
        && !options.noop_plan
        && job.iteration >= 1
        && job.iteration + 1 < options.max_iterations
        && !(job.best_passed && job.stale_iterations + 1 >= options.patience.max(1))
}

/// How many of a job's candidates may be out (queued, no result) at once.
/// `farm_window` is what the dispatchers of the farm read ahead for all its live
/// slots; the job's share of it is in proportion of its `weight` to the
/// `active_weight` of every unfinished job (its own included), at least one.
/// Alone on the farm, a job gets the whole window. (A share is not grown into
/// what other jobs leave unused: a job topping up past its share puts a run of
/// its candidates into the queue ahead of the others', which is the
/// first-come-first-served sharing this replaces; a job between iterations
/// leaves its share idle for the moments its evaluation takes.)
pub(crate) fn job_window(farm_window: usize, weight: u32, active_weight: u64) -> usize {
    let weight = u64::from(weight.max(1));
    let active_weight = active_weight.max(weight);
    ((farm_window as u64 * weight).div_ceil(active_weight) as usize).max(1)
}

/// The candidates of `round` still out (queued, no result), when the next
/// iteration should be drafted now: the round overlaps the next one, nothing
/// was drafted ahead yet, the model's share of the round is drafted, the whole
/// round is queued, and fewer of its candidates are out than the farm has
/// slots (some slots would idle).
pub(crate) fn idle_slots_call_ahead(
    round: &Round,
    finished: &HashSet<String>,
    farm_slots: usize,
) -> Option<usize> {
    if !round.overlap_next
        || round.ahead.is_some()
        || round.model_share.is_some()
        || !round.all_queued()
    {
        return None;
    }
    let outstanding = out(&round.candidates, finished);
    (outstanding > 0 && outstanding < farm_slots).then_some(outstanding)
}

/// Whether `round`'s awaited model's share should be drafted without the model
/// now, where the caller found it cannot wait for the advice (`[llm]
/// model_share = "when_ready"` in the job's last iteration): a share is
/// awaited, the round's own candidates are all queued, and fewer of them are
/// out than the farm has slots (some slots would idle — at once for a round
/// with nothing of its own).
pub(crate) fn late_share_by_rule(
    round: &Round,
    finished: &HashSet<String>,
    farm_slots: usize,
) -> bool {
    round.model_share.is_some()
        && round.all_queued()
        && out(&round.candidates, finished) < farm_slots
}

/// How many candidates of a drafted-ahead iteration go into the queue at once:
/// what the window leaves beside the `outstanding` ones, at least one.
pub(crate) fn ahead_room(window: usize, outstanding: usize) -> usize {
    window.saturating_sub(outstanding).max(1)
}

/// Puts more of `round` — once it is all queued, of the iteration drafted
/// ahead — into the queue while fewer than `window` of the queued candidates
/// are out: the ids to queue (the round's counts updated), `None` when nothing
/// goes in.
pub(crate) fn top_up(
    round: &mut Round,
    finished: &HashSet<String>,
    window: usize,
) -> Option<Vec<String>> {
    let ahead_all_queued = round
        .ahead
        .as_ref()
        .is_none_or(|ahead| ahead.enqueued as usize >= ahead.candidates.len());
    if round.all_queued() && ahead_all_queued {
        return None;
    }
    let outstanding = round_out(round, finished);
    if outstanding >= window {
        return None;
    }
    let room = window - outstanding;
    let (candidates, enqueued) = if !round.all_queued() {
        (&round.candidates, &mut round.enqueued)
    } else {
        let ahead = round.ahead.as_mut().expect("not all queued");
        (&ahead.candidates, &mut ahead.enqueued)
    };
    let from = *enqueued as usize;
    let ids = candidates[from..candidates.len().min(from + room)].to_vec();
    *enqueued = (from + ids.len()) as u32;
    Some(ids)
}

/// The queued candidates of `round` without a result.
pub(crate) fn missing<'a>(round: &'a Round, finished: &HashSet<String>) -> Vec<&'a String> {
    round
        .queued_candidates()
        .iter()
        .filter(|candidate_id| !finished.contains(*candidate_id))
        .collect()
}

/// How many candidates of `round` (and of the iteration drafted ahead of it) are
/// out: queued, no result.
fn round_out(round: &Round, finished: &HashSet<String>) -> usize {
    out(round.queued_candidates(), finished)
        + round
            .ahead
            .as_ref()
            .map_or(0, |ahead| out(ahead.queued_candidates(), finished))
}

/// How many of `ids` have no result.
fn out(ids: &[String], finished: &HashSet<String>) -> usize {
    ids.iter()
        .filter(|candidate_id| !finished.contains(*candidate_id))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Ahead, JobOptions};

    fn job(iteration: u32, max_iterations: u32, patience: u32) -> JobRecord {
        let options = JobOptions {
            candidates_per_iteration: 8,
            max_iterations,
            seed: 1,
            time_budget_ms: 0,
            candidate_deadline_ms: 60_000,
            noop_plan: false,
            sleep_ms: 0,
            signoff_deck: String::new(),
            planner: String::new(),
            patience,
            priority: 1,
        };
        let mut job = JobRecord::new("j".into(), "j".into(), options, 0);
        job.iteration = iteration;
        job
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_job_s_window_is_its_weighted_share() {
        // alone: the whole window
        assert_eq!(job_window(40, 1, 1), 40);
        // six equal jobs: a sixth each (rounded up)
        assert_eq!(job_window(40, 1, 6), 7);
        // priorities 3 and 1: three quarters and a quarter
        assert_eq!(job_window(40, 3, 4), 30);
        assert_eq!(job_window(40, 1, 4), 10);
        // a farm without slots still lets one candidate in
        assert_eq!(job_window(0, 1, 3), 1);
        // a weight sum read before this job was stored
        assert_eq!(job_window(40, 2, 1), 40);
    }

    #[test]
    fn an_iteration_overlaps_the_next_only_where_the_search_goes_on() {
        assert!(overlap_next(&job(1, 8, 2), true));
        assert!(!overlap_next(&job(1, 8, 2), false), "switched off");
        assert!(
            !overlap_next(&job(0, 8, 2), true),
            "the first iteration's feedback is waited for"
        );
        assert!(
            !overlap_next(&job(7, 8, 2), true),
            "the last iteration has no next"
        );
        let mut passed = job(3, 8, 2);
        passed.best_passed = true;
        assert!(
            overlap_next(&passed, true),
            "patience 2 cannot run out after one stale iteration"
        );
        passed.stale_iterations = 1;
        assert!(
            !overlap_next(&passed, true),
            "one more stale iteration ends the search"
        );
        let mut not_passed = job(3, 8, 1);
        not_passed.stale_iterations = 5;
        assert!(
            overlap_next(&not_passed, true),
            "patience counts only once a candidate passed"
        );
        let mut noop = job(3, 8, 2);
        noop.options.noop_plan = true;
        assert!(!overlap_next(&noop, true));
    }

    #[test]
    fn the_next_iteration_is_drafted_ahead_only_when_slots_would_idle() {
        let mut round = Round::queued(ids(&["a", "b", "c"]), 3, 0);
        round.overlap_next = true;
        let finished: HashSet<String> = ids(&["a"]).into_iter().collect();
        assert_eq!(idle_slots_call_ahead(&round, &finished, 4), Some(2));
        assert_eq!(
            idle_slots_call_ahead(&round, &finished, 2),
            None,
            "two out on two slots: none idles"
        );
        let all: HashSet<String> = ids(&["a", "b", "c"]).into_iter().collect();
        assert_eq!(
            idle_slots_call_ahead(&round, &all, 4),
            None,
            "all in: the iteration is evaluated instead"
        );
        let mut partly = round.clone();
        partly.enqueued = 2;
        assert_eq!(
            idle_slots_call_ahead(&partly, &finished, 4),
            None,
            "not all queued"
        );
        let mut drafted = round.clone();
        drafted.ahead = Some(Ahead::default());
        assert_eq!(
            idle_slots_call_ahead(&drafted, &finished, 4),
            None,
            "drafted once"
        );
        round.overlap_next = false;
        assert_eq!(
            idle_slots_call_ahead(&round, &finished, 4),
            None,
            "not overlapping"
        );
    }

    #[test]
    fn a_late_share_is_drafted_by_rule_only_when_slots_would_idle() {
        let mut round = Round::queued(ids(&["a", "b", "c"]), 3, 0);
        let one_in: HashSet<String> = ids(&["a"]).into_iter().collect();
        assert!(!late_share_by_rule(&round, &one_in, 4), "no share awaited");
        round.model_share = Some(crate::model::ModelShare::default());
        assert!(
            late_share_by_rule(&round, &one_in, 4),
            "two out on four slots"
        );
        assert!(
            !late_share_by_rule(&round, &one_in, 2),
            "two out on two slots: none idles"
        );
        let all: HashSet<String> = ids(&["a", "b", "c"]).into_iter().collect();
        assert!(late_share_by_rule(&round, &all, 2), "all in");
        assert!(!late_share_by_rule(&round, &all, 0), "no live slot");
        let mut partly = round.clone();
        partly.enqueued = 2;
        assert!(
            !late_share_by_rule(&partly, &all, 4),
            "not all queued: the queue is topped up first"
        );
        let mut nothing_own = Round::queued(Vec::new(), 0, 0);
        nothing_own.model_share = Some(crate::model::ModelShare::default());
        assert!(late_share_by_rule(&nothing_own, &HashSet::new(), 1));
    }

    #[test]
    fn the_queue_is_topped_up_to_the_window_current_round_first() {
        let mut round = Round::queued(ids(&["a", "b", "c", "d", "e"]), 2, 0);
        let none: HashSet<String> = HashSet::new();
        assert_eq!(top_up(&mut round, &none, 2), None, "the window is full");
        let one_in: HashSet<String> = ids(&["a"]).into_iter().collect();
        assert_eq!(top_up(&mut round, &one_in, 2), Some(ids(&["c"])));
        assert_eq!(round.enqueued, 3);
        let three_in: HashSet<String> = ids(&["a", "b", "c"]).into_iter().collect();
        assert_eq!(top_up(&mut round, &three_in, 4), Some(ids(&["d", "e"])));
        assert!(round.all_queued());
        round.ahead = Some(Ahead {
            candidates: ids(&["f", "g"]),
            enqueued: 0,
            model_share: None,
        });
        assert_eq!(
            top_up(&mut round, &three_in, 3),
            Some(ids(&["f"])),
            "then the iteration drafted ahead"
        );
        assert_eq!(round.ahead.as_ref().unwrap().enqueued, 1);
        assert_eq!(missing(&round, &three_in), vec!["d", "e"]);
        assert_eq!(ahead_room(4, 3), 1);
        assert_eq!(ahead_room(4, 9), 1, "at least one");
    }
}
