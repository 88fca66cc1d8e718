//! A worker's waiting room (`--prefetch`), on the real `centroid-worker` binary
//! — with real KLayout skill servers, and in its simulation mode — over real gRPC:
//! with 1 slot and 1 waiting place two concurrent calls both run, the second
//! only once the first ended; a third is refused RESOURCE_EXHAUSTED; a waiting
//! call cancelled answers CANCELLED and never runs; a draining worker answers
//! its waiting call SERVICE_UNAVAILABLE, retryable.

mod common;

use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{CancelCandidateRequest, DrainRequest, RunCandidateResponse};
use centroid_proto::{Error, ErrorCode};
use common::*;
use tonic::transport::Channel;

/// The slot time of every candidate of these tests.
const SLOT_SECONDS: u64 = 1;

/// The real worker: KLayout skill servers, one slot, one waiting place.
fn real_worker() -> WorkerProcess {
    WorkerProcess::start(&["--slots", "1", "--prefetch", "1"])
}

/// The simulated worker: no KLayout, candidates answered after the slot time.
fn simulated_worker() -> WorkerProcess {
    let delay_ms = (SLOT_SECONDS * 1_000).to_string();
    WorkerProcess::start(&[
        "--slots",
        "1",
        "--prefetch",
        "1",
        "--simulate-candidate-ms",
        &delay_ms,
    ])
}

/// A call in the background; yields its outcome and when it was answered.
fn spawn_call(
    client: &WorkerClient<Channel>,
    candidate_id: &str,
) -> tokio::task::JoinHandle<(Result<RunCandidateResponse, tonic::Status>, Instant)> {
    let mut client = client.clone();
    let request = sleep_candidate(candidate_id, 60_000, serde_json::json!(SLOT_SECONDS));
    tokio::spawn(async move {
        let outcome = run(&mut client, request).await;
        (outcome, Instant::now())
    })
}

async fn wait_for_one_waiting(client: &mut WorkerClient<Channel>) {
    wait_for_health(
        client,
        Duration::from_secs(30),
        "a call waiting",
        |health| health.free_slots == 0 && health.waiting == 1,
    )
    .await;
}

async fn two_calls_run_one_after_the_other_and_a_third_is_refused(worker: &WorkerProcess) {
    let mut client = worker.client().await;
    let sent = Instant::now();
    let first = spawn_call(&client, "first");
    wait_for_health(
        &mut client,
        Duration::from_secs(30),
        "first running",
        |health| health.free_slots == 0,
    )
    .await;
    let second = spawn_call(&client, "second");
    wait_for_one_waiting(&mut client).await;

    let refused_at = Instant::now();
    let status = run(
        &mut client,
        sleep_candidate("third", 60_000, serde_json::json!(SLOT_SECONDS)),
    )
    .await
    .expect_err("no slot and no waiting place");
    assert!(
        refused_at.elapsed() < Duration::from_millis(500),
        "refused at once"
    );
    let error = Error::from_status(&status);
    assert_eq!(
        error.error_code(),
        ErrorCode::ResourceExhausted,
        "{error:?}"
    );
    assert!(error.retryable);

    let (first, first_answered) = first.await.unwrap();
    let first = first.expect("the first call runs");
    let (second, second_answered) = second.await.unwrap();
    let second = second.expect("the waiting call runs");
    assert!(first.ok && second.ok, "{first:?} {second:?}");
    let slot_ms = SLOT_SECONDS * 1_000;
    // duration_ms is the slot's time, not the wait
    for response in [&first, &second] {
        assert!(
            response.duration_ms >= slot_ms && response.duration_ms < 2 * slot_ms,
            "{response:?}"
        );
    }
    // the second started only after the first ended: it was answered a whole
    // slot time after the first
    let between = second_answered.duration_since(first_answered);
    assert!(
        between >= Duration::from_millis(second.duration_ms),
        "the second was answered {between:?} after the first, its slot time is {} ms",
        second.duration_ms
    );
    assert!(
        second_answered.duration_since(sent)
            >= Duration::from_millis(first.duration_ms + second.duration_ms),
        "the two ran one after the other"
    );
    let health = health(&mut client).await;
    assert_eq!((health.prefetch, health.waiting), (1, 0), "{health:?}");
    assert_eq!(health.most_admitted, 2, "{health:?}");
}

async fn a_cancelled_waiting_call_answers_cancelled_and_never_runs(worker: &WorkerProcess) {
    let mut client = worker.client().await;
    let first = spawn_call(&client, "first");
    wait_for_health(
        &mut client,
        Duration::from_secs(30),
        "first running",
        |health| health.free_slots == 0,
    )
    .await;
    let waiting = spawn_call(&client, "waiting");
    wait_for_one_waiting(&mut client).await;
    let cancelled_at = Instant::now();
    let cancelled = client
        .cancel_candidate(CancelCandidateRequest {
            candidate_id: "waiting".into(),
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.found);
    let (outcome, answered) = waiting.await.unwrap();
    let status = outcome.expect_err("cancelled");
    assert!(answered.duration_since(cancelled_at) < Duration::from_millis(500));
    let error = Error::from_status(&status);
    assert_eq!(error.error_code(), ErrorCode::Cancelled, "{error:?}");
    assert!(!error.retryable);

    let (first, first_answered) = first.await.unwrap();
    assert!(first.expect("the running call is not disturbed").ok);
    let health = wait_for_health(
        &mut client,
        Duration::from_secs(10),
        "slot free",
        |health| health.free_slots == 1,
    )
    .await;
    assert!(
        answered < first_answered,
        "the cancelled call was answered before the slot freed"
    );
    assert_eq!(health.waiting, 0, "{health:?}");
    if let Some(slot) = health.slot_health.first() {
        // the real worker: only the first call reached KLayout, on the same process
        assert_eq!(slot.calls_forwarded, 1, "{health:?}");
        assert_eq!(slot.restarts, 0, "{health:?}");
    }
}

async fn a_draining_worker_answers_its_waiting_call_unavailable(worker: &WorkerProcess) {
    let mut client = worker.client().await;
    let first = spawn_call(&client, "first");
    wait_for_health(
        &mut client,
        Duration::from_secs(30),
        "first running",
        |health| health.free_slots == 0,
    )
    .await;
    let waiting = spawn_call(&client, "waiting");
    wait_for_one_waiting(&mut client).await;
    let mut drain_client = client.clone();
    let drain = tokio::spawn(async move {
        drain_client
            .drain(DrainRequest { grace_ms: 30_000 })
            .await
            .map(tonic::Response::into_inner)
    });
    let (outcome, _) = waiting.await.unwrap();
    let error = Error::from_status(&outcome.expect_err("not started"));
    assert_eq!(
        error.error_code(),
        ErrorCode::ServiceUnavailable,
        "{error:?}"
    );
    assert!(error.retryable, "the coordinator runs it elsewhere");
    let (first, _) = first.await.unwrap();
    assert!(first.expect("the running call finishes").ok);
    let drained = drain.await.unwrap().expect("drain");
    assert_eq!(drained.failed_back, 1, "{drained:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_worker_runs_a_waiting_call_when_its_slot_frees() {
    two_calls_run_one_after_the_other_and_a_third_is_refused(&real_worker()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_worker_cancels_a_waiting_call_without_running_it() {
    a_cancelled_waiting_call_answers_cancelled_and_never_runs(&real_worker()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_worker_draining_sends_its_waiting_call_back() {
    a_draining_worker_answers_its_waiting_call_unavailable(&real_worker()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_worker_runs_a_waiting_call_when_its_slot_frees() {
    two_calls_run_one_after_the_other_and_a_third_is_refused(&simulated_worker()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_worker_cancels_a_waiting_call_without_running_it() {
    a_cancelled_waiting_call_answers_cancelled_and_never_runs(&simulated_worker()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_worker_draining_sends_its_waiting_call_back() {
    a_draining_worker_answers_its_waiting_call_unavailable(&simulated_worker()).await;
}
