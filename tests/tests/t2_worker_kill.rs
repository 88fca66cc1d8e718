//! Acceptance 2: `kill -9` of a worker mid-job → the job completes and every
//! candidate is accounted for exactly once.

use std::time::Duration;

use centroid_proto::v1::JobEventKind;
use centroid_tests::{
    Sandbox, assert_accounted_once, assert_all_finished, event_data, kind, sleep_job,
    wait_for_running_on,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_killed_mid_job_its_candidates_run_elsewhere_once() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    sandbox.add_worker("w2", 2).await;
    let job_id = sandbox.submit_example("ota5", sleep_job(6, 1, 1500)).await;
    let victim = wait_for_running_on(&sandbox, &job_id, "w2", Duration::from_secs(30)).await;
    sandbox.worker("w2").kill9();
    let done = sandbox.wait_done(&job_id, Duration::from_secs(90)).await;
    assert_eq!(
        done.job.as_ref().unwrap().outcome,
        "completed",
        "{:?}",
        done.job
    );
    let (job, events) = assert_accounted_once(&sandbox, &job_id).await;
    let victim_summary = job
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == victim)
        .unwrap();
    assert_eq!(victim_summary.status, "finished");
    assert_eq!(
        victim_summary.worker_id, "w1",
        "the killed worker's candidate ran on the other one"
    );
    for candidate in &job.candidates {
        assert_eq!(candidate.status, "finished", "{candidate:?}");
    }
    let retried = events
        .iter()
        .filter(|event| {
            kind(event) == JobEventKind::CandidateRetried && event.candidate_id == victim
        })
        .count();
    let dispatched_to: Vec<String> = events
        .iter()
        .filter(|event| {
            kind(event) == JobEventKind::CandidateDispatched && event.candidate_id == victim
        })
        .map(|event| {
            event_data(event)["worker_id"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    sandbox.dump_logs();
    assert!(
        retried >= 1 && dispatched_to.first().map(String::as_str) == Some("w2"),
        "retried {retried}, dispatched to {dispatched_to:?}"
    );
}

/// The same with real KLayout plans (routed OTA candidates of ~0.5 s each).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_killed_during_real_layout_candidates_the_job_still_completes_clean() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    sandbox.add_worker("w2", 1).await;
    let job_id = sandbox
        .submit_example("ota5", centroid_tests::small_job(4, 1, 9))
        .await;
    wait_for_running_on(&sandbox, &job_id, "w2", Duration::from_secs(60)).await;
    sandbox.worker("w2").kill9();
    let done = sandbox.wait_done(&job_id, Duration::from_secs(180)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    let (job, _) = assert_accounted_once(&sandbox, &job_id).await;
    assert_all_finished(&job);
    let best = job
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == summary.best_candidate_id)
        .unwrap();
    assert_eq!(best.drc_violations, 0);
}
