//! Dispatch capacity and per-candidate overhead of the coordinator.
//!
//! Real processes: redis-server (AOF on), the `centroid-coordinator` binary (Redis
//! store, then the in-process store) and two `centroid-worker` binaries with 4
//! slots each. A job of N `debug.noop` candidates (one iteration) is submitted R
//! times; throughput = N / (last finish − first dispatch) from the event log. The
//! baseline sends the same one-step plan straight to the workers with as many
//! concurrent calls as there are slots. Overhead per candidate = median
//! (dispatched → finished) through the coordinator − median RunCandidate latency
//! direct.
//!
//!     cargo bench -p centroid-tests --bench dispatch
//!     (CENTROID_BENCH_CANDIDATES=200 CENTROID_BENCH_RUNS=3 by default)

use std::collections::HashMap;
use std::time::{Duration, Instant};

use centroid_proto::v1::worker_client::WorkerClient;
use centroid_proto::v1::{JobEventKind, RunCandidateRequest, SkillCall};
use centroid_tests::{CoordinatorProcess, RedisProcess, Sandbox, event_data, kind, sleep_job};

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|left, right| left.total_cmp(right));
    if values.is_empty() {
        f64::NAN
    } else {
        values[values.len() / 2]
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

struct Row {
    label: String,
    throughput: f64,
    latency_ms: f64,
}

async fn coordinator_runs(sandbox: &Sandbox, label: &str, candidates: usize, runs: usize) -> Row {
    let mut throughputs = Vec::new();
    let mut latencies = Vec::new();
    for run in 0..runs {
        let mut options = sleep_job(candidates as u32, 1, 0);
        options.seed = run as u64 + 1;
        let job_id = sandbox.submit_example("ota5", options).await;
        let done = sandbox.wait_done(&job_id, Duration::from_secs(600)).await;
        assert_eq!(
            done.job.as_ref().unwrap().outcome,
            "completed",
            "{:?}",
            done.job
        );
        let events = sandbox.events(&job_id).await;
        let mut dispatched: HashMap<String, u64> = HashMap::new();
        let mut first_dispatch = u64::MAX;
        let mut last_finish = 0u64;
        let mut finished = 0;
        for event in &events {
            match kind(event) {
                JobEventKind::CandidateDispatched => {
                    first_dispatch = first_dispatch.min(event.timestamp_ms);
                    dispatched
                        .entry(event.candidate_id.clone())
                        .or_insert(event.timestamp_ms);
                }
                JobEventKind::CandidateFinished => {
                    finished += 1;
                    last_finish = last_finish.max(event.timestamp_ms);
                    assert_eq!(event_data(event)["ok"], true);
                    if let Some(start) = dispatched.get(&event.candidate_id) {
                        latencies.push((event.timestamp_ms - start) as f64);
                    }
                }
                _ => {}
            }
        }
        assert_eq!(finished, done.candidates.len());
        let seconds = (last_finish.saturating_sub(first_dispatch)).max(1) as f64 / 1000.0;
        throughputs.push(finished as f64 / seconds);
    }
    Row {
        label: label.to_string(),
        throughput: median(&mut throughputs),
        latency_ms: median(&mut latencies),
    }
}

async fn direct_runs(
    addresses: &[String],
    slots_per_worker: usize,
    candidates: usize,
    runs: usize,
) -> Row {
    let mut throughputs = Vec::new();
    let mut latencies = Vec::new();
    for run in 0..runs {
        let started = Instant::now();
        let mut tasks = Vec::new();
        let lanes = addresses.len() * slots_per_worker;
        for lane in 0..lanes {
            let address = addresses[lane % addresses.len()].clone();
            let calls = candidates / lanes + usize::from(lane < candidates % lanes);
            tasks.push(tokio::spawn(async move {
                let mut client = WorkerClient::connect(address)
                    .await
                    .expect("connect worker");
                let mut lane_latencies = Vec::new();
                for call in 0..calls {
                    let request = RunCandidateRequest {
                        candidate_id: format!("direct-{run}-{lane}-{call}"),
                        session_id: "bench".into(),
                        deadline_ms: 10_000,
                        plan: vec![SkillCall {
                            step_id: "s01".into(),
                            skill: "debug.noop".into(),
                            arguments_json: "{}".into(),
                        }],
                        continue_on_error: false,
                        inputs: Vec::new(),
                    };
                    let call_started = Instant::now();
                    let response = client
                        .run_candidate(request)
                        .await
                        .expect("direct run")
                        .into_inner();
                    assert!(response.ok);
                    lane_latencies.push(call_started.elapsed().as_secs_f64() * 1000.0);
                }
                lane_latencies
            }));
        }
        for task in tasks {
            latencies.extend(task.await.unwrap());
        }
        throughputs.push(candidates as f64 / started.elapsed().as_secs_f64());
    }
    Row {
        label: "direct to workers (no coordinator)".into(),
        throughput: median(&mut throughputs),
        latency_ms: median(&mut latencies),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let candidates = env_number("CENTROID_BENCH_CANDIDATES", 200);
    let runs = env_number("CENTROID_BENCH_RUNS", 3);
    let slots = 4;
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("b1", slots as u32).await;
    sandbox.add_worker("b2", slots as u32).await;
    let addresses: Vec<String> = sandbox
        .workers
        .iter()
        .map(|worker| worker.address.clone())
        .collect();

    let direct = direct_runs(&addresses, slots, candidates, runs).await;
    let redis_row = coordinator_runs(&sandbox, "coordinator, Redis store", candidates, runs).await;

    // the same workers re-register with an in-process-store coordinator
    let memory_dir = tempfile::tempdir().unwrap();
    let _unused_redis: Option<RedisProcess> = None;
    sandbox.coordinator.kill9();
    let memory = CoordinatorProcess::start(memory_dir.path(), "memory", "bench", &[]);
    let _ = std::mem::replace(&mut sandbox.coordinator, memory);
    // workers know the old address: start fresh ones pointing at the new coordinator
    sandbox.workers.clear();
    sandbox.add_worker("m1", slots as u32).await;
    sandbox.add_worker("m2", slots as u32).await;
    let memory_row =
        coordinator_runs(&sandbox, "coordinator, in-process store", candidates, runs).await;

    println!();
    println!(
        "dispatch benchmark: {candidates} debug.noop candidates per run, {runs} runs, 2 workers x {slots} slots, medians"
    );
    println!(
        "{:<38} {:>16} {:>24} {:>26}",
        "path", "candidates/s", "latency/candidate (ms)", "overhead vs direct (ms)"
    );
    for row in [&direct, &redis_row, &memory_row] {
        println!(
            "{:<38} {:>16.1} {:>24.1} {:>26.1}",
            row.label,
            row.throughput,
            row.latency_ms,
            row.latency_ms - direct.latency_ms
        );
    }
    let slot_ms = |throughput: f64| 1000.0 * (2 * slots) as f64 / throughput;
    println!(
        "slot-time per candidate: direct {:.1} ms, via coordinator+Redis {:.1} ms, via coordinator+memory {:.1} ms",
        slot_ms(direct.throughput),
        slot_ms(redis_row.throughput),
        slot_ms(memory_row.throughput)
    );
}
