//! The SPICE/CDL reader, construct by construct: each netlist is read into the netlist
//! 1.1.0 document and through the same checks and flattening as a netlist.json.

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{Circuit, DeviceType, InputFile, ModelMap, SpiceOptions};
use serde_json::{Value, json};

struct Read {
    document: Value,
    circuit: Circuit,
    warnings: Vec<String>,
}

fn read_with(text: &str, options: &SpiceOptions<'_>) -> Read {
    let file = InputFile {
        label: "netlist.sp".to_owned(),
        bytes: text.as_bytes().to_vec(),
    };
    match load_spice_netlist(&file, options) {
        Ok((loaded, json)) => Read {
            document: serde_json::from_slice(&json.bytes).unwrap(),
            circuit: loaded.value,
            warnings: loaded.warnings.iter().map(ToString::to_string).collect(),
        },
        Err(errors) => panic!("{text}\n{errors}"),
    }
}

fn read(text: &str) -> Read {
    read_with(text, &SpiceOptions::default())
}

/// The errors of a netlist the reader refuses, as printed.
fn load_error(text: &str) -> String {
    let file = InputFile {
        label: "netlist.sp".to_owned(),
        bytes: text.as_bytes().to_vec(),
    };
    match load_spice_netlist(&file, &SpiceOptions::default()) {
        Ok(_) => panic!("read without an error: {text}"),
        Err(errors) => errors.to_string(),
    }
}

/// (id, type, w, l, nf, m, terminals as "t=net" sorted) of every flattened device.
fn devices(circuit: &Circuit) -> Vec<String> {
    circuit
        .devices
        .iter()
        .map(|device| {
            let terminals: Vec<String> = device
                .terminals
                .iter()
                .map(|(terminal, net)| format!("{terminal}={net}"))
                .collect();
            format!(
                "{} {} w={:e} l={:e} nf={} m={} {}",
                device.id,
                device.device_type.as_str(),
                device.params.w.unwrap_or(0.0),
                device.params.l.unwrap_or(0.0),
                device.params.nf,
                device.params.m,
                terminals.join(" ")
            )
        })
        .collect()
}

#[test]
fn si_suffixes_are_case_insensitive_and_spice_m_is_milli() {
    let read = read(
        "M1 d g s b NMOS W=4U L=500N\n\
         M2 d g s b nmos w=1e-6 l=0.5um\n\
         M3 d g s b nmos w=1.5U l=1m\n\
         R1 a b 10k w=1u l=10u\n\
         C1 a b 5fF w=10u l=10u\n\
         C2 a b 2P w=10u l=10u\n",
    );
    let w: Vec<f64> = read
        .circuit
        .devices
        .iter()
        .filter_map(|d| d.params.w)
        .collect();
    let l: Vec<f64> = read
        .circuit
        .devices
        .iter()
        .filter_map(|d| d.params.l)
        .collect();
    assert_eq!(w[..3], [4e-6, 1e-6, 1.5e-6]);
    assert_eq!(l[..3], [5e-7, 5e-7, 1e-3]);
    let values: Vec<Option<f64>> = read
        .circuit
        .devices
        .iter()
        .map(|d| d.params.value)
        .collect();
    assert_eq!(values[3..], [Some(1e4), Some(5e-15), Some(2e-12)]);
}

#[test]
fn params_with_expressions_quoting_and_any_order() {
    let read = read(
        ".param wn = 2 * unit + 1u lmin=0.5u\n\
         .param unit=1u ratio={wn/unit}\n\
         M1 d g s b nmos w={wn*2} l='lmin*(1+1)' nf=2\n\
         M2 d g s b nmos w=-(-wn) l=lmin m='ratio-1'\n",
    );
    assert_eq!(
        devices(&read.circuit),
        vec![
            "M1 nmos w=6e-6 l=1e-6 nf=2 m=1 b=b d=d g=g s=s",
            "M2 nmos w=3e-6 l=5e-7 nf=1 m=2 b=b d=d g=g s=s",
        ]
    );
}

#[test]
fn continuations_comments_and_end() {
    let read = read(
        "* a title line is a comment\n\
         \n\
         M1 d g   ; the drain and the gate\n\
         * a comment between continuation lines\n\
         +  s b    $ source and bulk\n\
         + nmos\n\
         +w=1u l=1u\n\
         .end\n\
         M2 this is not read\n",
    );
    assert_eq!(
        devices(&read.circuit),
        vec!["M1 nmos w=1e-6 l=1e-6 nf=1 m=1 b=b d=d g=g s=s"]
    );
}

#[test]
fn keywords_and_names_are_case_insensitive_and_keep_their_first_spelling() {
    let read = read(
        ".SUBCKT Inv IN OUT VDD VSS\n\
         MP out in vdd vdd PMOS W=2u L=0.5u\n\
         Mn OUT In VSS vss nmos w=1u l=0.5u\n\
         .Ends INV\n\
         .END\n",
    );
    assert_eq!(read.document["top"], "Inv");
    assert_eq!(
        read.document["cells"][0]["ports"],
        json!(["IN", "OUT", "VDD", "VSS"])
    );
    assert_eq!(
        devices(&read.circuit),
        vec![
            "MP pmos w=2e-6 l=5e-7 nf=1 m=1 b=VDD d=OUT g=IN s=VDD",
            "Mn nmos w=1e-6 l=5e-7 nf=1 m=1 b=VSS d=OUT g=IN s=VSS",
        ]
    );
}

#[test]
fn the_top_is_the_last_subcircuit_or_the_named_one_and_hierarchy_flattens() {
    let text = "\
.subckt inv a y vdd vss
mp y a vdd vdd pmos w=2u l=0.5u
mn y a vss vss nmos w=1u l=0.5u
.ends
.subckt buf in out vdd vss
X1 in mid vdd vss inv
X2 mid out vdd vss / inv
.ends buf
";
    let last = read(text);
    assert_eq!(last.document["top"], "buf");
    let ids: Vec<&str> = last.circuit.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["X1/mp", "X1/mn", "X2/mp", "X2/mn"]);
    let mid = last
        .circuit
        .nets
        .iter()
        .find(|net| net.name == "mid")
        .unwrap();
    assert_eq!(mid.connections.len(), 4);
    let subcells = &last.document["cells"][0]["subcells"];
    assert_eq!(
        subcells[1],
        json!({"name": "X2", "cell": "inv", "connections": {"a": "mid", "y": "out", "vdd": "vdd", "vss": "vss"}})
    );
    let named = read_with(
        text,
        &SpiceOptions {
            top: Some("INV"),
            ..SpiceOptions::default()
        },
    );
    assert_eq!(named.document["top"], "inv");
    assert_eq!(named.circuit.devices.len(), 2);
}

#[test]
fn global_nets_reach_into_subcircuits_as_ports() {
    let read = read(
        ".global vdd VSS\n\
         .subckt inv a y\n\
         mp y a vdd vdd pmos w=2u l=0.5u\n\
         mn y a 0 vss nmos w=1u l=0.5u\n\
         .ends\n\
         .subckt top in out\n\
         x1 in out inv\n\
         .ends\n",
    );
    let inv = read.document["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "inv")
        .unwrap();
    assert_eq!(inv["ports"], json!(["a", "y", "0", "vdd", "VSS"]));
    let nets: Vec<&str> = read
        .circuit
        .nets
        .iter()
        .map(|net| net.name.as_str())
        .collect();
    for global in ["vdd", "VSS", "0"] {
        assert!(nets.contains(&global), "{global} in {nets:?}");
    }
    assert!(!nets.iter().any(|net| net.contains("x1/vdd")), "{nets:?}");
}

#[test]
fn subcircuit_parameters_make_one_cell_per_set_of_values() {
    let read = read(
        ".param wglobal=2u\n\
         .subckt unit d g s params: w=1u nf=1\n\
         M1 d g s s nmos w=w l=0.5u nf=nf\n\
         .ends\n\
         .subckt top a b c\n\
         X1 a b c unit\n\
         X2 a b c unit w=wglobal nf=2\n\
         X3 a b c unit W=2u NF=2\n\
         .ends\n",
    );
    let cells: Vec<&str> = read.document["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(cells, ["top", "unit", "unit_2"]);
    assert_eq!(
        devices(&read.circuit),
        vec![
            "X1/M1 nmos w=1e-6 l=5e-7 nf=1 m=1 b=c d=a g=b s=c",
            "X2/M1 nmos w=2e-6 l=5e-7 nf=2 m=1 b=c d=a g=b s=c",
            "X3/M1 nmos w=2e-6 l=5e-7 nf=2 m=1 b=c d=a g=b s=c",
        ]
    );
}

#[test]
fn resistors_and_capacitors_spice_and_cdl() {
    let read = read(
        "R1 a b 10k w=1u l=10u\n\
         R2 a b rppd w=1u l=10u\n\
         R3 a b 2k $[rhigh] $W=0.5u $L=5u $SUB=vss\n\
         C1 a b cap_mim w=10u l=10u c=1p\n\
         C2 a b 100f $[mimcap] $W=5u $L=5u\n",
    );
    let summary: Vec<(String, DeviceType, Option<String>, Option<f64>)> = read
        .circuit
        .devices
        .iter()
        .map(|d| (d.id.clone(), d.device_type, d.model.clone(), d.params.value))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("R1".into(), DeviceType::Resistor, None, Some(1e4)),
            ("R2".into(), DeviceType::Resistor, Some("rppd".into()), None),
            (
                "R3".into(),
                DeviceType::Resistor,
                Some("rhigh".into()),
                Some(2e3)
            ),
            (
                "C1".into(),
                DeviceType::Capacitor,
                Some("cap_mim".into()),
                Some(1e-12)
            ),
            (
                "C2".into(),
                DeviceType::Capacitor,
                Some("mimcap".into()),
                Some(1e-13)
            ),
        ]
    );
    assert_eq!(read.circuit.devices[2].params.w, Some(5e-7));
    assert_eq!(read.circuit.devices[2].terminals["p"], "a");
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
}

#[test]
fn model_tables_come_first_then_the_map_then_model_cards_then_usual_names() {
    let text = ".model mine pmos level=1\n\
                M1 d g s b nfet_odd w=1u l=1u\n\
                M2 d g s b mine w=1u l=1u\n\
                M3 d g s b n18 w=1u l=1u\n\
                M4 d g s b special w=1u l=1u\n";
    let rules = ModelMap::new([("nfet_odd", DeviceType::Pmos)]);
    let user = ModelMap::new([
        ("special", DeviceType::Nmos),
        ("nfet_odd", DeviceType::Nmos),
        ("mine", DeviceType::Nmos),
    ]);
    let options = SpiceOptions {
        top: None,
        rules: None,
        rule_set_models: Some(&rules),
        model_map: Some(&user),
    };
    let types: Vec<DeviceType> = read_with(text, &options)
        .circuit
        .devices
        .iter()
        .map(|d| d.device_type)
        .collect();
    assert_eq!(
        types,
        [
            DeviceType::Pmos,
            DeviceType::Nmos,
            DeviceType::Nmos,
            DeviceType::Nmos
        ]
    );
    let without_map = SpiceOptions {
        top: None,
        rules: None,
        rule_set_models: Some(&rules),
        model_map: Some(&ModelMap::new([("special", DeviceType::Pmos)])),
    };
    let types: Vec<DeviceType> = read_with(text, &without_map)
        .circuit
        .devices
        .iter()
        .map(|d| d.device_type)
        .collect();
    assert_eq!(
        types,
        [
            DeviceType::Pmos,
            DeviceType::Pmos,
            DeviceType::Nmos,
            DeviceType::Pmos
        ]
    );
}

#[test]
fn x_lines_to_device_models_and_option_scale_read_pdk_style_netlists() {
    // As a schematic editor writes SKY130 netlists: devices are X instances of the PDK's
    // model subcircuits, sizes in microns under `.option scale=1e-6`, and xschem writes
    // `mult=N m=N` — the models take `mult` for their mismatch only, `m` makes the copies.
    let text = ".option scale=1e-6\n\
                .subckt cell d g s\n\
                XM1 d g s s sky130_fd_pr__nfet_01v8 L=0.15 W=1 nf=1 ad=0.29 as=0.29 mult=3 m=3\n\
                XM2 d g s s sky130_fd_pr__nfet_01v8 L=0.15 W=1 nf=1 mult=2 m=1\n\
                XR1 d s s sky130_fd_pr__res_high_po_0p35 L=3.5 W=0.35 mult=1 m=1\n\
                .ends\n";
    let read = read(text);
    assert_eq!(
        devices(&read.circuit),
        vec![
            "XM1 nmos w=1e-6 l=1.5e-7 nf=1 m=3 b=s d=d g=g s=s",
            "XM2 nmos w=1e-6 l=1.5e-7 nf=1 m=1 b=s d=d g=g s=s",
            "XR1 resistor w=3.5e-7 l=3.5e-6 nf=1 m=1 n=s p=d",
        ]
    );
    assert_eq!(
        read.warnings,
        [
            "netlist.sp:4:58: XM2: mult=2 is not counted: m=1 is the instance's multiplicity (mult is the model's own parameter, as SKY130's mismatch factor that xschem writes beside m)"
        ]
    );
}

#[test]
fn a_wide_device_in_fingers_of_at_most_a_millimetre_is_read() {
    // an LDO's pass device: 8 mm over 16 fingers of 500 µm
    let read = read(".subckt ldo in out g\nM9 out g in in pmos w=8000u l=0.5u nf=16\n.ends\n");
    assert_eq!(
        devices(&read.circuit),
        ["M9 pmos w=8e-3 l=5e-7 nf=16 m=1 b=in d=out g=g s=in"]
    );
    assert!(
        !read
            .warnings
            .iter()
            .any(|warning| warning.contains("fingers")),
        "{:?}",
        read.warnings
    );
}

#[test]
fn a_wide_device_written_in_one_finger_is_folded_about_square() {
    // as xschem writes an LDO's pass device: W=8000 (µm) in one finger; √(w / l) fingers
    let read = read(
        ".subckt ldo in out g\nXM9 out g in in sky130_fd_pr__pfet_01v8 L=0.5 W=8000 nf=1 m=1\n.ends\n",
    );
    assert_eq!(
        devices(&read.circuit),
        ["XM9 pmos w=8e-3 l=5e-7 nf=126 m=1 b=in d=out g=g s=in"]
    );
    assert!(
        read.warnings.iter().any(|warning| warning.contains(
            "XM9: w = 8000 µm over nf = 1 would be fingers wider than 1 mm: drawn as nf = 126 fingers of 63.492 µm (the same total width)"
        )),
        "{:?}",
        read.warnings
    );
}

#[test]
fn the_default_top_is_the_last_subcircuit_no_other_instantiates() {
    // xschem writes the top first and its symbols' subcircuits after it
    let text = ".subckt top in out vss\n\
                x1 in mid vss inv\n\
                x2 mid out vss inv\n\
                .ends\n\
                .subckt inv a y vss\n\
                M1 y a vss vss nmos w=1u l=0.15u\n\
                .ends\n";
    let read = read(text);
    assert_eq!(read.document["top"], "top");
    assert_eq!(read.circuit.devices.len(), 2);
    // two unrelated subcircuits: the last one, as before
    let read = read_with(
        ".subckt a p\nM1 p p p p nmos w=1u l=1u\n.ends\n.subckt b q\nM1 q q q q nmos w=1u l=1u\n.ends\n",
        &SpiceOptions::default(),
    );
    assert_eq!(read.document["top"], "b");
}

#[test]
fn a_sky130_fixed_width_resistor_without_w_takes_the_width_its_name_says() {
    // xschem's SKY130 poly resistors: the cell's name carries the width, the line L= alone
    let text = ".subckt divider top mid vss\n\
                XR1 top mid vss sky130_fd_pr__res_high_po_0p35 L=8.4 mult=1 m=1\n\
                XR2 mid vss vss sky130_fd_pr__res_xhigh_po_5p73 L=20 W=1 mult=1 m=1\n\
                .ends\n";
    let read = read(text);
    assert_eq!(
        devices(&read.circuit),
        vec![
            "XR1 resistor w=3.5e-7 l=8.4e-6 nf=1 m=1 n=mid p=top",
            "XR2 resistor w=1e-6 l=2e-5 nf=1 m=1 n=vss p=mid",
        ]
    );
    assert!(
        read.warnings.contains(&"netlist.sp:2:17: XR1: no w given: the bar is 0.35 µm wide, as its cell's name sky130_fd_pr__res_high_po_0p35 says — so is every line of sky130_fd_pr__res_high_po_0p35 without w (write w=… to say otherwise)".to_owned()),
        "{:?}",
        read.warnings
    );
    // a resistor cell whose name says no width still needs w (or a value)
    let error = load_error(".subckt r a b\nXR1 a b b sky130_fd_pr__res_high_po L=8.4\n.ends\n");
    assert!(error.contains("XR1: expected w="), "{error}");
}

#[test]
fn testbench_lines_outside_subcircuits_include_and_odd_parameters_are_warnings() {
    let read = read(
        ".include models.lib\n\
         .subckt amp in out vdd vss\n\
         M1 out in vss vss nmos w=1u l=1u foo=3 ad=1p\n\
         .ends\n\
         Vdd vdd 0 1.8\n\
         X1 a b vdd 0 amp\n\
         .tran 1n 10n\n",
    );
    assert_eq!(
        read.warnings,
        vec![
            "netlist.sp:1:1: .include models.lib is skipped: Centroid reads this one file (model names are mapped to device types, no model file is read); subcircuits and parameters the skipped file defines must be written here",
            "netlist.sp:3:34: parameter foo of M1 is ignored: Centroid reads w, l, nf and m",
            "netlist.sp:5:1: lines outside .subckt are ignored (e.g. a testbench): the layout is of subcircuit amp",
            "netlist.sp:7:1: .tran is ignored: Centroid reads .subckt, .ends, .param, .global, .model, .option scale and .end",
        ]
    );
}

#[test]
fn a_flat_netlist_without_subckt_is_a_cell_named_after_the_file() {
    let read = read("M1 d g s b pch w=1u l=1u\nM2 d g s b nch w=1u l=1u\n");
    assert_eq!(read.document["top"], "netlist");
    assert_eq!(read.document["schema_version"], "1.1.0");
    assert_eq!(read.circuit.devices[0].device_type, DeviceType::Pmos);
}

#[test]
fn the_five_transistor_ota_example_reads_as_examples_ota5() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let spice = std::fs::read_to_string(dir.join("ota5_spice/netlist.sp")).unwrap();
    let rules: Value =
        serde_json::from_slice(&std::fs::read(dir.join("ota5_spice/drc_rules.json")).unwrap())
            .unwrap();
    assert_eq!(rules["schema_version"], "1.4.0");
    let models = ModelMap::new(
        rules["models"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, kind)| {
                (
                    name.as_str(),
                    centroid_schemas::spice::device_type_named(kind.as_str().unwrap()).unwrap(),
                )
            }),
    );
    let options = SpiceOptions {
        top: None,
        rules: None,
        rule_set_models: Some(&models),
        model_map: None,
    };
    let from_spice = read_with(&spice, &options).circuit;
    let json = centroid_schemas::load_netlist(&InputFile {
        label: "netlist.json".into(),
        bytes: std::fs::read(dir.join("ota5/netlist.json")).unwrap(),
    })
    .unwrap()
    .value;
    assert_eq!(devices(&from_spice), devices(&json));
    let modules = |circuit: &Circuit| -> Vec<String> {
        circuit
            .modules
            .iter()
            .map(|m| {
                format!(
                    "{:?} {:?}",
                    m.module_type,
                    m.devices.iter().map(|d| &d.device_id).collect::<Vec<_>>()
                )
            })
            .collect()
    };
    assert_eq!(modules(&from_spice), modules(&json));
    // Without the table, the SKY130 names still read by their usual names (…nfet…/…pfet…).
    assert_eq!(devices(&read(&spice).circuit), devices(&json));
}
