//! The dispatcher: takes candidate entries from the work queue (consumer group)
//! and runs each on a live worker ([`candidate_run`]), while two companion tasks
//! keep the leases and the worker list fresh.
//!
//! Leases: an entry stays pending under this coordinator's consumer while it is
//! waiting or running; [`renew_loop`] re-claims (XCLAIM JUSTID) the entries whose
//! worker is alive every third of the lease. When a worker stops heartbeating its
//! calls are abandoned and their leases lapse; the reclaimer (XAUTOCLAIM with
//! min-idle = lease timeout > heartbeat timeout) hands them out again, bumping the
//! delivery counter. After `max_deliveries` an entry goes to the dead-letter
//! stream. What happens after a failed try is [`crate::retry_policy`].
//!
//! Cancellation: when the job of a running candidate is cancelled (or ends), the
//! RunCandidate call is dropped and the worker is told to stop the candidate; the
//! candidate is then recorded as abandoned by the session.

mod acks;
mod candidate_run;
mod preflight;
mod progress_pace;
mod recorder;
mod recording;
mod slot_line;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

use crate::context::{Context, Interrupted};
use crate::error::StoreError;
use crate::model::QueueEntry;
use acks::Acks;
use preflight::Delivered;
use progress_pace::ProgressPace;
use recorder::Recorder;
use slot_line::{Place, SlotLine};

/// Queue entries this coordinator holds per live slot (waiting ones included),
/// plus a few: enough to keep every slot busy while results are recorded.
pub(crate) const ENTRIES_PER_SLOT: usize = 3;
pub(crate) const EXTRA_ENTRIES: usize = 4;

/// The shortest time between two passes of the usher ([`usher_loop`]): with a
/// thousand slots turning over every 100 ms, a pass per finished candidate walked
/// the front of the line thousands of times a second.
const USHER_PASS_GAP: Duration = Duration::from_millis(1);

/// What this coordinator is working on, by queue entry id.
#[derive(Clone, Default)]
pub(crate) struct InFlight(Arc<Mutex<HashMap<String, InFlightEntry>>>);

struct InFlightEntry {
    job_id: String,
    /// the worker running it; `None` while it waits for a slot or a retry
    worker_id: Option<String>,
}

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, InFlightEntry>> {
        self.0.lock().expect("in-flight lock")
    }

    /// Marks `entry` as running on `worker_id` (`None`: waiting).
    pub(crate) fn set_worker(&self, entry: &QueueEntry, worker_id: Option<&str>) {
        self.lock().insert(
            entry.entry_id.clone(),
            InFlightEntry {
                job_id: entry.job_id.clone(),
                worker_id: worker_id.map(str::to_string),
            },
        );
    }

    /// Takes `entry` on unless it is held already.
    fn take_on(&self, entry: &QueueEntry) -> bool {
        let mut in_flight = self.lock();
        if in_flight.contains_key(&entry.entry_id) {
            return false;
        }
        in_flight.insert(
            entry.entry_id.clone(),
            InFlightEntry {
                job_id: entry.job_id.clone(),
                worker_id: None,
            },
        );
        true
    }

    fn remove(&self, entry: &QueueEntry) {
        self.lock().remove(&entry.entry_id);
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    /// The entries to renew (not on a dead worker) and the jobs they belong to.
    fn renewable(&self, context: &Context) -> (Vec<String>, BTreeSet<String>) {
        let in_flight = self.lock();
        let entry_ids = in_flight
            .iter()
            .filter(|(_, entry)| {
                entry
                    .worker_id
                    .as_ref()
                    .is_none_or(|worker_id| context.registry.is_alive(worker_id))
            })
            .map(|(entry_id, _)| entry_id.clone())
            .collect();
        let job_ids = in_flight
            .values()
            .map(|entry| entry.job_id.clone())
            .collect();
        (entry_ids, job_ids)
    }
}

pub(crate) fn spawn(context: Arc<Context>) -> Vec<JoinHandle<()>> {
    let in_flight = InFlight::default();
    let line = Arc::new(SlotLine::default());
    let (acks, ack_task) = Acks::spawn(context.clone());
    let (pace, pace_task) = ProgressPace::spawn(context.clone());
    let (recorder, record_task) = Recorder::spawn(context.clone());
    let tasks = EntryTasks {
        acks,
        pace,
        recorder,
    };
    vec![
        tokio::spawn(dispatch_loop(
            context.clone(),
            in_flight.clone(),
            line.clone(),
            tasks,
        )),
        ack_task,
        pace_task,
        record_task,
        tokio::spawn(usher_loop(context.clone(), line)),
        tokio::spawn(renew_loop(context.clone(), in_flight)),
        tokio::spawn(sweep_loop(context)),
    ]
}

/// Sleeps `period`; `false` when the coordinator shuts down first.
async fn tick(context: &Context, period: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(period) => true,
        _ = context.shutting_down() => false,
    }
}

/// Wakes the front of the line when slots may have freed: as many entries as
/// there are free slots, in the line's order, and as many more as there are free
/// waiting-room places when the front entry's job may prefetch (the line gives a
/// place to the first entry that could run on the worker: behind an entry that may
/// not wait, no one takes it) — not every entry waiting (with a
/// thousand slots, a few thousand wait, and waking them all on every finished
/// candidate was the dispatcher's main cost).
async fn usher_loop(context: Arc<Context>, line: Arc<SlotLine>) {
    loop {
        let slots_changed = context.registry.slots_changed.notified();
        tokio::pin!(slots_changed);
        slots_changed.as_mut().enable();
        let places = context.registry.free_places();
        let front_prefetches = places.waiting > 0
            && line
                .front_job()
                .is_some_and(|job_id| context.candidate_times.may_prefetch(&job_id));
        // free slots first, waiting places on a pass with none: the entries granted
        // together take their places in any order, and a waiting place taken before
        // the slot an earlier entry was granted would start that earlier entry later
        // (one slot: the queue's order is the order candidates start in)
        let free = if places.slots > 0 {
            places.slots
        } else if front_prefetches {
            places.waiting
        } else {
            0
        };
        if free > 0 {
            line.grant_front(free);
            // passes at most every USHER_PASS_GAP: the changes meanwhile (listened
            // to since before this pass) are served by the next one together, and
            // the entries woken have that long to use their grants
            tokio::time::sleep(USHER_PASS_GAP).await;
        }
        tokio::select! {
            _ = slots_changed => {}
            _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            _ = context.shutting_down() => return,
        }
    }
}

/// Declares silent workers dead and publishes the live workers' cards for the
/// other coordinators sharing the store.
async fn sweep_loop(context: Arc<Context>) {
    let period = Duration::from_millis((context.config.heartbeat_timeout_ms / 4).max(50));
    while tick(&context, period).await {
        if !context.registry.sweep().is_empty() {
            context.queue_changed.notify_waiters();
        }
        let ttl = context.config.heartbeat_timeout();
        for card in context.registry.cards_due(ttl / 3, &context.consumer) {
            if let Err(error) = context.store.put_worker_card(&card, ttl).await {
                tracing::warn!(%error, worker_id = %card.worker_id, "cannot publish the worker card");
            }
        }
    }
}

/// Renews the leases of the entries this coordinator holds, and notices jobs
/// cancelled through another coordinator.
async fn renew_loop(context: Arc<Context>, in_flight: InFlight) {
    let period = Duration::from_millis((context.config.lease_timeout_ms / 3).max(50));
    while tick(&context, period).await {
        let (entry_ids, job_ids) = in_flight.renewable(&context);
        if let Err(error) = context
            .store
            .queue_renew(&context.consumer, &entry_ids)
            .await
        {
            tracing::warn!(%error, entries = entry_ids.len(), "cannot renew queue leases");
        }
        for job_id in job_ids {
            match context.store.cancel_requested(&job_id).await {
                Ok(Some(_)) if context.signal_cancel_if_watched(&job_id) => {
                    tracing::info!(session_id = %job_id, "job cancelled elsewhere; stopping its candidates here");
                }
                Ok(_) => {}
                // looked at again next period; the job's driver sees the cancel too
                Err(error) => {
                    tracing::warn!(session_id = %job_id, %error, "cannot read the cancel flag")
                }
            }
        }
    }
}

/// Lapsed entries (when a reclaim is due) and then new ones, at most `wanted`.
async fn next_entries(
    context: &Context,
    wanted: usize,
    reclaim: bool,
) -> Result<Vec<QueueEntry>, StoreError> {
    let mut entries = Vec::new();
    if reclaim {
        let reclaimed = context
            .store
            .queue_reclaim(&context.consumer, context.config.lease_timeout(), wanted)
            .await?;
        for entry in &reclaimed {
            tracing::info!(session_id = %entry.job_id, candidate_id = %entry.candidate_id, "reclaimed a lapsed lease");
        }
        entries.extend(reclaimed);
    }
    if entries.len() < wanted {
        entries.extend(
            context
                .store
                .queue_read(&context.consumer, wanted - entries.len())
                .await?,
        );
    }
    Ok(entries)
}

/// The dispatcher's tasks an entry's run hands work to.
#[derive(Clone)]
struct EntryTasks {
    /// where finished entries are acknowledged
    acks: Acks,
    /// how the drivers hear of them
    pace: ProgressPace,
    /// where the dispatched events and results are written
    recorder: Recorder,
}

/// The deliveries of `entries` as one store call, each entry's reads in order;
/// when that call fails for good, `None` for each (every entry delivers itself,
/// and meets the error on its own record).
async fn deliver_all(context: &Context, entries: &[QueueEntry]) -> Option<Vec<Delivered>> {
    let keys: Vec<(String, String)> = entries
        .iter()
        .map(|entry| (entry.job_id.clone(), entry.candidate_id.clone()))
        .collect();
    match context
        .with_store_retry("deliver", || context.store.deliver_many(&keys))
        .await
    {
        Ok(reads) => Some(reads.into_iter().map(Some).collect()),
        Err(Interrupted::Shutdown) => None,
        Err(Interrupted::Store(error)) => {
            tracing::warn!(%error, entries = entries.len(), "the deliveries of a queue read failed together; each entry is delivered alone");
            Some(entries.iter().map(|_| None).collect())
        }
    }
}

/// The queue's reader: the entries of one read are delivered together
/// ([`deliver_all`]), then each runs in its own task.
async fn dispatch_loop(
    context: Arc<Context>,
    in_flight: InFlight,
    line: Arc<SlotLine>,
    tasks: EntryTasks,
) {
    let reclaim_period = Duration::from_millis((context.config.lease_timeout_ms / 4).max(50));
    let mut last_reclaim = Instant::now() - reclaim_period;
    while !context.is_shutting_down() {
        // without a live worker this coordinator claims nothing: the entries stay in
        // the stream for a coordinator that has workers (or for when one registers)
        let alive_slots = context.registry.alive_slots() as usize;
        let capacity = match alive_slots {
            0 => 0,
            slots => slots * ENTRIES_PER_SLOT + EXTRA_ENTRIES,
        };
        let wanted = capacity.saturating_sub(in_flight.len());
        let mut started = 0;
        if wanted > 0 {
            let reclaim = last_reclaim.elapsed() >= reclaim_period;
            let entries = match context
                .with_store_retry("read the queue", || next_entries(&context, wanted, reclaim))
                .await
            {
                Ok(entries) => entries,
                Err(Interrupted::Shutdown) => return,
                // e.g. an entry without its fields: logged; the queue is read again
                Err(Interrupted::Store(error)) => {
                    tracing::error!(%error, "cannot read the work queue");
                    tick(&context, reclaim_period).await;
                    continue;
                }
            };
            if reclaim {
                last_reclaim = Instant::now();
            }
            let entries: Vec<QueueEntry> = entries
                .into_iter()
                .filter(|entry| in_flight.take_on(entry))
                .collect();
            // slots go to waiting entries job by job, in the order each job's were read
            let places: Vec<Place> = entries
                .iter()
                .map(|entry| line.stand(line.ticket(), &entry.job_id, entry.weight))
                .collect();
            // the coordinator shuts down: the entries stay pending
            let Some(delivered) = deliver_all(&context, &entries).await else {
                return;
            };
            for ((entry, place), delivered) in entries.into_iter().zip(places).zip(delivered) {
                started += 1;
                let span = tracing::info_span!(
                    "candidate",
                    session_id = %entry.job_id,
                    candidate_id = %entry.candidate_id,
                    trace_id = tracing::field::Empty
                );
                tokio::spawn(tracing::Instrument::instrument(
                    handle_entry(
                        context.clone(),
                        in_flight.clone(),
                        tasks.clone(),
                        entry,
                        (place, delivered),
                    ),
                    span,
                ));
            }
        }
        if started == 0 {
            let queue_changed = context.queue_changed.notified();
            let slots_changed = context.registry.slots_changed.notified();
            tokio::select! {
                _ = queue_changed => {}
                _ = slots_changed => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = context.shutting_down() => return,
            }
        }
    }
}

/// What to do with an entry after its run.
pub(crate) enum Disposition {
    /// result recorded (or nothing to do): acknowledge
    Ack,
    /// leave it pending: the lease lapses and another delivery takes it
    LeavePending,
    /// a record the entry needs cannot be read for good: the candidate is
    /// recorded as failed with the store's error (its job's driver meets the
    /// same record and fails the job naming it), and the entry acknowledged
    Unreadable(StoreError),
}

impl Disposition {
    /// What a store call interrupted leaves of the entry.
    pub(crate) fn interrupted(interrupted: Interrupted) -> Disposition {
        match interrupted {
            Interrupted::Shutdown => Disposition::LeavePending,
            Interrupted::Store(error) => Disposition::Unreadable(error),
        }
    }
}

async fn handle_entry(
    context: Arc<Context>,
    in_flight: InFlight,
    tasks: EntryTasks,
    entry: QueueEntry,
    (place, delivered): (Place, Delivered),
) {
    let EntryTasks {
        acks,
        pace,
        recorder,
    } = tasks;
    let mut disposition =
        candidate_run::run_entry((&context, &recorder), &in_flight, &entry, place, delivered).await;
    if let Disposition::Unreadable(error) = &disposition {
        disposition = recording::record_unreadable(&context, &entry, error).await;
    }
    // acknowledged with the other entries finished meanwhile (one store call)
    if let Disposition::Ack = disposition
        && let Err(interrupted) = acks.ack(&entry.entry_id).await
    {
        // unacknowledged, the entry is delivered again; its result is recorded once
        tracing::warn!(session_id = %entry.job_id, candidate_id = %entry.candidate_id, %interrupted, "entry not acknowledged");
    }
    in_flight.remove(&entry);
    pace.finished();
}
