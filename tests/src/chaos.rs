//! Helpers of the chaos tests (t16–t19): a worker behind a [`BlackholeProxy`],
//! the Worker service's Health, and counting retries.

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{HealthRequest, HealthResponse, JobEvent, JobEventKind};

use crate::blackhole_proxy::BlackholeProxy;
pub use crate::wait_for_event;
use crate::{Sandbox, WorkerProcess, free_port, kind};

/// Starts a worker that the coordinator reaches only through a proxy: the worker
/// serves on a port picked here and registers with the proxy's address
/// (`--advertise-address`); its own calls to the coordinator go direct. Waits until
/// the coordinator lists it alive.
pub async fn add_worker_behind_proxy(
    sandbox: &mut Sandbox,
    worker_id: &str,
    slots: u32,
) -> BlackholeProxy {
    let port = free_port();
    let target = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let proxy = BlackholeProxy::start(target).expect("start the proxy");
    let advertised = format!("http://{}", proxy.address());
    let worker = WorkerProcess::start_listening(
        sandbox.dir.path(),
        &sandbox.coordinator.url(),
        worker_id,
        slots,
        &format!("127.0.0.1:{port}"),
        &["--advertise-address", &advertised],
    );
    assert_eq!(
        worker.address,
        format!("http://127.0.0.1:{port}"),
        "the worker serves on the port picked for it"
    );
    sandbox.workers.push(worker);
    sandbox.wait_for_workers(&[worker_id]).await;
    proxy
}

/// The worker's Health, asked directly (not through any proxy).
pub async fn worker_health(address: &str) -> HealthResponse {
    let mut client = WorkerClient::connect(address.to_string())
        .await
        .expect("connect to the worker");
    client
        .health(HealthRequest {})
        .await
        .expect("worker health")
        .into_inner()
}

/// The job's CandidateRetried events.
pub fn retried(events: &[JobEvent]) -> Vec<&JobEvent> {
    events
        .iter()
        .filter(|event| kind(event) == JobEventKind::CandidateRetried)
        .collect()
}

/// Lines of a log that mention `needle` and `also`.
pub fn log_lines_with(log: &str, needle: &str, also: &str) -> usize {
    log.lines()
        .filter(|line| line.contains(needle) && line.contains(also))
        .count()
}
