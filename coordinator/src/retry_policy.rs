//! The retry policy of the brief (seed 000 §4.3.3) as one pure function: given
//! the error code of a failed try and the tries so far, what happens next.
//!
//! | code | decision |
//! |---|---|
//! | INVALID_PARAM, NOT_FOUND, CONFLICT | the planner adjusts the failed step (ReAct), at most `max_adjustments` times; then recorded |
//! | DRC_VIOLATION | recorded; the search repairs the candidate in the next iteration |
//! | TIMEOUT | retried 2× |
//! | SERVICE_UNAVAILABLE | retried 3×, on another worker when there is one |
//! | RESOURCE_EXHAUSTED | retried after a back-off, not counted as a delivery (≤ 50) |
//! | INTERNAL_ERROR | retried once |
//! | CANCELLED and anything else | recorded |
//!
//! Back-off: `base · 2^n` for the n-th retry, capped at `max`, scaled by a
//! jitter in [50 %, 100 %].

use std::time::Duration;

use centroid_proto::ErrorCode;

/// The limits of the policy.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub base: Duration,
    pub max: Duration,
    pub max_adjustments: u32,
    pub max_timeouts: u32,
    pub max_unavailable: u32,
    pub max_internal: u32,
    pub max_exhausted: u32,
}

impl RetryPolicy {
    /// The brief's limits with the configured back-off.
    pub fn new(base: Duration, max: Duration) -> RetryPolicy {
        RetryPolicy {
            base,
            max,
            max_adjustments: 3,
            max_timeouts: 2,
            max_unavailable: 3,
            max_internal: 1,
            max_exhausted: 50,
        }
    }

    /// The pause before the `retry`-th retry (from 1), with `jitter` in [0, 1).
    pub fn backoff(&self, retry: u32, jitter: f64) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32 << retry.min(16))
            .min(self.max)
            .max(Duration::from_millis(1));
        ceiling.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

/// The failed tries of one candidate so far, by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tries {
    pub adjustments: u32,
    pub timeouts: u32,
    pub unavailable: u32,
    pub internal: u32,
    pub exhausted: u32,
}

impl Tries {
    /// Counts a failure with `code` (after the decision on it was taken).
    pub fn count(&mut self, code: ErrorCode) {
        match code {
            ErrorCode::InvalidParam | ErrorCode::NotFound | ErrorCode::Conflict => {
                self.adjustments += 1
            }
            ErrorCode::Timeout => self.timeouts += 1,
            ErrorCode::ServiceUnavailable => self.unavailable += 1,
            ErrorCode::InternalError => self.internal += 1,
            ErrorCode::ResourceExhausted => self.exhausted += 1,
            _ => {}
        }
    }

    /// Retries made so far (adjustments are not retries).
    pub fn retries(&self) -> u32 {
        self.timeouts + self.unavailable + self.internal + self.exhausted
    }
}

/// What to do after a failed try.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Ask the planner to adjust the failed step and run again (ReAct).
    Adjust,
    /// Run the candidate again after `delay`.
    Retry {
        delay: Duration,
        /// whether the next try counts as a queue delivery (capacity refusals do not)
        counts_as_delivery: bool,
        /// whether the next try should go to another worker
        avoid_worker: bool,
    },
    /// Record the failure as the candidate's result.
    Record,
}

/// The decision on a try that failed with `code`, given the tries before it. An
/// error that says it is not retryable (e.g. a request above a worker's limit) is
/// recorded whatever its code.
pub fn decide(
    code: ErrorCode,
    retryable: bool,
    before: &Tries,
    policy: &RetryPolicy,
    jitter: f64,
) -> Decision {
    let retry = |avoid_worker: bool, counts_as_delivery: bool| Decision::Retry {
        delay: policy.backoff(before.retries() + 1, jitter),
        counts_as_delivery,
        avoid_worker,
    };
    let retry = |avoid_worker: bool, counts_as_delivery: bool| match retryable {
        true => retry(avoid_worker, counts_as_delivery),
        false => Decision::Record,
    };
    match code {
        ErrorCode::InvalidParam | ErrorCode::NotFound | ErrorCode::Conflict
            if before.adjustments < policy.max_adjustments =>
        {
            Decision::Adjust
        }
        ErrorCode::Timeout if before.timeouts < policy.max_timeouts => retry(false, true),
        ErrorCode::ServiceUnavailable if before.unavailable < policy.max_unavailable => {
            retry(true, true)
        }
        ErrorCode::ResourceExhausted if before.exhausted < policy.max_exhausted => {
            retry(false, false)
        }
        ErrorCode::InternalError if before.internal < policy.max_internal => retry(false, true),
        _ => Decision::Record,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy::new(Duration::from_millis(200), Duration::from_millis(10_000))
    }

    /// Feeds `code` until the policy stops retrying; returns the decisions.
    fn until_recorded(code: ErrorCode) -> Vec<Decision> {
        let policy = policy();
        let mut tries = Tries::default();
        let mut decisions = Vec::new();
        loop {
            let decision = decide(code, true, &tries, &policy, 0.5);
            decisions.push(decision);
            if decision == Decision::Record || decisions.len() > 100 {
                return decisions;
            }
            tries.count(code);
        }
    }

    fn retries(decisions: &[Decision]) -> usize {
        decisions
            .iter()
            .filter(|decision| matches!(decision, Decision::Retry { .. }))
            .count()
    }

    #[test]
    fn each_code_gets_the_briefs_number_of_retries() {
        assert_eq!(retries(&until_recorded(ErrorCode::Timeout)), 2);
        assert_eq!(retries(&until_recorded(ErrorCode::ServiceUnavailable)), 3);
        assert_eq!(retries(&until_recorded(ErrorCode::InternalError)), 1);
        assert_eq!(retries(&until_recorded(ErrorCode::ResourceExhausted)), 50);
        for code in [
            ErrorCode::DrcViolation,
            ErrorCode::Cancelled,
            ErrorCode::Unspecified,
        ] {
            assert_eq!(until_recorded(code), vec![Decision::Record], "{code:?}");
        }
    }

    #[test]
    fn parameter_errors_are_adjusted_three_times_then_recorded() {
        for code in [
            ErrorCode::InvalidParam,
            ErrorCode::NotFound,
            ErrorCode::Conflict,
        ] {
            let decisions = until_recorded(code);
            assert_eq!(decisions.len(), 4, "{code:?}: {decisions:?}");
            assert!(
                decisions[..3]
                    .iter()
                    .all(|decision| *decision == Decision::Adjust)
            );
        }
    }

    #[test]
    fn unavailable_avoids_the_worker_and_capacity_refusals_are_not_deliveries() {
        let policy = policy();
        let none = Tries::default();
        let Decision::Retry {
            avoid_worker,
            counts_as_delivery,
            ..
        } = decide(ErrorCode::ServiceUnavailable, true, &none, &policy, 0.0)
        else {
            panic!("retried")
        };
        assert!(avoid_worker && counts_as_delivery);
        let Decision::Retry {
            avoid_worker,
            counts_as_delivery,
            ..
        } = decide(ErrorCode::ResourceExhausted, true, &none, &policy, 0.0)
        else {
            panic!("retried")
        };
        assert!(!avoid_worker && !counts_as_delivery);
    }

    #[test]
    fn backoff_doubles_is_capped_and_jittered_between_half_and_all() {
        let policy = policy();
        assert_eq!(policy.backoff(1, 1.0), Duration::from_millis(400));
        assert_eq!(policy.backoff(2, 1.0), Duration::from_millis(800));
        assert_eq!(policy.backoff(1, 0.0), Duration::from_millis(200));
        assert_eq!(
            policy.backoff(30, 1.0),
            Duration::from_millis(10_000),
            "capped"
        );
        let mut tries = Tries::default();
        tries.count(ErrorCode::Timeout);
        tries.count(ErrorCode::InvalidParam);
        assert_eq!(tries.retries(), 1, "an adjustment is not a retry");
        let Decision::Retry { delay, .. } = decide(ErrorCode::Timeout, true, &tries, &policy, 1.0)
        else {
            panic!("second timeout is retried")
        };
        assert_eq!(
            delay,
            Duration::from_millis(800),
            "the second retry waits base · 2²"
        );
    }

    #[test]
    fn an_error_that_says_it_is_not_retryable_is_recorded() {
        let policy = policy();
        let none = Tries::default();
        assert_eq!(
            decide(ErrorCode::ResourceExhausted, false, &none, &policy, 0.0),
            Decision::Record,
            "a plan above the worker's limit never fits"
        );
        assert_eq!(
            decide(ErrorCode::InvalidParam, false, &none, &policy, 0.0),
            Decision::Adjust
        );
    }
}
