//! Long-term memory across jobs (seed 000 §4.4, §4.5.3): design cases stored when a
//! job completes with a passing layout, failure patterns when it fails, and the
//! retrieval of the most similar cases when a new job is planned (its first
//! iteration starts from their best design points; the LLM planner's prompt gets
//! them as historical cases).
//!
//! One trait, two stores that pass one test suite: [`disk::DiskMemory`] (a
//! directory, for `centroid run`) and the coordinator's `RedisMemory` (for a
//! farm, under the key prefix).

pub mod disk;
pub mod signature;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::design_point::DesignPoint;
pub use signature::Signature;

/// Cases kept at most by default; beyond, the least used (then oldest) go.
pub const DEFAULT_MAX_CASES: usize = 1000;
/// Failure patterns kept at most by default.
pub const DEFAULT_MAX_FAILURES: usize = 1000;
/// Below this similarity a case is not "similar" (not reused, not shown).
pub const SIMILARITY_FLOOR: f64 = 0.85;

/// A design case: what worked for a circuit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub job_id: String,
    pub circuit: String,
    pub tech: String,
    pub signature: Signature,
    /// the objectives, as submitted
    pub objectives: serde_json::Value,
    /// the best candidate's design point (the design space is global, so the
    /// point applies to every module of a similar circuit as it is)
    pub best_point: DesignPoint,
    pub score: f64,
    pub area_um2: f64,
    /// candidates evaluated before (and including) the first passing one
    pub candidates_to_first_pass: u32,
    /// the best candidate's plan summary
    pub plan_summary: String,
    pub stored_ms: u64,
    /// how often the case was reused (eviction keeps the useful ones)
    #[serde(default)]
    pub uses: u32,
}

/// A failure worth remembering: a job that failed, or a design choice that kept
/// failing on a circuit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailurePattern {
    /// `{job_id}` or `{job_id}/{signature of the failure}`
    pub id: String,
    pub job_id: String,
    pub circuit: String,
    pub tech: String,
    pub signature: Signature,
    /// `drc`, `lvs`, `did_not_run`, … or the job's error code
    pub kind: String,
    pub message: String,
    /// the design point that failed (when one did)
    pub point: Option<DesignPoint>,
    /// the point that passed later in the same job, if any
    pub fixed_by: Option<DesignPoint>,
    pub stored_ms: u64,
}

/// A case found similar to a circuit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recalled {
    pub case: Case,
    pub similarity: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path}: not a Centroid memory ({reason}); refusing to use or replace it — point --memory at another directory or remove it"
    )]
    Foreign { path: PathBuf, reason: String },
    #[error("{path}: unreadable case ({reason}); remove the file or `centroid cases forget` it")]
    Corrupt { path: PathBuf, reason: String },
    /// the store behind the memory failed (a farm's: Redis), or a record could not
    /// be written to it
    #[error("memory on {store}: {source}")]
    Store {
        store: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// What a memory operation returns (stores are used as trait objects; a store
/// that does blocking file I/O answers with a ready future).
pub type MemoryFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, MemoryError>> + Send + 'a>>;

/// The long-term store.
pub trait CaseMemory: Send + Sync + 'static {
    /// Stores (or replaces) the case of `case.job_id`, evicting beyond the cap.
    fn put_case<'a>(&'a self, case: &'a Case) -> MemoryFuture<'a, ()>;
    /// Every case, ordered by job id.
    fn cases(&self) -> MemoryFuture<'_, Vec<Case>>;
    /// `false` when there was no such case.
    fn forget<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, bool>;
    /// Counts one reuse of the case.
    fn used<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, ()>;
    fn put_failure<'a>(&'a self, failure: &'a FailurePattern) -> MemoryFuture<'a, ()>;
    /// Every failure pattern, ordered by id.
    fn failures(&self) -> MemoryFuture<'_, Vec<FailurePattern>>;
    /// Where it lives, for messages.
    fn describe(&self) -> String;
}

/// The cases most similar to `signature` (at least [`SIMILARITY_FLOOR`]), best
/// first (ties by job id), at most `k`; the job's own case is left out.
pub fn most_similar(
    cases: Vec<Case>,
    signature: &Signature,
    job_id: &str,
    k: usize,
) -> Vec<Recalled> {
    let mut recalled: Vec<Recalled> = cases
        .into_iter()
        .filter(|case| case.job_id != job_id)
        .map(|case| Recalled {
            similarity: signature.similarity(&case.signature),
            case,
        })
        .filter(|recalled| recalled.similarity >= SIMILARITY_FLOOR)
        .collect();
    recalled.sort_by(|left, right| {
        right
            .similarity
            .total_cmp(&left.similarity)
            .then(left.case.job_id.cmp(&right.case.job_id))
    });
    recalled.truncate(k);
    recalled
}

/// The failure patterns of circuits similar to `signature`, most similar first.
pub fn similar_failures(
    failures: Vec<FailurePattern>,
    signature: &Signature,
    k: usize,
) -> Vec<(FailurePattern, f64)> {
    let mut similar: Vec<(FailurePattern, f64)> = failures
        .into_iter()
        .map(|failure| {
            let similarity = signature.similarity(&failure.signature);
            (failure, similarity)
        })
        .filter(|(_, similarity)| *similarity >= SIMILARITY_FLOOR)
        .collect();
    similar.sort_by(|left, right| right.1.total_cmp(&left.1).then(left.0.id.cmp(&right.0.id)));
    similar.truncate(k);
    similar
}

/// Which entries to drop to keep `cap`: the least used, then the oldest.
pub fn evicted(cases: &[Case], cap: usize) -> Vec<String> {
    if cases.len() <= cap {
        return Vec::new();
    }
    let mut order: Vec<&Case> = cases.iter().collect();
    order.sort_by(|left, right| {
        left.uses
            .cmp(&right.uses)
            .then(left.stored_ms.cmp(&right.stored_ms))
            .then(left.job_id.cmp(&right.job_id))
    });
    order
        .into_iter()
        .take(cases.len() - cap)
        .map(|case| case.job_id.clone())
        .collect()
}
