//! The coordinator's resident memory after large refused submissions (issue 29).
//!
//! One `centroid-coordinator` (in-process store) gets `ROUNDS` rounds of two
//! SubmitJob calls, both refused: a 50 MB netlist (over the 16 MB input limit) and
//! a 100,000-device netlist (~14 MB, parsed, then refused: the rules cannot draw its
//! devices). VmRSS from /proc is printed at the start, after each round and 2 s
//! after the last.
//!
//!     cargo bench -p centroid-tests --bench refused_inputs_memory
//!     (CENTROID_BENCH_ROUNDS=6 by default)

use std::time::Duration;

use centroid_proto::v1::SubmitJobRequest;
use centroid_tests::{CoordinatorProcess, client_for, example_request, small_job};

fn resident_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kilobytes: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS");
    kilobytes / 1024.0
}

/// The ota5 example with its devices repeated up to `devices`, each too short to draw.
fn many_devices(devices: usize) -> SubmitJobRequest {
    let mut request = example_request("ota5", small_job(2, 1, 1), "large");
    let mut netlist: serde_json::Value = serde_json::from_str(&request.netlist_json).unwrap();
    let template = netlist["cells"][0]["devices"].as_array().unwrap().clone();
    let repeated: Vec<serde_json::Value> = (0..devices)
        .map(|index| {
            let mut device = template[index % template.len()].clone();
            device["id"] = serde_json::json!(format!("M{index}"));
            device["l"] = serde_json::json!(1e-8);
            device
        })
        .collect();
    netlist["cells"][0]["devices"] = serde_json::Value::Array(repeated);
    request.netlist_json = netlist.to_string();
    request
}

/// A netlist of `bytes` bytes (JSON with one long padding string).
fn oversized(bytes: usize) -> SubmitJobRequest {
    let mut request = example_request("ota5", small_job(2, 1, 1), "oversized");
    request.netlist_json = format!("{{\"padding\": \"{}\"}}", "x".repeat(bytes));
    request
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("CENTROID_BENCH_ROUNDS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(6);
    let dir = tempfile::tempdir().unwrap();
    let coordinator = CoordinatorProcess::start(dir.path(), "memory", "mem", &[]);
    let pid = coordinator.pid();
    let mut client = client_for(&coordinator.url())
        .await
        .unwrap()
        .max_encoding_message_size(128 * 1024 * 1024);
    let large = many_devices(100_000);
    let huge = oversized(50 * 1024 * 1024);
    println!(
        "netlists: {:.1} MB ({} devices), {:.1} MB",
        large.netlist_json.len() as f64 / 1e6,
        100_000,
        huge.netlist_json.len() as f64 / 1e6
    );
    println!("start: VmRSS {:.0} MB", resident_mb(pid));
    for round in 1..=rounds {
        for request in [huge.clone(), large.clone()] {
            let refused = client.submit_job(request).await.expect_err("refused");
            assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
        }
        println!("round {round}: VmRSS {:.0} MB", resident_mb(pid));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("2 s later: VmRSS {:.0} MB", resident_mb(pid));
}
