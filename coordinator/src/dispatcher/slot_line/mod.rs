//! The line of queue entries waiting for a worker slot: shared between the jobs
//! candidate by candidate, in proportion to their weights, and within a job in the
//! order the dispatcher read its entries.
//!
//! The dispatcher reads a window of entries ahead (a few per slot) and runs each in
//! its own task. When a slot frees, every waiting task wakes; without a line the
//! task that happened to run first took the slot, and the queue's order was lost.
//! Each entry takes a ticket when it is read and stands in the line with its job
//! and the job's weight. A slot goes to the first waiting entry that can use it,
//! "first" by start-time fair queueing: the entry whose job has had the fewest
//! slots per unit of weight (its virtual time; a job standing in the line with
//! nothing waiting is lifted to the line's virtual time, so it cannot bank slots
//! while it has nothing to run), and among equals the earliest ticket — so within one job the
//! queue's order (an iteration's longest-looking candidates first) is the order
//! its candidates start in, and a job submitted behind a long iteration gets the
//! next free slot. A later entry passes a worker by while an earlier one could run
//! there (the worker has its skills — an entry whose candidate is still being read
//! could run anywhere). An entry leaves the line with its slot ([`Place::took_slot`]
//! counts it for its job), and stands in it again with its ticket when it waits for
//! a slot after a failed try (not while it backs off). A worker the earlier entry
//! only avoids (it failed there) still counts as one it could use — avoiding is a
//! preference, and it takes that worker when nothing else qualifies.

use std::cmp::Reverse;
use std::collections::btree_set;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// Jobs whose virtual times are kept once no entry of theirs waits, before the
/// line forgets them (a job standing again is lifted to the line's anyway).
const REMEMBERED_JOBS: usize = 1024;

#[derive(Default)]
pub struct SlotLine {
    state: Mutex<LineState>,
    next_ticket: AtomicU64,
}

/// The waiting entries, kept so that the line's order is walked from its front
/// without looking at the rest: each job's tickets in order, merged by the jobs'
/// virtual times ([`LineState::in_order`]) — a turn check or a wake-up costs
/// O(jobs · log jobs) plus the entries it walks past, not O(entries waiting).
#[derive(Default)]
struct LineState {
    waiting: HashMap<u64, Waiting>,
    /// the tickets waiting, job by job (a job without waiting entries is absent)
    jobs: HashMap<String, BTreeSet<u64>>,
    /// each job's virtual time: the slots it took, each counting 1 / its weight
    tags: HashMap<String, f64>,
    /// the virtual time of the line: the tag of the job that took the last slot
    /// when it took it (start-time fair queueing)
    virtual_time: f64,
    /// the usher's passes so far ([`SlotLine::grant_front`]); grants are of the last
    pass: u64,
}

/// An entry standing in the line.
struct Waiting {
    job_id: String,
    weight: u64,
    /// the skills its candidate needs (`None`: not read yet, it could run anywhere)
    required: Option<Vec<String>>,
    /// woken when a slot may be this entry's ([`SlotLine::wake_front`])
    wake: Arc<Notify>,
    /// the usher's pass ([`SlotLine::grant_front`]) that woke it among the first
    /// `count` of the line for `count` free slots (0: none): until the next pass, its
    /// next look may take a free slot without the entries before it having taken
    /// theirs, instead of after them one by one
    granted_in: u64,
}

impl Waiting {
    /// Whether the usher's pass `pass` (the last) granted it a look.
    fn holds_grant_of(&self, pass: u64) -> bool {
        self.granted_in != 0 && self.granted_in == pass
    }

    /// Whether this entry could run on a worker offering `worker_skills`.
    fn could_use(&self, worker_skills: &[String]) -> bool {
        match &self.required {
            None => true,
            Some(required) => required
                .iter()
                .all(|skill| worker_skills.iter().any(|offered| offered == skill)),
        }
    }
}

/// An entry's place in the line; leaving it (drop) lets the next ones in.
pub struct Place {
    line: Arc<SlotLine>,
    ticket: u64,
    wake: Arc<Notify>,
}

impl SlotLine {
    /// The next ticket, in the order entries are read from the queue.
    pub fn ticket(&self) -> u64 {
        self.next_ticket.fetch_add(1, Ordering::Relaxed)
    }

    /// Stands `ticket` of job `job_id` (of `weight`) in the line until the place
    /// is dropped; what its candidate needs is told later ([`Place::needs`]).
    pub fn stand(self: &Arc<Self>, ticket: u64, job_id: &str, weight: u32) -> Place {
        let mut state = self.lock();
        let weight = u64::from(weight.max(1));
        state.lift(job_id);
        let wake = Arc::new(Notify::new());
        state.waiting.insert(
            ticket,
            Waiting {
                job_id: job_id.to_string(),
                weight,
                required: None,
                wake: wake.clone(),
                granted_in: 0,
            },
        );
        state
            .jobs
            .entry(job_id.to_string())
            .or_default()
            .insert(ticket);
        Place {
            line: self.clone(),
            ticket,
            wake,
        }
    }

    /// Whether a slot on a worker offering `worker_skills` is `ticket`'s to take: no
    /// entry before it in the line could run there.
    pub fn is_turn_of(&self, ticket: u64, worker_skills: &[String]) -> bool {
        let state = self.lock();
        let Some(standing) = state.waiting.get(&ticket) else {
            // not standing (yet): the entries read before it come first
            return state
                .waiting
                .iter()
                .all(|(other, waiting)| *other >= ticket || !waiting.could_use(worker_skills));
        };
        if standing.holds_grant_of(state.pass) && standing.could_use(worker_skills) {
            return true;
        }
        for (other, waiting) in state.in_order() {
            if other == ticket {
                return true;
            }
            if waiting.could_use(worker_skills) {
                return false;
            }
        }
        unreachable!("a standing ticket is in the line's order")
    }

    /// The job of the entry at the front of the line.
    pub fn front_job(&self) -> Option<String> {
        self.lock()
            .in_order()
            .next()
            .map(|(_, waiting)| waiting.job_id.clone())
    }

    /// Wakes the first `count` entries of the line (a slot may be theirs now).
    pub fn wake_front(&self, count: usize) {
        let state = self.lock();
        for (_, waiting) in state.in_order().take(count) {
            waiting.wake.notify_one();
        }
    }

    /// The usher's wake-up for `count` free slots: wakes the first `count` entries
    /// of the line, each with a grant for its next look until the next pass — they
    /// may take the free slots together, none waiting for those before it to have
    /// taken theirs (which made the slots go out one wake-up after another). A
    /// grant of an earlier pass is void (an entry that stood ahead since then
    /// comes first).
    pub fn grant_front(&self, count: usize) {
        let mut state = self.lock();
        state.pass += 1;
        let woken: Vec<u64> = state
            .in_order()
            .take(count)
            .map(|(ticket, waiting)| {
                waiting.wake.notify_one();
                ticket
            })
            .collect();
        let pass = state.pass;
        for ticket in woken {
            if let Some(waiting) = state.waiting.get_mut(&ticket) {
                waiting.granted_in = pass;
            }
        }
    }

    /// Wakes the entry right behind `ticket` in the line: `ticket` could not use
    /// a free slot that was its to take, so the next one may.
    pub fn wake_behind(&self, ticket: u64) {
        let state = self.lock();
        let mut order = state.in_order().skip_while(|(other, _)| *other != ticket);
        if let Some((_, behind)) = order.nth(1) {
            behind.wake.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LineState> {
        self.state.lock().expect("slot line lock")
    }
}

/// A job's position in the merge: its tag (as ordered bits: tags are finite and
/// never negative) and its next ticket.
type Head = Reverse<(u64, u64, usize)>;

/// The waiting entries in the line's order: by their job's virtual time, then by
/// ticket — the jobs' ticket lists merged with a heap.
struct InOrder<'a> {
    state: &'a LineState,
    tickets: Vec<(u64, btree_set::Iter<'a, u64>)>,
    heads: BinaryHeap<Head>,
}

impl<'a> Iterator for InOrder<'a> {
    type Item = (u64, &'a Waiting);

    fn next(&mut self) -> Option<Self::Item> {
        let Reverse((tag_bits, ticket, job)) = self.heads.pop()?;
        if let Some(next) = self.tickets[job].1.next() {
            self.heads.push(Reverse((tag_bits, *next, job)));
        }
        Some((ticket, &self.state.waiting[&ticket]))
    }
}

impl LineState {
    fn tag(&self, job_id: &str) -> f64 {
        self.tags.get(job_id).copied().unwrap_or(0.0)
    }

    fn in_order(&self) -> InOrder<'_> {
        let mut tickets = Vec::with_capacity(self.jobs.len());
        let mut heads = BinaryHeap::with_capacity(self.jobs.len());
        for (job_id, job_tickets) in &self.jobs {
            let tag_bits = self.tag(job_id).to_bits();
            let mut iter = job_tickets.iter();
            if let Some(first) = iter.next() {
                heads.push(Reverse((tag_bits, *first, tickets.len())));
                tickets.push((tag_bits, iter));
            }
        }
        InOrder {
            state: self,
            tickets,
            heads,
        }
    }

    /// A job standing in the line while none of its entries waits starts at the
    /// line's virtual time at least: it cannot claim the slots of the time it had
    /// nothing waiting. (A job already waiting keeps its tag: behind its share,
    /// it is served first.)
    fn lift(&mut self, job_id: &str) {
        if self.jobs.contains_key(job_id) {
            return;
        }
        let virtual_time = self.virtual_time;
        let tag = self.tags.entry(job_id.to_string()).or_insert(0.0);
        *tag = tag.max(virtual_time);
    }

    /// `job_id` (of `weight`) took a slot: the line's virtual time is its tag,
    /// and its tag moves on by 1 / weight.
    fn served(&mut self, job_id: &str, weight: u64) {
        let tag = self.tags.entry(job_id.to_string()).or_insert(0.0);
        self.virtual_time = self.virtual_time.max(*tag);
        *tag += 1.0 / weight as f64;
    }

    fn remove(&mut self, ticket: u64) {
        let Some(waiting) = self.waiting.remove(&ticket) else {
            return;
        };
        if let Some(tickets) = self.jobs.get_mut(&waiting.job_id) {
            tickets.remove(&ticket);
            if tickets.is_empty() {
                self.jobs.remove(&waiting.job_id);
            }
        }
    }

    /// Forgets the tags of jobs with nothing waiting once too many are kept.
    fn forget_idle_jobs(&mut self) {
        if self.tags.len() > REMEMBERED_JOBS {
            let jobs = &self.jobs;
            self.tags.retain(|job_id, _| jobs.contains_key(job_id));
        }
    }
}

impl Place {
    pub fn ticket(&self) -> u64 {
        self.ticket
    }

    pub fn line(&self) -> &Arc<SlotLine> {
        &self.line
    }

    /// Notified when a slot may be this entry's.
    pub fn wake(&self) -> &Notify {
        &self.wake
    }

    /// The skills the entry's candidate needs, once read: the front of the line
    /// may be behind it and able to pass it now.
    pub fn needs(&self, required_skills: &[String]) {
        if let Some(waiting) = self.line.lock().waiting.get_mut(&self.ticket) {
            waiting.required = Some(required_skills.to_vec());
        }
        self.line.wake_front(1);
    }

    /// The entry looked for a slot: a grant of [`SlotLine::grant_front`] served
    /// that look (taken or not, its next one waits for its turn or a new grant).
    /// Returns whether it held a grant.
    pub fn looked(&self) -> bool {
        let mut state = self.line.lock();
        let pass = state.pass;
        match state.waiting.get_mut(&self.ticket) {
            Some(waiting) => {
                let granted = waiting.holds_grant_of(pass);
                waiting.granted_in = 0;
                granted
            }
            None => false,
        }
    }

    /// The entry took a slot: counted for its job (it leaves the line when the
    /// place is dropped).
    pub fn took_slot(&self) {
        let mut state = self.line.lock();
        let Some((job_id, weight)) = state
            .waiting
            .get(&self.ticket)
            .map(|waiting| (waiting.job_id.clone(), waiting.weight))
        else {
            return;
        };
        state.served(&job_id, weight);
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        {
            let mut state = self.line.lock();
            state.remove(self.ticket);
            state.forget_idle_jobs();
        }
        // the entry behind it may be first now
        self.line.wake_front(1);
    }
}

#[cfg(test)]
mod tests;
