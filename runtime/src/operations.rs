//! The operator's HTTP endpoint of a process (`--metrics-listen ADDR`):
//! `GET /metrics` (Prometheus text format), `GET /healthz` (the process runs) and
//! `GET /readyz` (it can do its work: 200, else 503 with the reason).

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

/// What the endpoint asks its process.
#[tonic::async_trait]
pub trait OperationsProbe: Send + Sync + 'static {
    /// The metrics in Prometheus text format, refreshed.
    async fn metrics(&self) -> String;
    /// `Err(reason)` while the process cannot do its work.
    async fn ready(&self) -> Result<(), String>;
}

/// Serves the endpoint on `listener` until `shutdown` resolves.
pub async fn serve_operations(
    listener: TcpListener,
    probe: Arc<dyn OperationsProbe>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .with_state(probe);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics(State(probe): State<Arc<dyn OperationsProbe>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        probe.metrics().await,
    )
}

async fn ready(State(probe): State<Arc<dyn OperationsProbe>>) -> impl IntoResponse {
    match probe.ready().await {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {reason}\n"),
        ),
    }
}

/// Encodes a Prometheus registry in the text format.
pub fn encode(registry: &prometheus::Registry) -> String {
    use prometheus::Encoder;
    let mut buffer = Vec::new();
    let encoder = prometheus::TextEncoder::new();
    if let Err(error) = encoder.encode(&registry.gather(), &mut buffer) {
        return format!("# metrics could not be encoded: {error}\n");
    }
    String::from_utf8(buffer).unwrap_or_default()
}

/// Registers `collector` in `registry` and hands it back (names are fixed in code,
/// so a clash is a programming error).
pub fn registered<T: prometheus::core::Collector + Clone + 'static>(
    registry: &prometheus::Registry,
    collector: T,
) -> T {
    registry
        .register(Box::new(collector.clone()))
        .expect("metric names are unique");
    collector
}
