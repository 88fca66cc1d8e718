//! The operator's endpoints (issue 15): during a job, `GET /metrics` on the
//! coordinator shows the queue depth, jobs by state, candidates by outcome,
//! retries, dead letters, slots per worker and the candidate-duration histogram;
//! on the worker, its slots and candidates; `/healthz` and `/readyz` answer.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use centroid_tests::{
    CoordinatorProcess, RedisProcess, WorkerProcess, client_for, free_port, sleep_job,
};

/// `GET path` on 127.0.0.1:port: (status code, body).
fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

/// The value of the first sample line starting with `series`.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|line| line.starts_with(series))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_health_during_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    let coordinator_port = free_port();
    let coordinator_listen = format!("127.0.0.1:{coordinator_port}");
    let coordinator = CoordinatorProcess::start(
        dir.path(),
        &redis.url(),
        "metrics",
        &["--metrics-listen", &coordinator_listen],
    );
    let worker_port = free_port();
    let worker_listen = format!("127.0.0.1:{worker_port}");
    let _worker = WorkerProcess::start_with_flags(
        dir.path(),
        &coordinator.url(),
        "w1",
        2,
        &["--metrics-listen", &worker_listen],
    );

    assert_eq!(get(coordinator_port, "/healthz").0, 200);
    assert_eq!(
        get(coordinator_port, "/readyz").0,
        200,
        "{}",
        coordinator.logs()
    );
    assert_eq!(get(worker_port, "/healthz").0, 200);
    assert_eq!(get(worker_port, "/readyz").0, 200);

    // six 1.5 s candidates on two slots
    let mut jobs = client_for(&coordinator.url()).await.unwrap();
    let example = centroid_tests::repository_root().join("examples/ota5");
    let read = |name: &str| std::fs::read_to_string(example.join(name)).unwrap();
    let job_id = jobs
        .submit_job(centroid_proto::v1::SubmitJobRequest {
            netlist_json: read("netlist.json"),
            drc_rules_json: read("drc_rules.json"),
            objectives_json: read("objectives.json"),
            options: Some(sleep_job(6, 1, 1_500)),
            name: "ota5".into(),
            testbench_sp: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .job_id;

    // while it runs: both slots busy, the rest of the queue waiting or pending
    let started = Instant::now();
    let during = loop {
        let (status, metrics) = get(coordinator_port, "/metrics");
        assert_eq!(status, 200);
        if sample(
            &metrics,
            "centroid_worker_slots{kind=\"busy\",worker=\"w1\"}",
        ) == Some(2.0)
        {
            break metrics;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never both slots busy:\n{metrics}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        sample(
            &during,
            "centroid_worker_slots{kind=\"total\",worker=\"w1\"}"
        ),
        Some(2.0)
    );
    let waiting = sample(&during, "centroid_queue_depth{state=\"waiting\"}").unwrap();
    let pending = sample(&during, "centroid_queue_depth{state=\"pending\"}").unwrap();
    assert!(
        waiting + pending >= 2.0,
        "four candidates wait behind the two running:\n{during}"
    );
    assert_eq!(
        sample(&during, "centroid_jobs{state=\"executing\"}"),
        Some(1.0),
        "{during}"
    );
    for family in [
        "centroid_candidates_total",
        "centroid_candidate_retries_total",
        "centroid_dead_letters_total",
        "centroid_candidate_duration_seconds_bucket",
        "centroid_llm_tokens_total",
    ] {
        assert!(during.contains(family), "{family} missing:\n{during}");
    }
    let (_, worker_metrics) = get(worker_port, "/metrics");
    assert_eq!(
        sample(&worker_metrics, "centroid_worker_slots{kind=\"busy\"}"),
        Some(2.0)
    );
    assert_eq!(
        sample(&worker_metrics, "centroid_worker_draining"),
        Some(0.0)
    );

    // after the job: every candidate counted once as ok, durations observed
    let started = Instant::now();
    loop {
        let job = jobs
            .get_job(centroid_proto::v1::GetJobRequest {
                job_id: job_id.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .job
            .unwrap();
        if job.state == "done" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{job:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (_, after) = get(coordinator_port, "/metrics");
    assert_eq!(
        sample(
            &after,
            "centroid_candidates_total{error_code=\"\",outcome=\"ok\"}"
        ),
        Some(6.0),
        "{after}"
    );
    assert_eq!(
        sample(&after, "centroid_candidate_duration_seconds_count"),
        Some(6.0)
    );
    let (_, worker_after) = get(worker_port, "/metrics");
    assert_eq!(
        sample(
            &worker_after,
            "centroid_worker_candidates_total{error_code=\"\",outcome=\"ok\"}"
        ),
        Some(6.0),
        "{worker_after}"
    );
}
