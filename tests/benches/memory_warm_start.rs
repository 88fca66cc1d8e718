//! Cold versus warm start of the long-term memory on every example circuit:
//! candidates and seconds to the first passing layout.
//!
//! For each circuit, a variant with every width scaled by 1.5 (same topology,
//! other sizes) runs first into a fresh memory; then the original circuit runs
//! with an empty memory (cold) and with that memory (warm). Real `centroid run`
//! processes (release build) with real KLayout.
//!
//!     cargo build --release -p centroid-cli
//!     cargo bench -p centroid-tests --bench memory_warm_start
//!     (CENTROID_BENCH_RUNS=3 by default: the median of the seconds is printed)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use centroid_tests::repository_root;
use serde_json::Value;

const EXAMPLES: &[&str] = &[
    "ota5",
    "miller_ota",
    "folded_cascode",
    "mirror_bank",
    "strongarm_comparator",
    "gf180/ota5",
    "gf180/miller_ota",
];

fn centroid() -> Command {
    let root = repository_root();
    let mut command = Command::new(root.join("target/release/centroid"));
    command
        .env("CENTROID_PYTHON", root.join(".venv/bin/python"))
        .env("CENTROID_SKILLS_DIR", root.join("worker/skills"))
        .env_remove("CENTROID_LLM_BASE_URL");
    command
}

/// (candidates to the first pass, seconds, the report)
fn run(circuit: &Path, memory: &Path, out: &Path) -> (Option<u64>, f64, Value) {
    let started = Instant::now();
    let output = centroid()
        .args([
            "run",
            "--candidates",
            "8",
            "--iterations",
            "4",
            "--slots",
            "2",
            "--seed",
            "5",
        ])
        .arg("--memory")
        .arg(memory)
        .arg("--out")
        .arg(out)
        .arg(circuit)
        .output()
        .expect("target/release/centroid runs (cargo build --release -p centroid-cli)");
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        output
            .status
            .code()
            .is_some_and(|code| code == 0 || code == 3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    (report["candidates_to_first_pass"].as_u64(), seconds, report)
}

fn resized(example: &str, into: &Path) -> PathBuf {
    let source = repository_root().join("examples").join(example);
    let circuit = into.join(format!("{}_wide", example.replace('/', "_")));
    std::fs::create_dir_all(&circuit).unwrap();
    for name in ["drc_rules.json", "objectives.json"] {
        std::fs::copy(source.join(name), circuit.join(name)).unwrap();
    }
    let mut netlist: Value =
        serde_json::from_str(&std::fs::read_to_string(source.join("netlist.json")).unwrap())
            .unwrap();
    for cell in netlist["cells"].as_array_mut().unwrap() {
        for device in cell["devices"].as_array_mut().unwrap() {
            if let Some(w) = device["w"].as_f64() {
                device["w"] = (w * 1.5).into();
            }
        }
    }
    std::fs::write(circuit.join("netlist.json"), netlist.to_string()).unwrap();
    circuit
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runs: usize = std::env::var("CENTROID_BENCH_RUNS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3);
    let work = tempfile::tempdir().unwrap();
    println!(
        "| circuit | cold: candidates to 1st pass | warm | cold s (median of {runs}) | warm s | similarity |"
    );
    println!("|---|---|---|---|---|---|");
    for example in EXAMPLES {
        let memory = work
            .path()
            .join(format!("memory-{}", example.replace('/', "_")));
        let variant = resized(example, work.path());
        run(&variant, &memory, &work.path().join("seed"));
        let circuit = repository_root().join("examples").join(example);
        let (mut cold_seconds, mut warm_seconds) = (Vec::new(), Vec::new());
        let (mut cold_count, mut warm_count, mut similarity) = (None, None, 0.0);
        for index in 0..runs {
            let empty = work
                .path()
                .join(format!("empty-{}-{index}", example.replace('/', "_")));
            let (count, seconds, _) = run(&circuit, &empty, &work.path().join("cold"));
            cold_count = count;
            cold_seconds.push(seconds);
            // a fresh copy of the seeded memory each time (the warm run stores its case too)
            let warm_memory = work
                .path()
                .join(format!("warm-{}-{index}", example.replace('/', "_")));
            let status = Command::new("cp")
                .arg("-r")
                .arg(&memory)
                .arg(&warm_memory)
                .status()
                .unwrap();
            assert!(status.success());
            let (count, seconds, report) = run(&circuit, &warm_memory, &work.path().join("warm"));
            warm_count = count;
            warm_seconds.push(seconds);
            similarity = report["memory"]["similar_cases"][0]["similarity"]
                .as_f64()
                .unwrap_or(0.0);
        }
        let show = |count: Option<u64>| count.map_or("none".to_string(), |count| count.to_string());
        println!(
            "| {example} | {} | {} | {:.2} | {:.2} | {similarity:.3} |",
            show(cold_count),
            show(warm_count),
            median(cold_seconds),
            median(warm_seconds)
        );
    }
}
