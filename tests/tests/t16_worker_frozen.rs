//! Chaos (issue 15): a worker frozen with SIGSTOP past the coordinator's heartbeat
//! timeout (1.5 s in the sandbox; leases lapse after 2.5 s), then thawed with
//! SIGCONT. Its candidate runs again elsewhere; the frozen worker finishes its copy
//! after the thaw and that late result is not counted; the job completes with
//! every candidate exactly once, and the thawed worker registers again.

use std::time::{Duration, Instant};

use centroid_proto::v1::JobEventKind;
use centroid_tests::chaos::{log_lines_with, wait_for_event, worker_health};
use centroid_tests::{
    Sandbox, assert_accounted_once, assert_all_finished, event_data, kind, sleep_job,
    wait_for_running_on,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_worker_s_candidate_runs_elsewhere_and_its_late_result_is_not_counted() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    sandbox.add_worker("w2", 2).await;
    // 3 s candidates: the copy on w2 ends while w2 is frozen, and w2 reads its
    // answer only after the thaw
    let job_id = sandbox.submit_example("ota5", sleep_job(6, 1, 3_000)).await;
    let victim = wait_for_running_on(&sandbox, &job_id, "w2", Duration::from_secs(30)).await;
    // freeze only once w2 really runs it (the request reached the worker)
    let w2_address = sandbox.worker("w2").address.clone();
    let started = Instant::now();
    while !worker_health(&w2_address)
        .await
        .slot_health
        .iter()
        .any(|slot| slot.candidate_id == victim)
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "w2 never ran {victim}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sandbox.worker("w2").freeze();

    // declared dead, its lease lapses, the candidate is dispatched to w1
    wait_for_event(
        &sandbox,
        &job_id,
        Duration::from_secs(60),
        "the frozen worker's candidate dispatched to w1",
        |event| {
            kind(event) == JobEventKind::CandidateDispatched
                && event.candidate_id == victim
                && event_data(event)["worker_id"] == "w1"
        },
    )
    .await;
    sandbox.worker("w2").thaw();

    let done = sandbox.wait_done(&job_id, Duration::from_secs(90)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");

    // the thawed worker reads its child's answer and finishes its copy: a late
    // result the coordinator must not count
    let started = Instant::now();
    while log_lines_with(&sandbox.worker("w2").logs(), &victim, "candidate finished") == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the thawed w2 never finished its copy of {victim}:\n{}",
            sandbox.worker("w2").logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // it comes back: the coordinator hears its heartbeat, it registers again
    sandbox.wait_for_workers(&["w1", "w2"]).await;

    let (job, events) = assert_accounted_once(&sandbox, &job_id).await;
    assert_all_finished(&job);
    let victim_summary = job
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == victim)
        .unwrap();
    assert_eq!(
        victim_summary.worker_id, "w1",
        "the result that counts is w1's, not the thawed w2's"
    );
    let victim_finished = events
        .iter()
        .filter(|event| {
            kind(event) == JobEventKind::CandidateFinished && event.candidate_id == victim
        })
        .collect::<Vec<_>>();
    assert_eq!(victim_finished.len(), 1);
    assert_eq!(event_data(victim_finished[0])["worker_id"], "w1");
    let dispatched_to: Vec<String> = events
        .iter()
        .filter(|event| {
            kind(event) == JobEventKind::CandidateDispatched && event.candidate_id == victim
        })
        .map(|event| event_data(event)["worker_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        dispatched_to.first().map(String::as_str),
        Some("w2"),
        "{dispatched_to:?}"
    );
    assert!(
        events.iter().any(|event| {
            kind(event) == JobEventKind::CandidateRetried && event.candidate_id == victim
        }),
        "the lost try is reported"
    );
    let coordinator_logs = sandbox.coordinator.logs();
    assert!(
        log_lines_with(&coordinator_logs, "declared dead", "w2") >= 1,
        "the coordinator declared the frozen worker dead:\n{coordinator_logs}"
    );
    // the late copy stays out of the store, whatever the worker did with it
    let result = sandbox.redis.cli(&[
        "HGET",
        &format!("{}:job:{job_id}:results", sandbox.prefix),
        &victim,
    ]);
    assert!(result.contains("\"w1\""), "{result}");
    // the thawed worker ends with every slot free
    let started = Instant::now();
    loop {
        let health = worker_health(&w2_address).await;
        if health.free_slots == health.slots {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "w2's slots stay busy: {health:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
