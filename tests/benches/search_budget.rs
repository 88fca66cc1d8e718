//! Best layout versus candidate budget: one circuit searched with 8, 32, 128 and
//! 512 real candidates (iterations of one width, the search never stopping early),
//! with the figures a layout engineer compares for the best passing layout and how
//! busy the slots were: "slots held" = Σ seconds each candidate held its worker slot
//! (worker clock: reset, steps, artifacts) / (search seconds × slots) — the time the
//! coordinator kept the slots supplied; "in skills" counts the skill steps only.
//! The search ends where the pictures of the kept candidates begin (report.json
//! `timings.search`); "pictures s" is that last phase, after the search.
//! Real `centroid run` processes (release build), real KLayout.
//!
//!     cargo build --release -p centroid-cli
//!     cargo bench -p centroid-tests --bench search_budget
//!     (CENTROID_BENCH_CIRCUIT=folded_cascode, CENTROID_BENCH_BUDGETS=8,32,128,512,
//!      CENTROID_BENCH_WIDTH=8, CENTROID_BENCH_SLOTS=2, CENTROID_BENCH_SEED=1)

use std::process::Command;

use centroid_tests::repository_root;
use serde_json::Value;

fn setting(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

fn main() {
    let root = repository_root();
    let circuit = setting("CENTROID_BENCH_CIRCUIT", "folded_cascode");
    let width: u64 = setting("CENTROID_BENCH_WIDTH", "8").parse().unwrap();
    let slots: u64 = setting("CENTROID_BENCH_SLOTS", "2").parse().unwrap();
    let seed = setting("CENTROID_BENCH_SEED", "1");
    let budgets: Vec<u64> = setting("CENTROID_BENCH_BUDGETS", "8,32,128,512")
        .split(',')
        .map(|budget| budget.trim().parse().unwrap())
        .collect();
    let work = tempfile::tempdir().unwrap();
    println!("circuit {circuit}, {width} candidates per iteration, {slots} slots, seed {seed}");
    println!(
        "| budget | evaluated | passed | best score | area µm² | wire µm | vias | largest centroid error µm | search s | slots held | in skills | pictures s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for budget in budgets {
        let out = work.path().join(format!("out-{budget}"));
        let output = Command::new(root.join("target/release/centroid"))
            .env("CENTROID_PYTHON", root.join(".venv/bin/python"))
            .env("CENTROID_SKILLS_DIR", root.join("worker/skills"))
            .env_remove("CENTROID_LLM_BASE_URL")
            .args(["run", "--no-memory", "--seed", &seed])
            .args(["--candidates", &width.to_string()])
            .args(["--iterations", &budget.div_ceil(width).to_string()])
            .args(["--patience", "1000000", "--slots", &slots.to_string()])
            .arg("--out")
            .arg(&out)
            .arg(root.join("examples").join(&circuit))
            .output()
            .expect("target/release/centroid runs (cargo build --release -p centroid-cli)");
        assert!(
            matches!(output.status.code(), Some(0 | 3)),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        let candidates = report["candidates"].as_array().cloned().unwrap_or_default();
        let total = |key: &str| -> f64 {
            candidates
                .iter()
                .filter_map(|candidate| candidate[key].as_f64())
                .sum()
        };
        let (held, worked) = (total("slot_seconds"), total("seconds"));
        let passed = candidates
            .iter()
            .filter(|candidate| candidate["passed"].as_bool() == Some(true))
            .count();
        let search = report["timings"]["search"].as_f64().unwrap_or(f64::NAN);
        let pictures = report["timings"]["pictures"].as_f64().unwrap_or(0.0);
        let best = &report["best"];
        let figures = &best["metrics"]["layout"];
        let number = |value: &Value, decimals: usize| {
            value
                .as_f64()
                .map_or("—".to_string(), |value| format!("{value:.decimals$}"))
        };
        println!(
            "| {budget} | {} | {passed} | {} | {} | {} | {} | {} | {search:.1} | {:.0} % | {:.0} % | {pictures:.2} |",
            report["candidates_evaluated"],
            number(&best["score"], 4),
            number(&best["metrics"]["area_um2"], 1),
            number(&figures["wirelength_um"], 1),
            number(&figures["via_count"], 0),
            number(&figures["max_centroid_error_um"], 3),
            100.0 * held / (search * slots as f64),
            100.0 * worked / (search * slots as f64),
        );
    }
}
