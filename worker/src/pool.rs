//! N slots, each with at most one KLayout process and at most one candidate.
//! Admission ([`crate::waiting_room`]): a free slot, else one of `prefetch`
//! places in the waiting room (the next slot to free is the first waiting
//! call's), else a refusal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::skill_process::{SkillProcess, SkillServerCommand};
use crate::waiting_room::{Admission, Admissions, Waiting};

/// What Health reports about one slot.
#[derive(Debug, Clone, Default)]
pub struct SlotStatus {
    pub pid: u32,
    pub busy: bool,
    pub candidate_id: String,
    pub calls_forwarded: u64,
    pub processes_started: u64,
}

impl SlotStatus {
    /// processes started beyond the first
    pub fn restarts(&self) -> u64 {
        self.processes_started.saturating_sub(1)
    }
}

struct Slot {
    idle_process: Mutex<Option<SkillProcess>>,
    status: Mutex<SlotStatus>,
}

/// The slots of this worker.
pub struct Pool {
    slots: Vec<Slot>,
    /// the free slots' indexes and the calls waiting for one
    admissions: Arc<Admissions<usize>>,
    command: SkillServerCommand,
    startup_timeout: Duration,
    rejected_busy: AtomicU64,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("slots", &self.slots.len())
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// An empty pool of `slot_count` slots and `prefetch` waiting places; the
    /// supervisor starts the processes.
    pub fn new(
        command: SkillServerCommand,
        slot_count: usize,
        prefetch: usize,
        startup_timeout: Duration,
    ) -> Arc<Pool> {
        let slots = (0..slot_count)
            .map(|_| Slot {
                idle_process: Mutex::new(None),
                status: Mutex::new(SlotStatus::default()),
            })
            .collect();
        Arc::new(Pool {
            slots,
            // pop() hands out the lowest index first
            admissions: Admissions::new((0..slot_count).rev().collect(), prefetch),
            command,
            startup_timeout,
            rejected_busy: AtomicU64::new(0),
        })
    }

    pub fn command(&self) -> &SkillServerCommand {
        &self.command
    }

    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout
    }

    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub fn free_slot_count(&self) -> usize {
        self.admissions.free_count()
    }

    /// Places in the waiting room.
    pub fn prefetch(&self) -> usize {
        self.admissions.prefetch()
    }

    /// Calls waiting for a slot now.
    pub fn waiting_count(&self) -> usize {
        self.admissions.waiting_count()
    }

    /// The most calls held at once, running and waiting.
    pub fn most_admitted(&self) -> usize {
        self.admissions.most_admitted()
    }

    pub fn rejected_busy_count(&self) -> u64 {
        self.rejected_busy.load(Ordering::Relaxed)
    }

    /// A free slot for `candidate_id`, or `None` at once when all are busy (never waits).
    pub fn try_acquire(self: &Arc<Self>, candidate_id: &str) -> Option<SlotLease> {
        let index = self.admissions.take_free()?;
        Some(self.lease(index, candidate_id))
    }

    /// A free slot for `candidate_id`, else a place in the waiting room, else a
    /// refusal (counted as busy) — or, once the waiting room is closed, `Closed`.
    pub fn admit(self: &Arc<Self>, candidate_id: &str) -> Admitted {
        match self.admissions.admit(candidate_id) {
            Admission::Now(index) => Admitted::Now(Box::new(self.lease(index, candidate_id))),
            Admission::Wait(place) => Admitted::Wait(WaitingForSlot {
                pool: self.clone(),
                candidate_id: candidate_id.to_string(),
                place,
            }),
            Admission::Full => {
                self.rejected_busy.fetch_add(1, Ordering::Relaxed);
                Admitted::Full
            }
            Admission::Closed => Admitted::Closed,
        }
    }

    /// Closes the waiting room (drain): the waiting calls are told they will not
    /// start. Returns how many were waiting.
    pub fn close_waiting_room(&self) -> usize {
        self.admissions.close_waiting_room()
    }

    fn lease(self: &Arc<Self>, index: usize, candidate_id: &str) -> SlotLease {
        let slot = &self.slots[index];
        let process = slot.idle_process.lock().expect("slot process lock").take();
        {
            let mut status = slot.status.lock().expect("slot status lock");
            status.busy = true;
            status.candidate_id = candidate_id.to_string();
        }
        SlotLease {
            pool: self.clone(),
            index,
            process,
        }
    }

    /// A snapshot of every slot's status, by index.
    pub fn statuses(&self) -> Vec<SlotStatus> {
        self.slots
            .iter()
            .map(|slot| slot.status.lock().expect("slot status lock").clone())
            .collect()
    }

    /// Candidates running right now.
    pub fn running_candidates(&self) -> Vec<String> {
        self.statuses()
            .into_iter()
            .filter(|status| status.busy && !status.candidate_id.is_empty())
            .map(|status| status.candidate_id)
            .collect()
    }

    fn update_status(&self, index: usize, update: impl FnOnce(&mut SlotStatus)) {
        update(&mut self.slots[index].status.lock().expect("slot status lock"));
    }

    /// Takes every idle process out of the pool (for shutdown).
    pub fn take_idle_processes(&self) -> Vec<SkillProcess> {
        self.slots
            .iter()
            .filter_map(|slot| slot.idle_process.lock().expect("slot process lock").take())
            .collect()
    }
}

/// Exclusive use of one slot. Dropping it puts the process back and frees the slot.
pub struct SlotLease {
    pool: Arc<Pool>,
    index: usize,
    /// the slot's process while leased; `None` when it has none (the supervisor starts one)
    pub process: Option<SkillProcess>,
}

impl std::fmt::Debug for SlotLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlotLease")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl SlotLease {
    pub fn index(&self) -> usize {
        self.index
    }

    pub fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }

    /// Records a tools/call sent to this slot's process.
    pub fn count_forwarded_call(&self) {
        self.pool
            .update_status(self.index, |status| status.calls_forwarded += 1);
    }

    /// Records that a new process runs on this slot.
    pub fn record_process_started(&self, pid: u32) {
        self.pool.update_status(self.index, |status| {
            status.pid = pid;
            status.processes_started += 1;
        });
    }

    /// Records that the slot has no process any more.
    pub fn record_process_gone(&self) {
        self.pool.update_status(self.index, |status| status.pid = 0);
    }

    /// Marks the slot as restarting (busy, no candidate) while a restart task holds it.
    pub fn mark_restarting(&self) {
        self.pool
            .update_status(self.index, |status| status.candidate_id.clear());
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        let slot = &self.pool.slots[self.index];
        let process = self.process.take();
        let pid = process.as_ref().map(SkillProcess::pid).unwrap_or_default();
        *slot.idle_process.lock().expect("slot process lock") = process;
        {
            let mut status = slot.status.lock().expect("slot status lock");
            status.pid = pid;
            status.busy = false;
            status.candidate_id.clear();
        }
        self.pool.admissions.give_back(self.index);
    }
}

/// What admission gave a call.
pub enum Admitted {
    /// a free slot, now (boxed: a lease is much larger than the other answers)
    Now(Box<SlotLease>),
    Wait(WaitingForSlot),
    /// every slot busy and every waiting place taken
    Full,
    /// draining: the waiting room is closed
    Closed,
}

/// A call in the waiting room.
pub struct WaitingForSlot {
    pool: Arc<Pool>,
    candidate_id: String,
    place: Waiting<usize>,
}

impl WaitingForSlot {
    /// The slot once one frees for this call; `None` when the waiting room closed first.
    pub async fn lease(self) -> Option<SlotLease> {
        let index = self.place.slot().await?;
        Some(self.pool.lease(index, &self.candidate_id))
    }
}
