//! Never "clean" without proof (issue 11): a job submitted right after another job
//! was cancelled used to find the worker replacing its KLayout processes; its
//! routing-pitch probe was refused (RESOURCE_EXHAUSTED), the job drew unrouted
//! layouts that LVS never saw, and the report said "passed". Now the probe waits
//! and retries like any candidate, and a candidate passes only when DRC ran clean
//! and LVS ran and matched.

use std::time::Duration;

use centroid_proto::v1::{CancelJobRequest, JobEventKind};
use centroid_tests::{Sandbox, event_data, kind, small_job, wait_for_running_on};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_after_a_cancelled_one_is_routed_and_passes_only_with_lvs() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;

    // a large job keeps both slots busy, then is cancelled: its candidates are
    // killed and the worker replaces the KLayout processes
    let large = sandbox
        .submit_example("miller_ota", small_job(60, 1, 3))
        .await;
    wait_for_running_on(&sandbox, &large, "w1", Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut jobs = sandbox.client().await.unwrap();
    jobs.cancel_job(CancelJobRequest {
        job_id: large.clone(),
        reason: "test".into(),
    })
    .await
    .unwrap();

    // at once, the next job
    let job_id = sandbox.submit_example("ota5", small_job(8, 1, 5)).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(240)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(
        summary.outcome,
        "completed",
        "{summary:?}\n{}",
        sandbox.coordinator.logs()
    );

    let events = sandbox.events(&job_id).await;
    let probed = events
        .iter()
        .find(|event| event.message == "probed the rule set (routing pitch, devices)")
        .expect("the rule set was probed");
    assert!(
        event_data(probed)["route_pitch_um"]
            .as_f64()
            .is_some_and(|pitch| pitch > 0.0),
        "the probe waited for a slot instead of giving up: {}",
        event_data(probed)
    );
    assert_eq!(
        event_data(probed)["undrawable"],
        serde_json::json!([]),
        "every device of the OTA can be drawn"
    );

    // every passing candidate was checked by DRC and LVS; the best passed that way
    let evaluated: Vec<_> = done
        .candidates
        .iter()
        .filter(|candidate| !candidate.evaluation_json.is_empty())
        .collect();
    assert!(!evaluated.is_empty());
    for candidate in &evaluated {
        if candidate.passed {
            assert_eq!(candidate.drc_violations, 0, "{candidate:?}");
            assert_eq!(
                candidate.lvs, "match",
                "passed without an LVS match: {candidate:?}"
            );
        }
    }
    assert!(summary.best_passed, "{summary:?}");
    let best = evaluated
        .iter()
        .find(|candidate| candidate.candidate_id == summary.best_candidate_id)
        .expect("best candidate");
    assert_eq!(best.lvs, "match");
    assert!(
        events
            .iter()
            .any(|event| kind(event) == JobEventKind::Completed)
    );

    let large_done = sandbox.wait_done(&large, Duration::from_secs(60)).await;
    assert_eq!(large_done.job.unwrap().outcome, "cancelled");
}
