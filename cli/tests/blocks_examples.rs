//! `examples/blocks/*`, analog blocks of our own in hierarchical SPICE (issue 26),
//! through the real `centroid` binary: every block passes `validate` with the device
//! count its header promises, and the smallest one runs end to end (real KLayout) to a
//! layout that is DRC clean and LVS matched. The full set is a benchmark (BENCHMARKS.md,
//! "Blocks of our own"), not a test.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{centroid, describe, one_iteration_run, read_report, repository};

/// Every block and the range its flattened device count must fall in.
const BLOCKS: [(&str, std::ops::RangeInclusive<usize>); 7] = [
    ("two_stage_ota", 30..=40),
    ("bandgap", 40..=60),
    ("ldo", 50..=80),
    ("cap_dac", 100..=300),
    ("multi_channel_amp", 100..=250),
    ("dual_supply_io", 30..=60),
    ("amp_array_64", 500..=1000),
];

/// The smallest block: the one run end to end.
const SMALLEST: &str = "two_stage_ota";

fn blocks_dir() -> PathBuf {
    repository().join("examples/blocks")
}

/// The folders of `examples/blocks`, sorted.
fn block_folders() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(blocks_dir())
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The `devices: N` line of `centroid validate`'s summary.
fn device_count(summary: &str) -> Option<usize> {
    summary
        .lines()
        .find_map(|line| line.strip_prefix("devices: "))
        .and_then(|count| count.trim().parse().ok())
}

fn validate(block: &Path) -> std::process::Output {
    centroid().arg("validate").arg(block).output().unwrap()
}

#[test]
fn every_block_is_listed_with_its_device_range() {
    let mut listed: Vec<String> = BLOCKS.iter().map(|(name, _)| name.to_string()).collect();
    listed.sort();
    assert_eq!(
        block_folders(),
        listed,
        "every folder of examples/blocks needs its device range in BLOCKS"
    );
}

#[test]
fn every_block_validates_with_its_device_count() {
    for (name, range) in BLOCKS {
        let block = blocks_dir().join(name);
        for file in ["netlist.sp", "objectives.json", "drc_rules.json"] {
            assert!(block.join(file).is_file(), "{name} lacks {file}");
        }
        let output = validate(&block);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{name}: {}",
            describe(&output)
        );
        let summary = String::from_utf8_lossy(&output.stdout);
        let devices = device_count(&summary)
            .unwrap_or_else(|| panic!("{name}: no `devices:` line in\n{summary}"));
        assert!(
            range.contains(&devices),
            "{name}: {devices} devices, expected {range:?}"
        );
    }
}

#[test]
fn every_block_uses_the_sky130_rule_set_of_two_supply() {
    let reference = std::fs::read(repository().join("examples/two_supply/drc_rules.json")).unwrap();
    for (name, _) in BLOCKS {
        let rules = std::fs::read(blocks_dir().join(name).join("drc_rules.json")).unwrap();
        assert!(
            rules == reference,
            "{name}/drc_rules.json differs from examples/two_supply's"
        );
    }
}

#[test]
fn the_smallest_block_runs_to_a_clean_layout() {
    let out = tempfile::tempdir().unwrap();
    let output = one_iteration_run(2, 2, 1, out.path())
        .arg(blocks_dir().join(SMALLEST))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report: Value = read_report(out.path());
    let best = &report["best"];
    assert_eq!(best["passed"], true, "{best}");
    assert_eq!(best["metrics"]["drc_violations"], 0, "{best}");
    assert_eq!(best["metrics"]["lvs_match"], true, "{best}");
    assert_eq!(best["checks"]["drc"], "clean", "{best}");
    assert_eq!(best["checks"]["lvs"], "match", "{best}");
    assert!(out.path().join("best.gds").is_file());
}
