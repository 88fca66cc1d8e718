//! A `centroid-worker` in its bench/test simulation mode (`--simulate-candidate-ms`):
//! no KLayout, every candidate answered ok after the delay, many slots per
//! process. Real gRPC, real registration; stopped with SIGTERM (it deregisters).
//! `$CENTROID_BENCH_WORKER`, when set, is the worker binary (a bench pairing a
//! worker built from other code with this build's harness).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use centroid_proto::v1::ListWorkersRequest;

use crate::{binary, client_for, tail, wait_for_file};

pub struct SimulatedWorkerProcess {
    child: Option<Child>,
    pub worker_id: String,
    pub address: String,
    pub log: PathBuf,
}

impl SimulatedWorkerProcess {
    /// Starts a simulated worker of `slots` slots answering after `delay_ms`,
    /// registering with `coordinator_url`.
    pub fn start(
        dir: &Path,
        coordinator_url: &str,
        worker_id: &str,
        slots: u32,
        delay_ms: u64,
    ) -> SimulatedWorkerProcess {
        Self::start_with_args(dir, coordinator_url, worker_id, slots, delay_ms, &[])
    }

    /// [`Self::start`] with more flags (e.g. `--prefetch 0`).
    pub fn start_with_args(
        dir: &Path,
        coordinator_url: &str,
        worker_id: &str,
        slots: u32,
        delay_ms: u64,
        args: &[&str],
    ) -> SimulatedWorkerProcess {
        let ready = dir.join(format!("{worker_id}.ready"));
        let log_path = dir.join(format!("{worker_id}.log"));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("worker log");
        let worker_binary = std::env::var_os("CENTROID_BENCH_WORKER")
            .map(PathBuf::from)
            .unwrap_or_else(|| binary("centroid-worker"));
        let mut child = Command::new(worker_binary)
            .args(["--listen", "127.0.0.1:0", "--coordinator", coordinator_url])
            .args(["--worker-id", worker_id, "--slots", &slots.to_string()])
            .args(["--simulate-candidate-ms", &delay_ms.to_string()])
            .args(["--heartbeat-interval-ms", "200"])
            .args(args)
            .arg("--ready-file")
            .arg(&ready)
            .env("CENTROID_LOG", "warn")
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn centroid-worker --simulate-candidate-ms");
        let address = wait_for_file(
            &ready,
            &mut child,
            "simulated centroid-worker",
            &log_path,
            Duration::from_secs(30),
        );
        SimulatedWorkerProcess {
            child: Some(child),
            worker_id: worker_id.to_string(),
            address: format!("http://{address}"),
            log: log_path,
        }
    }

    /// SIGTERM (the worker deregisters), then waits for the exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on a pid we spawned and have not reaped yet.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            if let Err(error) = child.wait() {
                eprintln!("waiting for {}: {error}", self.worker_id);
            }
        }
    }

    pub fn logs(&self) -> String {
        tail(&self.log, 60)
    }
}

impl Drop for SimulatedWorkerProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // already exited when the kill fails: nothing more to do
            if child.kill().is_ok() {
                child.wait().ok();
            }
        }
    }
}

/// Waits until the coordinator at `coordinator_url` lists `worker_ids` alive.
pub async fn wait_registered(coordinator_url: &str, worker_ids: &[String]) {
    let started = Instant::now();
    loop {
        if let Ok(mut client) = client_for(coordinator_url).await
            && let Ok(response) = client.list_workers(ListWorkersRequest {}).await
        {
            let alive: Vec<String> = response
                .into_inner()
                .workers
                .into_iter()
                .filter(|status| status.alive)
                .filter_map(|status| status.info.map(|info| info.worker_id))
                .collect();
            if worker_ids.iter().all(|id| alive.contains(id)) {
                return;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "workers {worker_ids:?} did not register at {coordinator_url}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
