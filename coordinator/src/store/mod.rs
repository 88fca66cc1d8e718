//! Where the coordinator keeps its short-term memory (seed 000 §4.4.1) and its
//! work queue: jobs, inputs, candidates, results, events, artifacts, and the
//! candidate queue with leases.
//!
//! Two implementations behave the same (one test suite runs against both):
//! [`redis::RedisStore`] for a farm (the queue is a Redis Stream with a consumer
//! group), [`in_process::InProcessStore`] for `centroid run` on one machine.
//!
//! Queue semantics (at-least-once with leases): an entry read by a consumer stays
//! pending under that consumer until acknowledged. The consumer renews the lease
//! of the entries it is working on; an entry whose lease was not renewed for
//! `min_idle` is handed to whoever reclaims it (XAUTOCLAIM), with its delivery
//! counter bumped.

pub mod in_process;
pub mod redis;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::error::StoreResult;
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, QueueEntry,
    WorkerCard,
};

/// Results and candidates read together ([`JobRecords::results_and_candidates`]),
/// `None` where one is not stored.
pub type ResultsAndCandidates = (Vec<Option<CandidateResult>>, Vec<Option<CandidateRecord>>);

/// The records of jobs and workers: jobs with their inputs, candidates, results,
/// events and artifacts, the job and worker leases.
#[tonic::async_trait]
pub trait JobRecords: Send + Sync + 'static {
    /// Writes a new job with its inputs and marks it active.
    async fn create_job(&self, job: &JobRecord, inputs: &JobInputs) -> StoreResult<()>;
    async fn put_job(&self, job: &JobRecord) -> StoreResult<()>;
    async fn get_job(&self, job_id: &str) -> StoreResult<Option<JobRecord>>;
    async fn get_inputs(&self, job_id: &str) -> StoreResult<Option<JobInputs>>;
    /// Most recent first.
    async fn list_jobs(&self, limit: usize) -> StoreResult<Vec<JobRecord>>;
    /// Ids of the jobs not finished yet (a restarted coordinator resumes them).
    async fn active_jobs(&self) -> StoreResult<Vec<String>>;
    /// The sum of the weights ([`JobOptions::weight`](crate::model::JobOptions::weight))
    /// of the jobs not finished yet: what a job's share of the slots is a part of.
    async fn active_weight(&self) -> StoreResult<u64>;
    /// Records a cancellation request apart from the job record (which the job's
    /// driver rewrites on every transition, so a flag in it could be overwritten).
    async fn request_cancel(&self, job_id: &str, reason: &str) -> StoreResult<()>;
    /// The cancellation reason, when one was requested.
    async fn cancel_requested(&self, job_id: &str) -> StoreResult<Option<String>>;
    /// Takes or renews the lease on driving a job: `true` when `owner` holds it for
    /// `ttl` from now (it was free, expired, or already `owner`'s). One coordinator
    /// drives a job at a time; another takes over when the lease lapses.
    async fn lease_job(&self, job_id: &str, owner: &str, ttl: Duration) -> StoreResult<bool>;
    /// Gives the lease up if `owner` holds it.
    async fn release_job(&self, job_id: &str, owner: &str) -> StoreResult<()>;
    /// Writes the finished job and removes it from the active set.
    async fn finish_job(&self, job: &JobRecord) -> StoreResult<()>;

    /// Atomically: writes the candidates, enqueues a queue entry for each of the
    /// first `queued` of them, and writes the job record (which says how many of
    /// the iteration are enqueued). Writing a candidate again is harmless.
    async fn enqueue_iteration(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
        queued: usize,
    ) -> StoreResult<()>;
    /// Atomically: enqueues a queue entry for each of the job's stored candidates
    /// `candidate_ids` and writes the job record — a round's top-up, its
    /// candidates stored when it was drafted (none read or written again). When one
    /// of them is not stored, nothing is written: [`StoreError::Missing`](crate::error::StoreError::Missing)
    /// names it.
    async fn enqueue_stored(&self, job: &JobRecord, candidate_ids: &[String]) -> StoreResult<()> {
        let stored = self.get_candidates(&job.job_id, candidate_ids).await?;
        let mut candidates = Vec::with_capacity(stored.len());
        for (candidate_id, candidate) in candidate_ids.iter().zip(stored) {
            candidates.push(candidate.ok_or_else(|| missing_candidate(&job.job_id, candidate_id))?);
        }
        self.enqueue_iteration(job, &candidates, candidates.len())
            .await
    }
    async fn put_candidate(&self, candidate: &CandidateRecord) -> StoreResult<()>;
    async fn get_candidate(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateRecord>>;
    /// Writes several candidates (one store call in Redis).
    async fn put_candidates(&self, candidates: &[CandidateRecord]) -> StoreResult<()> {
        for candidate in candidates {
            self.put_candidate(candidate).await?;
        }
        Ok(())
    }
    /// Writes several candidates of job `job_id` and appends `events` to its log
    /// (the Redis store: one atomic round trip, all or none) — evaluations stored
    /// with their events.
    async fn put_candidates_reported(
        &self,
        job_id: &str,
        candidates: &[CandidateRecord],
        events: &[EventRecord],
    ) -> StoreResult<()> {
        self.put_candidates(candidates).await?;
        self.append_events(job_id, events).await
    }
    /// Several candidates of a job, in the order of `candidate_ids` (one store call
    /// in Redis).
    async fn get_candidates(
        &self,
        job_id: &str,
        candidate_ids: &[String],
    ) -> StoreResult<Vec<Option<CandidateRecord>>> {
        let mut candidates = Vec::with_capacity(candidate_ids.len());
        for candidate_id in candidate_ids {
            candidates.push(self.get_candidate(job_id, candidate_id).await?);
        }
        Ok(candidates)
    }
    async fn candidates(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>>;
    /// The job's candidates sorted by id, without their plans
    /// ([`crate::model::candidate_listed`]).
    async fn candidate_listing(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>>;
    /// Ids of the job's candidates, sorted (cheap: no records, no plans).
    async fn candidate_ids(&self, job_id: &str) -> StoreResult<Vec<String>>;

    /// Records a result unless one is recorded already; `true` when this call recorded it.
    async fn record_result(&self, job_id: &str, result: &CandidateResult) -> StoreResult<bool>;
    /// As [`JobRecords::record_result`], and when this call recorded the result,
    /// appends `event` to the job's log in the same store call (the Redis store: one
    /// round trip, both or neither); `true` when this call recorded it.
    async fn record_result_reported(
        &self,
        job_id: &str,
        result: &CandidateResult,
        event: &EventRecord,
    ) -> StoreResult<bool> {
        let first = self.record_result(job_id, result).await?;
        if first {
            self.append_event(job_id, event).await?;
        }
        Ok(first)
    }
    async fn has_result(&self, job_id: &str, candidate_id: &str) -> StoreResult<bool>;
    async fn results(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>>;
    /// The job's results without the steps' data and the plans
    /// ([`crate::model::result_listed`]).
    async fn result_listing(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>>;
    /// One candidate's result, if it has one.
    async fn get_result(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateResult>>;
    /// Several results of a job, in the order of `candidate_ids` (one store call in
    /// Redis).
    async fn get_results(
        &self,
        job_id: &str,
        candidate_ids: &[String],
    ) -> StoreResult<Vec<Option<CandidateResult>>> {
        let mut results = Vec::with_capacity(candidate_ids.len());
        for candidate_id in candidate_ids {
            results.push(self.get_result(job_id, candidate_id).await?);
        }
        Ok(results)
    }
    /// The results of `result_ids` and the stored candidates (with their plans) of
    /// `candidate_ids`, each in its order: what evaluating arrived results reads,
    /// as one store call (the Redis store: both HMGETs in one round trip).
    async fn results_and_candidates(
        &self,
        job_id: &str,
        result_ids: &[String],
        candidate_ids: &[String],
    ) -> StoreResult<ResultsAndCandidates> {
        Ok((
            self.get_results(job_id, result_ids).await?,
            self.get_candidates(job_id, candidate_ids).await?,
        ))
    }
    /// Ids of the candidates with a result (cheap: no result bodies).
    async fn result_ids(&self, job_id: &str) -> StoreResult<Vec<String>>;
    /// The ids of the results recorded after the first `seen` of the job's results,
    /// in the order they were recorded — what a reader that keeps the ids it has
    /// seen (the job's driver, looking every few ms) needs, instead of every id of
    /// the job at each look. A store that keeps no order (or whose order misses a
    /// result) answers with every id ([`ResultIdsSince::All`]).
    async fn result_ids_since(&self, job_id: &str, seen: usize) -> StoreResult<ResultIdsSince> {
        let _ = seen;
        let ids = self.result_ids(job_id).await?;
        Ok(ResultIdsSince::All {
            next: ids.len(),
            ids,
        })
    }
    /// (candidates, candidates with a result) of a job, without reading the bodies.
    async fn candidate_counts(&self, job_id: &str) -> StoreResult<(usize, usize)> {
        Ok((
            self.candidates(job_id).await?.len(),
            self.result_ids(job_id).await?.len(),
        ))
    }
    /// A delivery of a queue entry: bumps the candidate's delivery counter and reads
    /// what the dispatcher needs before it runs the candidate, as one store call
    /// (the Redis store sends the five commands in one pipeline: one round trip
    /// per delivery instead of five).
    async fn deliver(&self, job_id: &str, candidate_id: &str) -> StoreResult<DispatchReads> {
        Ok(DispatchReads {
            deliveries: self.bump_deliveries(job_id, candidate_id).await?,
            job: self.get_job(job_id).await?.map(Arc::new),
            cancel: self.cancel_requested(job_id).await?,
            candidate: self.get_candidate(job_id, candidate_id).await?,
            has_result: self.has_result(job_id, candidate_id).await?,
        })
    }
    /// The deliveries of several queue entries (`(job_id, candidate_id)` each) as
    /// one store call (the Redis store: one pipeline for them all): each entry's
    /// [`JobRecords::deliver`], in order. The outer error is the call's (nothing
    /// is known of what it did); an inner one is that entry's own (a record that
    /// does not parse).
    async fn deliver_many(
        &self,
        entries: &[(String, String)],
    ) -> StoreResult<Vec<StoreResult<DispatchReads>>> {
        let mut reads = Vec::with_capacity(entries.len());
        for (job_id, candidate_id) in entries {
            reads.push(Ok(self.deliver(job_id, candidate_id).await?));
        }
        Ok(reads)
    }
    /// Several candidates' writes as one store call (the Redis store: one pipeline;
    /// each write atomic by itself): each write's outcome, in order — for an event
    /// `true` once appended, for a result whether this call recorded it
    /// ([`JobRecords::record_result_reported`]). The outer error is the call's; an
    /// inner one that write's own (the others were done).
    async fn write_candidates(
        &self,
        writes: &[CandidateWrite],
    ) -> StoreResult<Vec<StoreResult<bool>>> {
        let mut outcomes = Vec::with_capacity(writes.len());
        for write in writes {
            outcomes.push(Ok(match write {
                CandidateWrite::Event { job_id, event } => {
                    self.append_event(job_id, event).await?;
                    true
                }
                CandidateWrite::Result {
                    job_id,
                    result,
                    event,
                } => self.record_result_reported(job_id, result, event).await?,
            }));
        }
        Ok(outcomes)
    }
    /// The delivery counter of a candidate: incremented on every delivery, returns the new value.
    async fn bump_deliveries(&self, job_id: &str, candidate_id: &str) -> StoreResult<u32>;

    /// Appends to the job's event log; returns the event's cursor.
    async fn append_event(&self, job_id: &str, event: &EventRecord) -> StoreResult<String>;
    /// Appends several events to the job's log, in order, as one store call (the
    /// Redis store: one atomic round trip).
    async fn append_events(&self, job_id: &str, events: &[EventRecord]) -> StoreResult<()> {
        for event in events {
            self.append_event(job_id, event).await?;
        }
        Ok(())
    }
    /// Events after `after` (all when `None`), oldest first, at most `limit`.
    async fn events_after(
        &self,
        job_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, EventRecord)>>;

    async fn put_artifact(
        &self,
        job_id: &str,
        meta: &ArtifactMeta,
        content: &[u8],
    ) -> StoreResult<()>;
    async fn delete_candidate_artifacts(&self, job_id: &str, candidate_id: &str)
    -> StoreResult<()>;
    async fn artifacts(&self, job_id: &str) -> StoreResult<Vec<ArtifactMeta>>;
    async fn get_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> StoreResult<Option<Vec<u8>>>;

    /// Publishes a worker's card for `ttl` (refreshed while it heartbeats).
    async fn put_worker_card(&self, card: &WorkerCard, ttl: Duration) -> StoreResult<()>;
    /// Cards of the workers seen within their ttl, by any coordinator.
    async fn worker_cards(&self) -> StoreResult<Vec<WorkerCard>>;
}

/// A candidate a job's round names that is not stored.
pub(crate) fn missing_candidate(job_id: &str, candidate_id: &str) -> crate::error::StoreError {
    crate::error::StoreError::Missing {
        key: format!("job {job_id} candidate {candidate_id}"),
    }
}

/// The result ids a reader has not seen yet ([`JobRecords::result_ids_since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultIdsSince {
    /// the ids recorded after the first `seen`, oldest first: the reader now has
    /// seen `seen + new.len()`
    New(Vec<String>),
    /// every result id of the job (the order kept does not cover them all); the
    /// reader's next read starts at `next`
    All { ids: Vec<String>, next: usize },
}

/// A delivery's count and the records its candidate needs before it runs
/// ([`JobRecords::deliver`]).
#[derive(Debug, Clone)]
pub struct DispatchReads {
    /// the delivery counter after this delivery
    pub deliveries: u32,
    /// shared: the Redis store parses a job's record again only when it changed
    pub job: Option<Arc<JobRecord>>,
    /// the cancellation reason, when one was requested
    pub cancel: Option<String>,
    pub candidate: Option<CandidateRecord>,
    pub has_result: bool,
}

/// One write of a candidate's dispatch ([`JobRecords::write_candidates`]).
#[derive(Debug, Clone)]
pub enum CandidateWrite {
    /// an event appended to the job's log
    Event { job_id: String, event: EventRecord },
    /// a result recorded unless one is, with its event when this write records it
    /// (boxed: a result is far larger than an event)
    Result {
        job_id: String,
        result: Box<CandidateResult>,
        event: EventRecord,
    },
}

/// The work queue of candidates: at-least-once delivery with leases, a delivery
/// counter per candidate (in [`JobRecords`]) and a dead-letter stream.
#[tonic::async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    /// New entries for `consumer` (never delivered before), at most `count`.
    async fn queue_read(&self, consumer: &str, count: usize) -> StoreResult<Vec<QueueEntry>>;
    /// Entries whose lease was not renewed for `min_idle`, now owned by `consumer`.
    async fn queue_reclaim(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> StoreResult<Vec<QueueEntry>>;
    /// Renews the leases of entries `consumer` is working on.
    async fn queue_renew(&self, consumer: &str, entry_ids: &[String]) -> StoreResult<()>;
    async fn queue_ack(&self, entry_id: &str) -> StoreResult<()>;
    /// Acknowledges several entries (the Redis store: one XACK).
    async fn queue_ack_all(&self, entry_ids: &[String]) -> StoreResult<()> {
        for entry_id in entry_ids {
            self.queue_ack(entry_id).await?;
        }
        Ok(())
    }
    /// Moves an entry to the dead-letter stream and acknowledges it.
    async fn dead_letter(&self, entry: &QueueEntry, reason: &str) -> StoreResult<()>;
    /// Dead-lettered entries as (job_id, candidate_id, reason).
    async fn dead_letters(&self, limit: usize) -> StoreResult<Vec<(String, String, String)>>;
    /// Entries pending (delivered, not acknowledged) across all consumers.
    async fn queue_pending_count(&self) -> StoreResult<u64>;
    /// Entries not delivered to any consumer yet (what an autoscaler scales on).
    async fn queue_waiting_count(&self) -> StoreResult<u64>;
}

/// Everything the coordinator keeps: the records and the queue.
pub trait Store: JobRecords + WorkQueue {}

impl<T: JobRecords + WorkQueue> Store for T {}

pub use in_process::InProcessStore;
pub use redis::RedisStore;
