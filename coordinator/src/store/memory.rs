//! The in-process store: the same semantics as the Redis one, in a mutex.
//! For `centroid run` on one machine and for tests. Nothing survives the process.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{StoreError, StoreResult};
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, QueueEntry,
    WorkerCard, candidate_listed, result_listed,
};
use crate::store::{JobRecords, WorkQueue};

#[derive(Default)]
struct PendingEntry {
    entry: Option<QueueEntry>,
    consumer: String,
    leased_at: Option<Instant>,
}

/// A record kept as its JSON text, as the Redis store keeps it: a plan or a result
/// takes several times its JSON size as `serde_json::Value`s, and a job holds
/// thousands of them.
struct Packed(Box<str>);

impl Packed {
    fn of<T: Serialize>(record: &T) -> Packed {
        Packed(
            serde_json::to_string(record)
                .expect("records serialize")
                .into_boxed_str(),
        )
    }

    fn open<T: DeserializeOwned>(&self, key: &str) -> StoreResult<T> {
        self.open_with(key, |text| serde_json::from_str(text))
    }

    fn open_with<T>(
        &self,
        key: &str,
        read: impl Fn(&str) -> serde_json::Result<T>,
    ) -> StoreResult<T> {
        read(&self.0).map_err(|error| StoreError::Corrupt {
            key: key.to_string(),
            message: error.to_string(),
        })
    }
}

/// (candidate id, artifact name) → metadata and bytes
type ArtifactMap = BTreeMap<(String, String), (ArtifactMeta, Vec<u8>)>;

#[derive(Default)]
struct Inner {
    jobs: HashMap<String, JobRecord>,
    inputs: HashMap<String, JobInputs>,
    active: HashSet<String>,
    candidates: HashMap<String, BTreeMap<String, Packed>>,
    results: HashMap<String, HashMap<String, Packed>>,
    deliveries: HashMap<(String, String), u32>,
    events: HashMap<String, Vec<EventRecord>>,
    artifacts: HashMap<String, ArtifactMap>,
    next_entry: u64,
    queue: VecDeque<QueueEntry>,
    pending: BTreeMap<u64, PendingEntry>,
    dead: VecDeque<(String, String, String)>,
    leases: HashMap<String, (String, Instant)>,
    workers: HashMap<String, (WorkerCard, Instant)>,
    cancels: HashMap<String, String>,
}

/// Bounds mirroring the Redis store's stream trimming.
const MAX_EVENTS_PER_JOB: usize = 10_000;
const MAX_DEAD_LETTERS: usize = 10_000;
const MAX_JOBS: usize = 1_000;

#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("memory store lock")
    }

    /// The job's candidates, each parsed by `read`, sorted by id.
    fn read_candidates(
        &self,
        job_id: &str,
        read: impl Fn(&str) -> serde_json::Result<CandidateRecord>,
    ) -> StoreResult<Vec<CandidateRecord>> {
        let inner = self.lock();
        let Some(candidates) = inner.candidates.get(job_id) else {
            return Ok(Vec::new());
        };
        candidates
            .iter()
            .map(|(candidate_id, candidate)| candidate.open_with(candidate_id, &read))
            .collect()
    }

    /// The job's results by candidate id, each parsed by `read`.
    fn read_results(
        &self,
        job_id: &str,
        read: impl Fn(&str) -> serde_json::Result<CandidateResult>,
    ) -> StoreResult<HashMap<String, CandidateResult>> {
        let inner = self.lock();
        let Some(results) = inner.results.get(job_id) else {
            return Ok(HashMap::new());
        };
        results
            .iter()
            .map(|(candidate_id, result)| {
                Ok((candidate_id.clone(), result.open_with(candidate_id, &read)?))
            })
            .collect()
    }
}

fn entry_number(entry_id: &str) -> u64 {
    entry_id.parse().unwrap_or(u64::MAX)
}

#[tonic::async_trait]
impl JobRecords for MemoryStore {
    async fn create_job(&self, job: &JobRecord, inputs: &JobInputs) -> StoreResult<()> {
        let mut inner = self.lock();
        if inner.jobs.len() >= MAX_JOBS {
            // forget the oldest finished job
            let oldest = inner
                .jobs
                .values()
                .filter(|job| job.is_finished())
                .min_by_key(|job| job.created_ms)
                .map(|job| job.job_id.clone());
            if let Some(oldest) = oldest {
                inner.jobs.remove(&oldest);
                inner.inputs.remove(&oldest);
                inner.candidates.remove(&oldest);
                inner.results.remove(&oldest);
                inner.events.remove(&oldest);
                inner.artifacts.remove(&oldest);
            }
        }
        inner.jobs.insert(job.job_id.clone(), job.clone());
        inner.inputs.insert(job.job_id.clone(), inputs.clone());
        inner.active.insert(job.job_id.clone());
        Ok(())
    }

    async fn put_job(&self, job: &JobRecord) -> StoreResult<()> {
        self.lock().jobs.insert(job.job_id.clone(), job.clone());
        Ok(())
    }

    async fn get_job(&self, job_id: &str) -> StoreResult<Option<JobRecord>> {
        Ok(self.lock().jobs.get(job_id).cloned())
    }

    async fn get_inputs(&self, job_id: &str) -> StoreResult<Option<JobInputs>> {
        Ok(self.lock().inputs.get(job_id).cloned())
    }

    async fn list_jobs(&self, limit: usize) -> StoreResult<Vec<JobRecord>> {
        let mut jobs: Vec<JobRecord> = self.lock().jobs.values().cloned().collect();
        jobs.sort_by(|left, right| {
            right
                .created_ms
                .cmp(&left.created_ms)
                .then(right.job_id.cmp(&left.job_id))
        });
        jobs.truncate(limit);
        Ok(jobs)
    }

    async fn active_jobs(&self) -> StoreResult<Vec<String>> {
        let mut active: Vec<String> = self.lock().active.iter().cloned().collect();
        active.sort();
        Ok(active)
    }

    async fn request_cancel(&self, job_id: &str, reason: &str) -> StoreResult<()> {
        self.lock()
            .cancels
            .insert(job_id.to_string(), reason.to_string());
        Ok(())
    }

    async fn cancel_requested(&self, job_id: &str) -> StoreResult<Option<String>> {
        Ok(self.lock().cancels.get(job_id).cloned())
    }

    async fn lease_job(&self, job_id: &str, owner: &str, ttl: Duration) -> StoreResult<bool> {
        let mut inner = self.lock();
        let now = Instant::now();
        let free = match inner.leases.get(job_id) {
            None => true,
            Some((holder, expires)) => holder == owner || *expires <= now,
        };
        if free {
            inner
                .leases
                .insert(job_id.to_string(), (owner.to_string(), now + ttl));
        }
        Ok(free)
    }

    async fn release_job(&self, job_id: &str, owner: &str) -> StoreResult<()> {
        let mut inner = self.lock();
        if inner
            .leases
            .get(job_id)
            .is_some_and(|(holder, _)| holder == owner)
        {
            inner.leases.remove(job_id);
        }
        Ok(())
    }

    async fn finish_job(&self, job: &JobRecord) -> StoreResult<()> {
        let mut inner = self.lock();
        inner.jobs.insert(job.job_id.clone(), job.clone());
        inner.active.remove(&job.job_id);
        Ok(())
    }

    async fn enqueue_iteration(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
        queued: usize,
    ) -> StoreResult<()> {
        let mut inner = self.lock();
        for (index, candidate) in candidates.iter().enumerate() {
            inner
                .candidates
                .entry(job.job_id.clone())
                .or_default()
                .insert(candidate.candidate_id.clone(), Packed::of(candidate));
            if index >= queued {
                continue;
            }
            inner.next_entry += 1;
            let entry = QueueEntry {
                entry_id: inner.next_entry.to_string(),
                job_id: job.job_id.clone(),
                candidate_id: candidate.candidate_id.clone(),
            };
            inner.queue.push_back(entry);
        }
        inner.jobs.insert(job.job_id.clone(), job.clone());
        Ok(())
    }

    async fn put_candidate(&self, candidate: &CandidateRecord) -> StoreResult<()> {
        self.lock()
            .candidates
            .entry(candidate.job_id.clone())
            .or_default()
            .insert(candidate.candidate_id.clone(), Packed::of(candidate));
        Ok(())
    }

    async fn get_candidate(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateRecord>> {
        self.lock()
            .candidates
            .get(job_id)
            .and_then(|candidates| candidates.get(candidate_id))
            .map(|candidate| candidate.open(candidate_id))
            .transpose()
    }

    async fn candidates(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.read_candidates(job_id, |text| serde_json::from_str(text))
    }

    async fn candidate_listing(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.read_candidates(job_id, candidate_listed)
    }

    async fn candidate_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .lock()
            .candidates
            .get(job_id)
            .map(|candidates| candidates.keys().cloned().collect())
            .unwrap_or_default())
    }

    async fn get_result(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateResult>> {
        self.lock()
            .results
            .get(job_id)
            .and_then(|results| results.get(candidate_id))
            .map(|result| result.open(candidate_id))
            .transpose()
    }

    async fn record_result(&self, job_id: &str, result: &CandidateResult) -> StoreResult<bool> {
        let mut inner = self.lock();
        let results = inner.results.entry(job_id.to_string()).or_default();
        if results.contains_key(&result.candidate_id) {
            return Ok(false);
        }
        results.insert(result.candidate_id.clone(), Packed::of(result));
        Ok(true)
    }

    async fn has_result(&self, job_id: &str, candidate_id: &str) -> StoreResult<bool> {
        Ok(self
            .lock()
            .results
            .get(job_id)
            .is_some_and(|results| results.contains_key(candidate_id)))
    }

    async fn results(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        self.read_results(job_id, |text| serde_json::from_str(text))
    }

    async fn result_listing(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        self.read_results(job_id, result_listed)
    }

    async fn candidate_counts(&self, job_id: &str) -> StoreResult<(usize, usize)> {
        let inner = self.lock();
        let total = inner
            .candidates
            .get(job_id)
            .map_or(0, |candidates| candidates.len());
        let finished = inner.results.get(job_id).map_or(0, |results| results.len());
        Ok((total, finished))
    }

    async fn result_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .lock()
            .results
            .get(job_id)
            .map(|results| results.keys().cloned().collect())
            .unwrap_or_default())
    }

    async fn bump_deliveries(&self, job_id: &str, candidate_id: &str) -> StoreResult<u32> {
        let mut inner = self.lock();
        let counter = inner
            .deliveries
            .entry((job_id.to_string(), candidate_id.to_string()))
            .or_default();
        *counter += 1;
        Ok(*counter)
    }

    async fn append_event(&self, job_id: &str, event: &EventRecord) -> StoreResult<String> {
        let mut inner = self.lock();
        let events = inner.events.entry(job_id.to_string()).or_default();
        if events.len() >= MAX_EVENTS_PER_JOB {
            // keep the first event (creation) and drop the oldest after it; cursors stay positional
            events.remove(1);
        }
        events.push(event.clone());
        Ok(format!("{}", events.len()))
    }

    async fn events_after(
        &self,
        job_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, EventRecord)>> {
        let inner = self.lock();
        let Some(events) = inner.events.get(job_id) else {
            return Ok(Vec::new());
        };
        let start = after
            .and_then(|cursor| cursor.parse::<usize>().ok())
            .unwrap_or(0);
        Ok(events
            .iter()
            .enumerate()
            .skip(start)
            .take(limit)
            .map(|(index, event)| (format!("{}", index + 1), event.clone()))
            .collect())
    }

    async fn put_artifact(
        &self,
        job_id: &str,
        meta: &ArtifactMeta,
        content: &[u8],
    ) -> StoreResult<()> {
        self.lock()
            .artifacts
            .entry(job_id.to_string())
            .or_default()
            .insert(
                (meta.candidate_id.clone(), meta.name.clone()),
                (meta.clone(), content.to_vec()),
            );
        Ok(())
    }

    async fn delete_candidate_artifacts(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<()> {
        if let Some(artifacts) = self.lock().artifacts.get_mut(job_id) {
            artifacts.retain(|(candidate, _), _| candidate != candidate_id);
        }
        Ok(())
    }

    async fn artifacts(&self, job_id: &str) -> StoreResult<Vec<ArtifactMeta>> {
        Ok(self
            .lock()
            .artifacts
            .get(job_id)
            .map(|artifacts| artifacts.values().map(|(meta, _)| meta.clone()).collect())
            .unwrap_or_default())
    }

    async fn get_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        Ok(self
            .lock()
            .artifacts
            .get(job_id)
            .and_then(|artifacts| artifacts.get(&(candidate_id.to_string(), name.to_string())))
            .map(|(_, content)| content.clone()))
    }

    async fn put_worker_card(&self, card: &WorkerCard, ttl: Duration) -> StoreResult<()> {
        self.lock()
            .workers
            .insert(card.worker_id.clone(), (card.clone(), Instant::now() + ttl));
        Ok(())
    }

    async fn worker_cards(&self) -> StoreResult<Vec<WorkerCard>> {
        let mut inner = self.lock();
        let now = Instant::now();
        inner.workers.retain(|_, (_, expires)| *expires > now);
        let mut cards: Vec<WorkerCard> = inner
            .workers
            .values()
            .map(|(card, _)| card.clone())
            .collect();
        cards.sort_by(|left, right| left.worker_id.cmp(&right.worker_id));
        Ok(cards)
    }
}

#[tonic::async_trait]
impl WorkQueue for MemoryStore {
    async fn queue_read(&self, consumer: &str, count: usize) -> StoreResult<Vec<QueueEntry>> {
        let mut inner = self.lock();
        let mut read = Vec::new();
        while read.len() < count {
            let Some(entry) = inner.queue.pop_front() else {
                break;
            };
            inner.pending.insert(
                entry_number(&entry.entry_id),
                PendingEntry {
                    entry: Some(entry.clone()),
                    consumer: consumer.to_string(),
                    leased_at: Some(Instant::now()),
                },
            );
            read.push(entry);
        }
        Ok(read)
    }

    async fn queue_reclaim(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> StoreResult<Vec<QueueEntry>> {
        let mut inner = self.lock();
        let now = Instant::now();
        let mut reclaimed = Vec::new();
        for pending in inner.pending.values_mut() {
            if reclaimed.len() >= count {
                break;
            }
            let idle = pending
                .leased_at
                .map(|leased_at| now.duration_since(leased_at))
                .unwrap_or(Duration::MAX);
            if idle >= min_idle {
                pending.consumer = consumer.to_string();
                pending.leased_at = Some(now);
                if let Some(entry) = &pending.entry {
                    reclaimed.push(entry.clone());
                }
            }
        }
        Ok(reclaimed)
    }

    async fn queue_renew(&self, consumer: &str, entry_ids: &[String]) -> StoreResult<()> {
        let mut inner = self.lock();
        let now = Instant::now();
        for entry_id in entry_ids {
            if let Some(pending) = inner.pending.get_mut(&entry_number(entry_id))
                && pending.consumer == consumer
            {
                pending.leased_at = Some(now);
            }
        }
        Ok(())
    }

    async fn queue_ack(&self, entry_id: &str) -> StoreResult<()> {
        self.lock().pending.remove(&entry_number(entry_id));
        Ok(())
    }

    async fn dead_letter(&self, entry: &QueueEntry, reason: &str) -> StoreResult<()> {
        let mut inner = self.lock();
        inner.dead.push_back((
            entry.job_id.clone(),
            entry.candidate_id.clone(),
            reason.to_string(),
        ));
        while inner.dead.len() > MAX_DEAD_LETTERS {
            inner.dead.pop_front();
        }
        inner.pending.remove(&entry_number(&entry.entry_id));
        Ok(())
    }

    async fn dead_letters(&self, limit: usize) -> StoreResult<Vec<(String, String, String)>> {
        Ok(self.lock().dead.iter().rev().take(limit).cloned().collect())
    }

    async fn queue_pending_count(&self) -> StoreResult<u64> {
        Ok(self.lock().pending.len() as u64)
    }

    async fn queue_waiting_count(&self) -> StoreResult<u64> {
        Ok(self.lock().queue.len() as u64)
    }
}
