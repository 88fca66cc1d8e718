//! TLS on every gRPC connection (issue 15): a coordinator and a worker serving
//! mutual TLS with certificates of one root. The worker registers over TLS, the
//! coordinator calls it over TLS, a job runs to a clean layout, and the CLI
//! submits with `--tls-ca/--tls-cert/--tls-key`. A plaintext caller, a caller
//! without a client certificate and a caller trusting another root are refused.

use std::time::{Duration, Instant};

use centroid_proto::v1::jobs_client::JobsClient;
use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{HealthRequest, ListWorkersRequest};
use centroid_runtime::{TlsFiles, tls};
use centroid_tests::pki::TestPki;
use centroid_tests::{CoordinatorProcess, RedisProcess, WorkerProcess, binary, repository_root};
use tonic::transport::Channel;

async fn connect(files: &TlsFiles, address: &str) -> Result<Channel, String> {
    let tls = files.load().map_err(|error| error.to_string())?;
    let endpoint = tls::endpoint(tls.as_ref(), address).map_err(|error| error.to_string())?;
    endpoint
        .connect_timeout(Duration::from_secs(5))
        .connect()
        .await
        .map_err(|error| format!("{error:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_end_to_end_and_strangers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = TestPki::write(dir.path());
    let path = |path: &std::path::Path| path.display().to_string();
    let (ca, cert, key) = (path(&pki.ca), path(&pki.server_cert), path(&pki.server_key));
    let tls_flags = [
        "--tls-cert",
        cert.as_str(),
        "--tls-key",
        key.as_str(),
        "--tls-ca",
        ca.as_str(),
        "--tls-client-auth",
    ];
    let redis = RedisProcess::start(dir.path());
    let coordinator = CoordinatorProcess::start(dir.path(), &redis.url(), "tls", &tls_flags);
    let https = format!("https://{}", coordinator.address);
    let mut worker = WorkerProcess::start_with_flags(dir.path(), &https, "w-tls", 1, &tls_flags);

    let client_files = TlsFiles::new(
        Some(&pki.client_cert),
        Some(&pki.client_key),
        Some(&pki.ca),
        false,
    );
    let channel = connect(&client_files, &coordinator.address)
        .await
        .expect("a client with a certificate of the root connects");
    let mut jobs = JobsClient::new(channel);
    let started = Instant::now();
    loop {
        let workers = jobs
            .list_workers(ListWorkersRequest {})
            .await
            .expect("ListWorkers over mutual TLS")
            .into_inner()
            .workers;
        let registered = workers.iter().find_map(|worker| {
            worker
                .info
                .as_ref()
                .filter(|info| info.worker_id == "w-tls" && worker.alive)
                .map(|info| info.address.clone())
        });
        if let Some(address) = registered {
            assert!(
                address.starts_with("https://"),
                "the worker advertises its TLS address: {address}"
            );
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the worker never registered over TLS\n{}",
            worker.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // strangers: plaintext, TLS without a client certificate, another root
    let plaintext = JobsClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{}", coordinator.address))
            .unwrap()
            .connect_lazy(),
    )
    .list_workers(ListWorkersRequest {})
    .await;
    assert!(plaintext.is_err(), "a plaintext call was answered");
    let anonymous_files = TlsFiles::new(None, None, Some(&pki.ca), false);
    let anonymous = match connect(&anonymous_files, &coordinator.address).await {
        Ok(channel) => JobsClient::new(channel)
            .list_workers(ListWorkersRequest {})
            .await
            .map(|_| ())
            .map_err(|status| status.to_string()),
        Err(error) => Err(error),
    };
    assert!(
        anonymous.is_err(),
        "a caller without a client certificate was answered"
    );
    let other_root = TlsFiles::new(None, None, Some(&pki.other_ca), false);
    assert!(
        connect(&other_root, &coordinator.address).await.is_err(),
        "a server certificate of another root was trusted"
    );
    let worker_plaintext = WorkerClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://{}", worker.address))
            .unwrap()
            .connect_lazy(),
    )
    .health(HealthRequest {})
    .await;
    assert!(
        worker_plaintext.is_err(),
        "the worker answered a plaintext call"
    );

    // the CLI submits over mutual TLS; the coordinator runs the job on the worker over TLS
    let example = repository_root().join("examples/ota5");
    let output = std::process::Command::new(binary("centroid"))
        .args(["submit"])
        .arg(&example)
        .args([
            "--coordinator",
            &https,
            "--tls-ca",
            &path(&pki.ca),
            "--tls-cert",
            &path(&pki.client_cert),
            "--tls-key",
            &path(&pki.client_key),
            "--candidates",
            "1",
            "--iterations",
            "1",
            "--wait",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .env_remove("CENTROID_TOKEN")
        .env_remove("CENTROID_TOKEN_FILE")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "centroid submit over TLS: {}\n{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        coordinator.logs(),
        worker.logs()
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    assert_eq!(report["status"], "completed", "{report:#}");
    assert_eq!(report["best"]["passed"], true, "{report:#}");
    assert_eq!(report["best"]["metrics"]["lvs_match"], true, "{report:#}");
    assert_eq!(report["best"]["metrics"]["drc_violations"], 0, "{report:#}");

    // the CLI without the root says what to set
    let output = std::process::Command::new(binary("centroid"))
        .args(["workers", "--coordinator", &https])
        .env_remove("CENTROID_TLS_CA")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tls-ca"), "{stderr}");
    worker.kill9();
}
