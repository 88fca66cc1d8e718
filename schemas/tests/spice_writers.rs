//! Lines as schematic tools write them for open PDKs, taken from public designs: xschem's
//! SKY130 transistor symbols (areas and perimeters as `int(…)` expressions of the line's own
//! `W` and `nf`, `mult=` beside `m=`), values calling functions, IHP SG13G2's `ng=` fingers.

use std::sync::LazyLock;

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{Circuit, DrcRuleSet, InputFile, SpiceOptions, load_drc_rules};

static SKY130: LazyLock<DrcRuleSet> =
    LazyLock::new(|| rules(include_bytes!("../../examples/pdk/sky130.json")));
static IHP: LazyLock<DrcRuleSet> =
    LazyLock::new(|| rules(include_bytes!("../../examples/pdk/ihp_sg13g2.json")));

fn rules(bytes: &[u8]) -> DrcRuleSet {
    let file = InputFile {
        label: "drc_rules.json".to_owned(),
        bytes: bytes.to_vec(),
    };
    load_drc_rules(&file).unwrap().value
}

fn file(text: &str) -> InputFile {
    InputFile {
        label: "netlist.sp".to_owned(),
        bytes: text.as_bytes().to_vec(),
    }
}

fn read(text: &str, rules: &DrcRuleSet) -> (Circuit, Vec<String>) {
    let options = SpiceOptions {
        rules: Some(rules),
        ..SpiceOptions::default()
    };
    match load_spice_netlist(&file(text), &options) {
        Ok((loaded, _)) => (
            loaded.value,
            loaded.warnings.iter().map(ToString::to_string).collect(),
        ),
        Err(errors) => panic!("{text}\n{errors}"),
    }
}

fn errors(text: &str, rules: &DrcRuleSet) -> Vec<String> {
    let options = SpiceOptions {
        rules: Some(rules),
        ..SpiceOptions::default()
    };
    match load_spice_netlist(&file(text), &options) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(errors) => errors.issues.iter().map(ToString::to_string).collect(),
    }
}

fn size(circuit: &Circuit, id: &str) -> (f64, f64, u32, u32) {
    let device = circuit
        .device(id)
        .unwrap_or_else(|| panic!("no device {id}"));
    let params = &device.params;
    (
        (params.w.unwrap() * 1e9).round(),
        (params.l.unwrap() * 1e9).round(),
        params.nf,
        params.m,
    )
}

#[test]
fn xschem_sky130_transistors_with_int_areas_are_read() {
    // sky130_gff_ip__bgr_1.2v, xschem/simulations/op5.spice, as xschem wrote it
    let (circuit, warnings) = read(
        "** sch_path: /foss/designs/op5.sch\n\
         .subckt op5 out vdde avss inp inn\n\
         XM8 net1 net2 vdde vdde sky130_fd_pr__pfet_01v8 L=10 W=1 nf=1 ad='int((nf+1)/2) * W/nf * 0.29' as='int((nf+2)/2) * W/nf * 0.29' pd='2*int((nf+1)/2) * (W/nf + 0.29)'\n\
         + ps='2*int((nf+2)/2) * (W/nf + 0.29)' nrd='0.29 / W' nrs='0.29 / W' sa=0 sb=0 sd=0 mult=2 m=2\n\
         XM9 net2 net2 vdde vdde sky130_fd_pr__pfet_01v8 L=10 W=1 nf=1 ad='int((nf+1)/2) * W/nf * 0.29' as='int((nf+2)/2) * W/nf * 0.29' pd='2*int((nf+1)/2) * (W/nf + 0.29)'\n\
         + ps='2*int((nf+2)/2) * (W/nf + 0.29)' nrd='0.29 / W' nrs='0.29 / W' sa=0 sb=0 sd=0 mult=2 m=2\n\
         XM1 net1 inp tail avss sky130_fd_pr__nfet_01v8 L=1 W=4 nf=2 ad='int((nf+1)/2) * W/nf * 0.29' as='int((nf+2)/2) * W/nf * 0.29' pd='2*int((nf+1)/2) * (W/nf + 0.29)'\n\
         + ps='2*int((nf+2)/2) * (W/nf + 0.29)' nrd='0.29 / W' nrs='0.29 / W' sa=0 sb=0 sd=0 mult=1 m=1\n\
         XM2 net2 inn tail avss sky130_fd_pr__nfet_01v8 L=1 W=4 nf=2 ad='int((nf+1)/2) * W/nf * 0.29' as='int((nf+2)/2) * W/nf * 0.29' pd='2*int((nf+1)/2) * (W/nf + 0.29)'\n\
         + ps='2*int((nf+2)/2) * (W/nf + 0.29)' nrd='0.29 / W' nrs='0.29 / W' sa=0 sb=0 sd=0 mult=1 m=1\n\
         .ends\n",
        &SKY130,
    );
    assert_eq!(circuit.devices.len(), 4);
    // unit-less sizes in micrometres (the SKY130 models' scale), m counted once beside mult
    assert_eq!(size(&circuit, "XM8"), (1000.0, 10000.0, 1, 2));
    assert_eq!(size(&circuit, "XM1"), (4000.0, 1000.0, 2, 1));
    assert!(
        warnings
            .iter()
            .all(|w| !w.contains("parameter") && !w.contains("int(")),
        "areas are ignored quietly: {warnings:?}"
    );
}

#[test]
fn sizes_may_call_functions() {
    let (circuit, _) = read(
        ".param wunit=0.3u lfin=0.26u\n\
         .subckt cell d g s b\n\
         M1 d g s b sky130_fd_pr__nfet_01v8 w='max(0.42u, 2*wunit)' l='min(lfin, 0.15u)' nf='int(4.9)'\n\
         M2 d g s b sky130_fd_pr__nfet_01v8 w='sqrt(4)*1u' l='abs(-0.5u)' m='nint(2.5)' nf='ceil(1.2)'\n\
         M3 d g s b sky130_fd_pr__nfet_01v8 w='pow(2, 3)*0.5u' l='floor(2.7)*0.25u'\n\
         .ends\n",
        &SKY130,
    );
    assert_eq!(size(&circuit, "M1"), (600.0, 150.0, 4, 1));
    assert_eq!(size(&circuit, "M2"), (2000.0, 500.0, 2, 3));
    assert_eq!(size(&circuit, "M3"), (4000.0, 500.0, 1, 1));
}

#[test]
fn an_unknown_function_or_a_wrong_count_of_arguments_is_named() {
    let problems = errors(
        ".subckt cell d g s b\n\
         M1 d g s b sky130_fd_pr__nfet_01v8 w='foo(1u)' l=0.15u\n\
         M2 d g s b sky130_fd_pr__nfet_01v8 w='max(1u)' l=0.15u\n\
         M3 d g s b sky130_fd_pr__nfet_01v8 w='int(1u, 2u)' l=0.15u\n\
         M4 d g s b sky130_fd_pr__nfet_01v8 w='sqrt(-1)' l=0.15u\n\
         .ends\n",
        &SKY130,
    );
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(
        problems[0].contains("a known function (int nint"),
        "{}",
        problems[0]
    );
    assert!(problems[0].contains("\"foo(1u)"), "{}", problems[0]);
    assert!(problems[1].contains("next argument"), "{}", problems[1]);
    assert!(problems[2].contains("closing ')'"), "{}", problems[2]);
    assert!(problems[3].contains("finite"), "{}", problems[3]);
}

#[test]
fn ihp_gate_fingers_ng_are_fingers() {
    // IHP-Open-DesignLib, AnalogLDO_exampleDesign/…/netlist/OTA.spice (ng=1 there), bulks
    // on nodes 1 and 2 as its schematic left them
    let (circuit, warnings) = read(
        ".subckt OTA iref vin_n vin_p vdd vss vout\n\
         M1 net1 vin_n net2 1 sg13_lv_nmos W=15u L=2u ng=3 m=1\n\
         M3 net3 net1 vdd 2 sg13_lv_pmos W=2u L=1u ng=1 m=2\n\
         M5 net2 iref vss 1 sg13_lv_nmos W=6u L=2u ng=2 m=1\n\
         .ends\n",
        &IHP,
    );
    assert_eq!(size(&circuit, "M1"), (15000.0, 2000.0, 3, 1));
    assert_eq!(size(&circuit, "M3"), (2000.0, 1000.0, 1, 2));
    assert_eq!(size(&circuit, "M5"), (6000.0, 2000.0, 2, 1));
    assert!(
        warnings.iter().all(|w| !w.contains("parameter ng")),
        "{warnings:?}"
    );
}

#[test]
fn a_negative_parasitic_of_an_extracted_netlist_is_named_with_why() {
    // sky130_gff_ip__bgr_1.2v, magic/bgr_op5_block_rev2.spice: magic's coupling capacitors
    let problems = errors(
        ".subckt bias D1 G1 AVSS\n\
         XM1 D1 G1 AVSS AVSS sky130_fd_pr__nfet_01v8 L=1 W=1\n\
         C0 AVSS G1 0.758576f\n\
         C3 AVSS 0 -0.306076f\n\
         R1 D1 G1 0\n\
         .ends\n",
        &SKY130,
    );
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].starts_with("netlist.sp:4:")
            && problems[0].contains("C3 = -306.076 aF: a capacitance of zero or less")
            && problems[0].contains("parasitic"),
        "{}",
        problems[0]
    );
    assert!(
        problems[1].contains("R1 = 0 Ω: a resistance of zero or less"),
        "{}",
        problems[1]
    );
}

#[test]
fn virtuoso_spectre_values_in_parentheses_are_expressions_not_nodes() {
    // AnalogGym, Amplifier/spectre_netlist/Leung_NMCF_Pin_3 (a Virtuoso export)
    let (circuit, _) = read(
        "simulator lang=spectre\n\
         parameters W_P=1u L_P=1u M_P=4\n\
         subckt amp GNDA VDDA VINN VOUT\n\
         \x20   M11 (VOUT VINN VDDA VDDA) pch_ulvt_mac l=L_P \\\n\
         \x20       w=W_P*1 multi=M_P nf=1 \\\n\
         \x20       sd=100n \\\n\
         \x20       ad=((1-int(1/2)*2)*(8.5e-08+((1-1)*1e-07)/2+0)+(1+1-int((1+1)/2)*2)*((1/2)*1e-07))*W_P \\\n\
         \x20       pd=(1-int(1/2)*2)*((8.5e-08+((1-1)*1e-07)/2+0)*2+(1+1)*W_P)+(1+1-int((1+1)/2)*2)*(((1/2)*1e-07)*2+1*W_P) \\\n\
         \x20       spa=120.0n dfm_flag=0\n\
         \x20   M23 (VOUT VINN GNDA GNDA) nch_ulvt_mac l=L_P w=(W_P*2) multi=(M_P) nf=1\n\
         ends amp\n",
        &SKY130,
    );
    assert_eq!(circuit.devices.len(), 2);
    assert_eq!(size(&circuit, "M11"), (1000.0, 1000.0, 1, 4));
    assert_eq!(size(&circuit, "M23"), (2000.0, 1000.0, 1, 4));
    let m11 = circuit.device("M11").unwrap();
    assert_eq!(m11.terminal("d"), Some("VOUT"));
    assert_eq!(m11.terminal("b"), Some("VDDA"));
}

#[test]
fn a_virtuoso_testbench_s_analyses_and_options_are_skipped() {
    // the same file's testbench: options and analyses with string values, `save`
    let (circuit, warnings) = read(
        "simulator lang=spectre\n\
         subckt amp GNDA VDDA VINN VOUT\n\
         \x20   M23 (VOUT VINN GNDA GNDA) nch_ulvt_mac l=1u w=2u\n\
         ends amp\n\
         V0 (VDD 0) vsource dc=1 type=dc\n\
         I26 (0 VDD VIN_M VOUT) amp\n\
         simulatorOptions options psfversion=\"1.1.0\" reltol=1e-3 \\\n\
         \x20   sensfile=\"../psf/sens.output\" checklimitdest=psf\n\
         dcOp dc write=\"spectre.dc\" maxiters=150 annotate=status\n\
         noise ( VOUT 0 ) noise start=1 stop=10G iprobe=V0 annotate=status\n\
         element info what=inst where=rawfile\n\
         save VOUT VIN_M V0:p\n\
         saveOptions options save=allpub\n",
        &SKY130,
    );
    assert_eq!(circuit.devices.len(), 1);
    for skipped in [
        "simulatorOptions",
        "dcOp",
        "noise",
        "element",
        "saveOptions",
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(&format!("{skipped} (a Spectre"))),
            "{skipped}: {warnings:#?}"
        );
    }
}
