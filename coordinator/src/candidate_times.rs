//! Each job's typical candidate time on a worker (the workers' own `duration_ms`:
//! the slot's time, not the wait for it), and from it whether the job's entries
//! may take a place in a worker's waiting room (prefetch).
//!
//! Why only short candidates prefetch: between a slot freeing and its next
//! candidate starting there is a round trip (the wake-up, the slot line, the
//! dispatched event's write, the call) of some tens of ms. With 100 ms candidates
//! that gap is a third of the slot's time, and a candidate already waiting in the
//! worker hides it. With candidates of seconds or minutes the gap is a small
//! share, while a candidate queued behind a long one on one worker — when another
//! worker frees first and idles — would stretch the tail of an iteration by up to
//! a whole candidate. So an entry may wait in a worker only when its job's recent
//! candidates took at most `prefetch_below_ms` there, and a job none of whose
//! candidates finished yet does not prefetch.
//!
//! The typical time is an exponentially weighted moving average (weight
//! [`NEWEST_WEIGHT`] on the newest candidate): a job whose candidates grow longer
//! stops prefetching after a few of them.

use std::collections::HashMap;
use std::sync::Mutex;

/// The newest candidate's share of the moving average.
const NEWEST_WEIGHT: f64 = 0.25;

/// Jobs remembered at most; past it the job seen least recently is forgotten
/// (this coordinator may dispatch jobs another one drives, and never see them end).
const REMEMBERED_JOBS: usize = 1024;

struct JobTimes {
    average_ms: f64,
    /// when it was last seen, in candidates seen by this coordinator
    last_seen: u64,
}

#[derive(Default)]
struct Seen {
    by_job: HashMap<String, JobTimes>,
    candidates: u64,
}

/// The candidate times of the jobs this coordinator dispatches.
pub(crate) struct CandidateTimes {
    /// 0 = no job prefetches
    prefetch_below_ms: u64,
    seen: Mutex<Seen>,
}

impl CandidateTimes {
    pub(crate) fn new(prefetch_below_ms: u64) -> CandidateTimes {
        CandidateTimes {
            prefetch_below_ms,
            seen: Mutex::new(Seen::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().expect("candidate times lock")
    }

    /// A candidate of `job_id` took `duration_ms` on its worker.
    pub(crate) fn saw(&self, job_id: &str, duration_ms: u64) {
        if self.prefetch_below_ms == 0 {
            return;
        }
        let mut seen = self.lock();
        seen.candidates += 1;
        let now = seen.candidates;
        let by_job = &mut seen.by_job;
        if let Some(times) = by_job.get_mut(job_id) {
            times.average_ms += NEWEST_WEIGHT * (duration_ms as f64 - times.average_ms);
            times.last_seen = now;
            return;
        }
        if by_job.len() >= REMEMBERED_JOBS
            && let Some(stalest) = by_job
                .iter()
                .min_by_key(|(_, times)| times.last_seen)
                .map(|(job_id, _)| job_id.clone())
        {
            by_job.remove(&stalest);
        }
        by_job.insert(
            job_id.to_string(),
            JobTimes {
                average_ms: duration_ms as f64,
                last_seen: now,
            },
        );
    }

    /// Whether `job_id`'s entries may wait in a worker's waiting room.
    pub(crate) fn may_prefetch(&self, job_id: &str) -> bool {
        self.prefetch_below_ms > 0
            && self
                .lock()
                .by_job
                .get(job_id)
                .is_some_and(|times| times.average_ms <= self.prefetch_below_ms as f64)
    }

    pub(crate) fn forget(&self, job_id: &str) {
        self.lock().by_job.remove(job_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_prefetches_once_its_candidates_are_seen_short_and_stops_when_they_grow() {
        let times = CandidateTimes::new(1_000);
        assert!(!times.may_prefetch("job"), "no candidate finished yet");
        times.saw("job", 100);
        assert!(times.may_prefetch("job"));
        for _ in 0..4 {
            times.saw("job", 5_000);
        }
        assert!(!times.may_prefetch("job"), "its candidates grew long");
        times.forget("job");
        assert!(!times.may_prefetch("job"));
    }

    #[test]
    fn long_candidates_and_a_zero_threshold_never_prefetch() {
        let times = CandidateTimes::new(1_000);
        times.saw("long", 1_001);
        assert!(!times.may_prefetch("long"));
        let disabled = CandidateTimes::new(0);
        disabled.saw("short", 10);
        assert!(!disabled.may_prefetch("short"));
    }

    #[test]
    fn the_job_seen_least_recently_is_forgotten_past_the_limit() {
        let times = CandidateTimes::new(1_000);
        for index in 0..=REMEMBERED_JOBS {
            times.saw(&format!("job-{index}"), 10);
        }
        assert!(!times.may_prefetch("job-0"));
        assert!(times.may_prefetch(&format!("job-{REMEMBERED_JOBS}")));
    }
}
