//! What the CLI's integration tests share: the repository, the venv's Python, the
//! `centroid` binary set up to run real KLayout skill servers offline, and the shared
//! folder of third-party files (foundry decks) kept outside the repository.

#![allow(dead_code)] // each test binary uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `CENTROID_PYTHON`, else the repository's venv.
pub fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from)
}

/// The `centroid` binary with the skill servers of this checkout, no LLM configured.
pub fn centroid() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_centroid"));
    command
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
        .env_remove("CENTROID_LLM_BASE_URL");
    command
}

/// A model answer every role of the LLM planner accepts: design points for the
/// planner, feedback for the critic, guidance for the meta-prompt agent.
pub fn llm_answer_every_role_accepts() -> serde_json::Value {
    serde_json::json!({
        "thought": "common centroid with one dummy per row end keeps the pair matched",
        "candidates": [
            {"arrangement": "ABAB", "dummies": 0, "spacing_nm": 200, "why": "compact"},
            {"arrangement": "ABBA", "dummies": 1, "aspect_ratio_pct": 50, "why": "matched"}
        ],
        "qualitative_feedback": "the candidates passed; area can shrink",
        "suggestions": ["fewer dummies"],
        "system_prompt": "Prefer compact placements."
    })
}

/// Names the folder of third-party test files (foundry DRC decks, ALIGN's netlists).
pub const SHARED_DIR_ENV: &str = "CENTROID_SHARED_DIR";

/// The folder of third-party files kept outside the repository: `$CENTROID_SHARED_DIR`
/// when set, else `shared/` next to the repository (`<repository>/../shared`).
pub fn shared_dir() -> PathBuf {
    std::env::var_os(SHARED_DIR_ENV)
        .filter(|value| !value.is_empty())
        .map_or_else(default_shared_dir, PathBuf::from)
}

/// `shared/` next to the repository (the crate's folder is one level below the root).
fn default_shared_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the cli crate lies inside the repository");
    root.parent().unwrap_or(root).join("shared")
}

/// A file of the shared folder (e.g. `decks/ihp_sg13g2/sg13g2_maximal.lydrc`). Fails the
/// test (never skips it) when the file is missing, naming the path and how to provide it.
pub fn shared_file(relative: &str) -> PathBuf {
    let path = shared_dir().join(relative);
    assert!(
        path.is_file(),
        "missing {}: third-party test files (foundry DRC decks with their licences) are not \
         in the repository; put the shared folder next to the checkout ({}) or set \
         {SHARED_DIR_ENV} to the folder that holds {relative}",
        path.display(),
        default_shared_dir().display()
    );
    path
}

/// A finished command's exit status and both output streams, for assertion messages.
pub fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Objectives of one iteration weighing area and matching alike, any matching
/// accepted and a generous area bound: the run keeps what the layouts measure.
pub const AREA_AND_MATCHING_ONE_ITERATION: &str = r#"{
  "schema_version": "1.0.0",
  "objectives": [{"name": "area_min", "weight": 0.5}, {"name": "matching_max", "weight": 0.5}],
  "constraints": {"max_iterations": 1, "max_area": 100000, "min_matching_score": 0.0}
}"#;

/// A job's input directory: `netlist.sp` and `objectives.json` as given, and the
/// SKY130 rule set of `examples/ota5_spice`.
pub fn spice_inputs_on_sky130(netlist: &str, objectives: &str) -> tempfile::TempDir {
    let inputs = tempfile::tempdir().unwrap();
    std::fs::write(inputs.path().join("netlist.sp"), netlist).unwrap();
    std::fs::write(inputs.path().join("objectives.json"), objectives).unwrap();
    std::fs::copy(
        repository().join("examples/ota5_spice/drc_rules.json"),
        inputs.path().join("drc_rules.json"),
    )
    .unwrap();
    inputs
}

/// `centroid run --no-memory` of one iteration of `candidates` on `slots` with
/// `seed`, writing into `out`: give it the inputs (and any other flag), then run it.
pub fn one_iteration_run(candidates: u32, slots: u32, seed: u64, out: &Path) -> Command {
    let mut command = centroid();
    command
        .args(["run", "--no-memory", "--iterations", "1"])
        .args(["--candidates", &candidates.to_string()])
        .args(["--slots", &slots.to_string()])
        .args(["--seed", &seed.to_string()])
        .arg("--out")
        .arg(out);
    command
}

/// The `report.json` a run wrote into `out`.
pub fn read_report(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap()
}

/// `centroid run --no-memory` of `netlist` on SKY130 with area and matching objectives, one
/// iteration of `candidates` on `slots` with `seed`; asserts exit 0. The output directory
/// (kept while the value lives) and its report.json.
pub fn run_spice_on_sky130(
    netlist: &str,
    candidates: u32,
    slots: u32,
    seed: u64,
) -> (tempfile::TempDir, serde_json::Value) {
    let inputs = spice_inputs_on_sky130(netlist, AREA_AND_MATCHING_ONE_ITERATION);
    run_inputs(inputs.path(), candidates, slots, seed)
}

/// `centroid run --no-memory` of the inputs in `dir`, one iteration of `candidates` on
/// `slots` with `seed`; asserts exit 0. The output directory (kept while the value lives)
/// and its report.json.
pub fn run_inputs(
    dir: &Path,
    candidates: u32,
    slots: u32,
    seed: u64,
) -> (tempfile::TempDir, serde_json::Value) {
    let out = tempfile::tempdir().unwrap();
    let output = one_iteration_run(candidates, slots, seed, out.path())
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = read_report(out.path());
    (out, report)
}

/// What a Python `script` run with the venv's interpreter (KLayout's module) prints for
/// `gds` (its `sys.argv[1]`); asserts it succeeded.
pub fn python_on_gds(script: &str, gds: &Path) -> String {
    let output = Command::new(python())
        .args(["-c", script])
        .arg(gds)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A five-transistor OTA (`ota inp inn out vbias`) and its two-device bias stage (`bias vb
/// ibias`) on SKY130 cells, with the global supplies: the subcircuits the blocks tests
/// instantiate.
pub const OTA_AND_BIAS_SUBCKTS: &str = ".global vdd vss
.subckt ota inp inn out vbias
M1 n1 inp tail vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2
M2 out inn tail vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2
M3 n1 n1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M4 out n1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=2
M5 tail vbias vss vss sky130_fd_pr__nfet_01v8 w=2u l=1u nf=2
.ends ota
.subckt bias vb ibias
MB1 vb vb vss vss sky130_fd_pr__nfet_01v8 w=2u l=1u nf=2
MB2 vb ibias vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=1u nf=2
.ends bias
";

/// The `error:` lines `validate` and `run` print for the inputs in `dir`, each asserted to
/// exit 2 without running anything (`run` writes no output folder).
pub fn validate_and_run_refusals(dir: &Path) -> [Vec<String>; 2] {
    let out = dir.join("out");
    let mut errors: [Vec<String>; 2] = Default::default();
    for (at, command) in ["validate", "run"].into_iter().enumerate() {
        let mut arguments = vec![command.to_owned(), dir.display().to_string()];
        if command == "run" {
            arguments.extend(["--no-memory".to_owned(), "--out".to_owned()]);
            arguments.push(out.display().to_string());
        }
        let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
            .args(&arguments)
            .env("CENTROID_PYTHON", "/nonexistent/python")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        errors[at] = stderr
            .lines()
            .filter(|line| line.starts_with("error: "))
            .map(str::to_owned)
            .collect();
    }
    assert!(!out.exists(), "run wrote an output folder");
    errors
}
