//! Drafting large iterations (issue 29): the time the planner takes to draft one
//! iteration of N candidates of `examples/ota5` (the dispatch bench's circuit)
//! with the skills of a simulated worker and no-op plans — what a coordinator
//! spends before it can queue an iteration — from an empty journal (iteration 0)
//! and from a journal holding the first iteration evaluated (iteration 1: repairs,
//! children of the elite, new drafts). Each row also prints a digest of the drafted
//! points' keys: two builds drafting the same points print the same digest.
//!
//!     cargo bench -p centroid-planner --bench draft_scale
//!     (CENTROID_BENCH_DRAFTS=100,1000,2000 CENTROID_BENCH_REPEATS=3 by default)

use std::time::Instant;

use centroid_planner::advice::Advice;
use centroid_planner::candidate::CandidateRecord;
use centroid_planner::drafting::{IterationToDraft, draft_iteration};
use centroid_planner::evaluation::Evaluation;
use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_schemas::{InputFile, TaskContext, TaskInputs};

fn setting(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// The ota5 example's task and the heuristic planner for it.
fn ota5() -> (TaskContext, HeuristicPlanner) {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ota5");
    let read = |name: &str| std::fs::read(folder.join(name)).expect("read an ota5 input");
    let file = |label: &str| InputFile {
        label: label.into(),
        bytes: read(label),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json"),
        drc_rules: file("drc_rules.json"),
        objectives: file("objectives.json"),
    };
    let task = TaskContext::load(&inputs, "draft_scale").expect("ota5 loads");
    let text = |file: &InputFile| String::from_utf8_lossy(&file.bytes).into_owned();
    let raw = RawInputs::from_texts(&text(&inputs.drc_rules), &text(&inputs.netlist));
    (task, HeuristicPlanner::new(raw))
}

/// The skills of a simulated worker (`centroid-worker --simulate-candidate-ms`).
fn simulated_skills() -> SkillCatalog {
    ["debug.noop", "debug.sleep"]
        .iter()
        .map(|name| (name.to_string(), serde_json::Value::Null))
        .collect()
}

/// A stable digest (FNV-1a) of the drafted points' keys, in order.
fn digest(candidates: &[CandidateRecord]) -> u64 {
    candidates
        .iter()
        .flat_map(|candidate| {
            let mut key = candidate.design_point.key().into_bytes();
            key.push(b'\n');
            key
        })
        .fold(0xCBF2_9CE4_8422_2325_u64, |digest, byte| {
            (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3)
        })
}

/// The drafted candidates as evaluated: a score from the index, every fifth failed.
fn evaluated(mut candidates: Vec<CandidateRecord>) -> Vec<CandidateRecord> {
    for (index, candidate) in candidates.iter_mut().enumerate() {
        let passed = index % 5 != 0;
        candidate.evaluation = Some(Evaluation {
            score: (index * 7919 % 1000) as f64 / 1000.0,
            passed,
            reasons: if passed {
                Vec::new()
            } else {
                vec!["DRC violations: 3".into()]
            },
            drc_violations: if passed { 0 } else { 3 },
            lvs: "match".into(),
            area_um2: 100.0,
            area_score: 0.5,
            matching_score: 0.9,
            drc_by_rule: Default::default(),
            lvs_mismatches: Vec::new(),
            signoff: None,
            layout: None,
            performance: None,
            parasitics: None,
            electrical: None,
            performance_share: None,
        });
    }
    candidates
}

fn main() {
    let counts: Vec<u32> = setting("CENTROID_BENCH_DRAFTS", "100,1000,2000")
        .split(',')
        .map(|count| count.trim().parse().expect("a count"))
        .collect();
    let repeats: usize = setting("CENTROID_BENCH_REPEATS", "3").parse().unwrap();
    let (task, planner) = ota5();
    let skills = simulated_skills();
    println!("ota5, simulated worker's skills, no-op plans; best of {repeats}");
    println!("| iteration | candidates | drafted | ms | µs per candidate | digest |");
    println!("|---:|---:|---:|---:|---:|---|");
    for count in counts {
        let mut so_far: Vec<CandidateRecord> = Vec::new();
        for iteration in 0..2 {
            let to_draft = IterationToDraft {
                job_id: "bench".into(),
                iteration,
                candidates_per_iteration: count,
                seed: 7,
                noop_plan: true,
                sleep_ms: 0,
            };
            let mut best = f64::INFINITY;
            let mut drafted = Vec::new();
            for _ in 0..repeats {
                let started = Instant::now();
                let draft = draft_iteration(
                    &planner,
                    &task,
                    &skills,
                    &to_draft,
                    &so_far,
                    &Advice::default(),
                );
                best = best.min(started.elapsed().as_secs_f64() * 1000.0);
                drafted = draft.candidates;
            }
            println!(
                "| {iteration} | {count} | {} | {best:.1} | {:.1} | {:016x} |",
                drafted.len(),
                best * 1000.0 / drafted.len().max(1) as f64,
                digest(&drafted)
            );
            so_far.extend(evaluated(drafted));
        }
    }
}
