//! `centroid run` on a current mirror of 21 devices (42 units once split): more than the
//! 16 devices a matched group once took. The planner draws it as one interdigitated
//! cell and the best layout is DRC and LVS clean.

mod support;

use serde_json::Value;
use support::{centroid, describe, one_iteration_run, read_report, repository};

/// A SKY130 nmos mirror: the reference and `outputs` outputs, 2 fingers each.
fn mirror_netlist(outputs: usize) -> String {
    let ports: Vec<String> = (0..outputs).map(|index| format!("o{index}")).collect();
    let mut lines = vec![
        "* an nmos current mirror with many outputs".to_owned(),
        ".global vss".to_owned(),
        format!(".subckt big_mirror ref {}", ports.join(" ")),
        "M0 ref ref vss vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2".to_owned(),
    ];
    for (index, port) in ports.iter().enumerate() {
        lines.push(format!(
            "M{} {port} ref vss vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=2",
            index + 1
        ));
    }
    lines.extend([".ends big_mirror".to_owned(), ".end".to_owned()]);
    lines.join("\n") + "\n"
}

#[test]
fn a_21_device_mirror_is_one_matched_cell_and_comes_out_clean() {
    let circuit = tempfile::tempdir().unwrap();
    let example = repository().join("examples/two_supply");
    for file in ["drc_rules.json", "objectives.json"] {
        std::fs::copy(example.join(file), circuit.path().join(file)).unwrap();
    }
    std::fs::write(circuit.path().join("netlist.sp"), mirror_netlist(20)).unwrap();
    let plan = |json: bool| {
        let mut command = centroid();
        command.args(["plan", "--candidates", "1"]);
        if json {
            command.arg("--json");
        }
        let output = command.arg(circuit.path()).output().unwrap();
        assert!(output.status.success(), "{}", describe(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let summary = plan(false);
    assert!(summary.contains("1 matched modules, 1 cells"), "{summary}");
    let steps = plan(true);
    assert!(
        steps.contains("layout.create_interdigitated_group"),
        "{steps}"
    );

    let out = tempfile::tempdir().unwrap();
    let output = one_iteration_run(2, 2, 3, out.path())
        .arg(circuit.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report: Value = read_report(out.path());
    let best = &report["best"];
    assert_eq!(best["checks"]["drc"], "clean", "{best}");
    assert_eq!(best["checks"]["lvs"], "match", "{best}");
}
