//! Registration of the real `centroid-worker` binary with a tiny in-test
//! Coordinator gRPC server (only RegisterWorker / Heartbeat / DeregisterWorker
//! of our own protocol), served on 127.0.0.1:0 with serve_with_incoming_shutdown.

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use centroid_proto::PROTOCOL_VERSION;
use centroid_proto::v1::coordinator_server::{Coordinator, CoordinatorServer};
use centroid_proto::v1::{
    DeregisterWorkerRequest, DeregisterWorkerResponse, HeartbeatRequest, HeartbeatResponse,
    RegisterWorkerRequest, RegisterWorkerResponse,
};

use common::*;
use serde_json::json;
use tokio::sync::oneshot;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

#[derive(Debug, Clone)]
enum Event {
    Register(RegisterWorkerRequest),
    Heartbeat(HeartbeatRequest),
    Deregister(DeregisterWorkerRequest),
}

/// The coordinator's side of the worker-facing protocol, recording what it hears.
#[derive(Clone)]
struct TinyCoordinator {
    events: Arc<Mutex<Vec<Event>>>,
    /// the protocol version this coordinator speaks
    protocol_version: u32,
    /// whether it checks the worker's version (an old coordinator that doesn't)
    checks_version: bool,
    /// answers the first heartbeat with known = false (as after a coordinator restart)
    forgets_once: Arc<std::sync::atomic::AtomicBool>,
}

#[tonic::async_trait]
impl Coordinator for TinyCoordinator {
    async fn register_worker(
        &self,
        request: Request<RegisterWorkerRequest>,
    ) -> Result<Response<RegisterWorkerResponse>, Status> {
        let request = request.into_inner();
        self.events
            .lock()
            .unwrap()
            .push(Event::Register(request.clone()));
        let worker_version = request
            .worker
            .as_ref()
            .map(|worker| worker.protocol_version)
            .unwrap_or_default();
        if self.checks_version && worker_version != self.protocol_version {
            // what a real coordinator does: refuse with a structured, non-retryable error
            let refusal = centroid_proto::Error::new(
                centroid_proto::ErrorCode::Conflict,
                format!(
                    "protocol version mismatch: worker speaks {worker_version}, coordinator speaks {}",
                    self.protocol_version
                ),
            )
            .with_retryable(false);
            return Err(refusal.to_status());
        }
        Ok(Response::new(RegisterWorkerResponse {
            protocol_version: self.protocol_version,
            heartbeat_interval_ms: 100,
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatResponse>, Status> {
        self.events
            .lock()
            .unwrap()
            .push(Event::Heartbeat(request.into_inner()));
        let forgets = self
            .forgets_once
            .swap(false, std::sync::atomic::Ordering::SeqCst);
        Ok(Response::new(HeartbeatResponse { known: !forgets }))
    }

    async fn deregister_worker(
        &self,
        request: Request<DeregisterWorkerRequest>,
    ) -> Result<Response<DeregisterWorkerResponse>, Status> {
        self.events
            .lock()
            .unwrap()
            .push(Event::Deregister(request.into_inner()));
        Ok(Response::new(DeregisterWorkerResponse {}))
    }
}

struct RunningCoordinator {
    address: SocketAddr,
    events: Arc<Mutex<Vec<Event>>>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl RunningCoordinator {
    async fn start(
        listener: tokio::net::TcpListener,
        protocol_version: u32,
        checks_version: bool,
    ) -> RunningCoordinator {
        RunningCoordinator::start_with(listener, protocol_version, checks_version, false).await
    }

    async fn start_with(
        listener: tokio::net::TcpListener,
        protocol_version: u32,
        checks_version: bool,
        forgets_once: bool,
    ) -> RunningCoordinator {
        let address = listener.local_addr().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let coordinator = TinyCoordinator {
            events: events.clone(),
            protocol_version,
            checks_version,
            forgets_once: Arc::new(std::sync::atomic::AtomicBool::new(forgets_once)),
        };
        let (shutdown, shutdown_requested) = oneshot::channel::<()>();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(CoordinatorServer::new(coordinator))
                .serve_with_incoming_shutdown(TcpListenerStream::new(listener), async {
                    let _ = shutdown_requested.await;
                }),
        );
        RunningCoordinator {
            address,
            events,
            shutdown: Some(shutdown),
        }
    }

    async fn bind_and_start(protocol_version: u32, checks_version: bool) -> RunningCoordinator {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        RunningCoordinator::start(listener, protocol_version, checks_version).await
    }

    fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    async fn wait_for(
        &self,
        what: &str,
        limit: Duration,
        condition: impl Fn(&[Event]) -> bool,
    ) -> Vec<Event> {
        let started = Instant::now();
        loop {
            let events = self.events();
            if condition(&events) {
                return events;
            }
            assert!(
                started.elapsed() < limit,
                "timed out waiting for {what}; events: {events:#?}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

impl Drop for RunningCoordinator {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

fn heartbeats(events: &[Event]) -> Vec<HeartbeatRequest> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Heartbeat(heartbeat) => Some(heartbeat.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_registers_heartbeats_while_busy_and_deregisters_on_sigterm() {
    let coordinator = RunningCoordinator::bind_and_start(PROTOCOL_VERSION, true).await;
    let mut worker = WorkerProcess::start(&[
        "--slots",
        "1",
        "--coordinator",
        &coordinator.url(),
        "--worker-id",
        "w-test",
    ]);
    let mut client = worker.client().await;

    let events = coordinator
        .wait_for("a registration", Duration::from_secs(30), |events| {
            events
                .iter()
                .any(|event| matches!(event, Event::Register(_)))
        })
        .await;
    let Event::Register(registration) = &events[0] else {
        panic!("first event: {events:?}")
    };
    let info = registration.worker.clone().unwrap();
    assert_eq!(info.worker_id, "w-test");
    assert_eq!(info.protocol_version, PROTOCOL_VERSION);
    assert_eq!(info.slots, 1);
    assert_eq!(info.address, worker.address);
    assert!(
        info.skills.contains(&"debug.sleep".to_string()),
        "{:?}",
        info.skills
    );
    assert!(!info.klayout_version.is_empty());

    // heartbeats keep coming (every 100 ms, as the coordinator asked) while the only slot is busy
    let busy = spawn_sleeping_candidate(&client, "busy", 30_000, 2);
    wait_until_running(&mut client, "busy", 1).await;
    let before = heartbeats(&coordinator.events()).len();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let during: Vec<HeartbeatRequest> = heartbeats(&coordinator.events())
        .into_iter()
        .skip(before)
        .collect();
    assert!(
        during.len() >= 3,
        "only {} heartbeats in 1 s while busy",
        during.len()
    );
    let last = during.last().unwrap();
    assert_eq!(last.worker_id, "w-test");
    assert_eq!(last.free_slots, 0);
    assert_eq!(last.running_candidates, vec!["busy".to_string()]);
    assert!(busy.await.unwrap().unwrap().ok);

    worker.send_signal(libc::SIGTERM);
    let exit = worker.wait_for_exit(Duration::from_secs(15)).await;
    assert_eq!(exit.code(), Some(0), "{}", worker.logs());
    let events = coordinator.events();
    assert!(
        matches!(events.last(), Some(Event::Deregister(deregister)) if deregister.worker_id == "w-test"),
        "last event: {:?}",
        events.last()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinator_refuses_a_worker_with_another_protocol_version() {
    let coordinator = RunningCoordinator::bind_and_start(PROTOCOL_VERSION + 1, true).await;
    let scratch = tempfile::tempdir().unwrap();
    let (status, logs) = run_to_exit(
        WorkerProcess::command(
            &["--slots", "1", "--coordinator", &coordinator.url()],
            scratch.path(),
        ),
        Duration::from_secs(60),
    )
    .await;
    assert!(
        !status.success(),
        "a refused worker must not keep running: {logs}"
    );
    assert!(logs.contains("protocol version mismatch"), "{logs}");
    let registrations = coordinator
        .events()
        .iter()
        .filter(|event| matches!(event, Event::Register(_)))
        .count();
    assert_eq!(registrations, 1, "a refusal is not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_refuses_a_coordinator_with_another_protocol_version() {
    // an old coordinator that does not check, but answers with its own version
    let coordinator = RunningCoordinator::bind_and_start(PROTOCOL_VERSION + 1, false).await;
    let scratch = tempfile::tempdir().unwrap();
    let (status, logs) = run_to_exit(
        WorkerProcess::command(
            &["--slots", "1", "--coordinator", &coordinator.url()],
            scratch.path(),
        ),
        Duration::from_secs(60),
    )
    .await;
    assert!(!status.success(), "{logs}");
    assert!(logs.contains("protocol version mismatch"), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_retries_with_backoff_until_the_coordinator_is_up() {
    // reserve a loopback port, free it, start the worker against it while nothing listens
    let address = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap()
    };
    let worker = WorkerProcess::start(&[
        "--slots",
        "1",
        "--coordinator",
        &format!("http://{address}"),
    ]);
    let mut client = worker.client().await;
    // the worker serves candidates although the coordinator is down
    let response = run(
        &mut client,
        candidate(
            "standalone",
            30_000,
            vec![step("s1", "debug.noop", json!({}))],
        ),
    )
    .await
    .unwrap();
    assert!(response.ok);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(
        worker.logs().contains("registration failed; retrying"),
        "{}",
        worker.logs()
    );

    let listener = tokio::net::TcpListener::bind(address)
        .await
        .expect("rebind the reserved port");
    let coordinator = RunningCoordinator::start(listener, PROTOCOL_VERSION, true).await;
    coordinator
        .wait_for(
            "a late registration and heartbeats",
            Duration::from_secs(20),
            |events| {
                events
                    .iter()
                    .any(|event| matches!(event, Event::Register(_)))
                    && heartbeats(events).len() >= 2
            },
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_registers_again_when_the_coordinator_forgot_it() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let coordinator = RunningCoordinator::start_with(listener, PROTOCOL_VERSION, true, true).await;
    let _worker = WorkerProcess::start(&["--slots", "1", "--coordinator", &coordinator.url()]);
    coordinator
        .wait_for("a second registration", Duration::from_secs(20), |events| {
            events
                .iter()
                .filter(|event| matches!(event, Event::Register(_)))
                .count()
                >= 2
        })
        .await;
}
