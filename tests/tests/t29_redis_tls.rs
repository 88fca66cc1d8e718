//! Redis over TLS (issue 29, deploy: "Redis with a password … and TLS option"): a
//! Redis serving `rediss://` only, with a password and a certificate of a private
//! root. A coordinator given that root (`--redis-tls-ca`) keeps its jobs there and a
//! job runs to a clean layout; a coordinator trusting another root refuses the server
//! and exits with the certificate named, instead of talking to it.

use std::process::{Command, Stdio};
use std::time::Duration;

use centroid_tests::pki::TestPki;
use centroid_tests::{
    CoordinatorProcess, RedisProcess, RedisTls, Sandbox, TEST_COORDINATOR_FLAGS, binary, small_job,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_on_a_tls_redis_whose_root_the_coordinator_is_given() {
    let dir = tempfile::Builder::new()
        .prefix("centroid-redis-tls-")
        .tempdir()
        .unwrap();
    let pki = TestPki::write(dir.path());
    let redis = RedisProcess::start_tls(
        dir.path(),
        RedisTls {
            cert: pki.server_cert.clone(),
            key: pki.server_key.clone(),
            ca: pki.ca.clone(),
            password: "farm-redis-secret".into(),
        },
    );
    assert!(redis.url().starts_with("rediss://"), "{}", redis.url());

    // another root: the server's certificate does not chain to it
    let other = pki.other_ca.display().to_string();
    let stderr = refused_coordinator(&redis.url(), &other);
    assert!(
        stderr.to_lowercase().contains("certificate"),
        "the refusal names the certificate: {stderr}"
    );
    assert!(
        !stderr.contains("farm-redis-secret"),
        "the password stays out of the log: {stderr}"
    );
    // the right root, a wrong password: refused at once (nothing mends it by waiting)
    let ca = pki.ca.display().to_string();
    let wrong_password = redis.url().replace("farm-redis-secret", "guessed");
    let stderr = refused_coordinator(&wrong_password, &ca);
    assert!(
        stderr.contains("WRONGPASS") || stderr.to_lowercase().contains("auth"),
        "the refusal says the password is wrong: {stderr}"
    );
    assert_eq!(
        redis.cli(&["--scan", "--pattern", "stranger:*"]),
        "",
        "nothing written by the coordinator that refused the server"
    );

    let prefix = "tls".to_string();
    let coordinator =
        CoordinatorProcess::start(dir.path(), &redis.url(), &prefix, &["--redis-tls-ca", &ca]);
    let mut sandbox = Sandbox {
        dir,
        redis,
        coordinator,
        workers: Vec::new(),
        prefix,
    };
    sandbox.add_worker("w-redis-tls", 2).await;
    let job_id = sandbox.submit_example("ota5", small_job(2, 1, 7)).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(240)).await;
    let summary = done.job.clone().expect("job summary");
    assert_eq!(
        summary.outcome,
        "completed",
        "{summary:?}\n{}",
        sandbox.coordinator.logs()
    );
    assert!(summary.best_passed, "{summary:?}");
    assert_eq!(done.candidates.len(), 2, "{:?}", done.candidates);
    // the job lives in the TLS Redis: its record is read back over TLS
    let keys = sandbox
        .redis
        .cli(&["--scan", "--pattern", &format!("tls:*{job_id}*")]);
    assert!(!keys.is_empty(), "the job's keys are in the TLS redis");
}

/// Runs a coordinator on `redis_url` trusting `roots`; it must exit with an error:
/// its stderr.
fn refused_coordinator(redis_url: &str, roots: &str) -> String {
    let refused = Command::new(binary("centroid-coordinator"))
        .args(["--listen", "127.0.0.1:0", "--redis", redis_url])
        .args(["--redis-tls-ca", roots, "--key-prefix", "stranger"])
        .args(TEST_COORDINATOR_FLAGS)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run centroid-coordinator");
    let stderr = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(!refused.status.success(), "{stderr}");
    assert!(stderr.contains("connecting to redis"), "{stderr}");
    stderr
}
