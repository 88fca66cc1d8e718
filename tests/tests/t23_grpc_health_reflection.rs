//! The standard gRPC services on the coordinator and the worker (issue 29):
//! `grpc.health.v1.Health` answers SERVING over loopback (without a token, like
//! `/healthz`) and NOT_SERVING once the worker drains; server reflection lists
//! the services (with the token when one is set).

use std::time::{Duration, Instant};

use centroid_proto::v1::DrainRequest;
use centroid_proto::v1::worker_client::WorkerClient;
use centroid_runtime::{AttachToken, BearerToken};
use centroid_tests::{CoordinatorProcess, RedisProcess, WorkerProcess};
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

const TOKEN: &str = "health-token-8d1e2f";

fn channel(url: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect_lazy()
}

async fn health(url: &str, service: &str) -> ServingStatus {
    let mut client = HealthClient::new(channel(url));
    let response = client
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .unwrap_or_else(|status| panic!("health check of {service:?} at {url}: {status:?}"));
    response.into_inner().status()
}

async fn listed_services(url: &str, token: Option<&str>) -> Result<Vec<String>, tonic::Status> {
    let token = token.map(|token| BearerToken::new(token).unwrap());
    let mut client =
        ServerReflectionClient::with_interceptor(channel(url), AttachToken::new(token));
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::iter([request]))
        .await?
        .into_inner();
    let response = responses.message().await?.expect("one answer");
    match response.message_response {
        Some(MessageResponse::ListServicesResponse(list)) => Ok(list
            .service
            .into_iter()
            .map(|service| service.name)
            .collect()),
        other => panic!("not a list of services: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_follows_readiness_and_reflection_lists_the_services() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let token_flag = token_file.display().to_string();
    let redis = RedisProcess::start(dir.path());
    let coordinator = CoordinatorProcess::start(
        dir.path(),
        &redis.url(),
        "health",
        &["--token-file", &token_flag],
    );
    let worker = WorkerProcess::start_with_flags(
        dir.path(),
        &coordinator.url(),
        "w-health",
        1,
        &["--token-file", &token_flag],
    );

    for service in ["", "centroid.v1.Jobs", "centroid.v1.Coordinator"] {
        assert_eq!(
            health(&coordinator.url(), service).await,
            ServingStatus::Serving,
            "{service:?}"
        );
    }
    for service in ["", "centroid.v1.Worker"] {
        assert_eq!(
            health(&worker.address, service).await,
            ServingStatus::Serving
        );
    }
    let unknown = HealthClient::new(channel(&coordinator.url()))
        .check(HealthCheckRequest {
            service: "no.such.Service".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound);

    let services = listed_services(&coordinator.url(), Some(TOKEN))
        .await
        .unwrap();
    for service in [
        "centroid.v1.Coordinator",
        "centroid.v1.Jobs",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
    ] {
        assert!(services.iter().any(|name| name == service), "{services:?}");
    }
    let services = listed_services(&worker.address, Some(TOKEN)).await.unwrap();
    assert!(
        services.iter().any(|name| name == "centroid.v1.Worker"),
        "{services:?}"
    );
    let anonymous = listed_services(&coordinator.url(), None).await.unwrap_err();
    assert_eq!(anonymous.code(), tonic::Code::Unauthenticated);

    // a draining worker says NOT_SERVING
    let token = BearerToken::new(TOKEN).unwrap();
    let mut worker_client =
        WorkerClient::with_interceptor(channel(&worker.address), AttachToken::new(Some(token)));
    worker_client
        .drain(DrainRequest { grace_ms: 100 })
        .await
        .unwrap();
    let started = Instant::now();
    while health(&worker.address, "").await != ServingStatus::NotServing {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still SERVING while draining"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        health(&worker.address, "centroid.v1.Worker").await,
        ServingStatus::NotServing
    );
}
