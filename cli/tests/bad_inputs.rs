//! A corpus of bad inputs run through the real `centroid validate` binary: each exits 2,
//! names the file and the JSON pointer and says what is wrong; none panics.

mod bad_input_cases;
mod support;

use std::path::Path;
use std::process::Command;

use serde_json::json;

use bad_input_cases::{Case, Change, File, base, corpus, device, examples, push_rule};
use support::validate_and_run_refusals;

/// Writes the three files of ota5 into `dir` with one change; returns the expected pointer.
fn write_inputs(dir: &Path, case: &Case) -> String {
    let mut pointer = String::new();
    for file in [File::Netlist, File::Rules, File::Objectives] {
        let path = dir.join(file.name());
        let mut value = base(file);
        if file != case.file {
            std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
            continue;
        }
        match &case.change {
            Change::Edit(change) => {
                pointer = change(&mut value);
                std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
            }
            Change::Bytes(content) => std::fs::write(&path, content).unwrap(),
            Change::Delete => {}
        }
    }
    pointer
}

#[test]
fn every_bad_input_exits_2_naming_file_pointer_and_problem() {
    let cases = corpus();
    assert!(cases.len() >= 30, "the corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let pointer = write_inputs(dir.path(), case);
        let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
            .arg("validate")
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let file = dir.path().join(case.file.name()).display().to_string();
        let location = if pointer.is_empty() {
            "(document)".to_owned()
        } else {
            pointer
        };
        let expected_line = format!("error: {file}: {location}: ");
        let line = stderr
            .lines()
            .find(|line| line.starts_with(&expected_line) && line.contains(case.message));
        if output.status.code() != Some(2)
            || line.is_none()
            || stderr.contains("panicked")
            || !output.stdout.is_empty()
        {
            failures.push(format!(
                "{}: exit {:?}, expected a line starting {expected_line:?} containing {:?}; stderr:\n{stderr}",
                case.name,
                output.status.code(),
                case.message
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn problems_in_all_three_files_are_reported_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut netlist = base(File::Netlist);
    device(&mut netlist, 0)["w"] = json!(0);
    let mut rules = base(File::Rules);
    push_rule(
        &mut rules,
        json!({"id": "X.1", "type": "width", "layer": "Metal9", "min": 2e-7}),
    );
    let mut objectives = base(File::Objectives);
    objectives["objectives"][0]["weight"] = json!(2);
    for (file, value) in [
        (File::Netlist, netlist),
        (File::Rules, rules),
        (File::Objectives, objectives),
    ] {
        std::fs::write(
            dir.path().join(file.name()),
            serde_json::to_vec(&value).unwrap(),
        )
        .unwrap();
    }
    let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .arg("validate")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("invalid inputs: 3 problems"), "{stderr}");
    for file in [
        "netlist.json: /cells/0/devices/0/w",
        "drc_rules.json: /rules/",
        "objectives.json: /objectives/0/weight",
    ] {
        assert!(stderr.contains(file), "missing {file} in {stderr}");
    }
}

#[test]
fn every_example_validates_and_names_its_modules() {
    for (example, expected) in [
        (
            "ota5",
            &[
                "dp1: differential_pair [M1 input_a, M2 input_b]",
                "tail1: tail_current_source [M5 tail]",
                "cm1: current_mirror [M3 reference, M4 output] ratio=1:1",
            ][..],
        ),
        (
            "miller_ota",
            &["cm2: current_mirror [M8 reference, M5 output, M7 output] ratio=1:4:4"][..],
        ),
        ("mirror_bank", &["ratio=1:1:2:4"][..]),
        (
            "strongarm_comparator",
            &[
                "cross_coupled_pair [M3 a, M4 b]",
                "cross_coupled_pair [M5 a, M6 b]",
            ][..],
        ),
        (
            "folded_cascode",
            &[
                "cascode [X1/M3 main, X1/M5 cascode]",
                "matched_current_sources [X1/M3 source, X1/M4 source]",
            ][..],
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
            .arg("validate")
            .arg(examples().join(example))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{example}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        for line in expected {
            assert!(
                stdout.contains(line),
                "{example}: missing {line:?} in\n{stdout}"
            );
        }
    }
}

#[test]
fn files_given_one_by_one_override_the_directory() {
    let sky130 = examples().join("pdk/sky130.json");
    let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .args(["validate", "--drc"])
        .arg(&sky130)
        .arg(examples().join("ota5"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("tech: sky130"));
    let missing = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .args(["validate", "--netlist", "x.json"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("--drc, --objectives"));
}

/// What no candidate could draw — here gates shorter than the poly width rule — is
/// refused by `validate` and by `run` alike: exit 2, the same message naming the devices,
/// the size and the rule, before anything runs (no output folder, no KLayout).
#[test]
fn an_undrawable_input_is_refused_by_validate_and_run_with_the_same_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut netlist = base(File::Netlist);
    for index in [0, 1] {
        device(&mut netlist, index)["l"] = json!(1e-8);
    }
    std::fs::write(
        dir.path().join("netlist.json"),
        serde_json::to_vec_pretty(&netlist).unwrap(),
    )
    .unwrap();
    for file in [File::Rules, File::Objectives] {
        std::fs::write(
            dir.path().join(file.name()),
            serde_json::to_vec_pretty(&base(file)).unwrap(),
        )
        .unwrap();
    }
    let errors = validate_and_run_refusals(dir.path());
    let file = dir.path().join("netlist.json").display().to_string();
    assert_eq!(
        errors[0],
        [format!(
            "error: {file}: /cells/0/devices/0: M1 (and M2 likewise): l = 0.01 µm is below the minimum gate length 0.13 µm (rule Gat.a); the rule set cannot draw it"
        )]
    );
    assert_eq!(errors[1], errors[0], "run refuses with validate's words");
}
