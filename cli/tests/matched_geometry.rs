//! Every matched group of every example circuit, as the engineer's default point
//! draws it (`centroid run`, one candidate, real KLayout): the recognised groups are
//! all measured, and each whose units allow a common centroid has one — checked
//! from the gate centroids in the layout (report.json `metrics.layout.groups`), not
//! from what the planner meant to draw.
//!
//! Units allow a common centroid when the group's MOS devices share type, L and
//! finger width (one finger is a unit all of them are made of) and at most one
//! device has an odd number of fingers (× m).

use std::path::PathBuf;
use std::process::Command;

use centroid_schemas::{Device, InputFile, TaskContext, TaskInputs};
use serde_json::Value;

const EXAMPLES: &[&str] = &[
    "ota5",
    "miller_ota",
    "folded_cascode",
    "mirror_bank",
    "strongarm_comparator",
    "gf180/ota5",
    "gf180/miller_ota",
    "gf180/folded_cascode",
    "gf180/mirror_bank",
    "gf180/strongarm_comparator",
];

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn task(example: &str) -> TaskContext {
    let dir = repository().join("examples").join(example);
    let file = |name: &str| InputFile {
        label: name.to_string(),
        bytes: std::fs::read(dir.join(name)).unwrap(),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json"),
        drc_rules: file("drc_rules.json"),
        objectives: file("objectives.json"),
    };
    TaskContext::load(&inputs, example).unwrap()
}

fn units_allow_a_common_centroid(devices: &[&Device]) -> bool {
    let first = devices[0];
    let finger_width =
        |device: &Device| device.params.w.unwrap_or(0.0) / device.params.nf.max(1) as f64;
    let interchangeable = devices.iter().all(|device| {
        device.device_type == first.device_type
            && device.params.l == first.params.l
            && (finger_width(device) - finger_width(first)).abs() <= 1e-12
    });
    // the finest cut: one finger per unit
    let odd = devices
        .iter()
        .filter(|device| (device.params.nf.max(1) * device.params.m.max(1)) % 2 == 1)
        .count();
    interchangeable && odd <= 1
}

#[test]
fn every_matched_group_that_units_allow_is_drawn_on_a_common_centroid() {
    let python = std::env::var_os("CENTROID_PYTHON")
        .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from);
    let work = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for example in EXAMPLES {
        let out = work.path().join(example.replace('/', "_"));
        let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
            .env("CENTROID_PYTHON", &python)
            .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
            .env_remove("CENTROID_LLM_BASE_URL")
            .args([
                "run",
                "--no-memory",
                "--candidates",
                "1",
                "--iterations",
                "1",
            ])
            .args(["--slots", "1", "--out"])
            .arg(&out)
            .arg(repository().join("examples").join(example))
            .output()
            .unwrap();
        assert!(
            matches!(output.status.code(), Some(0 | 3)),
            "{example}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
                .unwrap();
        let groups = report["best"]["metrics"]["layout"]["groups"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let context = task(example);
        let circuit = &context.circuit;
        for module in circuit
            .modules
            .iter()
            .filter(|module| module.module_type.is_matched())
        {
            let devices: Vec<&Device> = module
                .devices
                .iter()
                .filter_map(|member| circuit.device(&member.device_id))
                .collect();
            let group = groups
                .iter()
                .find(|group| group["module"] == module.id.as_str())
                .unwrap_or_else(|| panic!("{example}: {} is not measured: {groups:?}", module.id));
            let error = group["centroid_error_um"].as_f64().unwrap();
            if devices.len() >= 2 && units_allow_a_common_centroid(&devices) {
                checked += 1;
                assert!(
                    error < 0.005,
                    "{example}: {} ({:?}) is {error} µm off a common centroid: {group}",
                    module.id,
                    group["devices"]
                );
                assert_ne!(group["structure"], "separate", "{example}: {group}");
            } else {
                eprintln!(
                    "{example}: {} — units allow no common centroid; {error} µm",
                    module.id
                );
            }
        }
    }
    assert!(checked >= 20, "only {checked} groups could be checked");
}
