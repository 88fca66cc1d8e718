//! Cancelling `tools/call` requests: a flag shared by the stdio loop (which sets
//! it on `notifications/cancelled`) and the call that watches it, and the table of
//! requests that may still be cancelled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// Set once, seen by every clone; [`Cancellation::cancelled`] resolves when set.
#[derive(Debug, Clone)]
pub struct Cancellation(Arc<watch::Sender<bool>>);

impl Default for Cancellation {
    fn default() -> Cancellation {
        Cancellation::new()
    }
}

impl Cancellation {
    /// A flag not set yet.
    pub fn new() -> Cancellation {
        Cancellation(Arc::new(watch::channel(false).0))
    }

    /// Sets the flag (again: no effect).
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the flag is set.
    pub async fn cancelled(&self) {
        let mut seen = self.0.subscribe();
        // the sender lives in `self`, so the wait ends only by the flag being set
        if seen.wait_for(|set| *set).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The `tools/call` requests queued or running, by request id (its JSON text).
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<Mutex<HashMap<String, Cancellation>>>);

impl InFlight {
    /// Registers request `key`; false when a request with that id is still in flight.
    pub fn insert(&self, key: &str, cancellation: Cancellation) -> bool {
        let mut table = self.0.lock().expect("in-flight table lock");
        if table.contains_key(key) {
            return false;
        }
        table.insert(key.to_owned(), cancellation);
        true
    }

    /// Cancels request `key`; false when it is not in flight (done, or never seen).
    pub fn cancel(&self, key: &str) -> bool {
        let table = self.0.lock().expect("in-flight table lock");
        match table.get(key) {
            Some(cancellation) => {
                cancellation.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every request in flight (end of the session by a signal).
    pub fn cancel_all(&self) {
        let table = self.0.lock().expect("in-flight table lock");
        for cancellation in table.values() {
            cancellation.cancel();
        }
    }

    /// Forgets request `key` (it ended).
    pub fn remove(&self, key: &str) {
        self.0.lock().expect("in-flight table lock").remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_clone_sees_the_flag_and_a_waiter_wakes() {
        let flag = Cancellation::new();
        let seen = flag.clone();
        assert!(!seen.is_cancelled());
        let waiter = tokio::spawn(async move { seen.cancelled().await });
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        flag.cancel();
        tokio::time::timeout(std::time::Duration::from_secs(2), waiter)
            .await
            .expect("the waiter wakes")
            .expect("the waiter ends");
        assert!(flag.is_cancelled());
    }

    #[test]
    fn requests_in_flight_are_cancelled_by_id_once_registered() {
        let in_flight = InFlight::default();
        let first = Cancellation::new();
        assert!(in_flight.insert("1", first.clone()));
        assert!(!in_flight.insert("1", Cancellation::new()), "an id in use");
        assert!(!in_flight.cancel("\"1\""));
        assert!(in_flight.cancel("1"));
        assert!(first.is_cancelled());
        in_flight.remove("1");
        assert!(!in_flight.cancel("1"));
        let second = Cancellation::new();
        assert!(in_flight.insert("2", second.clone()));
        in_flight.cancel_all();
        assert!(second.is_cancelled());
    }
}
