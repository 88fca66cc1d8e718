//! The job and worker records in Redis (keys in the table of `mod.rs`), one file
//! per kind of record: `jobs.rs`, `candidates.rs`, `results.rs`, `delivery.rs`
//! (what a queue entry's delivery reads), `events.rs`, `candidate_writes.rs`
//! (several candidates' events and results in one pipeline), `artifacts.rs`,
//! `workers.rs`. The trait's methods hand over to them.

mod artifacts;
mod candidate_writes;
mod candidates;
mod delivery;
mod events;
mod jobs;
mod results;
mod workers;

use std::collections::HashMap;
use std::time::Duration;

use super::RedisStore;
use crate::error::StoreResult;
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, WorkerCard,
};
use crate::store::{
    CandidateWrite, DispatchReads, JobRecords, ResultIdsSince, ResultsAndCandidates,
};

#[tonic::async_trait]
impl JobRecords for RedisStore {
    async fn create_job(&self, job: &JobRecord, inputs: &JobInputs) -> StoreResult<()> {
        RedisStore::create_job(self, job, inputs).await
    }

    async fn put_job(&self, job: &JobRecord) -> StoreResult<()> {
        RedisStore::put_job(self, job).await
    }

    async fn get_job(&self, job_id: &str) -> StoreResult<Option<JobRecord>> {
        RedisStore::get_job(self, job_id).await
    }

    async fn get_inputs(&self, job_id: &str) -> StoreResult<Option<JobInputs>> {
        RedisStore::get_inputs(self, job_id).await
    }

    async fn list_jobs(&self, limit: usize) -> StoreResult<Vec<JobRecord>> {
        RedisStore::list_jobs(self, limit).await
    }

    async fn active_jobs(&self) -> StoreResult<Vec<String>> {
        RedisStore::active_jobs(self).await
    }

    async fn active_weight(&self) -> StoreResult<u64> {
        RedisStore::active_weight(self).await
    }

    async fn request_cancel(&self, job_id: &str, reason: &str) -> StoreResult<()> {
        RedisStore::request_cancel(self, job_id, reason).await
    }

    async fn cancel_requested(&self, job_id: &str) -> StoreResult<Option<String>> {
        RedisStore::cancel_requested(self, job_id).await
    }

    async fn lease_job(&self, job_id: &str, owner: &str, ttl: Duration) -> StoreResult<bool> {
        RedisStore::lease_job(self, job_id, owner, ttl).await
    }

    async fn release_job(&self, job_id: &str, owner: &str) -> StoreResult<()> {
        RedisStore::release_job(self, job_id, owner).await
    }

    async fn finish_job(&self, job: &JobRecord) -> StoreResult<()> {
        RedisStore::finish_job(self, job).await
    }

    async fn enqueue_iteration(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
        queued: usize,
    ) -> StoreResult<()> {
        RedisStore::enqueue_iteration(self, job, candidates, queued).await
    }

    async fn enqueue_stored(&self, job: &JobRecord, candidate_ids: &[String]) -> StoreResult<()> {
        RedisStore::enqueue_stored(self, job, candidate_ids).await
    }

    async fn put_candidate(&self, candidate: &CandidateRecord) -> StoreResult<()> {
        RedisStore::put_candidate(self, candidate).await
    }

    async fn put_candidates(&self, candidates: &[CandidateRecord]) -> StoreResult<()> {
        RedisStore::put_candidates(self, candidates).await
    }

    async fn put_candidates_reported(
        &self,
        job_id: &str,
        candidates: &[CandidateRecord],
        events: &[EventRecord],
    ) -> StoreResult<()> {
        RedisStore::put_candidates_reported(self, job_id, candidates, events).await
    }

    async fn get_candidates(
        &self,
        job_id: &str,
        candidate_ids: &[String],
    ) -> StoreResult<Vec<Option<CandidateRecord>>> {
        RedisStore::get_candidates(self, job_id, candidate_ids).await
    }

    async fn get_candidate(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateRecord>> {
        RedisStore::get_candidate(self, job_id, candidate_id).await
    }

    async fn candidates(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        RedisStore::candidates(self, job_id).await
    }

    async fn candidate_listing(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        RedisStore::candidate_listing(self, job_id).await
    }

    async fn candidate_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        RedisStore::candidate_ids(self, job_id).await
    }

    async fn get_result(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateResult>> {
        RedisStore::get_result(self, job_id, candidate_id).await
    }

    async fn results_and_candidates(
        &self,
        job_id: &str,
        result_ids: &[String],
        candidate_ids: &[String],
    ) -> StoreResult<ResultsAndCandidates> {
        RedisStore::results_and_candidates(self, job_id, result_ids, candidate_ids).await
    }

    async fn record_result(&self, job_id: &str, result: &CandidateResult) -> StoreResult<bool> {
        RedisStore::record_result(self, job_id, result).await
    }

    async fn record_result_reported(
        &self,
        job_id: &str,
        result: &CandidateResult,
        event: &EventRecord,
    ) -> StoreResult<bool> {
        RedisStore::record_result_reported(self, job_id, result, event).await
    }

    async fn get_results(
        &self,
        job_id: &str,
        candidate_ids: &[String],
    ) -> StoreResult<Vec<Option<CandidateResult>>> {
        RedisStore::get_results(self, job_id, candidate_ids).await
    }

    async fn has_result(&self, job_id: &str, candidate_id: &str) -> StoreResult<bool> {
        RedisStore::has_result(self, job_id, candidate_id).await
    }

    async fn results(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        RedisStore::results(self, job_id).await
    }

    async fn result_listing(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        RedisStore::result_listing(self, job_id).await
    }

    async fn result_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        RedisStore::result_ids(self, job_id).await
    }

    async fn result_ids_since(&self, job_id: &str, seen: usize) -> StoreResult<ResultIdsSince> {
        RedisStore::result_ids_since(self, job_id, seen).await
    }

    async fn candidate_counts(&self, job_id: &str) -> StoreResult<(usize, usize)> {
        RedisStore::candidate_counts(self, job_id).await
    }

    async fn deliver(&self, job_id: &str, candidate_id: &str) -> StoreResult<DispatchReads> {
        RedisStore::deliver(self, job_id, candidate_id).await
    }

    async fn deliver_many(
        &self,
        entries: &[(String, String)],
    ) -> StoreResult<Vec<StoreResult<DispatchReads>>> {
        RedisStore::deliver_many(self, entries).await
    }

    async fn write_candidates(
        &self,
        writes: &[CandidateWrite],
    ) -> StoreResult<Vec<StoreResult<bool>>> {
        RedisStore::write_candidates(self, writes).await
    }

    async fn bump_deliveries(&self, job_id: &str, candidate_id: &str) -> StoreResult<u32> {
        RedisStore::bump_deliveries(self, job_id, candidate_id).await
    }

    async fn append_event(&self, job_id: &str, event: &EventRecord) -> StoreResult<String> {
        RedisStore::append_event(self, job_id, event).await
    }

    async fn append_events(&self, job_id: &str, events: &[EventRecord]) -> StoreResult<()> {
        RedisStore::append_events(self, job_id, events).await
    }

    async fn events_after(
        &self,
        job_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, EventRecord)>> {
        RedisStore::events_after(self, job_id, after, limit).await
    }

    async fn put_artifact(
        &self,
        job_id: &str,
        meta: &ArtifactMeta,
        content: &[u8],
    ) -> StoreResult<()> {
        RedisStore::put_artifact(self, job_id, meta, content).await
    }

    async fn delete_candidate_artifacts(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<()> {
        RedisStore::delete_candidate_artifacts(self, job_id, candidate_id).await
    }

    async fn artifacts(&self, job_id: &str) -> StoreResult<Vec<ArtifactMeta>> {
        RedisStore::artifacts(self, job_id).await
    }

    async fn get_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        RedisStore::get_artifact(self, job_id, candidate_id, name).await
    }

    async fn put_worker_card(&self, card: &WorkerCard, ttl: Duration) -> StoreResult<()> {
        RedisStore::put_worker_card(self, card, ttl).await
    }

    async fn worker_cards(&self) -> StoreResult<Vec<WorkerCard>> {
        RedisStore::worker_cards(self).await
    }
}
