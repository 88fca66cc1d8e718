//! The edges of worker registration (issue 29): a worker id must be ≤ 128
//! characters of `[A-Za-z0-9._-]` (a 100 KB id is refused with INVALID_PARAM, at
//! registration and by the worker at start); another instance cannot take over a
//! live worker's id, even at its address; a dead worker leaves ListWorkers after
//! the grace.

use std::time::{Duration, Instant};

use centroid_proto::v1::coordinator_client::CoordinatorClient;
use centroid_proto::v1::{ListWorkersRequest, RegisterWorkerRequest, WorkerInfo, WorkerStatus};
use centroid_proto::{Error, ErrorCode, PROTOCOL_VERSION};
use centroid_tests::{Sandbox, binary};

fn claim(worker_id: &str, address: &str, instance_id: &str) -> RegisterWorkerRequest {
    RegisterWorkerRequest {
        worker: Some(WorkerInfo {
            worker_id: worker_id.into(),
            address: address.into(),
            slots: 64,
            skills: vec!["impostor.skill".into()],
            klayout_version: "none".into(),
            protocol_version: PROTOCOL_VERSION,
            hostname: "elsewhere".into(),
            instance_id: instance_id.into(),
            prefetch: 0,
        }),
    }
}

async fn listed(sandbox: &Sandbox, worker_id: &str) -> Option<WorkerStatus> {
    let mut client = sandbox.client().await.expect("connect");
    let workers = client
        .list_workers(ListWorkersRequest {})
        .await
        .expect("list workers")
        .into_inner()
        .workers;
    workers
        .into_iter()
        .find(|status| status.info.as_ref().unwrap().worker_id == worker_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ids_impostors_and_dead_workers_are_dealt_with() {
    let mut sandbox = Sandbox::start(&["--dead-worker-grace-ms", "1500"]);
    let mut coordinator = CoordinatorClient::connect(sandbox.coordinator.url())
        .await
        .unwrap();

    // a 100 KB id (and other malformed ones) refused, with the reason
    for bad in ["x".repeat(100 * 1024), "w\nforged".into(), "a/b".into()] {
        let status = coordinator
            .register_worker(claim(&bad, "http://127.0.0.1:1", "i1"))
            .await
            .expect_err("a malformed id is refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let error = Error::from_status(&status);
        assert_eq!(error.error_code(), ErrorCode::InvalidParam, "{error:?}");
        assert_eq!(error.details()["field"], "worker_id");
        assert!(error.message.len() < 300, "{}", error.message);
    }
    assert!(listed(&sandbox, &"x".repeat(100 * 1024)).await.is_none());

    // a worker of protocol 1 (before instance ids): a version mismatch, said so
    let mut old_worker = claim("w-protocol-1", "http://127.0.0.1:1", "");
    old_worker.worker.as_mut().unwrap().protocol_version = 1;
    let status = coordinator
        .register_worker(old_worker)
        .await
        .expect_err("an older protocol is refused");
    let error = Error::from_status(&status);
    assert_eq!(error.error_code(), ErrorCode::Conflict, "{error:?}");
    assert!(
        error
            .message
            .contains("protocol version mismatch: peer speaks 1"),
        "{}",
        error.message
    );
    assert!(!error.retryable);

    // a live worker keeps its id against another instance, at its own address too
    sandbox.add_worker("w-edges", 1).await;
    let live = listed(&sandbox, "w-edges").await.unwrap();
    let address = live.info.as_ref().unwrap().address.clone();
    for claimed_address in [address.as_str(), "http://127.0.0.1:9"] {
        let status = coordinator
            .register_worker(claim("w-edges", claimed_address, "impostor"))
            .await
            .expect_err("another instance is refused");
        assert_eq!(
            Error::from_status(&status).error_code(),
            ErrorCode::Conflict
        );
    }
    let after = listed(&sandbox, "w-edges").await.unwrap();
    assert_eq!(after.info, live.info, "slots, skills and address unchanged");
    assert!(after.alive);

    // killed: declared dead, then gone from ListWorkers after the grace
    sandbox.worker("w-edges").kill9();
    let started = Instant::now();
    let mut seen_dead = false;
    while let Some(status) = listed(&sandbox, "w-edges").await {
        seen_dead |= !status.alive;
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the dead worker is still listed:\n{}",
            sandbox.coordinator.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(seen_dead, "listed as dead during the grace");
    assert!(
        started.elapsed() > Duration::from_millis(1500),
        "pruned only after the heartbeat timeout and the grace"
    );

    // a worker started with a malformed id stops at once, saying why
    let output = std::process::Command::new(binary("centroid-worker"))
        .args(["--coordinator", &sandbox.coordinator.url(), "--worker-id"])
        .arg("y".repeat(129))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("more than 128"), "{said}");
}
