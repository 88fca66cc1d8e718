//! The sizes `centroid validate` refuses are the ones the real device generator refuses
//! (`layout.create_device` in KLayout), on the rule sets of three processes; resistors
//! and capacitors given by their value, sized by `centroid convert`, draw that value;
//! the limits the load pipeline mirrors are the skill's.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use centroid_schemas::device_sizes::{MAX_CELL_FINGERS, MAX_CELL_M, MAX_CELL_NF};
use serde_json::{Value, json};

mod support;
use support::{centroid, python, repository};

const PDKS: [&str; 3] = ["sky130", "gf180mcu", "ihp_sg13g2"];

/// Draws each device spec (one JSON per line on stdin) with the generator, in a fresh
/// session of the rule set; prints per device `{"ok": …, "message"?, "params"?}`.
const GENERATOR: &str = r#"
import json, sys
from centroid_skills.errors import SkillError
from centroid_skills.session import Session
from centroid_skills.skills import devices
from centroid_skills.tech import Technology
tech = Technology.from_rules(json.load(open(sys.argv[1])))
if len(sys.argv) > 2:
    spec = devices.DEVICE_SPEC["properties"]
    print(json.dumps([devices.MAX_FINGERS, spec["nf"]["maximum"], spec["m"]["maximum"]]))
for line in sys.stdin:
    session = Session()
    session.tech = tech
    try:
        record = devices.make_device(session, json.loads(line))
        print(json.dumps({"ok": True, "params": record.params}, default=str))
    except SkillError as error:
        print(json.dumps({"ok": False, "message": str(error)}))
"#;

fn generator(rules: &Path, specs: &[Value], limits: bool) -> Vec<Value> {
    let mut command = Command::new(python());
    command
        .env("PYTHONPATH", repository().join("worker/skills"))
        .args(["-c", GENERATOR])
        .arg(rules);
    if limits {
        command.arg("limits");
    }
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = specs.iter().map(|spec| format!("{spec}\n")).collect();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Transistors, resistors and capacitors around the limits of every rule set: gate
/// lengths, finger widths (one and two fingers), bars and plates.
fn specs() -> Vec<(String, Value)> {
    let mut specs = Vec::new();
    let mut add = |kind: &str, w: f64, l: f64, nf: u32| {
        let id = format!("D{}", specs.len());
        let mut spec = json!({"type": kind, "w": w, "l": l});
        if kind.ends_with("mos") {
            spec["nf"] = json!(nf);
        }
        specs.push((id, spec));
    };
    for l in [0.1, 0.13, 0.15, 0.18, 0.2, 0.28, 0.3] {
        add("nmos", 1e-6, l * 1e-6, 1);
    }
    for finger in [
        0.1, 0.15, 0.2, 0.22, 0.25, 0.27, 0.28, 0.29, 0.3, 0.32, 0.36, 0.42,
    ] {
        add("nmos", finger * 1e-6, 0.3e-6, 1);
        add("pmos", 2.0 * finger * 1e-6, 0.3e-6, 2);
    }
    for w in [0.2, 0.3, 0.33, 0.4, 0.45, 0.5, 1.0] {
        add("resistor", w * 1e-6, 5e-6, 1);
    }
    for w in [0.1, 0.14, 0.16, 0.2, 0.3, 1.0] {
        add("capacitor", w * 1e-6, 2e-6, 1);
    }
    specs
}

/// The devices named in `centroid validate`'s size refusals.
fn refused_by_validate(stderr: &str) -> BTreeSet<String> {
    let mut refused = BTreeSet::new();
    for line in stderr
        .lines()
        .filter(|line| line.ends_with("the rule set cannot draw it"))
    {
        let subject = line
            .split(": /cells/0/devices/")
            .nth(1)
            .and_then(|rest| rest.split_once(": "))
            .map(|(_, rest)| rest)
            .and_then(|rest| rest.split(": ").next())
            .unwrap();
        let (first, others) = subject.split_once(" (and ").unwrap_or((subject, ""));
        refused.insert(first.to_owned());
        let others = others.trim_end_matches(" likewise)");
        refused.extend(
            others
                .split(", ")
                .filter(|id| !id.is_empty())
                .map(str::to_owned),
        );
    }
    refused
}

#[test]
fn validate_refuses_the_sizes_the_generator_refuses() {
    let specs = specs();
    for pdk in PDKS {
        let rules = repository().join(format!("examples/pdk/{pdk}.json"));
        let devices: Vec<Value> = specs
            .iter()
            .map(|(id, spec)| {
                let mut device = spec.clone();
                device["id"] = json!(id);
                device["terminals"] = if spec["type"] == "nmos" {
                    json!({"d": format!("{id}_d"), "g": "g", "s": "s", "b": "vss"})
                } else if spec["type"] == "pmos" {
                    json!({"d": format!("{id}_d"), "g": "g", "s": "s", "b": "vdd"})
                } else {
                    json!({"p": format!("{id}_p"), "n": "s"})
                };
                device
            })
            .collect();
        let work = tempfile::tempdir().unwrap();
        let netlist = work.path().join("netlist.json");
        let document = json!({"schema_version": "1.1.0", "top": "t", "cells": [{"name": "t", "devices": devices}]});
        std::fs::write(&netlist, document.to_string()).unwrap();
        let output = centroid()
            .arg("validate")
            .arg("--netlist")
            .arg(&netlist)
            .arg("--drc")
            .arg(&rules)
            .arg("--objectives")
            .arg(repository().join("examples/ota5/objectives.json"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let by_validate = refused_by_validate(&stderr);
        let answers = generator(
            &rules,
            &specs
                .iter()
                .map(|(_, spec)| spec.clone())
                .collect::<Vec<_>>(),
            false,
        );
        let by_generator: BTreeSet<String> = specs
            .iter()
            .zip(&answers)
            .filter(|(_, answer)| answer["ok"] == false)
            .map(|((id, _), _)| id.clone())
            .collect();
        assert!(
            !by_generator.is_empty() && by_generator.len() < specs.len(),
            "{pdk}: the sizes straddle the limits"
        );
        let disagreements: Vec<String> = specs
            .iter()
            .zip(&answers)
            .filter(|((id, _), _)| by_validate.contains(id) != by_generator.contains(id))
            .map(|((id, spec), answer)| format!("{id} {spec}: generator {answer}"))
            .collect();
        assert!(
            disagreements.is_empty(),
            "{pdk}: validate and the generator disagree on\n{}\nvalidate said:\n{stderr}",
            disagreements.join("\n")
        );
        assert_eq!(output.status.code(), Some(2), "{pdk}: refused sizes exit 2");
    }
}

#[test]
fn the_limits_of_one_device_cell_are_the_skills() {
    let rules = repository().join("examples/pdk/sky130.json");
    let limits = &generator(&rules, &[], true)[0];
    assert_eq!(
        limits,
        &json!([MAX_CELL_FINGERS, MAX_CELL_NF, MAX_CELL_M]),
        "MAX_FINGERS and the nf, m maxima of layout.create_device"
    );
}

#[test]
fn resistors_and_capacitors_given_by_value_draw_their_value() {
    for pdk in ["sky130", "ihp_sg13g2"] {
        let rules_path = repository().join(format!("examples/pdk/{pdk}.json"));
        let rules: Value = serde_json::from_slice(&std::fs::read(&rules_path).unwrap()).unwrap();
        let work = tempfile::tempdir().unwrap();
        let netlist = work.path().join("netlist.sp");
        let values = [
            ("R1", 2e3),
            ("R2", 5e3),
            ("C1", 20e-15),
            ("C2", 500e-15),
            ("C3", 2e-12),
        ];
        let mut text = String::from(".subckt rc a b vss\n");
        for (id, value) in values {
            text.push_str(&format!("{id} a b {value:e}\n"));
        }
        text.push_str(".ends\n");
        std::fs::write(&netlist, text).unwrap();
        let output = centroid()
            .arg("convert")
            .arg(&netlist)
            .arg("--drc")
            .arg(&rules_path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{pdk}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let document: Value = serde_json::from_slice(&output.stdout).unwrap();
        let devices = document["cells"][0]["devices"].as_array().unwrap().clone();
        let specs: Vec<Value> = devices
            .iter()
            .map(|device| json!({"type": device["type"], "w": device["w"], "l": device["l"]}))
            .collect();
        let answers = generator(&rules_path, &specs, false);
        for ((id, value), answer) in values.iter().zip(&answers) {
            assert_eq!(answer["ok"], true, "{pdk} {id}: {answer}");
            let params = &answer["params"];
            let drawn = if id.starts_with('R') {
                params["resistance_ohm"].as_f64().unwrap()
            } else {
                // the plates' area × the capacitance per area between them (rule set 1.4.0)
                let overlap = plate_overlap(&rules);
                params["plate_area_um2"].as_f64().unwrap() * overlap * 1e-18
            };
            let error = (drawn - value).abs() / value;
            assert!(
                error < 0.01,
                "{pdk} {id}: {value:e} asked, {drawn:e} drawn ({params})"
            );
        }
    }
}

/// aF/µm² between the metal-2 and metal-1 roles, from the rule set's parasitics.
fn plate_overlap(rules: &Value) -> f64 {
    let layer_of = |role: &str| {
        rules["layers"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, layer)| layer["role"] == role)
            .map(|(name, _)| name.clone())
            .unwrap()
    };
    let (bottom, top) = (layer_of("metal1"), layer_of("metal2"));
    rules["parasitics"]["overlaps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|overlap| overlap["layer"] == top.as_str() && overlap["layer2"] == bottom.as_str())
        .and_then(|overlap| overlap["area_cap_af_um2"].as_f64())
        .unwrap()
}
