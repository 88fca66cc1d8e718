//! Chaos (issue 15): two jobs share the slots; one is cancelled mid-run. The other
//! completes with every candidate exactly once; the cancelled one ends "done" /
//! "cancelled", keeps the candidates that finished before the cancel, and none of
//! its candidates starts on a worker once CancelJob has answered; every slot ends
//! free.

use std::time::{Duration, Instant};

use centroid_proto::v1::{CancelJobRequest, JobEventKind};
use centroid_tests::chaos::{log_lines_with, wait_for_event, worker_health};
use centroid_tests::{
    Sandbox, assert_accounted_once, assert_all_finished, event_data, kind, sleep_job,
};

/// "candidate started" lines of the workers' logs for `job_id`'s candidates.
fn started_on_workers(sandbox: &Sandbox, job_id: &str) -> usize {
    sandbox
        .workers
        .iter()
        .map(|worker| log_lines_with(&worker.logs(), job_id, "candidate started"))
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_one_of_two_jobs_leaves_the_other_whole() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    sandbox.add_worker("w2", 2).await;
    let kept = sandbox.submit_example("ota5", sleep_job(8, 1, 1_200)).await;
    let cancelled = sandbox.submit_example("ota5", sleep_job(8, 1, 1_200)).await;

    // cancel once a candidate of the second job has finished (the rest still runs or waits)
    wait_for_event(
        &sandbox,
        &cancelled,
        Duration::from_secs(60),
        "a candidate of the second job finished",
        |event| kind(event) == JobEventKind::CandidateFinished && event_data(event)["ok"] == true,
    )
    .await;
    let mut jobs = sandbox.client().await.unwrap();
    let answer = jobs
        .cancel_job(CancelJobRequest {
            job_id: cancelled.clone(),
            reason: "chaos test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (answer.state.as_str(), answer.outcome.as_str()),
        ("done", "cancelled")
    );
    let started_when_answered = started_on_workers(&sandbox, &cancelled);
    assert!(
        started_when_answered >= 1,
        "the workers log the candidates they start, with their ids"
    );

    let done = sandbox.wait_done(&kept, Duration::from_secs(90)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    let (kept_job, _) = assert_accounted_once(&sandbox, &kept).await;
    assert_eq!(kept_job.candidates.len(), 8);
    assert_all_finished(&kept_job);

    let cancelled_view = sandbox.wait_done(&cancelled, Duration::from_secs(10)).await;
    let cancelled_summary = cancelled_view.job.clone().unwrap();
    assert_eq!(cancelled_summary.outcome, "cancelled");
    let (cancelled_job, events) = assert_accounted_once(&sandbox, &cancelled).await;
    let finished: Vec<_> = cancelled_job
        .candidates
        .iter()
        .filter(|candidate| candidate.status == "finished")
        .collect();
    assert!(!finished.is_empty(), "{:?}", cancelled_job.candidates);
    for candidate in &finished {
        assert!(
            !candidate.evaluation_json.is_empty(),
            "a candidate finished before the cancel keeps its evaluation: {candidate:?}"
        );
    }
    assert!(
        finished
            .iter()
            .any(|candidate| candidate.candidate_id == cancelled_summary.best_candidate_id),
        "the best is one that finished: {cancelled_summary:?}"
    );
    assert!(
        cancelled_job
            .candidates
            .iter()
            .all(|candidate| ["finished", "abandoned"].contains(&candidate.status.as_str())),
        "{:?}",
        cancelled_job.candidates
    );
    assert!(
        cancelled_job
            .candidates
            .iter()
            .any(|candidate| candidate.status == "abandoned"),
        "the cancel came mid-run"
    );
    assert_eq!(kind(events.last().unwrap()), JobEventKind::Cancelled);
    assert_eq!(
        events
            .iter()
            .skip_while(|event| kind(event) != JobEventKind::Cancelled)
            .filter(|event| kind(event) == JobEventKind::CandidateDispatched)
            .count(),
        0,
        "nothing of the cancelled job dispatched after the cancel"
    );

    // no candidate of the cancelled job started on a worker after the answer, and
    // every slot ends free
    assert_eq!(
        started_on_workers(&sandbox, &cancelled),
        started_when_answered,
        "a candidate of the cancelled job started after CancelJob answered"
    );
    for worker in &sandbox.workers {
        let started = Instant::now();
        loop {
            let health = worker_health(&worker.address).await;
            if health.free_slots == health.slots
                && health
                    .slot_health
                    .iter()
                    .all(|slot| !slot.busy && slot.pid != 0)
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{}'s slots do not end free: {health:?}",
                worker.worker_id
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
