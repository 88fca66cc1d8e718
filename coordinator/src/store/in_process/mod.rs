//! The in-process store: the same semantics as the Redis one, in a mutex.
//! For `centroid run` on one machine and for tests. Nothing survives the process.
//! `records.rs` holds the job records, `queue.rs` the work queue.

mod queue;
mod records;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{StoreError, StoreResult};
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, QueueEntry,
    WorkerCard,
};

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
    /// per job, the ids of `results` in the order recorded
    finished: HashMap<String, Vec<String>>,
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
pub struct InProcessStore {
    inner: Mutex<Inner>,
}

impl InProcessStore {
    pub fn new() -> InProcessStore {
        InProcessStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("in-process store lock")
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
