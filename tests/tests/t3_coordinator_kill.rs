//! Acceptance 3: `kill -9` of the coordinator mid-job, then a restart → the job
//! resumes (state from Redis, lapsed leases reclaimed) and completes.

use std::time::Duration;

use centroid_tests::{Sandbox, assert_accounted_once, sleep_job, wait_for_running_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_killed_mid_job_resumes_after_restart() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    sandbox.add_worker("w2", 2).await;
    let job_id = sandbox.submit_example("ota5", sleep_job(4, 2, 1200)).await;
    wait_for_running_on(&sandbox, &job_id, "w1", Duration::from_secs(30)).await;
    sandbox.coordinator.kill9();
    let before = sandbox
        .redis
        .cli(&["GET", &format!("{}:job:{job_id}", sandbox.prefix)]);
    assert!(
        before.contains("\"executing\""),
        "the job was executing when killed: {before}"
    );
    sandbox.coordinator.restart();
    sandbox.wait_for_workers(&["w1", "w2"]).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(120)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    assert_eq!(summary.iteration, 1, "both iterations ran");
    let (job, _) = assert_accounted_once(&sandbox, &job_id).await;
    assert_eq!(job.candidates.len(), 8);
    let logs = sandbox.coordinator.logs();
    assert!(
        logs.contains("resuming job"),
        "the restarted coordinator resumed the job"
    );
    assert!(
        logs.contains("reclaimed a lapsed lease"),
        "in-flight entries of the killed coordinator were reclaimed:\n{logs}"
    );
}
