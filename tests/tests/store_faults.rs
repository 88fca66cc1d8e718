//! The coordinator's one store-error policy, on a real job: the coordinator
//! library with a store that fails on purpose (our in-process store behind a
//! wrapper that injects errors), serving gRPC on loopback to a real
//! `centroid-worker` with real KLayout processes.
//!
//! - A transient error (a connection reset) at the job's end is retried: the
//!   job completes as it would have, its layout kept — not "failed: no
//!   candidate produced a layout".
//! - A corrupt record fails the job, naming the record; the driver moves on and
//!   the coordinator runs the next job to its end.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use centroid_coordinator::error::{StoreError, StoreResult};
use centroid_coordinator::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, EventRecord, JobInputs, JobRecord, Outcome,
    QueueEntry, WorkerCard,
};
use centroid_coordinator::store::{InProcessStore, JobRecords, WorkQueue};
use centroid_coordinator::{Coordinator, CoordinatorConfig, SubmitOptions, service};
use centroid_tests::{WorkerProcess, repository_root};

/// The in-process store, with errors injected on purpose.
#[derive(Default)]
struct FaultyStore {
    inner: InProcessStore,
    /// store calls (by method name) that fail once, transiently, when next made
    blip_once: Mutex<HashSet<&'static str>>,
    /// calls made, by method name
    calls: Mutex<HashMap<&'static str, u32>>,
    /// candidates whose result reads as a corrupt record
    corrupt_results: Mutex<HashSet<String>>,
}

impl FaultyStore {
    /// Counts the call; the injected blip when `method` is armed.
    fn call(&self, method: &'static str) -> StoreResult<()> {
        *self.calls.lock().unwrap().entry(method).or_default() += 1;
        if self.blip_once.lock().unwrap().remove(method) {
            let reset = std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                format!("injected: connection reset during {method}"),
            );
            return Err(StoreError::Redis(reset.into()));
        }
        Ok(())
    }

    fn arm(&self, method: &'static str) {
        self.blip_once.lock().unwrap().insert(method);
    }

    fn calls(&self, method: &'static str) -> u32 {
        self.calls.lock().unwrap().get(method).copied().unwrap_or(0)
    }

    fn corrupt(&self, candidate_id: &str) -> StoreResult<()> {
        if self.corrupt_results.lock().unwrap().contains(candidate_id) {
            return Err(StoreError::Corrupt {
                key: format!("result {candidate_id}"),
                message: "expected value at line 1 column 1".into(),
            });
        }
        Ok(())
    }
}

#[tonic::async_trait]
impl JobRecords for FaultyStore {
    async fn create_job(&self, job: &JobRecord, inputs: &JobInputs) -> StoreResult<()> {
        self.call("create_job")?;
        self.inner.create_job(job, inputs).await
    }
    async fn put_job(&self, job: &JobRecord) -> StoreResult<()> {
        self.call("put_job")?;
        self.inner.put_job(job).await
    }
    async fn get_job(&self, job_id: &str) -> StoreResult<Option<JobRecord>> {
        self.call("get_job")?;
        self.inner.get_job(job_id).await
    }
    async fn get_inputs(&self, job_id: &str) -> StoreResult<Option<JobInputs>> {
        self.call("get_inputs")?;
        self.inner.get_inputs(job_id).await
    }
    async fn list_jobs(&self, limit: usize) -> StoreResult<Vec<JobRecord>> {
        self.inner.list_jobs(limit).await
    }
    async fn active_jobs(&self) -> StoreResult<Vec<String>> {
        self.inner.active_jobs().await
    }
    async fn active_weight(&self) -> StoreResult<u64> {
        self.inner.active_weight().await
    }
    async fn request_cancel(&self, job_id: &str, reason: &str) -> StoreResult<()> {
        self.inner.request_cancel(job_id, reason).await
    }
    async fn cancel_requested(&self, job_id: &str) -> StoreResult<Option<String>> {
        self.inner.cancel_requested(job_id).await
    }
    async fn lease_job(&self, job_id: &str, owner: &str, ttl: Duration) -> StoreResult<bool> {
        self.inner.lease_job(job_id, owner, ttl).await
    }
    async fn release_job(&self, job_id: &str, owner: &str) -> StoreResult<()> {
        self.inner.release_job(job_id, owner).await
    }
    async fn finish_job(&self, job: &JobRecord) -> StoreResult<()> {
        self.call("finish_job")?;
        self.inner.finish_job(job).await
    }
    async fn enqueue_iteration(
        &self,
        job: &JobRecord,
        candidates: &[CandidateRecord],
        queued: usize,
    ) -> StoreResult<()> {
        self.inner.enqueue_iteration(job, candidates, queued).await
    }
    async fn put_candidate(&self, candidate: &CandidateRecord) -> StoreResult<()> {
        self.inner.put_candidate(candidate).await
    }
    async fn get_candidate(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateRecord>> {
        self.inner.get_candidate(job_id, candidate_id).await
    }
    async fn candidates(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.inner.candidates(job_id).await
    }
    async fn candidate_listing(&self, job_id: &str) -> StoreResult<Vec<CandidateRecord>> {
        self.inner.candidate_listing(job_id).await
    }
    async fn candidate_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        self.inner.candidate_ids(job_id).await
    }
    async fn record_result(&self, job_id: &str, result: &CandidateResult) -> StoreResult<bool> {
        self.inner.record_result(job_id, result).await
    }
    async fn has_result(&self, job_id: &str, candidate_id: &str) -> StoreResult<bool> {
        self.inner.has_result(job_id, candidate_id).await
    }
    async fn results(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        self.call("results")?;
        self.inner.results(job_id).await
    }
    async fn result_listing(&self, job_id: &str) -> StoreResult<HashMap<String, CandidateResult>> {
        self.call("result_listing")?;
        self.inner.result_listing(job_id).await
    }
    async fn get_result(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<Option<CandidateResult>> {
        self.corrupt(candidate_id)?;
        self.inner.get_result(job_id, candidate_id).await
    }
    async fn result_ids(&self, job_id: &str) -> StoreResult<Vec<String>> {
        self.inner.result_ids(job_id).await
    }
    async fn bump_deliveries(&self, job_id: &str, candidate_id: &str) -> StoreResult<u32> {
        self.inner.bump_deliveries(job_id, candidate_id).await
    }
    async fn append_event(&self, job_id: &str, event: &EventRecord) -> StoreResult<String> {
        self.inner.append_event(job_id, event).await
    }
    async fn events_after(
        &self,
        job_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<(String, EventRecord)>> {
        self.inner.events_after(job_id, after, limit).await
    }
    async fn put_artifact(
        &self,
        job_id: &str,
        meta: &ArtifactMeta,
        content: &[u8],
    ) -> StoreResult<()> {
        self.inner.put_artifact(job_id, meta, content).await
    }
    async fn delete_candidate_artifacts(
        &self,
        job_id: &str,
        candidate_id: &str,
    ) -> StoreResult<()> {
        self.inner
            .delete_candidate_artifacts(job_id, candidate_id)
            .await
    }
    async fn artifacts(&self, job_id: &str) -> StoreResult<Vec<ArtifactMeta>> {
        self.inner.artifacts(job_id).await
    }
    async fn get_artifact(
        &self,
        job_id: &str,
        candidate_id: &str,
        name: &str,
    ) -> StoreResult<Option<Vec<u8>>> {
        self.inner.get_artifact(job_id, candidate_id, name).await
    }
    async fn put_worker_card(&self, card: &WorkerCard, ttl: Duration) -> StoreResult<()> {
        self.inner.put_worker_card(card, ttl).await
    }
    async fn worker_cards(&self) -> StoreResult<Vec<WorkerCard>> {
        self.inner.worker_cards().await
    }
}

#[tonic::async_trait]
impl WorkQueue for FaultyStore {
    async fn queue_read(&self, consumer: &str, count: usize) -> StoreResult<Vec<QueueEntry>> {
        self.inner.queue_read(consumer, count).await
    }
    async fn queue_reclaim(
        &self,
        consumer: &str,
        min_idle: Duration,
        count: usize,
    ) -> StoreResult<Vec<QueueEntry>> {
        self.inner.queue_reclaim(consumer, min_idle, count).await
    }
    async fn queue_renew(&self, consumer: &str, entry_ids: &[String]) -> StoreResult<()> {
        self.inner.queue_renew(consumer, entry_ids).await
    }
    async fn queue_ack(&self, entry_id: &str) -> StoreResult<()> {
        self.inner.queue_ack(entry_id).await
    }
    async fn dead_letter(&self, entry: &QueueEntry, reason: &str) -> StoreResult<()> {
        self.inner.dead_letter(entry, reason).await
    }
    async fn dead_letters(&self, limit: usize) -> StoreResult<Vec<(String, String, String)>> {
        self.inner.dead_letters(limit).await
    }
    async fn queue_pending_count(&self) -> StoreResult<u64> {
        self.inner.queue_pending_count().await
    }
    async fn queue_waiting_count(&self) -> StoreResult<u64> {
        self.inner.queue_waiting_count().await
    }
}

/// The five-transistor OTA; with `unreachable_area` its `max_area` constraint
/// cannot be met, so no candidate passes and the search ends by concluding
/// (any layout → completed) at its last iteration.
fn ota5(unreachable_area: bool) -> JobInputs {
    let dir = repository_root().join("examples/ota5");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let mut objectives: serde_json::Value = serde_json::from_str(&read("objectives.json")).unwrap();
    if unreachable_area {
        objectives["constraints"]["max_area"] = serde_json::json!(1);
    }
    JobInputs {
        netlist_json: read("netlist.json"),
        drc_rules_json: read("drc_rules.json"),
        objectives_json: objectives.to_string(),
        testbench_sp: String::new(),
    }
}

fn options(seed: u64) -> SubmitOptions {
    SubmitOptions {
        candidates_per_iteration: 2,
        max_iterations: 1,
        seed,
        ..SubmitOptions::default()
    }
}

/// The coordinator on `store`, serving on loopback, and a real worker with one
/// KLayout process registered with it.
async fn cluster(store: Arc<FaultyStore>, dir: &std::path::Path) -> (Coordinator, WorkerProcess) {
    std::fs::create_dir_all(dir).unwrap();
    let config = CoordinatorConfig {
        listen: "127.0.0.1:0".into(),
        redis: "memory".into(),
        ..CoordinatorConfig::default()
    };
    let (listener, address) = service::bind(&config.listen).await.unwrap();
    let coordinator = Coordinator::start(config, store).await.unwrap();
    tokio::spawn(service::serve(
        coordinator.clone(),
        listener,
        std::future::pending(),
    ));
    let worker = WorkerProcess::start(dir, &format!("http://{address}"), "faults-w1", 1);
    for _ in 0..600 {
        if coordinator.registry().alive_count() > 0 {
            return (coordinator, worker);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the worker did not register:\n{}", worker.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_blip_at_the_end_is_retried_and_a_corrupt_record_fails_only_its_job() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FaultyStore::default());
    let (coordinator, worker) = cluster(store.clone(), &dir.path().join("blip")).await;

    // a blip as the job concludes (reading the results) and as it is finished
    store.arm("result_listing");
    store.arm("finish_job");
    let submitted = coordinator.submit(ota5(true), options(3)).await.unwrap();
    let job = coordinator
        .wait(&submitted.job_id, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(
        job.outcome(),
        Some(Outcome::Completed),
        "a blip must not fail the job: {job:?}\n{}",
        worker.logs()
    );
    assert!(!job.best_passed, "max_area 1 µm² cannot be met");
    assert_eq!(
        job.error, "max_iterations (1) reached; the best candidate did not pass",
        "concluded on the real results, not on an empty read"
    );
    assert!(store.calls("result_listing") >= 2, "the blip was retried");
    assert!(store.calls("finish_job") >= 2, "the blip was retried");
    let view = coordinator.get(&submitted.job_id).await.unwrap();
    assert!(
        view.artifacts
            .iter()
            .any(|artifact| artifact.candidate_id == job.best_candidate_id
                && artifact.name.ends_with(".gds")),
        "the best layout is kept: {:?}",
        view.artifacts
    );

    coordinator.shutdown().await;
    drop(worker);

    // a corrupt record: the job fails naming it
    let corrupt = Arc::new(FaultyStore::default());
    let (coordinator, worker) = cluster(corrupt.clone(), &dir.path().join("corrupt")).await;
    let submitted = coordinator.submit(ota5(false), options(4)).await.unwrap();
    let bad_candidate = format!("{}-i0-c1", submitted.job_id);
    corrupt
        .corrupt_results
        .lock()
        .unwrap()
        .insert(bad_candidate.clone());
    let job = coordinator
        .wait(&submitted.job_id, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(job.outcome(), Some(Outcome::Failed), "{job:?}");
    assert!(
        job.error.contains("corrupt record") && job.error.contains(&bad_candidate),
        "the error names the record: {}",
        job.error
    );

    // the driver moved on: the next job on the same coordinator completes
    let next = coordinator.submit(ota5(false), options(5)).await.unwrap();
    let job = coordinator
        .wait(&next.job_id, Duration::from_secs(120))
        .await
        .unwrap();
    assert_eq!(
        job.outcome(),
        Some(Outcome::Completed),
        "{job:?}\n{}",
        worker.logs()
    );
    assert!(job.best_passed, "{job:?}");
    coordinator.shutdown().await;
}
