//! The workers this coordinator knows: registration, heartbeats, liveness, and
//! slot accounting for the dispatcher (least loaded first).
//!
//! A worker takes `slots` calls that run and `prefetch` more that wait in it for
//! the next slot to free (its waiting room, advertised at registration). A call
//! takes a waiting-room place only when the caller allows it (its job's candidates
//! are short: `crate::candidate_times`) and no worker with the skills has a free slot.
//!
//! A worker is alive while its heartbeats arrive within `heartbeat_timeout`.
//! When it misses them (or a call to it fails to connect) it is marked dead:
//! its in-flight candidates are told (a watch channel) and their queue leases
//! are no longer renewed, so the reclaimer hands them to another worker.
//! A dead worker is forgotten `dead_worker_grace` after it died (it leaves
//! ListWorkers); registering again brings it back.
//!
//! A worker's id is held by one worker process at a time: its registration carries
//! a random instance id, and a registration, heartbeat or deregistration under the
//! id of a live worker from another instance is refused (or ignored).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use centroid_proto::v1::WorkerInfo;
use centroid_proto::v1::worker_client::WorkerClient;
use centroid_runtime::{AttachToken, AuthChannel, BearerToken, Tls, tls};
use serde_json::Value;
use tokio::sync::{Notify, watch};
use tonic::transport::Channel;

struct WorkerEntry {
    info: WorkerInfo,
    reported_free_slots: u32,
    draining: bool,
    last_heartbeat: Instant,
    alive: bool,
    /// when it was declared dead (pruned `dead_worker_grace` later)
    died: Option<Instant>,
    /// calls this coordinator has on the worker, running or waiting in it for a slot
    running: u32,
    channel: Option<Channel>,
    /// input schemas by skill name (from ListSkills), when fetched
    schemas: HashMap<String, Value>,
    /// ListSkills answered (or failed for good)
    schemas_fetched: bool,
    /// flips to true when the worker is declared dead
    dead: watch::Sender<bool>,
    /// when this coordinator last published the worker's card
    card_published: Option<Instant>,
    /// the worker refused a candidate for capacity: no more calls until its next
    /// heartbeat says how many slots are free
    saturated: bool,
}

/// A registration under the id of a worker that still heartbeats, from another
/// worker instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenWorkerId {
    pub worker_id: String,
    pub live_address: String,
}

/// A slot taken on a worker; gives it back on drop.
pub struct SlotGuard {
    registry: Arc<Registry>,
    pub worker_id: String,
    pub client: WorkerClient<AuthChannel>,
    /// becomes true when the worker is declared dead
    pub dead: watch::Receiver<bool>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.registry.release(&self.worker_id);
    }
}

/// What [`Registry::free_places`] counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FreePlaces {
    /// free slots
    pub slots: usize,
    /// free places in the workers' waiting rooms
    pub waiting: usize,
}

pub struct Registry {
    workers: Mutex<HashMap<String, WorkerEntry>>,
    heartbeat_timeout: Duration,
    /// how long a dead worker stays listed before it is forgotten
    dead_worker_grace: Duration,
    /// notified when a slot may have become available (release, registration, heartbeat)
    pub slots_changed: Notify,
    /// notified when a worker's skill schemas are in (or could not be listed)
    schemas_changed: Notify,
    max_message_bytes: usize,
    /// sent with every call to a worker
    token: AttachToken,
    /// TLS of the calls to workers (`None` = plain TCP)
    tls: Option<Tls>,
}

impl Registry {
    /// An empty registry; `token` goes with every call to a worker, over `tls` when set.
    /// Dead workers are forgotten `dead_worker_grace` after they died.
    pub fn new(
        heartbeat_timeout: Duration,
        dead_worker_grace: Duration,
        token: Option<BearerToken>,
        tls: Option<Tls>,
    ) -> Arc<Registry> {
        Arc::new(Registry {
            workers: Mutex::new(HashMap::new()),
            heartbeat_timeout,
            dead_worker_grace,
            slots_changed: Notify::new(),
            schemas_changed: Notify::new(),
            max_message_bytes: 512 * 1024 * 1024,
            token: AttachToken::new(token),
            tls,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, WorkerEntry>> {
        self.workers.lock().expect("registry lock")
    }

    /// Adds or refreshes a worker. Returns `Ok(true)` when it is new (or was dead).
    /// A registration never takes over a live worker: another instance (at any
    /// address) under the id of a worker that still heartbeats is refused (the caller
    /// retries once the live one stops heartbeating).
    pub fn register(self: &Arc<Self>, info: WorkerInfo) -> Result<bool, TakenWorkerId> {
        let worker_id = info.worker_id.clone();
        let address = info.address.clone();
        let channel = match tls::endpoint(self.tls.as_ref(), &address) {
            Ok(endpoint) => Some(
                endpoint
                    .connect_timeout(Duration::from_secs(2))
                    .tcp_nodelay(true)
                    .http2_keep_alive_interval(Duration::from_secs(5))
                    .keep_alive_timeout(Duration::from_secs(5))
                    .connect_lazy(),
            ),
            Err(error) => {
                // registered all the same (it heartbeats), but never given a candidate
                tracing::warn!(worker_id = %worker_id, %address, %error, "the worker's address cannot be called: it gets no candidates");
                None
            }
        };
        let fresh = {
            let mut workers = self.lock();
            if let Some(entry) = workers.get(&worker_id)
                && entry.alive
                && entry.info.instance_id != info.instance_id
                && entry.last_heartbeat.elapsed() < self.heartbeat_timeout
            {
                tracing::warn!(worker_id = %worker_id, live = %entry.info.address, claimant = %address, "refused a registration under a live worker's id from another instance");
                return Err(TakenWorkerId {
                    worker_id,
                    live_address: entry.info.address.clone(),
                });
            }
            // the same live process registering again (e.g. after a failed heartbeat on its
            // side): keep its in-flight calls, refresh what it advertises
            if let Some(entry) = workers.get_mut(&worker_id)
                && entry.alive
                && entry.info.instance_id == info.instance_id
            {
                if entry.info.address != address {
                    entry.channel = channel;
                }
                entry.info = info;
                entry.last_heartbeat = Instant::now();
                entry.schemas_fetched = false;
                entry.card_published = None;
                false
            } else {
                let previous_running = workers
                    .get(&worker_id)
                    .map(|entry| entry.running)
                    .unwrap_or(0);
                if let Some(previous) = workers.get(&worker_id) {
                    previous.dead.send_replace(true);
                }
                workers.insert(
                    worker_id.clone(),
                    WorkerEntry {
                        reported_free_slots: info.slots,
                        info,
                        draining: false,
                        last_heartbeat: Instant::now(),
                        alive: true,
                        died: None,
                        running: previous_running,
                        channel,
                        schemas: HashMap::new(),
                        schemas_fetched: false,
                        dead: watch::Sender::new(false),
                        card_published: None,
                        saturated: false,
                    },
                );
                true
            }
        };
        tracing::info!(worker_id = %worker_id, %address, "worker registered");
        self.slots_changed.notify_waiters();
        let registry = self.clone();
        tokio::spawn(async move { registry.fetch_schemas(&worker_id).await });
        Ok(fresh)
    }

    /// A heartbeat from worker instance `instance_id`; `false` when the worker is
    /// unknown, was declared dead, or is registered by another instance (it should
    /// register again).
    pub fn heartbeat(
        &self,
        worker_id: &str,
        instance_id: &str,
        free_slots: u32,
        draining: bool,
    ) -> bool {
        let known = {
            let mut workers = self.lock();
            match workers.get_mut(worker_id) {
                Some(entry) if entry.alive && entry.info.instance_id == instance_id => {
                    entry.last_heartbeat = Instant::now();
                    entry.reported_free_slots = free_slots;
                    entry.draining = draining;
                    // a refusal for capacity holds until the worker reports a free
                    // slot: one still replacing a KLayout process reports none, and
                    // clearing on every heartbeat let each waiting candidate try it
                    // once per heartbeat (a burst of RESOURCE_EXHAUSTED retries)
                    if free_slots > 0 {
                        entry.saturated = false;
                    }
                    true
                }
                _ => false,
            }
        };
        if known {
            self.slots_changed.notify_waiters();
        }
        known
    }

    /// The worker instance `instance_id` leaves; `false` (and nothing changes) when
    /// the id is unknown or registered by another instance.
    pub fn deregister(&self, worker_id: &str, instance_id: &str, reason: &str) -> bool {
        let deregistered = match self.lock().get_mut(worker_id) {
            Some(entry) if entry.info.instance_id == instance_id => {
                entry.declare_dead();
                true
            }
            _ => false,
        };
        match deregistered {
            true => tracing::info!(worker_id, reason, "worker deregistered"),
            false => tracing::warn!(
                worker_id,
                reason,
                "ignored a deregistration from another instance than the registered one"
            ),
        }
        deregistered
    }

    /// Declares dead the workers whose heartbeats stopped, and forgets those dead
    /// for longer than the grace. Returns the ids of the newly dead.
    pub fn sweep(&self) -> Vec<String> {
        let mut dead = Vec::new();
        let mut forgotten = Vec::new();
        {
            let mut workers = self.lock();
            for (worker_id, entry) in workers.iter_mut() {
                if entry.alive && entry.last_heartbeat.elapsed() > self.heartbeat_timeout {
                    entry.declare_dead();
                    dead.push(worker_id.clone());
                }
            }
            workers.retain(|worker_id, entry| {
                let keep = entry
                    .died
                    .is_none_or(|died| died.elapsed() < self.dead_worker_grace);
                if !keep {
                    forgotten.push(worker_id.clone());
                }
                keep
            });
        }
        for worker_id in &dead {
            tracing::warn!(worker_id = %worker_id, "worker missed its heartbeats: declared dead");
        }
        for worker_id in &forgotten {
            tracing::info!(worker_id = %worker_id, "forgot a worker dead for longer than the grace");
        }
        dead
    }

    /// A call to the worker could not connect: declare it dead until it registers again.
    pub fn mark_unreachable(&self, worker_id: &str) {
        if let Some(entry) = self.lock().get_mut(worker_id)
            && entry.alive
        {
            entry.declare_dead();
            tracing::warn!(
                worker_id,
                "worker unreachable: declared dead until it registers again"
            );
        }
    }

    /// Takes a slot on the least loaded live worker that has every required skill,
    /// avoiding `excluded` workers when another one qualifies (never a waiting place).
    pub fn try_acquire(
        self: &Arc<Self>,
        required_skills: &[String],
        excluded: &BTreeSet<String>,
    ) -> Option<SlotGuard> {
        self.try_acquire_where(required_skills, excluded, false, |_| true)
    }

    /// [`Self::try_acquire`] among the workers whose skills `may_take` accepts;
    /// with `may_wait`, a place in a worker's waiting room when no such worker
    /// has a free slot (the least loaded by calls per slot).
    pub fn try_acquire_where(
        self: &Arc<Self>,
        required_skills: &[String],
        excluded: &BTreeSet<String>,
        may_wait: bool,
        may_take: impl Fn(&[String]) -> bool,
    ) -> Option<SlotGuard> {
        let mut workers = self.lock();
        // (excluded, only a waiting place, load, id): the smallest is taken
        let mut qualified: Vec<(bool, bool, f64, &String)> = workers
            .iter()
            .filter_map(|(worker_id, entry)| {
                let has_free_slot = entry.running < entry.info.slots;
                let has_place = has_free_slot
                    || (may_wait && entry.running < entry.info.slots + entry.info.prefetch);
                let usable = entry.alive
                    && !entry.draining
                    && !entry.saturated
                    && has_place
                    && entry.channel.is_some()
                    && required_skills
                        .iter()
                        .all(|skill| entry.info.skills.contains(skill));
                usable.then(|| {
                    let load = entry.running as f64 / entry.info.slots.max(1) as f64;
                    (
                        excluded.contains(worker_id),
                        !has_free_slot,
                        load,
                        worker_id,
                    )
                })
            })
            .collect();
        qualified.sort_by(|left, right| {
            (left.0, left.1)
                .cmp(&(right.0, right.1))
                .then(left.2.total_cmp(&right.2))
                .then(left.3.cmp(right.3))
        });
        // `may_take` asked in order of preference, until one accepts (it may cost a
        // look at the slot line: not asked of workers that would not be taken anyway)
        let best = qualified
            .into_iter()
            .find(|(_, _, _, worker_id)| may_take(&workers[*worker_id].info.skills));
        let worker_id = best.map(|(_, _, _, worker_id)| worker_id.clone())?;
        let entry = workers.get_mut(&worker_id).expect("chosen above");
        entry.running += 1;
        let channel = entry.channel.clone().expect("checked above");
        let client = WorkerClient::with_interceptor(channel, self.token.clone())
            .max_decoding_message_size(self.max_message_bytes)
            .max_encoding_message_size(64 * 1024 * 1024);
        let dead = entry.dead.subscribe();
        Some(SlotGuard {
            registry: self.clone(),
            worker_id,
            client,
            dead,
        })
    }

    fn release(&self, worker_id: &str) {
        if let Some(entry) = self.lock().get_mut(worker_id) {
            entry.running = entry.running.saturating_sub(1);
        }
        self.slots_changed.notify_waiters();
    }

    /// The worker refused a call for capacity (e.g. it is replacing a KLayout
    /// process): send it nothing more until a heartbeat reports a free slot, so
    /// the candidates waiting for a slot wait instead of hammering it.
    pub fn mark_saturated(&self, worker_id: &str) {
        if let Some(entry) = self.lock().get_mut(worker_id) {
            entry.saturated = true;
        }
    }

    pub fn is_alive(&self, worker_id: &str) -> bool {
        self.lock().get(worker_id).is_some_and(|entry| entry.alive)
    }

    pub fn alive_count(&self) -> usize {
        self.lock()
            .values()
            .filter(|entry| entry.alive && !entry.draining)
            .count()
    }

    pub fn alive_slots(&self) -> u32 {
        self.lock()
            .values()
            .filter(|entry| entry.alive && !entry.draining)
            .map(|entry| entry.info.slots)
            .sum()
    }

    /// Slots, and waiting-room places, this coordinator could take now: on live
    /// workers it can call, neither draining nor saturated, less the calls it has there.
    pub fn free_places(&self) -> FreePlaces {
        self.lock()
            .values()
            .filter(|entry| {
                entry.alive && !entry.draining && !entry.saturated && entry.channel.is_some()
            })
            .fold(FreePlaces::default(), |free, entry| {
                let slots = entry.info.slots;
                let capacity = slots + entry.info.prefetch;
                FreePlaces {
                    slots: free.slots + slots.saturating_sub(entry.running) as usize,
                    waiting: free.waiting
                        + (capacity - entry.running.max(slots).min(capacity)) as usize,
                }
            })
    }
}

impl WorkerEntry {
    fn declare_dead(&mut self) {
        if self.alive || self.died.is_none() {
            self.died = Some(Instant::now());
        }
        self.alive = false;
        self.dead.send_replace(true);
    }
}

mod cards;
mod listing;
mod skill_schemas;
#[cfg(test)]
mod tests;

pub use cards::skill_catalog_of_cards;
pub use skill_schemas::SCHEMAS_WAIT;
