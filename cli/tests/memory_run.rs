//! `centroid run` with a long-term memory, end to end (real KLayout processes): a
//! job on a circuit of the same topology as an earlier one, with other sizes,
//! retrieves that case first, starts from its best design point and reaches its
//! first passing layout in no more candidates than with an empty memory; an
//! unrelated circuit retrieves nothing; `centroid cases` lists and forgets.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod support;
use support::{centroid, repository};

/// `centroid run CIRCUIT --memory MEMORY`; the report.
fn run(circuit: &Path, memory: &Path, out: &Path) -> Value {
    let output = centroid()
        .args([
            "run",
            "--candidates",
            "4",
            "--iterations",
            "3",
            "--slots",
            "2",
        ])
        .args(["--seed", "11", "--memory"])
        .arg(memory)
        .arg("--out")
        .arg(out)
        .arg(circuit)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

/// ota5 with every width scaled by 1.5: the same topology, other sizes.
fn resized_ota5(directory: &Path) -> PathBuf {
    let source = repository().join("examples/ota5");
    let circuit = directory.join("ota5_wide");
    std::fs::create_dir_all(&circuit).unwrap();
    for name in ["drc_rules.json", "objectives.json"] {
        std::fs::copy(source.join(name), circuit.join(name)).unwrap();
    }
    let mut netlist: Value =
        serde_json::from_str(&std::fs::read_to_string(source.join("netlist.json")).unwrap())
            .unwrap();
    for device in netlist["cells"][0]["devices"].as_array_mut().unwrap() {
        let w = device["w"].as_f64().unwrap();
        device["w"] = (w * 1.5).into();
    }
    std::fs::write(circuit.join("netlist.json"), netlist.to_string()).unwrap();
    circuit
}

#[test]
fn a_similar_earlier_job_seeds_the_next_and_cases_are_listed() {
    let work = tempfile::tempdir().unwrap();
    let wide = resized_ota5(work.path());

    // cold: an empty memory
    let cold = run(&wide, &work.path().join("empty"), &work.path().join("cold"));
    assert!(
        cold["memory"]["similar_cases"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let cold_first_pass = cold["candidates_to_first_pass"]
        .as_u64()
        .expect("cold passes");

    // an earlier job on ota5, then the wide one with that memory
    let memory = work.path().join("memory");
    let earlier = run(
        &repository().join("examples/ota5"),
        &memory,
        &work.path().join("a"),
    );
    let earlier_id = earlier["job_id"].as_str().unwrap().to_owned();
    assert_eq!(earlier["memory"]["stored_case"], earlier_id.as_str());
    let warm = run(&wide, &memory, &work.path().join("warm"));
    let similar = &warm["memory"]["similar_cases"];
    assert_eq!(similar[0]["job_id"], earlier_id.as_str(), "{similar}");
    assert!(similar[0]["similarity"].as_f64().unwrap() > 0.9);
    let first = &warm["candidates"][0];
    assert_eq!(
        first["origin"], "memory",
        "the first candidate is the case's point"
    );
    let earlier_best = earlier["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|candidate| candidate["id"] == earlier["best"]["candidate_id"])
        .unwrap();
    assert_eq!(
        first["design"], earlier_best["design"],
        "the case's best point"
    );
    let warm_first_pass = warm["candidates_to_first_pass"]
        .as_u64()
        .expect("warm passes");
    assert!(
        warm_first_pass <= cold_first_pass,
        "warm {warm_first_pass} vs cold {cold_first_pass}"
    );

    // an unrelated circuit retrieves nothing
    let mirrors = run(
        &repository().join("examples/mirror_bank"),
        &memory,
        &work.path().join("mirrors"),
    );
    assert!(
        mirrors["memory"]["similar_cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|case| case["circuit"] != "ota5"),
        "{}",
        mirrors["memory"]
    );

    // centroid cases
    let list = centroid()
        .args(["cases", "list", "--memory"])
        .arg(&memory)
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains(&earlier_id), "{listed}");
    assert_eq!(
        listed.lines().count(),
        4,
        "a header and three cases: {listed}"
    );
    let forget = centroid()
        .args(["cases", "forget", &earlier_id, "--memory"])
        .arg(&memory)
        .output()
        .unwrap();
    assert!(forget.status.success());
    let again = centroid()
        .args(["cases", "show", &earlier_id, "--memory"])
        .arg(&memory)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "forgotten");
}
