//! The standard gRPC health service (`grpc.health.v1.Health`) of a server, its
//! serving status following the process's readiness ([`OperationsProbe::ready`]:
//! NOT_SERVING while draining, shutting down or unable to work). It answers
//! without a token, like `/healthz`: load balancers and Kubernetes gRPC probes
//! send none, and it tells nothing but the status.

use std::sync::Arc;
use std::time::Duration;

use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};

use crate::operations::OperationsProbe;

/// The encoded descriptor set of `grpc.health.v1`, for server reflection.
pub const HEALTH_FILE_DESCRIPTOR_SET: &[u8] = tonic_health::pb::FILE_DESCRIPTOR_SET;

/// How often the readiness is looked at.
const FOLLOW_PERIOD: Duration = Duration::from_millis(500);

/// The health service for the server (service name "") and `service_names`
/// (e.g. "centroid.v1.Jobs"), following `probe` on a task of its own.
pub async fn health_service(
    probe: Arc<dyn OperationsProbe>,
    service_names: &[&str],
) -> HealthServer<impl Health> {
    let (reporter, service) = tonic_health::server::health_reporter();
    let names: Vec<String> = std::iter::once(String::new())
        .chain(service_names.iter().map(|name| name.to_string()))
        .collect();
    let mut current = None;
    follow_once(&reporter, &names, probe.as_ref(), &mut current).await;
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(FOLLOW_PERIOD).await;
            follow_once(&reporter, &names, probe.as_ref(), &mut current).await;
        }
    });
    service
}

async fn follow_once(
    reporter: &tonic_health::server::HealthReporter,
    names: &[String],
    probe: &dyn OperationsProbe,
    current: &mut Option<ServingStatus>,
) {
    let status = match probe.ready().await {
        Ok(()) => ServingStatus::Serving,
        Err(_) => ServingStatus::NotServing,
    };
    if *current == Some(status) {
        return;
    }
    *current = Some(status);
    for name in names {
        reporter.set_service_status(name, status).await;
    }
}
