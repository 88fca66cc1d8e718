//! Two coordinators share one Redis (one queue, one consumer group): a job
//! submitted to the coordinator without workers is driven by it (it holds the job
//! lease) while its candidates run through the other coordinator's workers.

use std::time::Duration;

use centroid_proto::v1::{GetJobRequest, SubmitJobRequest};
use centroid_tests::{
    CANDIDATE_EVENTS_LOGGED, CoordinatorProcess, Sandbox, client_for, repository_root, sleep_job,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_submitted_to_a_coordinator_without_workers_runs_on_the_other_ones() {
    // the dispatches' log lines (per candidate: debug) are what tells who dispatched
    let mut sandbox = Sandbox::start_with_log_filter(&[], CANDIDATE_EVENTS_LOGGED);
    sandbox.add_worker("w1", 2).await;
    let second = CoordinatorProcess::start_with_log_filter(
        &sandbox.dir.path().join("second"),
        &sandbox.redis.url(),
        &sandbox.prefix,
        "coordinator-second",
        &[],
        CANDIDATE_EVENTS_LOGGED,
    );
    let mut client = client_for(&second.url()).await.unwrap();
    let dir = repository_root().join("examples/ota5");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let job_id = client
        .submit_job(SubmitJobRequest {
            netlist_json: read("netlist.json"),
            drc_rules_json: read("drc_rules.json"),
            objectives_json: read("objectives.json"),
            options: Some(sleep_job(4, 2, 200)),
            name: "shared".into(),
            testbench_sp: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let started = std::time::Instant::now();
    let job = loop {
        let job = client
            .get_job(GetJobRequest {
                job_id: job_id.clone(),
            })
            .await
            .unwrap()
            .into_inner();
        if job.job.as_ref().is_some_and(|job| job.state == "done") {
            break job;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not done: {:?}\n{}\n{}",
            job.job,
            second.logs(),
            sandbox.coordinator.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    if std::env::var_os("SHOW_LOGS").is_some() {
        eprintln!(
            "--- second ---\n{}\n--- first ---\n{}",
            second.logs(),
            sandbox.coordinator.logs()
        );
    }
    assert_eq!(job.job.as_ref().unwrap().outcome, "completed");
    assert_eq!(job.candidates.len(), 8);
    assert!(
        job.candidates
            .iter()
            .all(|candidate| candidate.worker_id == "w1" && candidate.status == "finished")
    );
    assert!(
        sandbox
            .coordinator
            .logs()
            .contains("event=CandidateDispatched"),
        "the first coordinator dispatched"
    );
    assert!(
        !second.logs().contains("event=CandidateDispatched"),
        "the second has no workers: it dispatched nothing"
    );
    // the first coordinator sees the same job (shared store)
    let seen = sandbox.get_job(&job_id).await;
    assert_eq!(seen.job.unwrap().outcome, "completed");
}
