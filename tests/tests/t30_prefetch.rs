//! Prefetch (issue 29): the coordinator puts a job's next candidates in a
//! worker's waiting room only when the job's candidates are short
//! (`prefetch_below_ms`). Real Redis, the real coordinator and a simulated worker
//! (real gRPC, at most `--slots` candidates at once); the worker's own count of
//! the most calls it held at once (Health `most_admitted`) tells whether any
//! call waited in it.

use std::time::Duration;

use centroid_tests::chaos::worker_health;
use centroid_tests::simulated_worker::{SimulatedWorkerProcess, wait_registered};
use centroid_tests::{Sandbox, assert_all_finished, sleep_job};

const SLOTS: u32 = 2;

/// Runs a noop job of `candidates` on one simulated worker of [`SLOTS`] slots
/// (and as many waiting places) answering after `delay_ms`; returns the most
/// calls the worker held at once.
async fn most_held(coordinator_flags: &[&str], delay_ms: u64, candidates: u32) -> u32 {
    let sandbox = Sandbox::start(coordinator_flags);
    let mut worker = SimulatedWorkerProcess::start(
        sandbox.dir.path(),
        &sandbox.coordinator.url(),
        "sim-prefetch",
        SLOTS,
        delay_ms,
    );
    wait_registered(&sandbox.coordinator.url(), &["sim-prefetch".to_string()]).await;
    let job_id = sandbox
        .submit_example("ota5", sleep_job(candidates, 1, 0))
        .await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(120)).await;
    assert_eq!(
        done.job.as_ref().unwrap().outcome,
        "completed",
        "{:?}\n{}",
        done.job,
        worker.logs()
    );
    assert_eq!(done.candidates.len(), candidates as usize);
    assert_all_finished(&done);
    let health = worker_health(&worker.address).await;
    assert_eq!(
        (health.slots, health.prefetch),
        (SLOTS, SLOTS),
        "{health:?}"
    );
    worker.stop();
    health.most_admitted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_short_candidates_keeps_more_calls_on_a_worker_than_its_slots() {
    // 100 ms candidates, below the default prefetch_below_ms (1,000 ms)
    let most = most_held(&[], 100, 30).await;
    assert!(
        most > SLOTS,
        "the worker held at most {most} calls: nothing waited for its {SLOTS} slots"
    );
    assert!(most <= 2 * SLOTS, "{most} calls: beyond slots + prefetch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_long_candidates_never_keeps_more_calls_on_a_worker_than_its_slots() {
    // 300 ms candidates, above a prefetch_below_ms of 200 ms
    let most = most_held(&["--prefetch-below-ms", "200"], 300, 12).await;
    assert_eq!(most, SLOTS, "a call waited in the worker for a long job");
}
