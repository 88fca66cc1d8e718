//! Chaos (issue 15): the coordinator reaches worker w2 only through a loopback
//! proxy (w2 registers with the proxy's address). Mid-job the proxy turns into a
//! blackhole — connections stay open, every byte is dropped, nothing is reset —
//! while w2 keeps heartbeating directly, so the coordinator still believes it
//! alive. Its calls to w2 must end anyway (they have deadlines; HTTP/2 keep-alive
//! notices the dead connection) and be retried. Then the proxy heals: the job
//! completes with every candidate exactly once, and w2 serves again through it.

use std::time::Duration;

use centroid_proto::v1::{JobEventKind, JobOptions};
use centroid_tests::chaos::{add_worker_behind_proxy, retried, wait_for_event};
use centroid_tests::{
    Sandbox, assert_accounted_once, assert_all_finished, event_data, kind, sleep_job,
    wait_for_running_on,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_worker_s_candidates_are_retried_and_the_job_completes_once_healed() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    let proxy = add_worker_behind_proxy(&mut sandbox, "w2", 2).await;
    assert!(
        proxy.forwarded_bytes() > 0,
        "the coordinator talks to w2 through the proxy (ListSkills)"
    );

    let options = JobOptions {
        // bounds a call that nothing else ends
        candidate_deadline_ms: 30_000,
        ..sleep_job(8, 1, 1_500)
    };
    let job_id = sandbox.submit_example("ota5", options).await;
    let victim = wait_for_running_on(&sandbox, &job_id, "w2", Duration::from_secs(30)).await;
    proxy.blackhole();

    // the coordinator gives up on the call it made through the blackhole and
    // retries the candidate (the deadline or the keep-alive ends the call)
    let retry = wait_for_event(
        &sandbox,
        &job_id,
        Duration::from_secs(60),
        "the blackholed candidate retried",
        |event| kind(event) == JobEventKind::CandidateRetried && event.candidate_id == victim,
    )
    .await;
    eprintln!("retried through the blackhole: {}", retry.message);
    assert!(proxy.dropped_bytes() > 0, "the blackhole swallowed bytes");
    proxy.heal();

    let done = sandbox.wait_done(&job_id, Duration::from_secs(90)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    let (job, events) = assert_accounted_once(&sandbox, &job_id).await;
    assert_eq!(job.candidates.len(), 8);
    assert_all_finished(&job);
    let retries = retried(&events);
    eprintln!(
        "retries: {:?}",
        retries
            .iter()
            .map(|event| (&event.candidate_id, &event.message))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        events
            .iter()
            .filter(|event| kind(event) == JobEventKind::CandidateDispatched
                && event.candidate_id == victim)
            .map(|event| event_data(event)["worker_id"].clone())
            .next()
            .unwrap(),
        "w2"
    );

    // healed: w2 is listed alive again and runs candidates through the proxy
    sandbox.wait_for_workers(&["w1", "w2"]).await;
    let forwarded_before = proxy.forwarded_bytes();
    let next = sandbox.submit_example("ota5", sleep_job(4, 1, 500)).await;
    let next_done = sandbox.wait_done(&next, Duration::from_secs(60)).await;
    assert_eq!(next_done.job.clone().unwrap().outcome, "completed");
    let (next_job, _) = assert_accounted_once(&sandbox, &next).await;
    assert!(
        next_job
            .candidates
            .iter()
            .any(|candidate| candidate.worker_id == "w2" && candidate.status == "finished"),
        "w2 serves again once healed: {:?}",
        next_job.candidates
    );
    assert!(proxy.forwarded_bytes() > forwarded_before);
}
