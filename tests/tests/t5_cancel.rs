//! Acceptance 5: cancel → the job's candidates stop being dispatched, in-flight
//! ones are abandoned (the RPC is dropped; the slot frees when the worker's run
//! ends, see the report) and the job ends as cancelled.

use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{CancelJobRequest, HealthRequest, JobEventKind};
use centroid_tests::{Sandbox, kind, sleep_job, wait_for_running_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_job_ends_cancelled_and_frees_the_workers() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    sandbox.add_worker("w2", 1).await;
    let job_id = sandbox.submit_example("ota5", sleep_job(6, 3, 2000)).await;
    wait_for_running_on(&sandbox, &job_id, "w1", Duration::from_secs(30)).await;
    let mut client = sandbox.client().await.unwrap();
    let cancelled_at = Instant::now();
    client.cancel_job(CancelJobRequest { job_id: job_id.clone(), reason: "test".into() }).await.unwrap();
    let done = sandbox.wait_done(&job_id, Duration::from_secs(30)).await;
    assert!(cancelled_at.elapsed() < Duration::from_secs(5), "cancellation took {:?}", cancelled_at.elapsed());
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "cancelled", "{summary:?}");
    let abandoned = done.candidates.iter().filter(|candidate| candidate.status == "abandoned").count();
    assert!(abandoned >= 4, "unfinished candidates are abandoned: {:?}", done.candidates);
    let (_, events) = centroid_tests::assert_accounted_once(&sandbox, &job_id).await;
    assert_eq!(kind(events.last().unwrap()), JobEventKind::Cancelled);
    let finished_after_cancel = events
        .iter()
        .skip_while(|event| kind(event) != JobEventKind::Cancelled)
        .filter(|event| kind(event) == JobEventKind::CandidateDispatched)
        .count();
    assert_eq!(finished_after_cancel, 0, "nothing dispatched after the cancellation");
    // the workers end up idle: nothing of the job runs on them any more
    for worker in &sandbox.workers {
        let mut worker_client = WorkerClient::connect(worker.address.clone()).await.unwrap();
        let started = Instant::now();
        loop {
            let health = worker_client.health(HealthRequest {}).await.unwrap().into_inner();
            if health.free_slots == health.slots {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "{} still busy: {health:?}", worker.worker_id);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // a new job still runs on the same workers
    let next = sandbox.submit_example("ota5", sleep_job(2, 1, 10)).await;
    let next_done = sandbox.wait_done(&next, Duration::from_secs(30)).await;
    assert_eq!(next_done.job.unwrap().outcome, "completed");
}
