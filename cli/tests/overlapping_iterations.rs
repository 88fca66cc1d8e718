//! Overlapping iterations (`session/overlap.rs`): on two slots the next iteration
//! is drafted and queued while the last candidates of the current one run; on one
//! slot no slot ever idles, so nothing is drafted early. Both searches draft
//! the same design points with the same scores — the early draft leaves out the
//! running iteration's evaluations exactly as the late one does — so a job stays
//! deterministic for its seed whatever the farm's size. The slots are handed out in
//! the queue's order: an iteration's longest-looking candidates first.

use std::path::Path;

use serde_json::Value;

mod support;
use support::{centroid, repository};

/// `centroid run` of the ota5 example; (its progress lines — stderr —, report.json).
fn run(slots: &str, out: &Path) -> (String, Value) {
    let output = centroid()
        .args([
            "run",
            "--no-memory",
            "--candidates",
            "4",
            "--iterations",
            "7",
        ])
        .args([
            "--patience",
            "100",
            "--seed",
            "5",
            "--slots",
            slots,
            "--out",
        ])
        .arg(out)
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    let progress = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {progress}",
        String::from_utf8_lossy(&output.stdout)
    );
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    (progress, serde_json::from_str(&report).unwrap())
}

/// Every candidate as (id without the job id, design point, score), sorted.
fn drafted(report: &Value) -> Vec<(String, String, String)> {
    let mut candidates: Vec<(String, String, String)> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|candidate| {
            let id = candidate["id"].as_str().unwrap();
            let local = id.rsplit_once("-i").map_or(id, |(_, tail)| tail);
            (
                local.to_string(),
                candidate["design"].to_string(),
                format!("{:.9}", candidate["score"].as_f64().unwrap_or(f64::NAN)),
            )
        })
        .collect();
    candidates.sort();
    candidates
}

/// Each iteration's candidates in the order they were first dispatched, as
/// (guard rings, dummies, drafted index) of their design points: the rings and the
/// dummies of every matched module (its own, else the point's).
fn dispatch_order(progress: &str, report: &Value) -> Vec<Vec<(u64, u64, u64)>> {
    let candidates = report["candidates"].as_array().unwrap();
    let designs: Vec<(&str, &Value)> = candidates
        .iter()
        .map(|candidate| (candidate["id"].as_str().unwrap(), &candidate["design"]))
        .collect();
    // the matched modules, as the layout of any candidate measured them
    let modules: Vec<&str> = candidates
        .iter()
        .find_map(|candidate| candidate["metrics"]["layout"]["groups"].as_array())
        .expect("a measured candidate")
        .iter()
        .map(|group| group["module"].as_str().unwrap())
        .collect();
    let added = |design: &Value| -> (u64, u64) {
        let rings = modules
            .iter()
            .filter(|module| {
                design["module_rings"][*module]
                    .as_bool()
                    .unwrap_or(design["guard_ring"].as_bool().unwrap())
            })
            .count() as u64;
        let dummies = modules
            .iter()
            .map(|module| {
                design["module_dummies"][*module]
                    .as_u64()
                    .unwrap_or(design["dummies"].as_u64().unwrap())
            })
            .sum();
        (rings, dummies)
    };
    let mut iterations: Vec<Vec<(u64, u64, u64)>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in progress.lines() {
        let Some(tail) = line.split("candidate_dispatched ").nth(1) else {
            continue;
        };
        let id = tail.split(':').next().unwrap();
        if !seen.insert(id.to_string()) {
            continue; // a later delivery
        }
        let (_, local) = id.rsplit_once("-i").unwrap();
        let (iteration, index) = local.split_once("-c").unwrap();
        let (iteration, index): (usize, u64) = (iteration.parse().unwrap(), index.parse().unwrap());
        let design = designs
            .iter()
            .find(|(candidate_id, _)| *candidate_id == id)
            .map(|(_, design)| *design)
            .unwrap();
        if iterations.len() <= iteration {
            iterations.resize(iteration + 1, Vec::new());
        }
        let (rings, dummies) = added(design);
        iterations[iteration].push((rings, dummies, index));
    }
    iterations
}

#[test]
fn the_next_iteration_starts_early_and_the_search_stays_deterministic() {
    let (two, one) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (progress_two, report_two) = run("2", two.path());
    let (progress_one, report_one) = run("1", one.path());

    // two slots: some iteration was drafted while the one before still had candidates
    // out (whether a slot idled at a given moment is a race; with five chances one
    // does): results are evaluated as they arrive, so the last evaluation of the
    // iteration it overlaps comes after the early draft (which left that iteration's
    // evaluations out: the one-slot run below drafts the same candidates)
    let lines: Vec<&str> = progress_two.lines().collect();
    let early: Vec<(usize, u32)> = lines
        .iter()
        .enumerate()
        .filter_map(|(index, line)| {
            let tail = line.split("drafted while iteration ").nth(1)?;
            let running: u32 = tail.split_whitespace().next()?.parse().ok()?;
            Some((index, running))
        })
        .collect();
    assert!(
        !early.is_empty(),
        "no iteration was drafted early:\n{progress_two}"
    );
    for (index, running) in &early {
        let evaluated = lines.iter().rposition(|line| {
            line.contains("] evaluation job-") && line.contains(&format!("-i{running}-c"))
        });
        assert!(
            evaluated.is_some_and(|evaluated| evaluated > *index),
            "iteration {running} was all evaluated before the next was drafted:\n{progress_two}"
        );
    }
    // the first iteration's feedback is waited for
    assert!(
        !progress_two.contains("iteration 1 drafted while iteration 0"),
        "{progress_two}"
    );

    // one slot: never a free slot while candidates were out, so nothing early
    assert!(
        !progress_one.contains("drafted while iteration"),
        "{progress_one}"
    );

    // one slot: each iteration is dispatched in its queue's order — the candidates
    // that add the most (guard rings, then dummies) first, alike ones as drafted —
    // not in whatever order the waiting tasks woke in
    let order = dispatch_order(&progress_one, &report_one);
    assert_eq!(order.len(), 7, "{progress_one}");
    for dispatched in &order {
        let mut expected = dispatched.clone();
        expected.sort_by_key(|&(rings, dummies, index)| {
            (std::cmp::Reverse(rings), std::cmp::Reverse(dummies), index)
        });
        assert_eq!(dispatched, &expected, "{progress_one}");
    }
    assert!(
        order
            .iter()
            .any(|dispatched| dispatched.windows(2).any(|pair| pair[0].2 > pair[1].2)),
        "some iteration is dispatched out of its drafted order: {order:?}"
    );

    // the same search either way
    assert_eq!(report_two["candidates_evaluated"], 28);
    assert_eq!(drafted(&report_two), drafted(&report_one));
    assert_eq!(report_two["best"]["score"], report_one["best"]["score"]);
    assert_eq!(report_two["best"]["passed"], Value::Bool(true));
}
