//! SPICE as public benchmark suites write it, construct by construct, in small netlists
//! written for these tests: `m=` on subcircuit instances, resistors and capacitors given
//! by value only (sized from the rule set), subcircuit parameters in sizes, `.include` and
//! `.lib`, three-node MOS lines, case, instance lines without their X, sources and
//! devices Centroid has no generator for, `\` continuations and `//` comments, values by
//! parameter name, micrometre lengths, a mismatched `.ends` (Spectre: `spice_spectre.rs`).

use std::sync::LazyLock;

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{Circuit, DrcRuleSet, InputFile, SpiceOptions, load_drc_rules};
use serde_json::{Value, json};

/// The SKY130 rule set of the examples: poly.res 48.2 Ω/□, resistor bars ≥ 0.33 µm
/// (poly.3), li1/met1 plates 114.2 aF/µm² (parasitics), met1 at most 77 % dense.
static SKY130: LazyLock<DrcRuleSet> = LazyLock::new(|| rules(&sky130_json()));

fn sky130_json() -> Value {
    serde_json::from_slice(include_bytes!("../../examples/pdk/sky130.json")).unwrap()
}

fn rules(document: &Value) -> DrcRuleSet {
    let file = InputFile {
        label: "drc_rules.json".to_owned(),
        bytes: serde_json::to_vec(document).unwrap(),
    };
    load_drc_rules(&file).unwrap().value
}

struct Read {
    document: Value,
    circuit: Circuit,
    warnings: Vec<String>,
}

fn file(text: &str) -> InputFile {
    InputFile {
        label: "netlist.sp".to_owned(),
        bytes: text.as_bytes().to_vec(),
    }
}

fn read_with(text: &str, rules: Option<&DrcRuleSet>) -> Read {
    let options = SpiceOptions {
        rules,
        ..SpiceOptions::default()
    };
    match load_spice_netlist(&file(text), &options) {
        Ok((loaded, json)) => Read {
            document: serde_json::from_slice(&json.bytes).unwrap(),
            circuit: loaded.value,
            warnings: loaded.warnings.iter().map(ToString::to_string).collect(),
        },
        Err(errors) => panic!("{text}\n{errors}"),
    }
}

fn read(text: &str) -> Read {
    read_with(text, Some(&SKY130))
}

fn errors_with(text: &str, rules: Option<&DrcRuleSet>) -> Vec<String> {
    let options = SpiceOptions {
        rules,
        ..SpiceOptions::default()
    };
    match load_spice_netlist(&file(text), &options) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(errors) => errors.issues.iter().map(ToString::to_string).collect(),
    }
}

fn device<'a>(circuit: &'a Circuit, id: &str) -> &'a centroid_schemas::Device {
    circuit
        .device(id)
        .unwrap_or_else(|| panic!("no device {id}"))
}

fn net_of(circuit: &Circuit, id: &str, terminal: &str) -> String {
    device(circuit, id).terminal(terminal).unwrap().to_owned()
}

#[test]
fn m_on_an_instance_is_that_many_copies_of_one_cell_each_with_its_own_nets() {
    // `mult=2 m=2` as xschem writes it beside every SKY130 device: two copies, not four
    let read = read(
        ".subckt stack d g s b\n\
         mi1 d g mid b nmos w=1u l=0.5u\n\
         mi2 mid g s b nmos w=1u l=0.5u\n\
         .ends\n\
         .subckt amp out in vss\n\
         X1 out in vss vss stack m=2 mult=2\n\
         X2 out in vss vss stack M=1\n\
         X3 out in vss vss stack multi=3\n\
         .ends\n",
    );
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    let cells = read.document["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "one cell for the stack: {cells:#?}");
    let names: Vec<&str> = cells[0]["subcells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|subcell| subcell["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["X1.m1", "X1.m2", "X2", "X3.m1", "X3.m2", "X3.m3"]);
    assert_eq!(read.circuit.devices.len(), 12);
    // each copy has its own internal net: stacks in parallel, not one of wide devices
    let middles: std::collections::BTreeSet<String> = ["X1.m1", "X1.m2", "X3.m1", "X3.m2"]
        .iter()
        .map(|copy| net_of(&read.circuit, &format!("{copy}/mi1"), "s"))
        .collect();
    assert_eq!(middles.len(), 4, "{middles:?}");
    assert_eq!(device(&read.circuit, "X3.m3/mi2").params.m, 1);
    assert_eq!(net_of(&read.circuit, "X3.m3/mi1", "d"), "out");
}

#[test]
fn resistors_and_capacitors_by_value_are_sized_from_the_rule_set() {
    let read = read(
        ".subckt rc a b vss\n\
         R1 a b 10k\n\
         R2 a b r=10k w=1u\n\
         R3 a b 1k l=20u\n\
         C1 a vss 60f\n\
         C2 a vss 1p w=20u\n\
         C3 a vss c=100f $[mimcap]\n\
         R4 a b 4k w=2u l=3u\n\
         .ends\n",
    );
    let size = |id: &str| {
        let params = &device(&read.circuit, id).params;
        (params.w.unwrap(), params.l.unwrap())
    };
    // R = 48.2 Ω/□ × l / w, the bar as narrow as poly.3 allows, on the 5 nm grid
    let close = |(w, l): (f64, f64), (w0, l0): (f64, f64)| {
        assert!(
            (w - w0).abs() < 1e-12 && (l - l0).abs() < 1e-12,
            "{w} × {l}, expected {w0} × {l0}"
        );
    };
    close(size("R1"), (0.33e-6, 68.465e-6));
    close(size("R2"), (1e-6, 207.47e-6));
    close(size("R3"), (0.965e-6, 20e-6));
    close(size("R4"), (2e-6, 3e-6)); // both given: drawn as written
    for (id, ohms) in [("R1", 10e3), ("R2", 10e3), ("R3", 1e3)] {
        let (w, l) = size(id);
        assert!((48.2 * l / w - ohms).abs() / ohms < 0.002, "{id}");
        assert_eq!(device(&read.circuit, id).params.value, Some(ohms));
    }
    // C = 114.2 aF/µm² × the plate area drawn: met1 (the metal-2 role) at most 77 %
    // dense, so the plates are combs of 0.27 µm stripes 0.17 µm apart
    let drawn = |(w, l): (f64, f64)| {
        let (stripe, gap) = (0.27e-6, 0.17e-6);
        let count = ((w + gap) / (stripe + gap) + 1e-9).floor();
        count * stripe * l * 114.2e-6
    };
    for (id, farads) in [("C1", 60e-15), ("C2", 1e-12), ("C3", 100e-15)] {
        let capacitance = drawn(size(id));
        assert!(
            capacitance >= farads && capacitance < farads * 1.01,
            "{id}: {capacitance}"
        );
    }
    assert_eq!(size("C2").0, 20e-6);
    let (w, l) = size("C1");
    assert!((w - l).abs() < 0.5e-6, "a square plate: {w} × {l}");
    assert!(
        read.warnings.iter().any(|warning| warning
            == "netlist.sp:2:1: R1 = 10 kΩ is drawn as a poly bar 0.33 × 68.465 µm (sized from the rule set)"),
        "{:#?}",
        read.warnings
    );
}

#[test]
fn what_the_rule_set_lacks_to_size_a_value_is_named() {
    let mut document = sky130_json();
    document["layers"]["poly.res"]
        .as_object_mut()
        .unwrap()
        .remove("sheet_resistance");
    document["parasitics"]["layers"]
        .as_object_mut()
        .unwrap()
        .remove("poly");
    document["parasitics"]["overlaps"] = json!([]);
    let bare = rules(&document);
    assert_eq!(
        errors_with(
            ".subckt rc a b\nR1 a b 10k\nC1 a b 1p\n.ends\n",
            Some(&bare)
        ),
        [
            "netlist.sp:2:1: R1 = 10 kΩ is given by its value only: sizing it from its value needs the sheet resistance of the resistor body: give \"sheet_resistance\" (Ω/□) on layer \"poly.res\" of the rule set, or w= and l= on the line",
            "netlist.sp:3:1: C1 = 1 pF is given by its value only: sizing it from its value needs the capacitance per area between the plates (\"met1\" over \"li1\"): give a \"parasitics\" overlap of the two layers (rule set 1.4.0) or \"area_capacitance\" (F/m²) on \"met1\", or w= and l= on the line",
        ]
    );
    assert_eq!(
        errors_with(".subckt big a b\nR1 a b 10meg\n.ends\n", Some(&SKY130)),
        [
            "netlist.sp:2:1: R1 = 10 MΩ is given by its value only: at 48.2 Ω/□ (layer \"poly.res\") a bar 0.33 µm wide is 68464.73 µm long, more than the 1 cm a resistor may measure; give w= and l= on the line, or split it into resistors in series",
        ]
    );
    // 1 MΩ is a bar 6.8 mm long: drawn folded
    let options = SpiceOptions {
        rules: Some(&SKY130),
        ..SpiceOptions::default()
    };
    let (read, _) = load_spice_netlist(&file(".subckt big a b\nR1 a b 1meg\n.ends\n"), &options)
        .unwrap_or_else(|errors| panic!("{errors}"));
    let l = device(&read.value, "R1").params.l.unwrap();
    assert!((l - 6846.475e-6).abs() < 1e-9, "{l}");
    // without a rule set (`centroid convert` with none at hand), a value cannot be drawn
    assert_eq!(
        errors_with("R1 a b 10k\n", None),
        [
            "netlist.sp:1:1: R1 = 10 kΩ is given by its value only: its size derives from the rule set, which did not load"
        ]
    );
}

#[test]
fn subcircuit_parameters_size_devices_and_instances_override_them() {
    let read = read(
        ".subckt inv a y vdd vss wn=1u l=0.15u\n\
         .param wp={2*wn}\n\
         mp y a vdd vdd pmos w=wp l=l\n\
         mn y a vss vss nmos w={wn} l={l*2}\n\
         .ends\n\
         .subckt chain a y vdd vss\n\
         X1 a m vdd vss inv\n\
         X2 m y vdd vss inv wn=2u\n\
         X3 m y vdd vss inv wp=6u\n\
         X4 m y vdd vss inv WN=1U\n\
         .ends\n",
    );
    let size = |id: &str| {
        let params = &device(&read.circuit, id).params;
        (params.w.unwrap(), params.l.unwrap())
    };
    assert_eq!(size("X1/mp"), (2e-6, 0.15e-6));
    assert_eq!(size("X1/mn"), (1e-6, 0.3e-6));
    assert_eq!(size("X2/mp"), (4e-6, 0.15e-6));
    assert_eq!(size("X3/mp"), (6e-6, 0.15e-6)); // a .param of the body, overridden
    assert_eq!(size("X3/mn"), (1e-6, 0.3e-6));
    let cells: Vec<(&str, &str)> = read.document["cells"][0]["subcells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|subcell| {
            (
                subcell["name"].as_str().unwrap(),
                subcell["cell"].as_str().unwrap(),
            )
        })
        .collect();
    // one cell per set of values; X4 has X1's values (names are case-insensitive)
    assert_eq!(
        cells,
        [
            ("X1", "inv"),
            ("X2", "inv_2"),
            ("X3", "inv_3"),
            ("X4", "inv")
        ]
    );
}

#[test]
fn include_and_lib_are_named_and_skipped() {
    let read = read(
        ".include \"models/sky130.spice\"\n\
         .lib /pdk/models.lib tt\n\
         M1 d g s b nfet w=1u l=0.15u\n",
    );
    assert_eq!(read.circuit.devices.len(), 1);
    let skipped: Vec<&String> = read
        .warnings
        .iter()
        .filter(|warning| warning.contains("is skipped"))
        .collect();
    assert_eq!(skipped.len(), 2, "{:#?}", read.warnings);
    assert!(skipped[0].starts_with("netlist.sp:1:1: .include \"models/sky130.spice\" is skipped"));
    assert!(skipped[1].starts_with("netlist.sp:2:1: .lib /pdk/models.lib is skipped"));
}

#[test]
fn a_three_node_mos_gets_the_bulk_a_layout_engineer_expects() {
    let read = read(
        ".subckt amp in out vdd vss\n\
         M1 out in vss nmos w=1u l=0.15u\n\
         M2 out in vdd pmos w=2u l=0.15u\n\
         M3 out in src nmos w=1u l=0.15u\n\
         .ends\n\
         .subckt follower in out sub\n\
         M1 sub in out sub nmos w=1u l=0.15u\n\
         M2 sub out x nmos w=1u l=0.15u\n\
         M3 x out out pmos w=1u l=0.15u\n\
         .ends\n\
         .subckt top a b c vdd vss gnd\n\
         X1 a b vdd vss amp\n\
         X2 a c gnd follower\n\
         .ends\n",
    );
    // the ground for an nmos, the supply for a pmos (not the source)
    assert_eq!(net_of(&read.circuit, "X1/M1", "b"), "vss");
    assert_eq!(net_of(&read.circuit, "X1/M2", "b"), "vdd");
    assert_eq!(net_of(&read.circuit, "X1/M3", "b"), "vss");
    // the bulk of the other nmos of the subcircuit; a pmos with nothing in reach: its source
    assert_eq!(net_of(&read.circuit, "X2/M2", "b"), "gnd");
    assert_eq!(net_of(&read.circuit, "X2/M3", "b"), "c");
    let bulk_warnings: Vec<&String> = read
        .warnings
        .iter()
        .filter(|warning| warning.contains("has no bulk node"))
        .collect();
    assert_eq!(bulk_warnings.len(), 5, "{:#?}", read.warnings);
    assert!(bulk_warnings.contains(&&"netlist.sp:2:1: M1 has no bulk node: its bulk is connected to vss, the ground net; write the bulk as the fourth node to choose another".to_owned()));
    assert!(bulk_warnings.contains(&&"netlist.sp:9:1: M3 has no bulk node: its bulk is connected to out, its own source (no other net is in reach); write the bulk as the fourth node to choose another".to_owned()));
}

#[test]
fn element_letters_models_and_nodes_are_case_insensitive_and_labels_keep_the_spelling() {
    let read = read(
        ".SUBCKT Amp InP OUT VDD VSS\n\
         mP1 out inp Vdd vdd PMOS w=2U L=0.15U\n\
         Mn1 OUT INP vss VSS NMOS W=1u l=0.15u\n\
         r1 Out VSS 10K\n\
         .ENDS amp\n",
    );
    assert_eq!(
        read.document["cells"][0]["ports"],
        json!(["InP", "OUT", "VDD", "VSS"])
    );
    let nets: Vec<&str> = read
        .circuit
        .nets
        .iter()
        .map(|net| net.name.as_str())
        .collect();
    assert_eq!(nets.len(), 4, "{nets:?}");
    for net in ["InP", "OUT", "VDD", "VSS"] {
        assert!(nets.contains(&net), "{net} in {nets:?}");
    }
}

#[test]
fn an_instance_line_without_its_x_is_read_as_one_with_a_warning() {
    let read = read(
        ".subckt inv a y vdd vss\n\
         mp y a vdd vdd pmos w=2u l=0.15u\n\
         mn y a vss vss nmos w=1u l=0.15u\n\
         .ends\n\
         .subckt UNIT top bot\n\
         C0 top bot 50f\n\
         .ends\n\
         .subckt top a y vdd vss\n\
         I3 a m vdd vss inv\n\
         dac1 m y vdd vss inv\n\
         cap1 y vss UNIT\n\
         .ends\n",
    );
    let names: Vec<&str> = read.circuit.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(names, ["I3/mp", "I3/mn", "dac1/mp", "dac1/mn", "cap1/C0"]);
    assert!(read.warnings.contains(
        &"netlist.sp:9:1: I3 is read as an instance of subcircuit inv: an instance line starts with X (XI3 …)"
            .to_owned()
    ), "{:#?}", read.warnings);
    assert!(read.warnings.iter().any(|warning| {
        warning.starts_with("netlist.sp:11:1: cap1 is read as an instance of subcircuit UNIT")
    }));
}

#[test]
fn sources_are_left_out_with_a_warning_and_devices_without_a_generator_are_refused() {
    let read = read(
        ".subckt amp in out vdd vss\n\
         M1 out in vss vss nmos w=1u l=0.15u\n\
         I0 vdd out 'ibias'\n\
         V1 in vss dc 0.9 ac 1 sin(0.9 1m 1k)\n\
         E1 out vss in vss 10\n\
         .ends\n",
    );
    assert_eq!(read.circuit.devices.len(), 1);
    assert!(read.warnings.contains(&"netlist.sp:3:1: I0 (a current source between vdd and out) is not laid out: a source belongs to a testbench; what it supplies comes in through a port of the circuit".to_owned()), "{:#?}", read.warnings);
    assert_eq!(
        read.warnings
            .iter()
            .filter(|warning| warning.contains("is not laid out"))
            .count(),
        3
    );
    assert_eq!(
        errors_with(
            ".subckt esd a vss\nM1 a a vss vss nmos w=1u l=0.15u\nD1 vss a dnw\nQ1 a a vss pnp\nL1 a vss 1n\n.ends\n",
            Some(&SKY130)
        ),
        [
            "netlist.sp:3:1: unsupported element \"D1\" (a diode): Centroid lays out M (MOS), R, C and X (subcircuit) lines; Centroid has no generator for it: lay it out apart and bring its nodes out as ports",
            "netlist.sp:4:1: unsupported element \"Q1\" (a bipolar transistor): Centroid lays out M (MOS), R, C and X (subcircuit) lines; Centroid has no generator for it: lay it out apart and bring its nodes out as ports",
            "netlist.sp:5:1: unsupported element \"L1\" (an inductor): Centroid lays out M (MOS), R, C and X (subcircuit) lines; Centroid has no generator for it: lay it out apart and bring its nodes out as ports",
        ]
    );
}

#[test]
fn backslash_continuations_and_double_slash_comments() {
    let read = read(
        "// Library name: test\n\
         .param wn=1u \\\n\
         \x20   ln=0.15u\n\
         .subckt amp in out \\\n\
         \x20       vdd vss\n\
         // a comment between the lines of a statement\n\
         M1 out in vss vss nmos \\\n\
         \x20   w=wn l=ln\n\
         .ends\n",
    );
    assert_eq!(
        read.document["cells"][0]["ports"],
        json!(["in", "out", "vdd", "vss"])
    );
    let params = &device(&read.circuit, "M1").params;
    assert_eq!((params.w, params.l), (Some(1e-6), Some(0.15e-6)));
}

#[test]
fn a_value_by_parameter_name_and_the_multiplier_names_of_other_simulators() {
    let read = read(
        ".param rb=20k cc=48f\n\
         .subckt bias a b vss\n\
         R0 a b rb\n\
         C0 a vss cc\n\
         M1 a b vss vss nch w=1u l=0.15u multi=2\n\
         XC1 a vss sky130_fd_pr__cap_mim_m3_1 W=10u L=10u MF=3 m=3\n\
         XC2 a vss sky130_fd_pr__cap_mim_m3_1 W=10u L=10u MF=4\n\
         .ends\n",
    );
    assert_eq!(device(&read.circuit, "R0").params.value, Some(20e3));
    assert_eq!(device(&read.circuit, "R0").model, None);
    assert_eq!(device(&read.circuit, "C0").params.value, Some(48e-15));
    assert_eq!(device(&read.circuit, "M1").params.m, 2);
    // a capacitor's units are devices of their own (`XC1.m1` …)
    let units = |id: &str| {
        let prefix = format!("{id}.m");
        read.circuit
            .devices
            .iter()
            .filter(|device| device.id.starts_with(&prefix) && device.params.m == 1)
            .count()
    };
    assert_eq!(units("XC1"), 3, "MF with m: m");
    assert_eq!(units("XC2"), 4, "MF alone: the multiplicity");
}

#[test]
fn lengths_all_a_millimetre_or_more_are_micrometres() {
    // SKY130 netlists write W=5 L=0.15: the models' library sets .option scale=1e-6
    let read = read(
        ".param lb=1 wb=5\n\
         .subckt ldo vin vout vss\n\
         XM1 vout vin vss vss sky130_fd_pr__nfet_01v8 L=lb W='wb*1' m=2\n\
         XM2 vout vout vin vin sky130_fd_pr__pfet_01v8 L=0.15 W=9\n\
         .ends\n",
    );
    let params = &device(&read.circuit, "XM1").params;
    assert_eq!((params.w, params.l), (Some(5e-6), Some(1e-6)));
    assert_eq!(device(&read.circuit, "XM2").params.l, Some(0.15e-6));
    assert!(read.warnings.iter().any(|warning| warning.starts_with(
        "netlist.sp:3:48: every w and l is written without a scale (from 0.15 to 9), which in metres no device measures: read as micrometres"
    )), "{:#?}", read.warnings);
    // one length in metres among them: nothing is guessed, the large ones are refused
    let errors = errors_with(
        ".subckt a d g s\nM1 d g s s nmos w=5 l=0.15u\n.ends\n",
        Some(&SKY130),
    );
    assert!(
        errors[0].contains("w = 5 m is absurdly large"),
        "{errors:?}"
    );
}

#[test]
fn a_mismatched_ends_name_is_a_warning() {
    let read = read(".subckt ota a b\nM1 a b b b nmos w=1u l=0.15u\n.ends opamp\n");
    assert!(read.warnings.contains(
        &"netlist.sp:3:7: .ends opamp ends subcircuit ota, the one open (a name after .ends should repeat it)".to_owned()
    ), "{:#?}", read.warnings);
}

#[test]
fn a_finfet_size_asks_for_a_width() {
    let errors = errors_with(
        ".subckt inv a y vss\nM1 y a vss vss nmos_rvt l=0.15u nfin=4 nf=2\n.ends\n",
        Some(&SKY130),
    );
    assert_eq!(
        errors,
        [
            "netlist.sp:2:1: M1: nfin=4 sizes a FinFET, which a planar rule set does not draw; give w=… (the total gate width of one instance over its nf fingers), e.g. w=1u"
        ]
    );
}

#[test]
fn a_capacitor_by_value_with_a_tiny_l_is_refused_at_once() {
    // a plate length below the grid, or one needing an absurdly wide plate, used to step
    // the width a grid step at a time (for ever when l snapped to 0)
    for (line, expected) in [
        ("C1 a vss 1p l=1e-12", "shorter than the grid"),
        ("C1 a vss 1 l=1e-8", "would be"),
    ] {
        let errors = errors_with(&format!(".subckt rc a vss\n{line}\n.ends\n"), Some(&SKY130));
        assert!(
            errors.iter().any(|error| error.contains(expected)),
            "{line}: {errors:?}"
        );
    }
}
