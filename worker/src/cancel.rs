//! Per-candidate cancellation: every admitted candidate registers here for as
//! long as it runs; `CancelCandidate` looks it up by id and signals it. The
//! candidate then stops its current call into KLayout, whose process group is
//! killed and replaced (see [`crate::candidate`] and [`crate::supervisor`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// The reason a candidate was cancelled, `None` while it may run on.
pub type CancelSignal = watch::Receiver<Option<String>>;

struct Registration {
    sender: watch::Sender<Option<String>>,
    /// admitted runs with this id (a duplicate delivery may run the same id twice)
    runs: usize,
}

/// The candidates running on this worker, by id.
#[derive(Default)]
pub struct CancelRegistry {
    running: Mutex<HashMap<String, Registration>>,
}

impl std::fmt::Debug for CancelRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelRegistry").finish_non_exhaustive()
    }
}

impl CancelRegistry {
    pub fn new() -> Arc<CancelRegistry> {
        Arc::new(CancelRegistry::default())
    }

    /// Registers a run of `candidate_id`; it stays cancellable until the guard drops.
    pub fn register(self: &Arc<Self>, candidate_id: &str) -> (CancelGuard, CancelSignal) {
        let mut running = self.running.lock().expect("cancel registry lock");
        let registration =
            running
                .entry(candidate_id.to_string())
                .or_insert_with(|| Registration {
                    sender: watch::Sender::new(None),
                    runs: 0,
                });
        registration.runs += 1;
        let signal = registration.sender.subscribe();
        let guard = CancelGuard {
            registry: self.clone(),
            candidate_id: candidate_id.to_string(),
        };
        (guard, signal)
    }

    /// Signals every run of `candidate_id`. `false` when none runs, or when it
    /// was cancelled already (so a repeated request is a no-op).
    pub fn cancel(&self, candidate_id: &str, reason: &str) -> bool {
        let running = self.running.lock().expect("cancel registry lock");
        let Some(registration) = running.get(candidate_id) else {
            return false;
        };
        if registration.sender.borrow().is_some() {
            return false;
        }
        registration.sender.send_replace(Some(reason.to_string()));
        true
    }

    fn unregister(&self, candidate_id: &str) {
        let mut running = self.running.lock().expect("cancel registry lock");
        if let Some(registration) = running.get_mut(candidate_id) {
            registration.runs -= 1;
            if registration.runs == 0 {
                running.remove(candidate_id);
            }
        }
    }
}

/// Keeps a run registered; dropping it (the run answered) unregisters it.
pub struct CancelGuard {
    registry: Arc<CancelRegistry>,
    candidate_id: String,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        self.registry.unregister(&self.candidate_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_candidate_is_not_found() {
        let registry = CancelRegistry::new();
        assert!(!registry.cancel("nobody", "test"));
    }

    #[test]
    fn a_running_candidate_is_signalled_once_and_forgotten_when_done() {
        let registry = CancelRegistry::new();
        let (guard, signal) = registry.register("c1");
        assert!(signal.borrow().is_none());
        assert!(registry.cancel("c1", "stop"));
        assert_eq!(signal.borrow().as_deref(), Some("stop"));
        assert!(
            !registry.cancel("c1", "again"),
            "a repeated cancel is a no-op"
        );
        drop(guard);
        assert!(
            !registry.cancel("c1", "after"),
            "a finished candidate is unknown"
        );
    }

    #[test]
    fn two_runs_of_one_id_share_the_signal_until_both_end() {
        let registry = CancelRegistry::new();
        let (first, first_signal) = registry.register("c1");
        let (second, second_signal) = registry.register("c1");
        drop(first);
        assert!(registry.cancel("c1", "stop"));
        assert!(first_signal.borrow().is_some() && second_signal.borrow().is_some());
        drop(second);
        assert!(!registry.cancel("c1", "stop"));
    }
}
