//! Acceptance 6: no worker registered → the job waits, then runs when a worker joins.

use std::time::Duration;

use centroid_proto::v1::JobEventKind;
use centroid_tests::{Sandbox, kind, small_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_waits_for_a_worker_then_runs() {
    let mut sandbox = Sandbox::start(&[]);
    // bad inputs are refused at once with their structured issues
    let mut client = sandbox.client().await.unwrap();
    let dir = centroid_tests::repository_root().join("examples/ota5");
    let status = client
        .submit_job(centroid_proto::v1::SubmitJobRequest {
            netlist_json: std::fs::read_to_string(dir.join("netlist.json")).unwrap(),
            drc_rules_json: "{\"schema_version\": \"1.0.0\"}".into(),
            objectives_json: std::fs::read_to_string(dir.join("objectives.json")).unwrap(),
            options: None,
            name: String::new(),
            testbench_sp: String::new(),
        })
        .await
        .expect_err("bad rules refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let error = centroid_proto::Error::from_status(&status);
    let issues = error.details()["issues"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        !issues.is_empty()
            && issues
                .iter()
                .all(|issue| issue["file"] == "drc_rules.json" && issue["pointer"].is_string()),
        "{issues:?}"
    );

    let job_id = sandbox.submit_example("ota5", small_job(2, 1, 3)).await;
    let waiting = sandbox
        .wait_until(&job_id, Duration::from_secs(10), "job waiting", |job| {
            job.job.as_ref().is_some_and(|job| job.state == "planning")
        })
        .await;
    assert_eq!(waiting.job.unwrap().candidates_finished, 0);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = sandbox.get_job(&job_id).await.job.unwrap();
    assert_eq!(still.state, "planning", "no worker: the job keeps waiting");
    sandbox.add_worker("late", 2).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(120)).await;
    let summary = done.job.unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    assert!(summary.best_passed);
    let events = sandbox.events(&job_id).await;
    let waited = events
        .iter()
        .position(|event| kind(event) == JobEventKind::WaitingForWorkers)
        .expect("a waiting event");
    let planned = events
        .iter()
        .position(|event| kind(event) == JobEventKind::PlanCreated)
        .expect("a plan");
    assert!(waited < planned);
    assert!(
        done.candidates
            .iter()
            .all(|candidate| candidate.worker_id == "late")
    );
}
