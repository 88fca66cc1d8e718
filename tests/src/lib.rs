//! Helpers shared by the multi-process integration tests in `tests/tests/`, in the
//! style of Quickwit's `ClusterSandbox`: a [`Sandbox`] starts a real Redis server
//! (AOF on) on a free port, the real `centroid-coordinator` binary and real
//! `centroid-worker` binaries on 127.0.0.1:0 (each reports its bound address in a
//! ready file), and talks to them over gRPC. Processes are SIGKILLed on drop; logs
//! are kept in the sandbox directory and printed when a test asks for them.

pub mod blackhole_proxy;
pub mod chaos;
pub mod fake_llm;
mod jobs;
pub mod pki;
mod processes;
pub mod simulated_worker;

pub use jobs::{
    assert_accounted_once, assert_all_finished, event_data, example_request, kind, sleep_job,
    small_job, wait_for_event, wait_for_running_on,
};
pub use processes::{
    CANDIDATE_EVENTS_LOGGED, CoordinatorProcess, RedisProcess, RedisTls, TEST_COORDINATOR_FLAGS,
    WorkerProcess,
};

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Once;
use std::time::{Duration, Instant};

use centroid_proto::v1::jobs_client::JobsClient;
use centroid_proto::v1::{
    GetJobRequest, GetJobResponse, JobEvent, JobOptions, ListWorkersRequest, WatchJobRequest,
};
use tonic::transport::Channel;

pub fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

pub fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join(".venv/bin/python"))
}

pub fn skills_dir() -> PathBuf {
    std::env::var_os("CENTROID_SKILLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join("worker/skills"))
}

/// target/<profile>/ of the running test binary (target/<profile>/deps/<test>).
fn binary_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let deps = exe.parent().expect("deps dir");
    let profile_dir = if deps.file_name().is_some_and(|name| name == "deps") {
        deps.parent().expect("profile dir")
    } else {
        deps
    };
    profile_dir.to_path_buf()
}

static BUILD: Once = Once::new();

/// Builds the coordinator, worker and CLI binaries once per test process (a no-op when up to date).
pub fn ensure_binaries() {
    BUILD.call_once(|| {
        let release = binary_dir()
            .file_name()
            .is_some_and(|name| name == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = Command::new(cargo);
        command.current_dir(repository_root()).args([
            "build",
            "--bins",
            "-p",
            "centroid-coordinator",
            "-p",
            "centroid-worker",
            "-p",
            "centroid-cli",
        ]);
        if release {
            command.arg("--release");
        }
        let status = command.status().expect("run cargo build");
        assert!(status.success(), "building the binaries failed");
    });
}

pub fn binary(name: &str) -> PathBuf {
    ensure_binaries();
    let path = binary_dir().join(name);
    assert!(
        path.exists(),
        "{} is missing; run cargo build --workspace --bins",
        path.display()
    );
    path
}

/// A free TCP port on 127.0.0.1 (for redis-server, which cannot report one).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind :0")
        .local_addr()
        .expect("local addr")
        .port()
}

pub(crate) fn wait_for_file(
    path: &Path,
    child: &mut Child,
    what: &str,
    log: &Path,
    timeout: Duration,
) -> String {
    let started = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.trim().is_empty()
        {
            return text.trim().to_string();
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{what} exited before serving ({status}):\n{}",
                tail(log, 60)
            );
        }
        assert!(
            started.elapsed() < timeout,
            "{what} did not serve within {timeout:?}:\n{}",
            tail(log, 60)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last `lines` lines of a log file.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A Redis server, a coordinator and workers, with clients.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub redis: RedisProcess,
    pub coordinator: CoordinatorProcess,
    pub workers: Vec<WorkerProcess>,
    pub prefix: String,
}

impl Sandbox {
    /// Redis + coordinator (no worker yet).
    pub fn start(coordinator_flags: &[&str]) -> Sandbox {
        Sandbox::start_with_log_filter(coordinator_flags, "info")
    }

    /// As [`Sandbox::start`], the coordinator logging by `log_filter` (`CENTROID_LOG`).
    pub fn start_with_log_filter(coordinator_flags: &[&str], log_filter: &str) -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("centroid-sandbox-")
            .tempdir()
            .expect("sandbox dir");
        let redis = RedisProcess::start(dir.path());
        let prefix = format!("t{}", std::process::id());
        let coordinator = CoordinatorProcess::start_with_log_filter(
            dir.path(),
            &redis.url(),
            &prefix,
            "coordinator-test",
            coordinator_flags,
            log_filter,
        );
        Sandbox {
            dir,
            redis,
            coordinator,
            workers: Vec::new(),
            prefix,
        }
    }

    /// Starts a worker and waits until the coordinator lists it alive.
    pub async fn add_worker(&mut self, worker_id: &str, slots: u32) {
        let worker =
            WorkerProcess::start(self.dir.path(), &self.coordinator.url(), worker_id, slots);
        self.workers.push(worker);
        self.wait_for_workers(&[worker_id]).await;
    }

    pub async fn wait_for_workers(&self, worker_ids: &[&str]) {
        let started = Instant::now();
        loop {
            if let Ok(mut client) = self.client().await
                && let Ok(response) = client.list_workers(ListWorkersRequest {}).await
            {
                let alive: Vec<String> = response
                    .into_inner()
                    .workers
                    .into_iter()
                    .filter(|status| status.alive)
                    .filter_map(|status| status.info.map(|info| info.worker_id))
                    .collect();
                if worker_ids
                    .iter()
                    .all(|id| alive.iter().any(|alive_id| alive_id == id))
                {
                    return;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "workers {worker_ids:?} did not register:\n{}",
                self.coordinator.logs()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub fn worker(&mut self, worker_id: &str) -> &mut WorkerProcess {
        self.workers
            .iter_mut()
            .find(|worker| worker.worker_id == worker_id)
            .expect("known worker")
    }

    pub async fn client(&self) -> Result<JobsClient<Channel>, tonic::transport::Error> {
        client_for(&self.coordinator.url()).await
    }

    /// Submits an example circuit directory (e.g. "ota5").
    pub async fn submit_example(&self, example: &str, options: JobOptions) -> String {
        let request = example_request(example, options, example);
        let mut client = self.client().await.expect("connect");
        client
            .submit_job(request)
            .await
            .expect("submit")
            .into_inner()
            .job_id
    }

    pub async fn get_job(&self, job_id: &str) -> GetJobResponse {
        let started = Instant::now();
        loop {
            if let Ok(mut client) = self.client().await
                && let Ok(response) = client
                    .get_job(GetJobRequest {
                        job_id: job_id.to_string(),
                    })
                    .await
            {
                return response.into_inner();
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "GetJob kept failing:\n{}",
                self.coordinator.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Polls GetJob until the job is done; panics with the logs after `timeout`.
    pub async fn wait_done(&self, job_id: &str, timeout: Duration) -> GetJobResponse {
        let started = Instant::now();
        loop {
            let response = self.get_job(job_id).await;
            if response.job.as_ref().is_some_and(|job| job.state == "done") {
                return response;
            }
            assert!(
                started.elapsed() < timeout,
                "job {job_id} not done after {timeout:?}: {:?}\n{}",
                response.job,
                self.coordinator.logs()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Polls GetJob until `predicate` holds.
    pub async fn wait_until(
        &self,
        job_id: &str,
        timeout: Duration,
        what: &str,
        predicate: impl Fn(&GetJobResponse) -> bool,
    ) -> GetJobResponse {
        let started = Instant::now();
        loop {
            let response = self.get_job(job_id).await;
            if predicate(&response) {
                return response;
            }
            assert!(
                started.elapsed() < timeout,
                "{what}: not within {timeout:?}: {:?}\n{}",
                response.job,
                self.coordinator.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// WatchJob of the job from its first event.
    pub async fn watch(&self, job_id: &str) -> tonic::Streaming<JobEvent> {
        let mut client = self.client().await.expect("connect");
        client
            .watch_job(WatchJobRequest {
                job_id: job_id.to_string(),
                after_cursor: String::new(),
            })
            .await
            .expect("watch")
            .into_inner()
    }

    /// Every event of the job from the beginning (WatchJob ends after the last one).
    pub async fn events(&self, job_id: &str) -> Vec<JobEvent> {
        let mut stream = self.watch(job_id).await;
        let mut events = Vec::new();
        while let Ok(Some(event)) = tokio::time::timeout(Duration::from_secs(30), stream.message())
            .await
            .expect("watch stalled")
        {
            let last = event.last;
            events.push(event);
            if last {
                break;
            }
        }
        events
    }

    pub fn dump_logs(&self) {
        eprintln!("--- coordinator ---\n{}", self.coordinator.logs());
        for worker in &self.workers {
            eprintln!("--- {} ---\n{}", worker.worker_id, tail(&worker.log, 60));
        }
    }
}

/// A Jobs client for a coordinator URL.
pub async fn client_for(url: &str) -> Result<JobsClient<Channel>, tonic::transport::Error> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_string())
        .expect("url")
        .connect_timeout(Duration::from_secs(2))
        .connect()
        .await?;
    Ok(JobsClient::new(channel).max_decoding_message_size(64 * 1024 * 1024))
}
