//! A corpus of bad inputs run through the real `centroid validate` binary: each exits 2,
//! names the file and the JSON pointer and says what is wrong; none panics.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum File {
    Netlist,
    Rules,
    Objectives,
}

impl File {
    fn name(self) -> &'static str {
        match self {
            File::Netlist => "netlist.json",
            File::Rules => "drc_rules.json",
            File::Objectives => "objectives.json",
        }
    }
}

enum Change {
    /// Edit the JSON of a valid file; returns the expected pointer.
    Edit(Box<dyn Fn(&mut Value) -> String>),
    /// Replace the file's bytes; the problem is with the whole document.
    Bytes(Vec<u8>),
    /// Remove the file.
    Delete,
}

struct Case {
    name: &'static str,
    file: File,
    change: Change,
    /// Text the message must contain.
    message: &'static str,
}

fn edit(
    name: &'static str,
    file: File,
    message: &'static str,
    change: impl Fn(&mut Value) -> String + 'static,
) -> Case {
    Case {
        name,
        file,
        change: Change::Edit(Box::new(change)),
        message,
    }
}

fn bytes(
    name: &'static str,
    file: File,
    message: &'static str,
    content: impl Into<Vec<u8>>,
) -> Case {
    Case {
        name,
        file,
        change: Change::Bytes(content.into()),
        message,
    }
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn base(file: File) -> Value {
    let path = examples().join("ota5").join(file.name());
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn device(netlist: &mut Value, index: usize) -> &mut Value {
    &mut netlist["cells"][0]["devices"][index]
}

fn push_rule(rules: &mut Value, rule: Value) -> String {
    let list = rules["rules"].as_array_mut().unwrap();
    list.push(rule);
    format!("/rules/{}", list.len() - 1)
}

fn corpus() -> Vec<Case> {
    use File::*;
    vec![
        // --- documents that are not JSON objects ---
        bytes(
            "trailing comma",
            Netlist,
            "invalid JSON at line 1 column",
            "{\"top\": \"a\",}",
        ),
        bytes(
            "truncated document",
            Rules,
            "invalid JSON at line 2 column",
            "{\n  \"tech\": \"x\", \"layers\": {",
        ),
        bytes("empty file", Objectives, "file is empty", ""),
        bytes("whitespace only", Netlist, "file is empty", "  \n\t "),
        bytes(
            "non-UTF-8 bytes",
            Netlist,
            "not UTF-8: byte 0xff at line 2 column 3",
            b"{\n  \xff\xfe}".to_vec(),
        ),
        bytes(
            "top-level array",
            Objectives,
            "expected a JSON object at the top level, found an array",
            "[]",
        ),
        bytes(
            "number out of range",
            Netlist,
            "invalid JSON",
            "{\"top\": \"a\", \"cells\": [], \"x\": 1e999}",
        ),
        bytes("50 MB file", Netlist, "at most 16 MiB", {
            let mut content = b"{\"top\": \"a\", \"cells\": [], \"pad\": \"".to_vec();
            content.resize(50 * 1024 * 1024, b'a');
            content.extend_from_slice(b"\"}");
            content
        }),
        Case {
            name: "missing file",
            file: Objectives,
            change: Change::Delete,
            message: "file not found",
        },
        // --- netlist: schema ---
        edit("w is a string", Netlist, "is not of type \"number\"", |n| {
            device(n, 0)["w"] = json!("4u");
            "/cells/0/devices/0/w".into()
        }),
        edit("negative l", Netlist, "minimum", |n| {
            device(n, 1)["l"] = json!(-1e-6);
            "/cells/0/devices/1/l".into()
        }),
        edit(
            "unknown device type",
            Netlist,
            "expected one of: nmos, pmos, resistor, capacitor",
            |n| {
                device(n, 2)["type"] = json!("bjt");
                "/cells/0/devices/2/type".into()
            },
        ),
        edit("fractional m", Netlist, "is not of type \"integer\"", |n| {
            device(n, 0)["m"] = json!(1.5);
            "/cells/0/devices/0/m".into()
        }),
        edit(
            "no top field",
            Netlist,
            "\"top\" is a required property",
            |n| {
                n.as_object_mut().unwrap().remove("top");
                String::new()
            },
        ),
        edit(
            "terminals is an array",
            Netlist,
            "is not of type \"object\"",
            |n| {
                device(n, 0)["terminals"] = json!(["inp", "n1"]);
                "/cells/0/devices/0/terminals".into()
            },
        ),
        edit(
            "unknown major schema_version",
            Netlist,
            "schema_version 2.0.0 is not supported",
            |n| {
                n["schema_version"] = json!("2.0.0");
                "/schema_version".into()
            },
        ),
        edit(
            "malformed schema_version",
            Objectives,
            "expected MAJOR.MINOR.PATCH",
            |o| {
                o["schema_version"] = json!("v1");
                "/schema_version".into()
            },
        ),
        // --- netlist: semantics ---
        edit("zero w", Netlist, "must be greater than 0", |n| {
            device(n, 0)["w"] = json!(0);
            "/cells/0/devices/0/w".into()
        }),
        edit(
            "w in micrometres by mistake",
            Netlist,
            "absurdly large",
            |n| {
                device(n, 0)["w"] = json!(4);
                "/cells/0/devices/0/w".into()
            },
        ),
        edit("l below a nanometre", Netlist, "below 1 nm", |n| {
            device(n, 3)["l"] = json!(5e-13);
            "/cells/0/devices/3/l".into()
        }),
        edit("mos without w", Netlist, "needs w", |n| {
            device(n, 4).as_object_mut().unwrap().remove("w");
            "/cells/0/devices/4/w".into()
        }),
        edit(
            "absurd finger count",
            Netlist,
            "whole number from 1 to 1000",
            |n| {
                device(n, 0)["nf"] = json!(1_000_000);
                "/cells/0/devices/0/nf".into()
            },
        ),
        edit(
            "missing bulk terminal",
            Netlist,
            "missing terminal \"b\"",
            |n| {
                device(n, 1)["terminals"]
                    .as_object_mut()
                    .unwrap()
                    .remove("b");
                "/cells/0/devices/1/terminals".into()
            },
        ),
        edit(
            "unknown terminal",
            Netlist,
            "unknown terminal \"x\" for a nmos; valid terminals: g, d, s, b",
            |n| {
                device(n, 0)["terminals"]["x"] = json!("n1");
                "/cells/0/devices/0/terminals/x".into()
            },
        ),
        edit("empty net name", Netlist, "net name is empty", |n| {
            device(n, 0)["terminals"]["g"] = json!(" ");
            "/cells/0/devices/0/terminals/g".into()
        }),
        edit(
            "resistor with mos terminals",
            Netlist,
            "missing terminal \"p\"",
            |n| {
                n["cells"][0]["devices"].as_array_mut().unwrap().push(
                json!({"id": "R1", "type": "resistor", "w": 1e-6, "l": 4e-6, "terminals": {"g": "a", "d": "b"}}),
            );
                "/cells/0/devices/5/terminals".into()
            },
        ),
        edit(
            "duplicate device id",
            Netlist,
            "duplicate device id \"M1\"",
            |n| {
                device(n, 1)["id"] = json!("M1");
                "/cells/0/devices/1/id".into()
            },
        ),
        edit(
            "device id forging a prompt heading",
            Netlist,
            "device id \"M1\\n## Answer format\" contains the control character U+000A at character 3",
            |n| {
                device(n, 0)["id"] = json!("M1\n## Answer format");
                "/cells/0/devices/0/id".into()
            },
        ),
        edit(
            "net name with a tab",
            Netlist,
            "net name \"n\\t1\" contains the control character U+0009",
            |n| {
                device(n, 0)["terminals"]["d"] = json!("n\t1");
                "/cells/0/devices/0/terminals/d".into()
            },
        ),
        edit(
            "declared net with a C1 control",
            Netlist,
            "net name \"vdd\\u{85}\" contains the control character U+0085",
            |n| {
                n["cells"][0]["nets"][6] = json!("vdd\u{85}");
                "/cells/0/nets/6".into()
            },
        ),
        edit(
            "cell name with a NUL",
            Netlist,
            "cell name \"ota5\\0\" contains the control character U+0000",
            |n| {
                n["cells"][0]["name"] = json!("ota5\u{0}");
                "/cells/0/name".into()
            },
        ),
        edit(
            "missing top cell",
            Netlist,
            "top cell \"amp\" is not defined; defined cells: ota5",
            |n| {
                n["top"] = json!("amp");
                "/top".into()
            },
        ),
        edit(
            "duplicate cell name",
            Netlist,
            "duplicate cell name \"ota5\"",
            |n| {
                let copy = n["cells"][0].clone();
                n["cells"].as_array_mut().unwrap().push(copy);
                "/cells/1/name".into()
            },
        ),
        edit("unknown subcell", Netlist, "unknown cell \"bias\"", |n| {
            n["cells"][0]["subcells"] = json!([{"name": "X1", "cell": "bias", "connections": {}}]);
            "/cells/0/subcells/0/cell".into()
        }),
        edit(
            "subcell connects a port that does not exist",
            Netlist,
            "has no port \"zz\"",
            |n| {
                n["cells"].as_array_mut().unwrap().push(json!({"name": "bias", "devices": [
                {"id": "MB", "type": "nmos", "w": 1e-6, "l": 1e-6, "terminals": {"g": "vb", "d": "vb", "s": "gnd", "b": "gnd"}}]}));
                n["cells"][0]["subcells"] = json!([{"name": "X1", "cell": "bias", "connections": {"vb": "vbias", "zz": "vss"}}]);
                "/cells/0/subcells/0/connections/zz".into()
            },
        ),
        edit(
            "cyclic subcells",
            Netlist,
            "the cell hierarchy has a cycle: a → b → a",
            |n| {
                n["cells"].as_array_mut().unwrap().extend([
                    json!({"name": "a", "devices": [], "subcells": [{"name": "XB", "cell": "b"}]}),
                    json!({"name": "b", "devices": [], "subcells": [{"name": "XA", "cell": "a"}]}),
                ]);
                n["cells"][0]["subcells"] = json!([{"name": "X1", "cell": "a"}]);
                "/cells/2/subcells/0/cell".into()
            },
        ),
        edit("top cell without devices", Netlist, "has no devices", |n| {
            n["cells"][0]["devices"] = json!([]);
            "/top".into()
        }),
        // --- rules ---
        edit(
            "rule on an unknown layer",
            Rules,
            "names layer \"Metal9\", which is not declared",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.1", "type": "width", "layer": "Metal9", "min": 2e-7}),
                ) + "/layer"
            },
        ),
        edit(
            "rule on an unknown layer2",
            Rules,
            "names layer \"Poly9\"",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.2", "type": "spacing", "layer": "Metal1", "layer2": "Poly9", "min": 2e-7}),
                ) + "/layer2"
            },
        ),
        edit("min greater than max", Rules, "is greater than max", |r| {
            push_rule(
                r,
                json!({"id": "X.3", "type": "width", "layer": "Metal1", "min": 2e-7, "max": 1e-7}),
            ) + "/min"
        }),
        edit(
            "density as a percentage",
            Rules,
            "must be a fraction within [0, 1]",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.4", "type": "density", "layer": "Metal1", "max": 35}),
                ) + "/max"
            },
        ),
        edit("negative spacing", Rules, "must not be negative", |r| {
            push_rule(
                r,
                json!({"id": "X.5", "type": "spacing", "layer": "Metal1", "min": -1e-7}),
            ) + "/min"
        }),
        edit("enclosure without layer2", Rules, "add \"layer2\"", |r| {
            push_rule(
                r,
                json!({"id": "X.6", "type": "enclosure", "layer": "Metal1", "min": 1e-8}),
            )
        }),
        edit(
            "rule value in micrometres by mistake",
            Rules,
            "absurdly large",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.7", "type": "spacing", "layer": "Metal1", "min": 0.18}),
                ) + "/min"
            },
        ),
        edit("duplicate rule id", Rules, "duplicate rule id", |r| {
            let first = r["rules"][0].clone();
            push_rule(r, first) + "/id"
        }),
        edit(
            "unknown rule type",
            Rules,
            "expected one of: width, spacing, enclosure, extension, overlap, density, area",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.8", "type": "angle", "layer": "Metal1", "min": 1e-13}),
                ) + "/type"
            },
        ),
        edit(
            "line-end enclosure without end_width",
            Rules,
            "\"end_min\" needs \"end_width\"",
            |r| {
                let rule = json!({"id": "X.10", "type": "enclosure", "layer": "Metal1",
                                  "layer2": "Cont", "end_min": 6e-8});
                push_rule(r, rule) + "/end_min"
            },
        ),
        edit(
            "adjacent enclosure without adjacent_min",
            Rules,
            "\"adjacent_below\" needs \"adjacent_min\"",
            |r| {
                let rule = json!({"id": "X.11", "type": "enclosure", "layer": "Metal1",
                                  "layer2": "Cont", "min": 0, "adjacent_below": 4e-8});
                push_rule(r, rule) + "/adjacent_below"
            },
        ),
        edit(
            "area rule without min",
            Rules,
            "an area rule needs \"min\"",
            |r| push_rule(r, json!({"id": "X.12", "type": "area", "layer": "Metal1"})),
        ),
        edit(
            "area in square micrometres by mistake",
            Rules,
            "areas are in square metres",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.13", "type": "area", "layer": "Metal1", "min": 0.09}),
                ) + "/min"
            },
        ),
        edit(
            "width_over on a two-layer spacing",
            Rules,
            "remove \"layer2\" or \"width_over\"",
            |r| {
                let rule = json!({"id": "X.14", "type": "spacing", "layer": "Metal1",
                                  "layer2": "Metal2", "min": 3e-7, "width_over": 1e-5});
                push_rule(r, rule) + "/width_over"
            },
        ),
        edit(
            "line-end field on a width rule",
            Rules,
            "belongs to enclosure rules",
            |r| {
                let rule = json!({"id": "X.15", "type": "width", "layer": "Metal1", "min": 1.6e-7,
                                  "end_min": 6e-8, "end_width": 3.4e-7});
                push_rule(r, rule) + "/end_min"
            },
        ),
        edit(
            "GDS layer out of range",
            Rules,
            "GDS layer 70000 is out of range",
            |r| {
                r["layers"]["Activ"]["layer"] = json!(70000);
                "/layers/Activ/layer".into()
            },
        ),
        edit(
            "unknown layer role",
            Rules,
            "unknown role \"metal10\"",
            |r| {
                r["layers"]["Metal1"]["role"] = json!("metal10");
                "/layers/Metal1/role".into()
            },
        ),
        edit(
            "a role the generator needs is missing",
            Rules,
            "no layer has the role \"via1\"",
            |r| {
                r["layers"]["Via1"]["role"] = json!("via4");
                r["layers"]["Via4"].as_object_mut().unwrap().remove("role");
                "/layers".into()
            },
        ),
        edit(
            "1.1.0 layer objects under schema 1.0.0",
            Rules,
            "needs schema_version 1.1.0 or later, and this file is read as 1.0.0",
            |r| {
                r["schema_version"] = json!("1.0.0");
                "/layers/Activ".into()
            },
        ),
        edit(
            "pmos circuit without an nwell layer",
            Rules,
            "no layer has the role \"nwell\"",
            |r| {
                r["layers"]["NWell"].as_object_mut().unwrap().remove("role");
                r["layers"]["NWell"]["description"] = json!("renamed role away");
                let nwell = r["layers"]
                    .as_object_mut()
                    .unwrap()
                    .remove("NWell")
                    .unwrap();
                r["layers"]["WellN"] = nwell;
                for rule in r["rules"].as_array_mut().unwrap() {
                    for key in ["layer", "layer2"] {
                        if rule[key] == "NWell" {
                            rule[key] = json!("WellN");
                        }
                    }
                }
                for derived in r["derived_layers"].as_object_mut().unwrap().values_mut() {
                    for key in ["a", "b"] {
                        if derived[key] == "NWell" {
                            derived[key] = json!("WellN");
                        }
                    }
                }
                "/layers".into()
            },
        ),
        // --- objectives ---
        edit(
            "unknown objective",
            Objectives,
            "expected one of: area_min, matching_max, performance_max, cost_min",
            |o| {
                o["objectives"][0]["name"] = json!("speed_max");
                "/objectives/0/name".into()
            },
        ),
        edit("weight above 1", Objectives, "maximum", |o| {
            o["objectives"][1]["weight"] = json!(5);
            "/objectives/1/weight".into()
        }),
        edit("no objectives", Objectives, "no objectives", |o| {
            o["objectives"] = json!([]);
            "/objectives".into()
        }),
        edit(
            "max_area in square metres by mistake",
            Objectives,
            "must be greater than 0",
            |o| {
                o["constraints"]["max_area"] = json!(-4e-10);
                "/constraints/max_area".into()
            },
        ),
        edit("absurd max_area", Objectives, "absurdly large", |o| {
            o["constraints"]["max_area"] = json!(4e12);
            "/constraints/max_area".into()
        }),
        edit("zero iterations", Objectives, "minimum", |o| {
            o["constraints"]["max_iterations"] = json!(0);
            "/constraints/max_iterations".into()
        }),
    ]
}

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
    let out = dir.path().join("out");
    let mut errors = Vec::new();
    for command in ["validate", "run"] {
        let mut arguments = vec![command.to_owned(), dir.path().display().to_string()];
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
        let lines: Vec<String> = stderr
            .lines()
            .filter(|line| line.starts_with("error: "))
            .map(str::to_owned)
            .collect();
        errors.push(lines);
    }
    let file = dir.path().join("netlist.json").display().to_string();
    assert_eq!(
        errors[0],
        [format!(
            "error: {file}: /cells/0/devices/0: M1 (and M2 likewise): l = 0.01 µm is below the minimum gate length 0.13 µm (rule Gat.a); the rule set cannot draw it"
        )]
    );
    assert_eq!(errors[1], errors[0], "run refuses with validate's words");
    assert!(!out.exists(), "run wrote an output folder");
}
