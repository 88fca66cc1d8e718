//! Issue 26: `objectives.json` `constraints.net_currents` (DC amperes per net) against the
//! netlist and the rule set's `max_current_density`: read and shown by `validate`; an
//! unknown net, a current that is not a positive number, a wire layer without a density
//! refused by `validate` and `run` alike (exit 2, the same message, nothing run).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::validate_and_run_refusals;

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ota5_spice")
}

/// ota5_spice (SKY130, whose metals declare their densities) copied into `dir`, its
/// objectives given `currents` (a schema_version 1.1.0 field), its rule set passed through
/// `rules`.
fn inputs(dir: &Path, currents: Value, rules: impl Fn(&mut Value)) {
    inputs_at(dir, "1.1.0", currents, rules);
}

fn inputs_at(dir: &Path, version: &str, currents: Value, rules: impl Fn(&mut Value)) {
    std::fs::copy(example().join("netlist.sp"), dir.join("netlist.sp")).unwrap();
    let read = |name: &str| -> Value {
        serde_json::from_slice(&std::fs::read(example().join(name)).unwrap()).unwrap()
    };
    let mut objectives = read("objectives.json");
    objectives["constraints"]["net_currents"] = currents;
    objectives["schema_version"] = json!(version);
    let mut drc = read("drc_rules.json");
    rules(&mut drc);
    for (name, value) in [("objectives.json", objectives), ("drc_rules.json", drc)] {
        std::fs::write(dir.join(name), serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    }
}

#[test]
fn net_currents_are_read_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path(), json!({"vdd": 0.02, "vss": 0.02}), |_| {});
    let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .arg("validate")
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("net_current vdd: 0.02 A"), "{stdout}");
    assert!(stdout.contains("net_current vss: 0.02 A"), "{stdout}");
}

#[test]
fn an_unknown_net_is_refused_naming_the_nets_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path(), json!({"vddx": 0.001}), |_| {});
    let [validate, run] = validate_and_run_refusals(dir.path());
    let file = dir.path().join("objectives.json").display().to_string();
    let netlist = dir.path().join("netlist.sp").display().to_string();
    assert_eq!(
        validate,
        [format!(
            "error: {file}: /constraints/net_currents/vddx: net \"vddx\" is not a net of the circuit in {netlist} (its nets: inn, inp, n1, out, tail, vbias, vdd, vss)"
        )]
    );
    assert_eq!(run, validate, "run refuses with validate's words");
}

#[test]
fn a_current_that_is_not_positive_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path(), json!({"vdd": -0.001}), |_| {});
    let [validate, run] = validate_and_run_refusals(dir.path());
    let file = dir.path().join("objectives.json").display().to_string();
    assert_eq!(
        validate,
        [format!(
            "error: {file}: /constraints/net_currents/vdd: the current of net \"vdd\" is -0.001: give a DC current in amperes greater than 0 (e.g. 0.02 for 20 mA)"
        )]
    );
    assert_eq!(run, validate);
}

#[test]
fn a_wire_layer_without_a_density_is_refused_naming_layer_net_and_what_to_add() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path(), json!({"vdd": 0.001}), |rules| {
        let layer = rules["layers"]["met1"].as_object_mut().unwrap();
        layer.remove("max_current_density");
    });
    let [validate, run] = validate_and_run_refusals(dir.path());
    let file = dir.path().join("drc_rules.json").display().to_string();
    assert_eq!(
        validate,
        [format!(
            "error: {file}: /layers/met1: net \"vdd\" carries 0.001 A (objectives constraints.net_currents) and its wires lie on layer \"met1\" (metal2), which declares no current limit: add \"max_current_density\" (A per metre of wire width; 1 mA/µm = 1000 A/m) to that layer, from the process's electromigration rules"
        )]
    );
    assert_eq!(run, validate);
}

#[test]
fn a_density_that_is_not_positive_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path(), json!({"vdd": 0.001}), |rules| {
        rules["layers"]["met2"]["max_current_density"] = json!(0.0);
    });
    let [validate, _] = validate_and_run_refusals(dir.path());
    assert!(
        validate
            .iter()
            .any(|line| line.contains("/layers/met2/max_current_density")
                && line.contains("must be greater than 0")),
        "{validate:?}"
    );
}

#[test]
fn net_currents_in_an_objectives_file_older_than_1_1_0_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    inputs_at(dir.path(), "1.0.0", json!({"vdd": 0.001}), |_| {});
    let [validate, run] = validate_and_run_refusals(dir.path());
    let file = dir.path().join("objectives.json").display().to_string();
    assert_eq!(
        validate,
        [format!(
            "error: {file}: /constraints/net_currents: \"net_currents\" is a schema_version 1.1.0 field but the file is read as 1.0.0; declare \"schema_version\": \"1.1.0\""
        )]
    );
    assert_eq!(run, validate);
}
