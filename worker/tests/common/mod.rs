//! Shared helpers of the worker's integration tests: start the real
//! `centroid-worker` binary on 127.0.0.1:0 (it writes its bound address to a
//! ready file), talk to it over real gRPC, read its logs.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{
    HealthRequest, HealthResponse, RunCandidateRequest, RunCandidateResponse, SkillCall,
};
use tonic::transport::Channel;

pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("worker/ has a parent")
        .to_path_buf()
}

/// `$CENTROID_PYTHON`, else the repository's `.venv/bin/python`.
pub fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join(".venv/bin/python"))
}

/// `$CENTROID_SKILLS_DIR`, else the repository's `worker/skills`.
pub fn skills_dir() -> PathBuf {
    std::env::var_os("CENTROID_SKILLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join("worker/skills"))
}

/// A running `centroid-worker` process, SIGKILLed on drop if still running.
pub struct WorkerProcess {
    child: Child,
    pub address: String,
    scratch: tempfile::TempDir,
}

impl WorkerProcess {
    /// Starts the binary with `--listen 127.0.0.1:0` and the given extra flags,
    /// and waits until it serves.
    pub fn start(extra_arguments: &[&str]) -> WorkerProcess {
        WorkerProcess::start_with_environment(extra_arguments, &[])
    }

    /// As [`WorkerProcess::start`], with extra environment variables.
    pub fn start_with_environment(
        extra_arguments: &[&str],
        environment: &[(&str, &Path)],
    ) -> WorkerProcess {
        let scratch = tempfile::tempdir().expect("scratch dir");
        let ready_file = scratch.path().join("ready");
        let log_file = std::fs::File::create(scratch.path().join("worker.log")).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_centroid-worker"))
            .args(["--listen", "127.0.0.1:0", "--ready-file"])
            .arg(&ready_file)
            .arg("--python")
            .arg(python())
            .arg("--skills-dir")
            .arg(skills_dir())
            .args(extra_arguments)
            .env("CENTROID_LOG", "info")
            .envs(environment.iter().copied())
            .current_dir(scratch.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .expect("spawn centroid-worker");
        let mut worker = WorkerProcess {
            child,
            address: String::new(),
            scratch,
        };
        let started = Instant::now();
        loop {
            if let Ok(address) = std::fs::read_to_string(&ready_file)
                && !address.is_empty()
            {
                worker.address = format!("http://{}", address.trim());
                return worker;
            }
            if let Ok(Some(status)) = worker.child.try_wait() {
                panic!(
                    "centroid-worker exited before serving ({status}):\n{}",
                    worker.logs()
                );
            }
            if started.elapsed() > Duration::from_secs(90) {
                panic!(
                    "centroid-worker did not serve within 90 s:\n{}",
                    worker.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts the binary and expects it to exit before it serves (or soon after).
    pub fn command(extra_arguments: &[&str], scratch: &Path) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_centroid-worker"));
        command
            .args(["--listen", "127.0.0.1:0", "--python"])
            .arg(python())
            .arg("--skills-dir")
            .arg(skills_dir())
            .args(extra_arguments)
            .current_dir(scratch)
            .stdin(Stdio::null());
        command
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.scratch.path().join("worker.log")).unwrap_or_default()
    }

    pub async fn client(&self) -> WorkerClient<Channel> {
        WorkerClient::connect(self.address.clone())
            .await
            .expect("connect to the worker")
            .max_decoding_message_size(256 * 1024 * 1024)
    }

    pub fn send_signal(&self, signal: i32) {
        // SAFETY: plain syscall on our own child's pid.
        let result = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(result, 0, "kill({signal}) failed");
    }

    /// Waits for the process to exit, up to `limit`.
    pub async fn wait_for_exit(&mut self, limit: Duration) -> ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if started.elapsed() > limit {
                panic!(
                    "centroid-worker still running after {limit:?}:\n{}",
                    self.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn step(step_id: &str, skill: &str, arguments: serde_json::Value) -> SkillCall {
    SkillCall {
        step_id: step_id.to_string(),
        skill: skill.to_string(),
        arguments_json: arguments.to_string(),
    }
}

pub fn candidate(
    candidate_id: &str,
    deadline_ms: u64,
    plan: Vec<SkillCall>,
) -> RunCandidateRequest {
    RunCandidateRequest {
        candidate_id: candidate_id.to_string(),
        session_id: "test-session".to_string(),
        deadline_ms,
        plan,
        continue_on_error: false,
        inputs: Vec::new(),
    }
}

pub async fn run(
    client: &mut WorkerClient<Channel>,
    request: RunCandidateRequest,
) -> Result<RunCandidateResponse, tonic::Status> {
    client
        .run_candidate(request)
        .await
        .map(tonic::Response::into_inner)
}

/// Runs a one-step `debug.sleep` candidate in the background (the slot stays busy
/// for `seconds`); the handle yields the RunCandidate outcome.
pub fn spawn_sleeping_candidate(
    client: &WorkerClient<Channel>,
    candidate_id: &str,
    deadline_ms: u64,
    seconds: u64,
) -> tokio::task::JoinHandle<Result<RunCandidateResponse, tonic::Status>> {
    let mut client = client.clone();
    let request = sleep_candidate(candidate_id, deadline_ms, serde_json::json!(seconds));
    tokio::spawn(async move { run(&mut client, request).await })
}

/// A candidate of one `debug.sleep` step (`seconds` as given, valid or not).
pub fn sleep_candidate(
    candidate_id: &str,
    deadline_ms: u64,
    seconds: serde_json::Value,
) -> RunCandidateRequest {
    candidate(
        candidate_id,
        deadline_ms,
        vec![step(
            "s1",
            "debug.sleep",
            serde_json::json!({ "seconds": seconds }),
        )],
    )
}

/// Waits until the (single) slot is free again on a process other than `old_pid`.
pub async fn wait_for_fresh_process(
    client: &mut WorkerClient<Channel>,
    old_pid: u32,
) -> HealthResponse {
    let health = wait_for_health(
        client,
        Duration::from_secs(60),
        "a fresh process",
        |health| health.free_slots == 1 && health.slot_health[0].pid != 0,
    )
    .await;
    assert_ne!(
        health.slot_health[0].pid, old_pid,
        "the slot must run a new process"
    );
    health
}

pub async fn health(client: &mut WorkerClient<Channel>) -> HealthResponse {
    client
        .health(HealthRequest {})
        .await
        .expect("health")
        .into_inner()
}

/// Polls Health until `condition` holds, up to `limit`.
pub async fn wait_for_health(
    client: &mut WorkerClient<Channel>,
    limit: Duration,
    what: &str,
    condition: impl Fn(&HealthResponse) -> bool,
) -> HealthResponse {
    let started = Instant::now();
    loop {
        let current = health(client).await;
        if condition(&current) {
            return current;
        }
        if started.elapsed() > limit {
            panic!("timed out waiting for {what}; last health: {current:?}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits until `candidate_id` is running on some slot and its `min_calls`-th
/// tools/call has been forwarded to KLayout; returns (slot pid, calls).
pub async fn wait_until_running(
    client: &mut WorkerClient<Channel>,
    candidate_id: &str,
    min_calls: u64,
) -> (u32, u64) {
    let health = wait_for_health(
        client,
        Duration::from_secs(30),
        "the candidate to be running",
        |health| {
            health.slot_health.iter().any(|slot| {
                slot.candidate_id == candidate_id
                    && slot.pid != 0
                    && slot.calls_forwarded >= min_calls
            })
        },
    )
    .await;
    let slot = health
        .slot_health
        .iter()
        .find(|slot| slot.candidate_id == candidate_id)
        .unwrap();
    (slot.pid, slot.calls_forwarded)
}

pub fn process_is_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks existence.
    unsafe { libc::kill(pid as libc::pid_t, 0) == 0 }
}

/// Runs a command to its exit (SIGKILL and panic after `limit`); returns its status and stderr.
pub async fn run_to_exit(mut command: Command, limit: Duration) -> (ExitStatus, String) {
    let log = tempfile::NamedTempFile::new().expect("log file");
    let mut child = command
        .stdout(Stdio::null())
        .stderr(log.reopen().expect("reopen log"))
        .spawn()
        .expect("spawn");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return (
                status,
                std::fs::read_to_string(log.path()).unwrap_or_default(),
            );
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "still running after {limit:?}:\n{}",
                std::fs::read_to_string(log.path()).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
