//! Acceptance 5: cancel → the workers stop its candidates and the job ends as
//! cancelled. Candidates that sleep 60 s are running on both workers when the job
//! is cancelled: nothing more is dispatched, the coordinator tells each worker to
//! stop its candidate (Worker.CancelCandidate), every worker has all its slots free
//! again within seconds — on a fresh KLayout process — and a new job runs on them.

use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{
    CancelJobRequest, HealthRequest, HealthResponse, JobEventKind, JobOptions, ListJobsRequest,
};
use centroid_tests::{Sandbox, kind, sleep_job};
use tonic::transport::Channel;

/// A sleeping candidate outlives the test by far unless the worker stops it.
const SLEEP_MS: u64 = 60_000;
/// "Within a few seconds": a slot is free again on a fresh process well before the sleep ends.
const FREED_WITHIN: Duration = Duration::from_secs(10);

async fn health(client: &mut WorkerClient<Channel>) -> HealthResponse {
    client
        .health(HealthRequest {})
        .await
        .expect("worker health")
        .into_inner()
}

/// Waits until the worker's only slot runs a candidate that has reached its sleep.
async fn wait_until_sleeping(
    client: &mut WorkerClient<Channel>,
    worker_id: &str,
    calls_before: u64,
) -> HealthResponse {
    let started = Instant::now();
    loop {
        let health = health(client).await;
        let slot = &health.slot_health[0];
        if slot.busy && !slot.candidate_id.is_empty() && slot.calls_forwarded > calls_before {
            return health;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no candidate is sleeping on {worker_id}: {health:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_the_candidates_on_the_workers_and_the_job_ends_cancelled() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    sandbox.add_worker("w2", 1).await;
    let mut worker_clients = Vec::new();
    for worker in &sandbox.workers {
        let mut client = WorkerClient::connect(worker.address.clone()).await.unwrap();
        let before = health(&mut client).await;
        worker_clients.push((worker.worker_id.clone(), client, before));
    }

    // four 60 s candidates on two one-slot workers: two run, two wait in the queue
    let options = JobOptions {
        candidate_deadline_ms: 120_000,
        ..sleep_job(4, 1, SLEEP_MS)
    };
    let job_id = sandbox.submit_example("ota5", options).await;
    let mut running = Vec::new();
    for (worker_id, client, before) in &mut worker_clients {
        let health =
            wait_until_sleeping(client, worker_id, before.slot_health[0].calls_forwarded).await;
        running.push(health.slot_health[0].candidate_id.clone());
    }

    let mut jobs = sandbox.client().await.unwrap();
    let cancelled_at = Instant::now();
    jobs.cancel_job(CancelJobRequest {
        job_id: job_id.clone(),
        reason: "test".into(),
    })
    .await
    .unwrap();
    let done = sandbox.wait_done(&job_id, Duration::from_secs(30)).await;
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(5),
        "cancellation took {:?}",
        cancelled_at.elapsed()
    );
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "cancelled", "{summary:?}");
    assert!(
        done.candidates
            .iter()
            .all(|candidate| candidate.status == "abandoned"),
        "every candidate, running or queued, is abandoned: {:?}",
        done.candidates
    );
    assert_eq!(done.candidates.len(), 4);
    let (_, events) = centroid_tests::assert_accounted_once(&sandbox, &job_id).await;
    assert_eq!(kind(events.last().unwrap()), JobEventKind::Cancelled);
    let dispatched_after_cancel = events
        .iter()
        .skip_while(|event| kind(event) != JobEventKind::Cancelled)
        .filter(|event| kind(event) == JobEventKind::CandidateDispatched)
        .count();
    assert_eq!(
        dispatched_after_cancel, 0,
        "nothing dispatched after the cancellation"
    );

    // ListJobs counts the candidates like GetJob
    let listed = jobs
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap()
        .into_inner();
    let listed = listed
        .jobs
        .iter()
        .find(|job| job.job_id == job_id)
        .expect("the job is listed");
    assert_eq!(
        (listed.candidates_total, listed.candidates_finished),
        (4, 4),
        "{listed:?}"
    );
    assert_eq!(
        (summary.candidates_total, summary.candidates_finished),
        (4, 4),
        "{summary:?}"
    );

    // the workers stopped the sleeping candidates: every slot is free again within
    // seconds (the sleeps had ~60 s to go), on a fresh KLayout process
    for (worker_id, client, before) in &mut worker_clients {
        let started = Instant::now();
        let after = loop {
            let health = health(client).await;
            if health.free_slots == health.slots && health.slot_health[0].pid != 0 {
                break health;
            }
            assert!(
                cancelled_at.elapsed() < FREED_WITHIN,
                "{worker_id} still busy {:?} after the cancellation: {health:?}",
                started.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let (old, new) = (&before.slot_health[0], &after.slot_health[0]);
        assert_eq!(
            new.restarts,
            old.restarts + 1,
            "{worker_id}'s child was replaced: {after:?}"
        );
        assert_ne!(new.pid, old.pid, "{worker_id} runs a new process");
        assert!(new.candidate_id.is_empty());
    }
    assert!(cancelled_at.elapsed() < FREED_WITHIN);
    let coordinator_logs = sandbox.coordinator.logs();
    for candidate_id in &running {
        assert!(
            coordinator_logs
                .lines()
                .any(|line| line.contains("worker stopped the candidate")
                    && line.contains(candidate_id.as_str())),
            "the coordinator cancelled {candidate_id} on its worker:\n{coordinator_logs}"
        );
    }

    // a new job runs on the same workers
    let next = sandbox.submit_example("ota5", sleep_job(2, 1, 10)).await;
    let next_done = sandbox.wait_done(&next, Duration::from_secs(30)).await;
    assert_eq!(next_done.job.unwrap().outcome, "completed");
    assert!(
        next_done
            .candidates
            .iter()
            .all(|candidate| candidate.status == "finished"
                && ["w1", "w2"].contains(&candidate.worker_id.as_str())),
        "{:?}",
        next_done.candidates
    );
}
