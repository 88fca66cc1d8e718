//! Every RPC authenticated (issue 15): with a token configured, the coordinator's
//! and the worker's services refuse calls without it (UNAUTHENTICATED, saying what
//! to set); a worker without the token cannot register; with it, the CLI, the
//! workers and a client holding the token work; the token never reaches a log.

use std::time::{Duration, Instant};

use centroid_proto::v1::jobs_client::JobsClient;
use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{HealthRequest, ListJobsRequest, ListWorkersRequest, SubmitJobRequest};
use centroid_runtime::{AttachToken, BearerToken};
use centroid_tests::{
    CoordinatorProcess, RedisProcess, WorkerProcess, binary, repository_root, small_job,
};

const TOKEN: &str = "farm-token-4f1c9e0b7d2a";

fn channel(url: &str) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect_lazy()
}

fn centroid(arguments: &[&str]) -> std::process::Output {
    std::process::Command::new(binary("centroid"))
        .args(arguments)
        .env_remove("CENTROID_TOKEN")
        .env_remove("CENTROID_TOKEN_FILE")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_every_call_needs_it_and_everything_works_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let token_flag = token_file.display().to_string();
    let redis = RedisProcess::start(dir.path());
    let coordinator = CoordinatorProcess::start(
        dir.path(),
        &redis.url(),
        "auth",
        &["--token-file", &token_flag],
    );
    let url = coordinator.url();

    // a worker without the token is refused and stops; one with it registers
    let mut stranger = WorkerProcess::start(dir.path(), &url, "w-stranger", 1);
    let mut good = WorkerProcess::start_with_flags(
        dir.path(),
        &url,
        "w-good",
        1,
        &["--token-file", &token_flag],
    );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = stranger.exited() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the stranger kept running"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(!status.success());
    assert!(
        stranger.logs().contains("refused the credentials"),
        "{}",
        stranger.logs()
    );

    // no token: refused, with what to do
    let mut anonymous = JobsClient::new(channel(&url));
    let refused = anonymous
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    assert!(
        refused.message().contains("CENTROID_TOKEN"),
        "{}",
        refused.message()
    );
    let mut wrong = JobsClient::with_interceptor(
        channel(&url),
        AttachToken::new(Some(BearerToken::new("not-the-token").unwrap())),
    );
    let refused = wrong
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let mut worker_anonymous = WorkerClient::new(channel(&good.address));
    let refused = worker_anonymous.health(HealthRequest {}).await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::Unauthenticated,
        "the worker checks too"
    );

    // with the token: the workers list, a job runs end to end
    let token = AttachToken::new(Some(BearerToken::new(TOKEN).unwrap()));
    let mut jobs = JobsClient::with_interceptor(channel(&url), token.clone());
    let started = Instant::now();
    loop {
        let workers = jobs
            .list_workers(ListWorkersRequest {})
            .await
            .unwrap()
            .into_inner()
            .workers;
        let alive: Vec<String> = workers
            .into_iter()
            .filter(|worker| worker.alive)
            .filter_map(|worker| worker.info.map(|info| info.worker_id))
            .collect();
        assert!(!alive.contains(&"w-stranger".to_string()));
        if alive.contains(&"w-good".to_string()) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "w-good never registered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let example = repository_root().join("examples/ota5");
    let read = |name: &str| std::fs::read_to_string(example.join(name)).unwrap();
    let submitted = jobs
        .submit_job(SubmitJobRequest {
            netlist_json: read("netlist.json"),
            drc_rules_json: read("drc_rules.json"),
            objectives_json: read("objectives.json"),
            options: Some(small_job(1, 1, 1)),
            name: "ota5".into(),
            testbench_sp: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let started = Instant::now();
    loop {
        let job = jobs
            .get_job(centroid_proto::v1::GetJobRequest {
                job_id: submitted.job_id.clone(),
            })
            .await
            .unwrap()
            .into_inner()
            .job
            .unwrap();
        if job.state == "done" {
            assert_eq!(job.outcome, "completed", "{job:?}\n{}", good.logs());
            assert!(
                job.best_passed,
                "the coordinator's calls to the worker carried the token"
            );
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{job:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // the CLI says what to set, and works with the flag
    let output = centroid(&["workers", "--coordinator", &url]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--token-file") && stderr.contains("CENTROID_TOKEN"),
        "{stderr}"
    );
    let output = centroid(&[
        "workers",
        "--coordinator",
        &url,
        "--token-file",
        &token_flag,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("w-good"));

    // the token never reaches a log
    for log in [coordinator.logs(), good.logs(), stranger.logs()] {
        assert!(!log.contains(TOKEN), "the token leaked into a log");
    }
    good.kill9();
}
