//! The in-process store's job records: jobs, inputs, candidates, results,
//! deliveries, events, artifacts, cancels and worker cards.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{InProcessStore, MAX_EVENTS_PER_JOB, MAX_JOBS, Packed};
use crate::error::StoreResult;
use crate::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, QueueEntry,
    WorkerCard, candidate_listed, result_listed,
};
use crate::store::{JobRecords, ResultIdsSince, missing_candidate};

#[tonic::async_trait]
impl JobRecords for InProcessStore {
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
                inner.finished.remove(&oldest);
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

    async fn active_weight(&self) -> StoreResult<u64> {
        let inner = self.lock();
        Ok(inner
            .active
            .iter()
            .map(|job_id| {
                inner
                    .jobs
                    .get(job_id)
                    .map_or(1, |job| u64::from(job.options.weight()))
            })
            .sum())
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
                weight: job.options.weight(),
            };
            inner.queue.push_back(entry);
        }
        inner.jobs.insert(job.job_id.clone(), job.clone());
        Ok(())
    }

    async fn enqueue_stored(&self, job: &JobRecord, candidate_ids: &[String]) -> StoreResult<()> {
        let mut inner = self.lock();
        let stored = inner.candidates.get(&job.job_id);
        if let Some(missing) = candidate_ids
            .iter()
            .find(|candidate_id| !stored.is_some_and(|stored| stored.contains_key(*candidate_id)))
        {
            return Err(missing_candidate(&job.job_id, missing));
        }
        for candidate_id in candidate_ids {
            inner.next_entry += 1;
            let entry = QueueEntry {
                entry_id: inner.next_entry.to_string(),
                job_id: job.job_id.clone(),
                candidate_id: candidate_id.clone(),
                weight: job.options.weight(),
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
        inner
            .finished
            .entry(job_id.to_string())
            .or_default()
            .push(result.candidate_id.clone());
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

    async fn result_ids_since(&self, job_id: &str, seen: usize) -> StoreResult<ResultIdsSince> {
        let inner = self.lock();
        let finished = inner.finished.get(job_id).map_or(&[][..], Vec::as_slice);
        Ok(ResultIdsSince::New(
            finished.get(seen..).unwrap_or_default().to_vec(),
        ))
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
