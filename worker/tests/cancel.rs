//! `Worker.CancelCandidate` on the real `centroid-worker` binary with real KLayout
//! skill servers: a running candidate is stopped at once (its process group is
//! killed), its RunCandidate fails with CANCELLED, and the slot serves again on a
//! fresh process; an unknown candidate is not found.

mod common;

use std::time::{Duration, Instant};

use centroid_proto::v1::CancelCandidateRequest;
use centroid_proto::{Error, ErrorCode};
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_candidate_stops_at_once_and_the_slot_serves_the_next_one() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;

    let victim = spawn_sleeping_candidate(&client, "sleeper", 120_000, 60);
    let (pid, _) = wait_until_running(&mut client, "sleeper", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    let cancelled_at = Instant::now();
    let cancelled = client
        .cancel_candidate(CancelCandidateRequest {
            candidate_id: "sleeper".into(),
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.found);
    let status = victim.await.unwrap().expect_err("the candidate must fail");
    let answered_after = cancelled_at.elapsed();
    assert!(
        answered_after < Duration::from_secs(2),
        "CANCELLED after {answered_after:?}"
    );
    assert_eq!(status.code(), tonic::Code::Cancelled);
    let error = Error::from_status(&status);
    assert_eq!(error.error_code(), ErrorCode::Cancelled, "{error:?}");
    assert!(!error.retryable);
    assert_eq!(error.details()["step_id"], "s1");
    assert!(error.message.contains("test"), "{error:?}");

    // a repeated cancel is a no-op
    let again = client
        .cancel_candidate(CancelCandidateRequest {
            candidate_id: "sleeper".into(),
            reason: "again".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!again.found);

    let health = wait_for_fresh_process(&mut client, pid).await;
    assert_eq!(health.slot_health[0].restarts, 1);
    assert!(
        !process_is_alive(pid),
        "the cancelled process must be killed"
    );

    let next = run(
        &mut client,
        candidate("next", 30_000, vec![step("s1", "debug.noop", json!({}))]),
    )
    .await
    .expect("the next candidate runs");
    assert!(next.ok, "{next:?}");
    let logs = worker.logs();
    assert!(logs.contains("cancelling candidate"), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_an_unknown_candidate_finds_nothing_and_changes_nothing() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    let before = health(&mut client).await;
    let response = client
        .cancel_candidate(CancelCandidateRequest {
            candidate_id: "nobody".into(),
            reason: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!response.found);
    let after = health(&mut client).await;
    assert_eq!(after.free_slots, 1);
    assert_eq!(after.slot_health[0].pid, before.slot_health[0].pid);
    assert_eq!(after.slot_health[0].restarts, 0);

    let status = client
        .cancel_candidate(CancelCandidateRequest {
            candidate_id: String::new(),
            reason: String::new(),
        })
        .await
        .expect_err("an empty id is refused");
    assert_eq!(
        Error::from_status(&status).error_code(),
        ErrorCode::InvalidParam
    );
}
