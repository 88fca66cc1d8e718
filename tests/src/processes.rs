//! The real processes of a sandbox: a Redis server with AOF on a free port, the
//! coordinator and worker binaries on 127.0.0.1:0 (each reports its bound address
//! in a ready file), killed with SIGKILL on drop, their logs kept in the sandbox
//! directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{binary, free_port, python, skills_dir, tail, wait_for_file};

fn signal(child: &Child, signal: i32) {
    // SAFETY: kill(2) on a pid we spawned and have not reaped yet.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

/// A redis-server with AOF on, in its own directory, on a fixed free port (so it can restart on it).
pub struct RedisProcess {
    child: Option<Child>,
    pub port: u16,
    dir: PathBuf,
    log: PathBuf,
    /// served over TLS only (no plaintext port), with a password
    tls: Option<RedisTls>,
}

/// The TLS files and password of a Redis serving `rediss://` only.
pub struct RedisTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ca: PathBuf,
    pub password: String,
}

impl RedisProcess {
    pub fn start(dir: &Path) -> RedisProcess {
        RedisProcess::start_with(dir, None)
    }

    /// A Redis that serves TLS only (its certificate `tls.cert` for localhost) and asks
    /// for `tls.password`; [`RedisProcess::url`] is its `rediss://` URL.
    pub fn start_tls(dir: &Path, tls: RedisTls) -> RedisProcess {
        RedisProcess::start_with(dir, Some(tls))
    }

    fn start_with(dir: &Path, tls: Option<RedisTls>) -> RedisProcess {
        let port = free_port();
        let data = dir.join("redis");
        std::fs::create_dir_all(&data).expect("redis dir");
        let mut redis = RedisProcess {
            child: None,
            port,
            dir: data,
            log: dir.join("redis.log"),
            tls,
        };
        redis.spawn();
        redis
    }

    /// The flags that choose the port (plain or TLS) and the password.
    fn serving_flags(&self) -> Vec<String> {
        let port = self.port.to_string();
        let Some(tls) = &self.tls else {
            return vec!["--port".into(), port];
        };
        let path = |path: &Path| path.display().to_string();
        vec![
            "--port".into(),
            "0".into(),
            "--tls-port".into(),
            port,
            "--tls-cert-file".into(),
            path(&tls.cert),
            "--tls-key-file".into(),
            path(&tls.key),
            "--tls-ca-cert-file".into(),
            path(&tls.ca),
            "--tls-auth-clients".into(),
            "no".into(),
            "--requirepass".into(),
            tls.password.clone(),
        ]
    }

    /// redis-cli's flags to reach this server.
    fn cli_flags(&self) -> Vec<String> {
        let mut flags = vec!["-p".to_string(), self.port.to_string()];
        if let Some(tls) = &self.tls {
            flags.extend([
                "--tls".into(),
                "--cacert".into(),
                tls.ca.display().to_string(),
                "-a".into(),
                tls.password.clone(),
                "--no-auth-warning".into(),
            ]);
        }
        flags
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("redis log");
        let child = Command::new("redis-server")
            .args(self.serving_flags())
            .args([
                "--bind",
                "127.0.0.1",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
            ])
            .args(["--maxmemory-policy", "noeviction", "--dir"])
            .arg(&self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn redis-server (apt-get install -y redis-server, or make redis)");
        self.child = Some(child);
        let started = Instant::now();
        loop {
            if self.ping() {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server did not answer:\n{}",
                tail(&self.log, 30)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn ping(&self) -> bool {
        use std::io::{Read, Write};
        if self.tls.is_some() {
            return self.cli(&["PING"]) == "PONG";
        }
        let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        if stream.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buffer = [0u8; 16];
        matches!(stream.read(&mut buffer), Ok(count) if buffer[..count].starts_with(b"+PONG"))
    }

    pub fn url(&self) -> String {
        match &self.tls {
            // the certificate names localhost
            Some(tls) => format!("rediss://:{}@localhost:{}", tls.password, self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// SIGTERM (redis fsyncs the AOF on shutdown), wait, start again on the same port and directory.
    pub fn restart(&mut self, down_for: Duration) {
        if let Some(mut child) = self.child.take() {
            signal(&child, libc::SIGTERM);
            let _ = child.wait();
        }
        std::thread::sleep(down_for);
        self.spawn();
    }

    /// A raw command through redis-cli (for assertions on keys).
    pub fn cli(&self, arguments: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .args(self.cli_flags())
            .args(arguments)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Timings short enough for tests: heartbeats every 200 ms, a worker is dead after
/// 1.5 s of silence, a lease lapses after 2.5 s.
pub const TEST_COORDINATOR_FLAGS: &[&str] = &[
    "--heartbeat-interval-ms",
    "200",
    "--heartbeat-timeout-ms",
    "1500",
    "--lease-timeout-ms",
    "2500",
];

/// A coordinator's log filter that adds the log lines of per-candidate events
/// (dispatched, finished, evaluated: debug, under their own target) to the default
/// `info` — what a test reading those lines starts its coordinators with.
pub const CANDIDATE_EVENTS_LOGGED: &str = "info,centroid::candidate_events=debug";

/// The coordinator binary: `$CENTROID_BENCH_COORDINATOR` when set (a bench pairing
/// a coordinator built from other code with this one), else this build's.
fn coordinator_binary() -> PathBuf {
    std::env::var_os("CENTROID_BENCH_COORDINATOR")
        .map(PathBuf::from)
        .unwrap_or_else(|| binary("centroid-coordinator"))
}

pub struct CoordinatorProcess {
    child: Option<Child>,
    /// host:port it serves on (kept across restarts)
    pub address: String,
    redis_url: String,
    prefix: String,
    consumer: String,
    extra: Vec<String>,
    /// `CENTROID_LOG` of the process
    log_filter: String,
    dir: PathBuf,
    pub log: PathBuf,
    starts: u32,
}

impl CoordinatorProcess {
    pub fn start(dir: &Path, redis_url: &str, prefix: &str, extra: &[&str]) -> CoordinatorProcess {
        CoordinatorProcess::start_named(dir, redis_url, prefix, "coordinator-test", extra)
    }

    /// A coordinator with its own consumer name (several may share one Redis and prefix).
    pub fn start_named(
        dir: &Path,
        redis_url: &str,
        prefix: &str,
        consumer: &str,
        extra: &[&str],
    ) -> CoordinatorProcess {
        CoordinatorProcess::start_with_log_filter(dir, redis_url, prefix, consumer, extra, "info")
    }

    /// As [`CoordinatorProcess::start_named`], logging by `log_filter` (`CENTROID_LOG`)
    /// instead of `info`: e.g. [`CANDIDATE_EVENTS_LOGGED`].
    pub fn start_with_log_filter(
        dir: &Path,
        redis_url: &str,
        prefix: &str,
        consumer: &str,
        extra: &[&str],
        log_filter: &str,
    ) -> CoordinatorProcess {
        std::fs::create_dir_all(dir).expect("coordinator dir");
        let mut coordinator = CoordinatorProcess {
            log_filter: log_filter.to_string(),
            child: None,
            address: "127.0.0.1:0".into(),
            redis_url: redis_url.to_string(),
            prefix: prefix.to_string(),
            consumer: consumer.to_string(),
            extra: extra.iter().map(|flag| flag.to_string()).collect(),
            dir: dir.to_path_buf(),
            log: dir.join("coordinator.log"),
            starts: 0,
        };
        coordinator.spawn();
        coordinator
    }

    fn spawn(&mut self) {
        self.starts += 1;
        let ready = self.dir.join(format!("coordinator.ready.{}", self.starts));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("coordinator log");
        let mut child = Command::new(coordinator_binary())
            .args([
                "--listen",
                &self.address,
                "--redis",
                &self.redis_url,
                "--key-prefix",
                &self.prefix,
                "--consumer",
                &self.consumer,
            ])
            .args(TEST_COORDINATOR_FLAGS)
            .args(&self.extra)
            .arg("--ready-file")
            .arg(&ready)
            .env("CENTROID_LOG", &self.log_filter)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn centroid-coordinator");
        self.address = wait_for_file(
            &ready,
            &mut child,
            "centroid-coordinator",
            &self.log,
            Duration::from_secs(60),
        );
        self.child = Some(child);
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The process id of the running coordinator.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the coordinator runs").id()
    }

    /// SIGKILL.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts again on the same address.
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    pub fn logs(&self) -> String {
        tail(&self.log, 200)
    }
}

impl Drop for CoordinatorProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub struct WorkerProcess {
    child: Option<Child>,
    pub worker_id: String,
    pub address: String,
    pub log: PathBuf,
}

impl WorkerProcess {
    pub fn start(dir: &Path, coordinator_url: &str, worker_id: &str, slots: u32) -> WorkerProcess {
        WorkerProcess::start_with_flags(dir, coordinator_url, worker_id, slots, &[])
    }

    /// A worker with extra flags (e.g. `--token-file`).
    pub fn start_with_flags(
        dir: &Path,
        coordinator_url: &str,
        worker_id: &str,
        slots: u32,
        extra: &[&str],
    ) -> WorkerProcess {
        WorkerProcess::start_listening(dir, coordinator_url, worker_id, slots, "127.0.0.1:0", extra)
    }

    /// A worker serving on `listen` (e.g. a port picked beforehand, so that a proxy
    /// in front of it can be started first and given as `--advertise-address`).
    pub fn start_listening(
        dir: &Path,
        coordinator_url: &str,
        worker_id: &str,
        slots: u32,
        listen: &str,
        extra: &[&str],
    ) -> WorkerProcess {
        let ready = dir.join(format!("{worker_id}.ready"));
        let log_path = dir.join(format!("{worker_id}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("worker log");
        let mut child = Command::new(binary("centroid-worker"))
            .args([
                "--listen",
                listen,
                "--coordinator",
                coordinator_url,
                "--worker-id",
                worker_id,
            ])
            .args([
                "--slots",
                &slots.to_string(),
                "--heartbeat-interval-ms",
                "200",
                "--drain-grace-ms",
                "2000",
                "--memory-limit-mb",
                "0",
            ])
            .arg("--python")
            .arg(python())
            .arg("--skills-dir")
            .arg(skills_dir())
            .args(extra)
            .arg("--ready-file")
            .arg(&ready)
            .env("CENTROID_LOG", "info")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn centroid-worker");
        let address = wait_for_file(
            &ready,
            &mut child,
            "centroid-worker",
            &log_path,
            Duration::from_secs(120),
        );
        WorkerProcess {
            child: Some(child),
            worker_id: worker_id.to_string(),
            address: format!("http://{address}"),
            log: log_path,
        }
    }

    /// The exit status once the process ended by itself (`None` while it runs).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    pub fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The worker process's id (its KLayout children run in process groups of their own).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the worker runs").id()
    }

    /// SIGSTOP: the worker process stops dead (no heartbeats, no answers, sockets
    /// left open); its KLayout children, in their own process groups, run on.
    pub fn freeze(&self) {
        signal(self.child.as_ref().expect("the worker runs"), libc::SIGSTOP);
    }

    /// SIGCONT after [`WorkerProcess::freeze`].
    pub fn thaw(&self) {
        signal(self.child.as_ref().expect("the worker runs"), libc::SIGCONT);
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}
