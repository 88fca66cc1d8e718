//! Acceptance 4: a Redis restart mid-job (AOF on) → the job completes.

use std::time::Duration;

use centroid_tests::{Sandbox, assert_accounted_once, sleep_job, wait_for_running_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restart_mid_job_the_job_completes() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    sandbox.add_worker("w2", 2).await;
    let job_id = sandbox.submit_example("ota5", sleep_job(4, 2, 1200)).await;
    wait_for_running_on(&sandbox, &job_id, "w2", Duration::from_secs(30)).await;
    sandbox.redis.restart(Duration::from_millis(1500));
    let done = sandbox.wait_done(&job_id, Duration::from_secs(120)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(
        summary.outcome,
        "completed",
        "{summary:?}\n{}",
        sandbox.coordinator.logs()
    );
    let (job, _) = assert_accounted_once(&sandbox, &job_id).await;
    assert_eq!(job.candidates.len(), 8);
    assert!(
        sandbox.coordinator.logs().contains("store unavailable"),
        "the coordinator saw redis go away"
    );
}
