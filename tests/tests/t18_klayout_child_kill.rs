//! Chaos (issue 15): the KLayout child of a worker's slot is SIGKILLed while a
//! real-layout candidate runs on it. The candidate fails as SERVICE_UNAVAILABLE
//! and is retried; while the worker starts a fresh child the coordinator backs off
//! instead of hammering it (the issue: one killed child once caused a burst of 56
//! RESOURCE_EXHAUSTED retries); the job completes clean and the worker keeps
//! serving on the new child.

use std::time::{Duration, Instant};

use centroid_proto::v1::{JobEvent, JobEventKind};
use centroid_tests::chaos::{retried, wait_for_event, worker_health};
use centroid_tests::{Sandbox, assert_accounted_once, kind, small_job};

/// At most this many CandidateRetried events for the whole job: the retry of the
/// killed candidate and at most a couple of capacity refusals while the child restarts.
const MAX_RETRIES: usize = 3;

/// Polls the worker until a candidate (not a probe) has a step running on its
/// only slot; returns (candidate id, child pid).
async fn wait_for_a_running_step(address: &str, after_calls: u64) -> (String, u32) {
    let started = Instant::now();
    loop {
        let health = worker_health(address).await;
        let slot = &health.slot_health[0];
        if slot.busy
            && !slot.candidate_id.is_empty()
            && !slot.candidate_id.ends_with("-probe")
            && slot.calls_forwarded > after_calls
            && slot.pid != 0
        {
            return (slot.candidate_id.clone(), slot.pid);
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no candidate step ran: {health:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn is_victim_retry_or_end(event: &JobEvent, victim: &str) -> bool {
    event.candidate_id == victim
        && matches!(
            kind(event),
            JobEventKind::CandidateRetried | JobEventKind::CandidateFinished
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_klayout_child_costs_one_retry_and_a_fresh_child() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    let address = sandbox.worker("w1").address.clone();
    let before = worker_health(&address).await.slot_health[0].clone();
    let job_id = sandbox.submit_example("ota5", small_job(4, 1, 42)).await;

    // kill the child while a step of a candidate runs on it; should the candidate
    // end in the instant before the kill lands, the next one is the victim
    let mut calls = before.calls_forwarded;
    let mut victim = None;
    let mut kills = 0;
    for _ in 0..3 {
        let (candidate_id, pid) = wait_for_a_running_step(&address, calls).await;
        // SAFETY: kill(2) on the worker's child, a process of this test's tree.
        unsafe {
            libc::kill(pid as i32, libc::SIGKILL);
        }
        kills += 1;
        eprintln!("killed the child {pid} while {candidate_id} ran");
        let outcome = wait_for_event(
            &sandbox,
            &job_id,
            Duration::from_secs(60),
            "the killed candidate retried or finished",
            |event| is_victim_retry_or_end(event, &candidate_id),
        )
        .await;
        if kind(&outcome) == JobEventKind::CandidateRetried {
            assert!(
                outcome.message.starts_with("SERVICE_UNAVAILABLE"),
                "a dead child is SERVICE_UNAVAILABLE: {}",
                outcome.message
            );
            victim = Some((candidate_id, pid));
            break;
        }
        calls = worker_health(&address).await.slot_health[0].calls_forwarded;
    }
    let (victim, killed_pid) = victim.expect("a kill landed mid-candidate");

    let done = sandbox.wait_done(&job_id, Duration::from_secs(180)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    let (job, events) = assert_accounted_once(&sandbox, &job_id).await;
    assert!(
        job.candidates
            .iter()
            .all(|candidate| candidate.status == "finished" && candidate.worker_id == "w1"),
        "{:?}",
        job.candidates
    );
    let best = job
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == summary.best_candidate_id)
        .expect("a best candidate");
    assert_eq!(best.drc_violations, 0, "{best:?}");
    assert_eq!(best.lvs, "match", "{best:?}");
    let victim_summary = job
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == victim)
        .unwrap();
    assert_eq!(victim_summary.status, "finished", "{victim_summary:?}");

    // retried, with back-off: no burst of capacity refusals
    let retries = retried(&events);
    let described: Vec<String> = retries
        .iter()
        .map(|event| format!("{}: {}", event.candidate_id, event.message))
        .collect();
    eprintln!("retries: {described:#?}");
    assert!(
        retries.iter().any(|event| event.candidate_id == victim),
        "{described:?}"
    );
    assert!(
        retries.len() <= MAX_RETRIES,
        "{} retries after one killed child: {described:#?}",
        retries.len()
    );

    // the worker serves on a fresh child
    let after = worker_health(&address).await;
    let slot = &after.slot_health[0];
    assert_ne!(slot.pid, killed_pid, "{after:?}");
    assert_ne!(slot.pid, 0, "{after:?}");
    assert_eq!(
        slot.restarts,
        before.restarts + kills,
        "one new child per kill: {after:?}"
    );
    assert_eq!(after.free_slots, 1, "{after:?}");
    let next = sandbox
        .submit_example("ota5", centroid_tests::sleep_job(2, 1, 10))
        .await;
    let next_done = sandbox.wait_done(&next, Duration::from_secs(60)).await;
    assert_eq!(next_done.job.unwrap().outcome, "completed");
    assert!(
        worker_health(&address).await.slot_health[0].calls_forwarded > slot.calls_forwarded,
        "the new child ran the next job's candidates"
    );
}
