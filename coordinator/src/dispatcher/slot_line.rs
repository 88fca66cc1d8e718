//! The line of queue entries waiting for a worker slot, served in the order the
//! dispatcher read them.
//!
//! The dispatcher reads a window of entries ahead (a few per slot) and runs each in
//! its own task. When a slot frees, every waiting task wakes; without a line the
//! task that happened to run first took the slot, and the queue's order — an older
//! job before a newer one, an iteration's longest-looking candidates first — was
//! lost. Each entry takes a ticket and stands in the line when it is read; a slot
//! goes to the earliest waiting entry that can use it: a later entry passes a
//! worker by while an earlier one could run there (the worker has its skills — an
//! entry whose candidate is still being read could run anywhere). An entry leaves
//! the line with its slot, and stands in it again with its ticket when it waits for
//! a slot after a failed try (not while it backs off). A worker the earlier entry
//! only avoids (it failed there) still counts as one it could use — avoiding is a
//! preference, and it takes that worker when nothing else qualifies.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

#[derive(Default)]
pub struct SlotLine {
    /// waiting tickets and the skills each one's candidate needs (`None`: not read
    /// yet, it could run anywhere)
    waiting: Mutex<BTreeMap<u64, Option<Vec<String>>>>,
    next_ticket: AtomicU64,
    /// notified when an entry leaves the line: a later one may be next
    pub turn_changed: Notify,
}

/// An entry's place in the line; leaving it (drop) lets the next ones in.
pub struct Place {
    line: Arc<SlotLine>,
    ticket: u64,
}

impl SlotLine {
    /// The next ticket, in the order entries are read from the queue.
    pub fn ticket(&self) -> u64 {
        self.next_ticket.fetch_add(1, Ordering::Relaxed)
    }

    /// Stands `ticket` in the line until the place is dropped; what its candidate
    /// needs is told later ([`Place::needs`]).
    pub fn stand(self: &Arc<Self>, ticket: u64) -> Place {
        self.lock().insert(ticket, None);
        Place {
            line: self.clone(),
            ticket,
        }
    }

    /// Whether a slot on a worker offering `worker_skills` is `ticket`'s to take: no
    /// earlier entry in the line could run there.
    pub fn is_turn_of(&self, ticket: u64, worker_skills: &[String]) -> bool {
        self.lock()
            .range(..ticket)
            .all(|(_, required)| match required {
                None => false,
                Some(required) => !required
                    .iter()
                    .all(|skill| worker_skills.iter().any(|offered| offered == skill)),
            })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Option<Vec<String>>>> {
        self.waiting.lock().expect("slot line lock")
    }
}

impl Place {
    pub fn ticket(&self) -> u64 {
        self.ticket
    }

    pub fn line(&self) -> &Arc<SlotLine> {
        &self.line
    }

    /// The skills the entry's candidate needs, once read.
    pub fn needs(&self, required_skills: &[String]) {
        self.line
            .lock()
            .insert(self.ticket, Some(required_skills.to_vec()));
        self.line.turn_changed.notify_waiters();
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.line.lock().remove(&self.ticket);
        self.line.turn_changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skills(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn a_slot_is_the_earliest_waiting_entry_s_that_can_use_it() {
        let line = Arc::new(SlotLine::default());
        let (first, second, third) = (line.ticket(), line.ticket(), line.ticket());
        assert!(
            first < second && second < third,
            "tickets follow the read order"
        );
        let drc = skills(&["tech.load", "drc.run"]);
        let full = skills(&["tech.load", "drc.run", "signoff.run"]);
        let first_place = line.stand(first);
        let second_place = line.stand(second);
        let third_place = line.stand(third);
        second_place.needs(&skills(&["drc.run"]));
        third_place.needs(&skills(&["drc.run"]));
        assert!(
            !line.is_turn_of(second, &drc),
            "the first entry's candidate is not read yet: it could run there"
        );
        // an entry needing a skill the worker lacks does not hold the others up
        first_place.needs(&skills(&["signoff.run"]));
        assert!(line.is_turn_of(second, &drc), "the first cannot run on it");
        assert!(
            !line.is_turn_of(second, &full),
            "the first can run on this one"
        );
        assert!(
            !line.is_turn_of(third, &drc),
            "the second entry could use it"
        );
        drop(first_place);
        drop(second_place);
        assert!(
            line.is_turn_of(third, &drc),
            "the earlier ones left the line"
        );
        drop(third_place);
        assert!(line.lock().is_empty());
        // a later wait (after a failed try) stands with the same ticket again
        let again = line.stand(first);
        assert_eq!(again.ticket(), first);
        assert!(!line.is_turn_of(third, &drc));
    }
}
