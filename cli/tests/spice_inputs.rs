//! SPICE/CDL netlists through the real `centroid` binary: `run` on a directory holding
//! netlist.sp gives the same layout as the equivalent netlist.json (real KLayout processes,
//! the GDS read back by KLayout); `convert` prints the netlist 1.1.0 JSON; a broken line is
//! reported as `netlist.sp:LINE:COL`, exit 2, nothing runs; `--top` and `--model-map`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from)
}

fn centroid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_centroid"))
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The geometry of a GDS as KLayout reads it: every shape of the top cell (flattened,
/// with its layer/datatype and transformation) and text, sorted, then hashed. GDS bytes
/// carry a timestamp, the geometry does not.
fn geometry_digest(gds: &Path) -> String {
    let script = "import sys, hashlib, klayout.db as db\n\
                  layout = db.Layout(); layout.read(sys.argv[1])\n\
                  tops = layout.top_cells(); assert len(tops) == 1\n\
                  items = []\n\
                  for index in layout.layer_indexes():\n\
                  \x20   info = layout.get_info(index)\n\
                  \x20   it = tops[0].begin_shapes_rec(index)\n\
                  \x20   while not it.at_end():\n\
                  \x20       items.append(f'{info.layer}/{info.datatype} {it.shape().to_s()} @ {it.trans()}')\n\
                  \x20       it.next()\n\
                  items.sort()\n\
                  print(len(items), hashlib.sha256('\\n'.join(items).encode()).hexdigest())\n";
    let output = Command::new(python())
        .args(["-c", script])
        .arg(gds)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "klayout could not read {}: {}",
        gds.display(),
        text(&output.stderr)
    );
    text(&output.stdout).trim().to_owned()
}

fn run_job(dir: &Path, out: &Path) -> Value {
    let output = centroid(&[
        "run",
        "--no-memory",
        "--candidates",
        "3",
        "--iterations",
        "1",
        "--slots",
        "2",
        "--seed",
        "7",
        "--out",
        path_str(out),
        path_str(dir),
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap()
}

#[test]
fn a_spice_netlist_runs_to_the_same_layout_as_its_netlist_json() {
    let spice_dir = repository().join("examples/ota5_spice");
    // The equivalent netlist.json: examples/ota5, written by hand, with the same rule set
    // (SKY130 with the models table) and objectives.
    let json_dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repository().join("examples/ota5/netlist.json"),
        json_dir.path().join("netlist.json"),
    )
    .unwrap();
    std::fs::copy(
        spice_dir.join("drc_rules.json"),
        json_dir.path().join("drc_rules.json"),
    )
    .unwrap();
    std::fs::copy(
        spice_dir.join("objectives.json"),
        json_dir.path().join("objectives.json"),
    )
    .unwrap();

    let (spice_out, json_out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let from_spice = run_job(&spice_dir, spice_out.path());
    let from_json = run_job(json_dir.path(), json_out.path());

    assert_eq!(from_spice["circuit"], "ota5_spice");
    assert_eq!(from_spice["tech"], "sky130");
    assert_eq!(from_spice["best"]["passed"], true, "{from_spice}");
    assert_eq!(from_spice["best"]["metrics"]["drc_violations"], 0);
    assert_eq!(from_spice["best"]["metrics"]["lvs_match"], true);
    for field in [
        "drc_violations",
        "lvs_match",
        "area_um2",
        "matching_score",
        "utilization",
    ] {
        assert_eq!(
            from_spice["best"]["metrics"][field], from_json["best"]["metrics"][field],
            "{field}"
        );
    }
    assert_eq!(from_spice["best"]["score"], from_json["best"]["score"]);
    let spice_geometry = geometry_digest(&spice_out.path().join("best.gds"));
    assert!(
        !spice_geometry.starts_with("0 "),
        "an empty layout: {spice_geometry}"
    );
    assert_eq!(
        spice_geometry,
        geometry_digest(&json_out.path().join("best.gds"))
    );
}

#[test]
fn convert_prints_the_netlist_json_the_pipeline_reads() {
    let spice = repository().join("examples/ota5_spice/netlist.sp");
    let output = centroid(&["convert", path_str(&spice)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["schema_version"], "1.1.0");
    assert_eq!(document["top"], "ota5");
    let devices = document["cells"][0]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 5);
    assert_eq!(devices[0]["model"], "sky130_fd_pr__nfet_01v8");
    assert_eq!(devices[0]["w"], 4e-6);
    assert_eq!(devices[4]["l"], 1e-6);
    // The directory form gives the same, and the printed JSON is a valid netlist.json.
    let from_dir = centroid(&["convert", path_str(spice.parent().unwrap())]);
    assert_eq!(from_dir.stdout, output.stdout);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("netlist.json"), &output.stdout).unwrap();
    let rules = repository().join("examples/ota5_spice/drc_rules.json");
    let objectives = repository().join("examples/ota5_spice/objectives.json");
    let validated = centroid(&[
        "validate",
        path_str(dir.path()),
        "--drc",
        path_str(&rules),
        "--objectives",
        path_str(&objectives),
    ]);
    assert_eq!(
        validated.status.code(),
        Some(0),
        "{}",
        text(&validated.stderr)
    );
    // A JSON netlist needs no conversion.
    let json = centroid(&[
        "convert",
        path_str(&repository().join("examples/ota5/netlist.json")),
    ]);
    assert_eq!(json.status.code(), Some(2));
    assert!(
        text(&json.stderr).contains("convert reads SPICE/CDL netlists"),
        "{}",
        text(&json.stderr)
    );
}

/// A circuit directory with `netlist_name` holding `netlist`, and the OTA example's rules and objectives.
fn circuit_dir(netlist_name: &str, netlist: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(netlist_name), netlist).unwrap();
    let example = repository().join("examples/ota5_spice");
    std::fs::copy(
        example.join("drc_rules.json"),
        dir.path().join("drc_rules.json"),
    )
    .unwrap();
    std::fs::copy(
        example.join("objectives.json"),
        dir.path().join("objectives.json"),
    )
    .unwrap();
    dir
}

#[test]
fn a_broken_spice_line_is_reported_at_its_line_and_column_and_nothing_runs() {
    let mut netlist = String::from("* line 1\n.subckt amp inp inn out vbias vdd vss\n");
    for index in 1..=8 {
        netlist.push_str(&format!("M{index} out inp vss vss nmos w=1u l=1u\n"));
    }
    netlist.push_str(
        "M9 out inp vss vss nmos l=1u\n+ w=4x\nM10 out inp vss vss mystery w=1u l=1u\n.ends\n",
    );
    let dir = circuit_dir("netlist.sp", &netlist);
    let file = dir.path().join("netlist.sp");
    let expected = [
        format!(
            "error: {}:12:5: expected a value for w, found \"4x\"",
            file.display()
        ),
        format!(
            "error: {}:13:21: M10: unknown model \"mystery\": cannot tell nmos from pmos; map it in the rule set (\"models\": {{\"mystery\": \"nmos\"}}, schema_version 1.3.0) or with --model-map FILE",
            file.display()
        ),
    ];
    for command in ["validate", "run"] {
        let out = dir.path().join(format!("out-{command}"));
        let args: Vec<&str> = if command == "run" {
            vec![command, path_str(dir.path()), "--out", path_str(&out)]
        } else {
            vec![command, path_str(dir.path())]
        };
        let output = centroid(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        assert!(
            stderr.starts_with("invalid inputs: 2 problems\n"),
            "{stderr}"
        );
        for line in &expected {
            assert!(
                stderr.lines().any(|printed| printed == line),
                "{command}: no line\n{line}\nin\n{stderr}"
            );
        }
        assert!(!out.exists(), "{command} wrote an output folder");
    }
    // submit checks the inputs before it talks to any coordinator.
    let output = centroid(&[
        "--coordinator",
        "http://127.0.0.1:9",
        "submit",
        path_str(dir.path()),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains(":12:5: expected a value for w"));
}

#[test]
fn a_spice_name_with_a_control_character_is_refused_at_its_line_and_column() {
    let netlist = ".subckt amp inp out vdd vss\nM1 out inp vss vss nmos w=1u l=1u\n\
                   M2\u{1}x out inp vss vss nmos w=1u l=1u\n.ends\n";
    let dir = circuit_dir("netlist.sp", netlist);
    let file = dir.path().join("netlist.sp");
    let output = centroid(&["validate", path_str(dir.path())]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let expected = format!(
        "error: {}:3:1: device id \"M2\\u{{1}}x\" contains the control character U+0001 at character 3",
        file.display()
    );
    assert!(
        stderr.lines().any(|line| line.starts_with(&expected)),
        "no line starting\n{expected}\nin\n{stderr}"
    );
}

#[test]
fn top_and_model_map_choose_the_subcircuit_and_the_device_types() {
    let netlist = "\
.subckt pair a b t vss
M1 a a t vss core_n w=2u l=0.5u nf=2
M2 b a t vss core_n w=2u l=0.5u nf=2
.ends
.subckt load a b vdd
M3 a a vdd vdd core_p w=2u l=0.5u nf=2
M4 b a vdd vdd core_p w=2u l=0.5u nf=2
.ends
";
    let dir = circuit_dir("netlist.cir", netlist);
    let map = dir.path().join("models.json");
    std::fs::write(&map, r#"{"CORE_N": "nmos", "core_p": "pmos"}"#).unwrap();
    let without_map = centroid(&["validate", path_str(dir.path())]);
    assert_eq!(without_map.status.code(), Some(2));
    assert!(
        text(&without_map.stderr).contains("netlist.cir:6:16: M3: unknown model \"core_p\""),
        "{}",
        text(&without_map.stderr)
    );
    let last = centroid(&[
        "validate",
        path_str(dir.path()),
        "--model-map",
        path_str(&map),
        "--json",
    ]);
    assert_eq!(last.status.code(), Some(0), "{}", text(&last.stderr));
    let context: Value = serde_json::from_slice(&last.stdout).unwrap();
    assert_eq!(context["circuit"]["name"], "load");
    assert_eq!(context["circuit"]["devices"][0]["type"], "pmos");
    let named = centroid(&[
        "validate",
        path_str(dir.path()),
        "--model-map",
        path_str(&map),
        "--top",
        "PAIR",
        "--json",
    ]);
    assert_eq!(named.status.code(), Some(0), "{}", text(&named.stderr));
    let context: Value = serde_json::from_slice(&named.stdout).unwrap();
    assert_eq!(context["circuit"]["name"], "pair");
    assert_eq!(context["circuit"]["devices"][1]["type"], "nmos");
    // A bad model map is reported with its pointer.
    std::fs::write(&map, r#"{"core_n": "nfet"}"#).unwrap();
    let bad_map = centroid(&[
        "validate",
        path_str(dir.path()),
        "--model-map",
        path_str(&map),
    ]);
    assert_eq!(bad_map.status.code(), Some(2));
    assert!(text(&bad_map.stderr).contains("models.json: /core_n: expected \"nmos\", \"pmos\", \"resistor\" or \"capacitor\", found \"nfet\""), "{}", text(&bad_map.stderr));
}

#[test]
fn a_directory_with_two_netlists_is_refused() {
    let dir = circuit_dir("netlist.sp", "M1 d g s b nmos w=1u l=1u\n");
    std::fs::copy(
        repository().join("examples/ota5/netlist.json"),
        dir.path().join("netlist.json"),
    )
    .unwrap();
    let output = centroid(&["validate", path_str(dir.path())]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("holds more than one netlist"),
        "{}",
        text(&output.stderr)
    );
}

/// A netlist written as public benchmark suites write them validates without edits —
/// `m=` on an instance, a resistor and a capacitor by value, a three-node MOS line, a bias
/// source, `\` and `//` — each liberty taken named in a warning; the same netlist with
/// gates below the process's minimum is refused by `validate` and `run` with the same
/// message, at load, before anything runs.
#[test]
fn a_netlist_as_found_validates_and_an_undrawable_one_is_refused_alike() {
    let netlist = "\
// Generated for: hspiceD
.subckt half in out tail vdd vss
M1 out in tail vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2
M2 out out vdd sky130_fd_pr__pfet_01v8 w=4u l=0.5u nf=2
.ends
.subckt amp inp inn out vbias vdd vss
X1 inp n1 tail vdd vss half m=2
X2 inn out tail vdd vss \\
   half m=2
M5 tail vbias vss vss sky130_fd_pr__nfet_01v8 w=4u l=1u nf=2
R1 out n1 2k
C1 out vss 50f
I0 vdd vbias 10u
.ends amp
";
    let dir = circuit_dir("netlist.sp", netlist);
    let output = centroid(&["validate", path_str(dir.path())]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let file = dir.path().join("netlist.sp").display().to_string();
    for expected in [
        format!(
            "warning: {file}:4:1: M2 has no bulk node: its bulk is connected to vdd, the supply net; write the bulk as the fourth node to choose another"
        ),
        format!(
            "warning: {file}:11:1: R1 = 2 kΩ is drawn as a poly bar 0.33 × 13.695 µm (sized from the rule set)"
        ),
        format!(
            "warning: {file}:13:1: I0 (a current source between vdd and vbias) is not laid out: a source belongs to a testbench; what it supplies comes in through a port of the circuit"
        ),
    ] {
        assert!(
            stderr.lines().any(|line| line == expected),
            "no line\n{expected}\nin\n{stderr}"
        );
    }
    let summary = text(&output.stdout);
    assert!(summary.contains("devices: 11"), "{summary}");

    let short = netlist.replace("l=0.5u", "l=20n");
    let dir = circuit_dir("netlist.sp", &short);
    let out = dir.path().join("out");
    let mut refusals = Vec::new();
    for command in ["validate", "run"] {
        let mut args = vec![command, path_str(dir.path())];
        if command == "run" {
            args.extend(["--no-memory", "--out", path_str(&out)]);
        }
        let output = centroid(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{command}: {stderr}");
        let errors: Vec<String> = stderr
            .lines()
            .filter(|line| line.starts_with("error: "))
            .map(str::to_owned)
            .collect();
        refusals.push(errors);
    }
    let file = dir.path().join("netlist.sp").display().to_string();
    assert_eq!(
        refusals[0],
        [format!(
            "error: {file}:3:1: X1.m1/M1 (and X1.m1/M2, X1.m2/M1, X1.m2/M2, X2.m1/M1, X2.m1/M2, X2.m2/M1, X2.m2/M2 likewise): l = 0.02 µm is below the minimum gate length 0.15 µm (rule poly.1a); the rule set cannot draw it"
        )]
    );
    assert_eq!(
        refusals[1], refusals[0],
        "run refuses with validate's words"
    );
    assert!(!out.exists(), "run wrote an output folder");
}
