//! Overhead per call: the no-op skill `debug.noop` through the worker's gRPC
//! RunCandidate (real `centroid-worker` binary, loopback) versus the same call
//! straight over stdio to a skill-server child.
//!
//! Run: `cargo bench -p centroid-worker --bench call_overhead`
//! (CALL_OVERHEAD_ITERATIONS=N to change the sample size; default 400).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{HealthRequest, RunCandidateRequest, SkillCall};
use centroid_worker::skill_process::{SkillProcess, SkillServerCommand};
use serde_json::json;

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("worker/ has a parent")
        .to_path_buf()
}

fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join(".venv/bin/python"))
}

fn skills_dir() -> PathBuf {
    std::env::var_os("CENTROID_SKILLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join("worker/skills"))
}

struct Sample {
    label: &'static str,
    durations: Vec<Duration>,
}

impl Sample {
    fn quantile(&self, fraction: f64) -> Duration {
        let mut sorted = self.durations.clone();
        sorted.sort();
        let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
        sorted[index]
    }

    fn median(&self) -> Duration {
        self.quantile(0.5)
    }
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

/// Times each of `iterations` runs of an async block.
macro_rules! time_each {
    ($iterations:expr, $body:block) => {{
        let mut durations = Vec::with_capacity($iterations);
        for _ in 0..$iterations {
            let started = Instant::now();
            $body;
            durations.push(started.elapsed());
        }
        durations
    }};
}

fn candidate(index: usize, steps: usize) -> RunCandidateRequest {
    RunCandidateRequest {
        candidate_id: format!("bench-{index}"),
        session_id: "bench".into(),
        deadline_ms: 10_000,
        plan: (0..steps)
            .map(|step| SkillCall {
                step_id: format!("s{step}"),
                skill: "debug.noop".into(),
                arguments_json: "{}".into(),
            })
            .collect(),
        continue_on_error: false,
        inputs: Vec::new(),
    }
}

fn main() {
    let iterations: usize = std::env::var("CALL_OVERHEAD_ITERATIONS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(400);
    let warm_up = 50;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        // --- straight over stdio ---------------------------------------------------------
        let command = SkillServerCommand {
            python: python(),
            skills_dir: skills_dir(),
            memory_limit_bytes: 4 * 1024 * 1024 * 1024,
        signoff_decks: String::new(),
        };
        let mut process = SkillProcess::spawn(&command, 0).expect("spawn skill server");
        let far = || tokio::time::Instant::now() + Duration::from_secs(30);
        process.initialize(far()).await.expect("initialize");
        for _ in 0..warm_up {
            process.call_tool("debug.noop", json!({}), far()).await.expect("noop");
        }
        let direct_call = time_each!(iterations, {
            let result = process.call_tool("debug.noop", json!({}), far()).await.expect("noop");
            assert!(result.ok);
        });
        let direct_reset_and_call = time_each!(iterations, {
            process.reset_session(far(), None, "").await.expect("reset");
            let result = process.call_tool("debug.noop", json!({}), far()).await.expect("noop");
            assert!(result.ok);
        });
        process.shut_down(Duration::from_secs(2)).await;

        // --- through the worker (real binary, one slot, loopback gRPC) ----------------------
        let scratch = tempfile::tempdir().expect("scratch");
        let ready_file = scratch.path().join("ready");
        let mut worker = Command::new(env!("CARGO_BIN_EXE_centroid-worker"))
            .args(["--listen", "127.0.0.1:0", "--slots", "1", "--ready-file"])
            .arg(&ready_file)
            .arg("--python")
            .arg(python())
            .arg("--skills-dir")
            .arg(skills_dir())
            .env("CENTROID_LOG", std::env::var("CALL_OVERHEAD_WORKER_LOG").unwrap_or_else(|_| "warn".into()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn centroid-worker");
        let started = Instant::now();
        let address = loop {
            if let Ok(address) = std::fs::read_to_string(&ready_file)
                && !address.is_empty()
            {
                break address;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "worker did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let mut client = WorkerClient::connect(format!("http://{}", address.trim()))
            .await
            .expect("connect");
        for index in 0..warm_up {
            client.run_candidate(candidate(index, 1)).await.expect("warm-up");
        }
        let mut counter = warm_up;
        let grpc_one = time_each!(iterations, {
            counter += 1;
            let response = client.run_candidate(candidate(counter, 1)).await.expect("run").into_inner();
            assert!(response.ok);
        });
        let grpc_ten = time_each!(iterations / 4, {
            counter += 1;
            let response = client.run_candidate(candidate(counter, 10)).await.expect("run").into_inner();
            assert!(response.ok);
        });
        let grpc_health = time_each!(iterations, {
            client.health(HealthRequest {}).await.expect("health");
        });
        // SAFETY: SIGTERM to our own child; it drains and exits 0.
        unsafe { libc::kill(worker.id() as libc::pid_t, libc::SIGTERM) };
        let _ = worker.wait();

        let samples = [
            Sample { label: "stdio: tools/call debug.noop", durations: direct_call },
            Sample { label: "stdio: session/reset + tools/call", durations: direct_reset_and_call },
            Sample { label: "gRPC: RunCandidate, 1 noop step", durations: grpc_one },
            Sample { label: "gRPC: RunCandidate, 10 noop steps", durations: grpc_ten },
            Sample { label: "gRPC: Health (transport floor)", durations: grpc_health },
        ];
        println!();
        println!("call overhead: debug.noop, {iterations} timed calls per row (10-step row: {}), {warm_up} warm-up", iterations / 4);
        println!("{:<38} {:>6} {:>12} {:>12} {:>12}", "path", "n", "median µs", "p90 µs", "p99 µs");
        for sample in &samples {
            println!(
                "{:<38} {:>6} {:>12.1} {:>12.1} {:>12.1}",
                sample.label,
                sample.durations.len(),
                micros(sample.median()),
                micros(sample.quantile(0.9)),
                micros(sample.quantile(0.99)),
            );
        }
        let direct = micros(samples[0].median());
        let direct_with_reset = micros(samples[1].median());
        let grpc = micros(samples[2].median());
        let grpc_per_extra_step = (micros(samples[3].median()) - grpc) / 9.0;
        println!();
        println!("ratio gRPC 1-step candidate / stdio call (medians):            {:>6.2}x", grpc / direct);
        println!("ratio gRPC 1-step candidate / stdio reset+call (medians):      {:>6.2}x", grpc / direct_with_reset);
        println!("marginal cost of one more step inside a candidate:  {grpc_per_extra_step:>8.1} µs ({:.2}x the stdio call)", grpc_per_extra_step / direct);
    });
}
