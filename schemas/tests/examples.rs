//! Every example circuit loads, and the modules recognised are the ones a layout
//! engineer would name.

use std::path::PathBuf;

use centroid_schemas::{InputPaths, ModuleType, NetType, TaskContext};

fn load(example: &str) -> TaskContext {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(example);
    TaskContext::load_paths(&InputPaths::in_dir(&dir), "test")
        .unwrap_or_else(|errors| panic!("{example}: {errors}"))
}

/// (type, [(device, role)]) of every module, in recognition order.
fn modules(context: &TaskContext) -> Vec<(ModuleType, Vec<(String, String)>)> {
    context
        .circuit
        .modules
        .iter()
        .map(|module| {
            (
                module.module_type,
                module
                    .devices
                    .iter()
                    .map(|member| (member.device_id.clone(), member.role.clone()))
                    .collect(),
            )
        })
        .collect()
}

fn members(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(device, role)| (device.to_string(), role.to_string()))
        .collect()
}

fn property<'a>(context: &'a TaskContext, module_id: &str, key: &str) -> &'a serde_json::Value {
    let module = context
        .circuit
        .modules
        .iter()
        .find(|module| module.id == module_id)
        .expect("module exists");
    &module.properties[key]
}

#[test]
fn five_transistor_ota_has_input_pair_mirror_load_and_tail() {
    let context = load("ota5");
    assert_eq!(
        modules(&context),
        vec![
            (
                ModuleType::DifferentialPair,
                members(&[("M1", "input_a"), ("M2", "input_b")])
            ),
            (ModuleType::TailCurrentSource, members(&[("M5", "tail")])),
            (
                ModuleType::CurrentMirror,
                members(&[("M3", "reference"), ("M4", "output")])
            ),
        ]
    );
    assert_eq!(property(&context, "dp1", "tail_net"), "tail");
    assert_eq!(property(&context, "cm1", "ratio"), "1:1");
    assert_eq!(context.circuit.net("vdd").unwrap().net_type, NetType::Power);
    assert_eq!(
        context.circuit.net("vss").unwrap().net_type,
        NetType::Ground
    );
    assert_eq!(
        context.circuit.net("tail").unwrap().net_type,
        NetType::Signal
    );
    assert_eq!(context.circuit.net("n1").unwrap().connections.len(), 4);
}

#[test]
fn miller_ota_has_pair_load_tail_and_bias_mirror_with_ratio() {
    let context = load("miller_ota");
    assert_eq!(
        modules(&context),
        vec![
            (
                ModuleType::DifferentialPair,
                members(&[("M1", "input_a"), ("M2", "input_b")])
            ),
            (ModuleType::TailCurrentSource, members(&[("M5", "tail")])),
            (
                ModuleType::CurrentMirror,
                members(&[("M3", "reference"), ("M4", "output")])
            ),
            (
                ModuleType::CurrentMirror,
                members(&[("M8", "reference"), ("M5", "output"), ("M7", "output")])
            ),
        ]
    );
    // M5 and M7: 8 µm over 2 fingers, against M8's 2 µm, same L.
    assert_eq!(property(&context, "cm2", "ratio"), "1:4:4");
    assert_eq!(context.circuit.device("Cc").unwrap().terminals["n"], "out");
    assert_eq!(context.circuit.device("Rz").unwrap().terminals["p"], "n2");
}

#[test]
fn mirror_bank_ratios_come_from_w_nf_and_m() {
    let context = load("mirror_bank");
    assert_eq!(
        modules(&context),
        vec![(
            ModuleType::CurrentMirror,
            members(&[
                ("MREF", "reference"),
                ("M1", "output"),
                ("M2", "output"),
                ("M4", "output")
            ])
        )]
    );
    // M2 doubles m; M4 has four times the width over four fingers (nf does not scale it).
    assert_eq!(property(&context, "cm1", "ratio"), "1:1:2:4");
    assert_eq!(property(&context, "cm1", "ratios")["M4"], 4.0);
}

#[test]
fn strongarm_comparator_has_cross_coupled_pairs_input_pair_and_clocked_tail() {
    let context = load("strongarm_comparator");
    assert_eq!(
        modules(&context),
        vec![
            (
                ModuleType::CrossCoupledPair,
                members(&[("M3", "a"), ("M4", "b")])
            ),
            (
                ModuleType::CrossCoupledPair,
                members(&[("M5", "a"), ("M6", "b")])
            ),
            (
                ModuleType::DifferentialPair,
                members(&[("M1", "input_a"), ("M2", "input_b")])
            ),
            (ModuleType::TailCurrentSource, members(&[("M7", "tail")])),
        ]
    );
    // The precharge switches share gate (clk) and source (vdd) but clk also drives the
    // nmos tail: a clock, not a bias line, so they are not current sources.
    assert!(
        context
            .circuit
            .modules
            .iter()
            .all(|module| module.module_type != ModuleType::MatchedCurrentSources)
    );
}

#[test]
fn folded_cascode_is_flattened_and_has_cascodes_current_sources_and_cascode_mirror() {
    let context = load("folded_cascode");
    assert_eq!(
        modules(&context),
        vec![
            (
                ModuleType::DifferentialPair,
                members(&[("X1/M1", "input_a"), ("X1/M2", "input_b")])
            ),
            (
                ModuleType::TailCurrentSource,
                members(&[("X1/M11", "tail")])
            ),
            (
                ModuleType::Cascode,
                members(&[("X1/M3", "main"), ("X1/M5", "cascode")])
            ),
            (
                ModuleType::Cascode,
                members(&[("X1/M4", "main"), ("X1/M6", "cascode")])
            ),
            (
                ModuleType::Cascode,
                members(&[("X1/M9", "main"), ("X1/M7", "cascode")])
            ),
            (
                ModuleType::Cascode,
                members(&[("X1/M10", "main"), ("X1/M8", "cascode")])
            ),
            (
                ModuleType::MatchedCurrentSources,
                members(&[("X1/M3", "source"), ("X1/M4", "source")])
            ),
            (
                ModuleType::CurrentMirror,
                members(&[("X1/M9", "reference"), ("X1/M10", "output")])
            ),
        ]
    );
    // Ports map to the parent's nets; internal nets get the instance prefix.
    let m1 = context.circuit.device("X1/M1").unwrap();
    assert_eq!(m1.terminals["g"], "inp");
    assert_eq!(m1.terminals["d"], "X1/f1");
    assert_eq!(context.circuit.net("vdd").unwrap().net_type, NetType::Power);
    assert_eq!(context.circuit.net("X1/f1").unwrap().connections.len(), 3);
}

#[test]
fn every_example_summarizes_devices_rules_and_objectives() {
    for example in [
        "ota5",
        "miller_ota",
        "mirror_bank",
        "strongarm_comparator",
        "folded_cascode",
    ] {
        let context = load(example);
        assert!(
            context.warnings.is_empty(),
            "{example}: {:?}",
            context.warnings
        );
        let circuit = context.circuit.summarize();
        for device in &context.circuit.devices {
            assert!(
                circuit.contains(&format!("- {}:", device.id)),
                "{example}: {circuit}"
            );
        }
        let rules = context.drc_rules.summarize();
        assert!(rules.contains(&format!("rules: {}", context.drc_rules.rules.len())));
        assert!(context.objectives.summarize().contains("max_iterations"));
    }
}

#[test]
fn both_example_processes_resolve_every_generator_role() {
    for pdk in ["ihp_sg13g2", "sky130"] {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/pdk/{pdk}.json"));
        let file = centroid_schemas::InputFile {
            label: pdk.to_owned(),
            bytes: std::fs::read(path).unwrap(),
        };
        let rules = centroid_schemas::load_drc_rules(&file)
            .unwrap_or_else(|errors| panic!("{errors}"))
            .value;
        for role in [
            "active", "poly", "contact", "metal1", "via1", "metal2", "nwell", "pplus",
        ] {
            assert!(rules.layer_for_role(role).is_some(), "{pdk}: {role}");
        }
        assert!(
            rules.rules.len() >= 30,
            "{pdk}: {} rules",
            rules.rules.len()
        );
    }
}
