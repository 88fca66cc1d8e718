//! Per-user access (issue 29): with a principals file beside the shared token, a job
//! belongs to its submitter — another user cannot get, watch, fetch or cancel it
//! (PERMISSION_DENIED with structured details), an admin can, and a user's ListJobs
//! shows only its own; only worker principals (and admins) register workers — the
//! worker fleet holds no admin token: it presents its principal's token
//! (`--registration-token-file`) and requires the coordinator's worker-call token
//! (`--worker-call-token-file`), which the coordinator itself refuses — and a
//! worker submits nothing; every submit, cancel, register, deregister and refusal
//! is in the audit log with its actor; UNAUTHENTICATED carries structured details;
//! a malformed principals file stops the coordinator at start, naming the file and
//! the reason. Real coordinator, Redis, worker and KLayout over loopback.

use std::time::{Duration, Instant};

use centroid_proto::v1::jobs_client::JobsClient;
use centroid_proto::v1::{
    CancelJobRequest, FetchArtifactRequest, GetJobRequest, GetJobResponse, ListJobsRequest,
    WatchJobRequest,
};
use centroid_proto::{Error, ErrorCode};
use centroid_runtime::principals::sha256_hex;
use centroid_runtime::{AttachToken, BearerToken};
use centroid_tests::{
    CoordinatorProcess, RedisProcess, WorkerProcess, binary, example_request, small_job,
};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

const SHARED: &str = "shared-farm-token-0c7d";
const ALICE: &str = "alice-token-5e1b";
const BOB: &str = "bob-token-93aa";
const OPS: &str = "ops-token-d4f0";
const ROBOT: &str = "robot-token-1f62";
/// what the coordinator's calls to workers carry (no principal: the coordinator
/// refuses it)
const WORKER_CALLS: &str = "worker-calls-token-8b3e";

type Client = JobsClient<InterceptedService<Channel, AttachToken>>;
type RegistryClient = centroid_proto::v1::coordinator_client::CoordinatorClient<
    InterceptedService<Channel, AttachToken>,
>;

fn channel(url: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect_lazy()
}

fn with_token(token: &str) -> AttachToken {
    AttachToken::new(Some(BearerToken::new(token).unwrap()))
}

fn jobs_as(url: &str, token: &str) -> Client {
    JobsClient::with_interceptor(channel(url), with_token(token))
}

fn registry_as(url: &str, token: &str) -> RegistryClient {
    centroid_proto::v1::coordinator_client::CoordinatorClient::with_interceptor(
        channel(url),
        with_token(token),
    )
}

fn principals_file() -> String {
    [
        ("alice", "user", ALICE),
        ("bob", "user", BOB),
        ("ops", "admin", OPS),
        ("robot", "worker", ROBOT),
    ]
    .iter()
    .map(|(name, role, token)| {
        format!(
            "[[principal]]\nname = \"{name}\"\nrole = \"{role}\"\ntoken_sha256 = \"{}\"\n\n",
            sha256_hex(token.as_bytes())
        )
    })
    .collect()
}

/// The error of a refused call, checked to be PERMISSION_DENIED naming `principal`.
fn assert_denied(status: tonic::Status, principal: &str, job_id: &str) {
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert!(!status.details().is_empty(), "google.rpc.Status details");
    let error = Error::from_status(&status);
    assert_eq!(error.error_code(), ErrorCode::PermissionDenied);
    assert!(!error.retryable);
    assert_eq!(error.details()["principal"], principal, "{error:?}");
    assert_eq!(error.details()["job_id"], job_id, "{error:?}");
}

fn registration(worker_id: &str) -> centroid_proto::v1::RegisterWorkerRequest {
    centroid_proto::v1::RegisterWorkerRequest {
        worker: Some(centroid_proto::v1::WorkerInfo {
            worker_id: worker_id.into(),
            address: "127.0.0.1:9".into(),
            slots: 1,
            skills: Vec::new(),
            klayout_version: "test".into(),
            protocol_version: centroid_proto::PROTOCOL_VERSION,
            hostname: "test".into(),
            instance_id: format!("{worker_id}-instance"),
            prefetch: 0,
        }),
    }
}

async fn wait_done(client: &mut Client, job_id: &str) -> GetJobResponse {
    let started = Instant::now();
    loop {
        let response = client
            .get_job(GetJobRequest {
                job_id: job_id.into(),
            })
            .await
            .unwrap()
            .into_inner();
        if response.job.as_ref().is_some_and(|job| job.state == "done") {
            return response;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{response:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn listed(jobs: centroid_proto::v1::ListJobsResponse) -> Vec<String> {
    jobs.jobs.into_iter().map(|job| job.job_id).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_principal_sees_and_acts_on_its_own_jobs_and_the_log_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{SHARED}\n")).unwrap();
    let principals = dir.path().join("principals.toml");
    std::fs::write(&principals, principals_file()).unwrap();
    let token_flag = token_file.display().to_string();
    let calls_flag = secret_file(dir.path(), "worker-calls", WORKER_CALLS);
    let robot_flag = secret_file(dir.path(), "robot-token", ROBOT);
    let redis = RedisProcess::start(dir.path());
    let coordinator = CoordinatorProcess::start(
        dir.path(),
        &redis.url(),
        "access",
        &[
            "--token-file",
            &token_flag,
            "--principals",
            &principals.display().to_string(),
            "--worker-call-token-file",
            &calls_flag,
        ],
    );
    let url = coordinator.url();
    // the worker fleet holds no admin token: it requires the worker-call token on
    // calls to it and registers with its `worker` principal's token (robot's)
    let mut worker = WorkerProcess::start_with_flags(
        dir.path(),
        &url,
        "w-1",
        1,
        &[
            "--token-file",
            &calls_flag,
            "--registration-token-file",
            &robot_flag,
        ],
    );

    // UNAUTHENTICATED has the structured details of every error
    let mut anonymous = JobsClient::new(channel(&url));
    let refused = anonymous
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let error = Error::from_status(&refused);
    assert_eq!(
        error.error_code(),
        ErrorCode::Unauthenticated,
        "{refused:?}"
    );
    assert!(
        error.message.contains("CENTROID_TOKEN"),
        "{}",
        error.message
    );
    let refused = jobs_as(&url, WORKER_CALLS)
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::Unauthenticated,
        "the token of calls to workers is nobody's on the coordinator"
    );
    let refused = jobs_as(&url, "nobody-token")
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap_err();
    assert_eq!(
        Error::from_status(&refused).error_code(),
        ErrorCode::Unauthenticated
    );

    // bob's job runs to the end; alice's waits behind it
    let mut alice = jobs_as(&url, ALICE);
    let mut bob = jobs_as(&url, BOB);
    let mut ops = jobs_as(&url, OPS);
    let bob_job = bob
        .submit_job(example_request("ota5", small_job(1, 1, 1), "bob's"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let alice_job = alice
        .submit_job(example_request("ota5", small_job(1, 1, 2), "alice's"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let done = wait_done(&mut bob, &bob_job).await;
    let artifact = done
        .artifacts
        .first()
        .unwrap_or_else(|| panic!("bob's job kept no artifact: {done:?}\n{}", worker.logs()))
        .clone();

    // alice cannot get, watch, fetch from or cancel bob's job
    let get = GetJobRequest {
        job_id: bob_job.clone(),
    };
    assert_denied(
        alice.get_job(get.clone()).await.unwrap_err(),
        "alice",
        &bob_job,
    );
    let watch = WatchJobRequest {
        job_id: bob_job.clone(),
        after_cursor: String::new(),
    };
    assert_denied(
        alice.watch_job(watch.clone()).await.unwrap_err(),
        "alice",
        &bob_job,
    );
    let fetch = FetchArtifactRequest {
        job_id: bob_job.clone(),
        candidate_id: artifact.candidate_id.clone(),
        name: artifact.name.clone(),
    };
    assert_denied(
        alice.fetch_artifact(fetch.clone()).await.unwrap_err(),
        "alice",
        &bob_job,
    );
    let cancel = |job_id: &str| CancelJobRequest {
        job_id: job_id.into(),
        reason: "test".into(),
    };
    assert_denied(
        alice.cancel_job(cancel(&bob_job)).await.unwrap_err(),
        "alice",
        &bob_job,
    );

    // the admin can do all of it
    assert!(ops.get_job(get).await.is_ok());
    let mut events = ops.watch_job(watch).await.unwrap().into_inner();
    assert!(events.message().await.unwrap().is_some(), "bob's events");
    let mut chunks = ops.fetch_artifact(fetch).await.unwrap().into_inner();
    let chunk = chunks.message().await.unwrap().expect("a chunk");
    assert_eq!(chunk.total_size, artifact.size);
    assert!(ops.cancel_job(cancel(&bob_job)).await.is_ok());

    // each user lists its own jobs; the admin lists every job
    let alice_sees = listed(
        alice
            .list_jobs(ListJobsRequest { limit: 10 })
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(alice_sees, vec![alice_job.clone()]);
    let bob_sees = listed(
        bob.list_jobs(ListJobsRequest { limit: 10 })
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(bob_sees, vec![bob_job.clone()]);
    let ops_sees = listed(
        ops.list_jobs(ListJobsRequest { limit: 10 })
            .await
            .unwrap()
            .into_inner(),
    );
    assert!(
        ops_sees.contains(&alice_job) && ops_sees.contains(&bob_job),
        "{ops_sees:?}"
    );
    // alice cancels her own job
    assert!(alice.cancel_job(cancel(&alice_job)).await.is_ok());

    // a user cannot register a worker; a worker principal can, and cannot submit
    let refused = registry_as(&url, ALICE)
        .register_worker(registration("w-by-alice"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    assert_eq!(
        Error::from_status(&refused).details()["worker_id"],
        "w-by-alice"
    );
    let mut robot = registry_as(&url, ROBOT);
    robot
        .register_worker(registration("w-robot"))
        .await
        .expect("a worker principal registers");
    robot
        .deregister_worker(centroid_proto::v1::DeregisterWorkerRequest {
            worker_id: "w-robot".into(),
            instance_id: "w-robot-instance".into(),
            reason: "test over".into(),
        })
        .await
        .expect("and deregisters");
    let refused = jobs_as(&url, ROBOT)
        .submit_job(example_request("ota5", small_job(1, 1, 3), "robot's"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);

    // the shared token is an admin's: it may register a worker
    let mut farm = registry_as(&url, SHARED);
    farm.register_worker(registration("w-by-farm"))
        .await
        .expect("the shared token registers");
    farm.deregister_worker(centroid_proto::v1::DeregisterWorkerRequest {
        worker_id: "w-by-farm".into(),
        instance_id: "w-by-farm-instance".into(),
        reason: "test over".into(),
    })
    .await
    .expect("and deregisters");
    // a worker presenting a user's token is refused and stops, saying why
    let alice_flag = secret_file(dir.path(), "alice-token", ALICE);
    let refused = refused_worker(&url, &calls_flag, &alice_flag);
    assert!(
        !refused.status.success() && refused.log.contains("PERMISSION_DENIED"),
        "a worker with a user's token: {:?}\n{}",
        refused.status,
        refused.log
    );

    // the audit log names each actor
    let log = std::fs::read_to_string(&coordinator.log).unwrap();
    let audit: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("centroid::audit"))
        .collect();
    let has = |words: &[&str]| {
        audit
            .iter()
            .any(|line| words.iter().all(|word| line.contains(word)))
    };
    for words in [
        &["bob", "submit", &bob_job, "ok"][..],
        &["alice", "submit", &alice_job, "ok"],
        &["alice", "get", &bob_job, "denied"],
        &["alice", "watch", &bob_job, "denied"],
        &["alice", "fetch", &bob_job, "denied"],
        &["alice", "cancel", &bob_job, "denied"],
        &["ops", "cancel", &bob_job, "ok"],
        &["alice", "cancel", &alice_job, "ok"],
        &["alice", "register", "w-by-alice", "denied"],
        &["robot", "register", "w-robot", "ok"],
        &["robot", "deregister", "w-robot", "ok"],
        &["robot", "submit", "denied"],
        &["robot", "register", "w-1", "ok"],
        &["(shared token)", "register", "w-by-farm", "ok"],
        &["alice", "register", "w-by-alice-fleet", "denied"],
    ] {
        assert!(
            has(words),
            "no audit line with {words:?} in:\n{}",
            audit.join("\n")
        );
    }
    for token in [SHARED, ALICE, BOB, OPS, ROBOT, WORKER_CALLS] {
        assert!(!log.contains(token), "a token leaked into the log");
    }
    worker.kill9();
}

/// `token` in the file `name` of `dir` (a mounted Secret's stand-in); its path.
fn secret_file(dir: &std::path::Path, name: &str, token: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{token}\n")).unwrap();
    path.display().to_string()
}

/// How a worker that the coordinator refuses ended.
struct RefusedWorker {
    status: std::process::ExitStatus,
    log: String,
}

/// Runs a (simulated) worker `w-by-alice-fleet` registering with the token of
/// `registration_token_file` until it exits by itself (at most a minute).
fn refused_worker(url: &str, token_file: &str, registration_token_file: &str) -> RefusedWorker {
    let output = std::process::Command::new("timeout")
        .arg("60")
        .arg(binary("centroid-worker"))
        .args(["--listen", "127.0.0.1:0", "--coordinator", url])
        .args(["--worker-id", "w-by-alice-fleet", "--slots", "1"])
        .args(["--simulate-candidate-ms", "100", "--token-file", token_file])
        .args(["--registration-token-file", registration_token_file])
        .env("CENTROID_LOG", "info")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run centroid-worker");
    RefusedWorker {
        status: output.status,
        log: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn a_malformed_principals_file_is_refused_at_start_with_the_file_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let principals = dir.path().join("principals.toml");
    std::fs::write(
        &principals,
        principals_file()
            + "[[principal]]\nname = \"mallory\"\nrole = \"root\"\ntoken_sha256 = \"00\"\n",
    )
    .unwrap();
    let output = std::process::Command::new(binary("centroid-coordinator"))
        .args(["--listen", "127.0.0.1:0", "--redis", "memory"])
        .env("CENTROID_PRINCIPALS", &principals)
        .env_remove("CENTROID_TOKEN")
        .env_remove("CENTROID_TOKEN_FILE")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&principals.display().to_string()),
        "{stderr}"
    );
    assert!(
        stderr.contains("principal 5") && stderr.contains("mallory"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown role \"root\""), "{stderr}");
}
