//! Admission to a worker's slots with a waiting room (prefetch): a call takes a
//! free slot at once; when every slot is busy it may wait — up to `prefetch`
//! calls, first come first served — and takes the next slot that frees, the
//! moment it frees (no round trip to the coordinator between two candidates).
//! Beyond slots + prefetch a call is refused. The free slots and the waiting
//! calls are under one lock, so a slot given back while a call sits down is
//! never missed.
//!
//! Generic over what a slot is (`T`): the real pool hands out slot indexes, the
//! simulated worker unit tokens.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

/// What admission gave a call.
pub enum Admission<T> {
    /// a free slot, now
    Now(T),
    /// a place in the waiting room: await [`Waiting::slot`]
    Wait(Waiting<T>),
    /// every slot busy and every waiting place taken
    Full,
    /// the waiting room is closed (the worker drains) and no slot is free
    Closed,
}

struct Waiter<T> {
    candidate_id: String,
    hand_over: oneshot::Sender<T>,
}

struct Rooms<T> {
    free: Vec<T>,
    waiting: VecDeque<Waiter<T>>,
    prefetch: usize,
    closed: bool,
    /// the most calls ever admitted at once (running + waiting)
    most_admitted: usize,
    admitted: usize,
}

impl<T> Rooms<T> {
    /// Forgets the waiters that left (cancelled, or their caller hung up).
    fn forget_departed(&mut self) {
        self.waiting.retain(|waiter| !waiter.hand_over.is_closed());
    }
}

/// The free slots and the waiting room of one worker.
pub struct Admissions<T> {
    rooms: Mutex<Rooms<T>>,
}

impl<T> Admissions<T> {
    /// `free` slots, all free, and a waiting room of `prefetch` places.
    pub fn new(free: Vec<T>, prefetch: usize) -> Arc<Admissions<T>> {
        Arc::new(Admissions {
            rooms: Mutex::new(Rooms {
                free,
                waiting: VecDeque::new(),
                prefetch,
                closed: false,
                most_admitted: 0,
                admitted: 0,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Rooms<T>> {
        self.rooms.lock().expect("admissions lock")
    }

    /// A free slot (the last given back first), else a waiting place, else a refusal.
    pub fn admit(self: &Arc<Self>, candidate_id: &str) -> Admission<T> {
        let mut rooms = self.lock();
        if let Some(slot) = rooms.free.pop() {
            rooms.admitted += 1;
            rooms.most_admitted = rooms
                .most_admitted
                .max(rooms.admitted + rooms.waiting.len());
            return Admission::Now(slot);
        }
        if rooms.closed {
            return Admission::Closed;
        }
        rooms.forget_departed();
        if rooms.waiting.len() >= rooms.prefetch {
            return Admission::Full;
        }
        let (hand_over, handed) = oneshot::channel();
        rooms.waiting.push_back(Waiter {
            candidate_id: candidate_id.to_string(),
            hand_over,
        });
        rooms.most_admitted = rooms
            .most_admitted
            .max(rooms.admitted + rooms.waiting.len());
        Admission::Wait(Waiting {
            admissions: self.clone(),
            handed: Some(handed),
        })
    }

    /// A free slot, or `None` — never a waiting place (for the worker's own use of its slots).
    pub fn take_free(&self) -> Option<T> {
        let mut rooms = self.lock();
        let slot = rooms.free.pop()?;
        rooms.admitted += 1;
        Some(slot)
    }

    /// Gives a slot back: to the first call still waiting, else to the free slots.
    pub fn give_back(&self, mut slot: T) {
        let mut rooms = self.lock();
        rooms.admitted = rooms.admitted.saturating_sub(1);
        while let Some(waiter) = rooms.waiting.pop_front() {
            match waiter.hand_over.send(slot) {
                Ok(()) => {
                    rooms.admitted += 1;
                    tracing::debug!(candidate_id = %waiter.candidate_id, "a waiting call takes the freed slot");
                    return;
                }
                // that caller left: the next one
                Err(back) => slot = back,
            }
        }
        rooms.free.push(slot);
    }

    /// Closes the waiting room: every waiting call is answered "not started"
    /// (its [`Waiting::slot`] gives `None`), and no call waits from now on.
    pub fn close_waiting_room(&self) -> usize {
        let mut rooms = self.lock();
        rooms.closed = true;
        let sent_away = rooms.waiting.len();
        rooms.waiting.clear();
        sent_away
    }

    pub fn free_count(&self) -> usize {
        self.lock().free.len()
    }

    /// Calls waiting for a slot now.
    pub fn waiting_count(&self) -> usize {
        let mut rooms = self.lock();
        rooms.forget_departed();
        rooms.waiting.len()
    }

    /// The candidates waiting for a slot, in their order.
    pub fn waiting_candidates(&self) -> Vec<String> {
        let mut rooms = self.lock();
        rooms.forget_departed();
        rooms
            .waiting
            .iter()
            .map(|waiter| waiter.candidate_id.clone())
            .collect()
    }

    pub fn prefetch(&self) -> usize {
        self.lock().prefetch
    }

    /// The most calls this worker held at once, running and waiting.
    pub fn most_admitted(&self) -> usize {
        self.lock().most_admitted
    }
}

/// A call's place in the waiting room. Dropped before its slot came (cancelled,
/// the caller hung up), it leaves; a slot handed over in that instant is given
/// back, never lost.
pub struct Waiting<T> {
    admissions: Arc<Admissions<T>>,
    handed: Option<oneshot::Receiver<T>>,
}

impl<T> Waiting<T> {
    /// The slot, once one frees for this call; `None` when the waiting room closed first.
    pub async fn slot(mut self) -> Option<T> {
        let handed = self.handed.as_mut().expect("awaited once");
        let slot = handed.await.ok();
        self.handed = None;
        slot
    }
}

impl<T> Drop for Waiting<T> {
    fn drop(&mut self) {
        if let Some(mut handed) = self.handed.take() {
            handed.close();
            if let Ok(slot) = handed.try_recv() {
                self.admissions.give_back(slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(admission: Admission<u32>) -> Waiting<u32> {
        match admission {
            Admission::Wait(waiting) => waiting,
            _ => panic!("expected a waiting place"),
        }
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_first_waiting_call_then_beyond_prefetch_is_full() {
        let admissions = Admissions::new(vec![7u32], 2);
        let Admission::Now(slot) = admissions.admit("a") else {
            panic!("a free slot")
        };
        let first = waiting(admissions.admit("b"));
        let second = waiting(admissions.admit("c"));
        assert!(matches!(admissions.admit("d"), Admission::Full));
        assert_eq!(admissions.waiting_candidates(), ["b", "c"]);
        admissions.give_back(slot);
        assert_eq!(first.slot().await, Some(7));
        assert_eq!(admissions.waiting_count(), 1);
        assert_eq!(admissions.most_admitted(), 3);
        drop(second);
        assert_eq!(admissions.waiting_count(), 0);
    }

    #[tokio::test]
    async fn a_call_that_left_the_waiting_room_is_passed_over_and_its_slot_kept() {
        let admissions = Admissions::new(vec![1u32], 2);
        let Admission::Now(slot) = admissions.admit("a") else {
            panic!("a free slot")
        };
        let left = waiting(admissions.admit("b"));
        drop(left);
        admissions.give_back(slot);
        assert_eq!(admissions.free_count(), 1, "the slot is free again");
    }

    #[tokio::test]
    async fn closing_the_waiting_room_answers_the_waiting_calls_not_started() {
        let admissions = Admissions::new(vec![1u32], 1);
        let Admission::Now(slot) = admissions.admit("a") else {
            panic!("a free slot")
        };
        let place = waiting(admissions.admit("b"));
        assert_eq!(admissions.close_waiting_room(), 1);
        assert_eq!(place.slot().await, None);
        assert!(matches!(admissions.admit("c"), Admission::Closed));
        admissions.give_back(slot);
        assert_eq!(admissions.free_count(), 1);
    }
}
