//! Netlists exported from a foundry PDK's schematic (HSPICE from a Virtuoso-style flow,
//! written for these tests): transistors, resistors and capacitors called as X
//! instances of the PDK's cells, resistor cells sized by `lr`/`wr` with `series` and
//! `para` segments, a finger (MOM) capacitor read as its comb's value; a
//! passive's `m` units are devices of their own.

use centroid_schemas::Circuit;

mod support;

fn load(text: &str) -> Result<(Circuit, Vec<String>), Vec<String>> {
    support::load_on_sky130("netlist.sp", text)
}

const DIVIDER: &str = "** exported from a schematic\n\
    .subckt divider top mid bot vss\n\
    xr1 top mid vss rppolywo_m lr=6u wr=0.4u multi=1 m=1 series=3 segspace=250e-9\n\
    xr2 mid bot vss rppolywo_m lr=10u wr=1u multi=1 m=1 para=2 segspace=250e-9\n\
    xm1 bot mid vss vss nch_lvt_mac l=0.5u w=2u multi=1 nf=2\n\
    xm2 top mid top top pch_mac l=0.5u w=4u multi=1 nf=2\n\
    .ends divider\n";

#[test]
fn pdk_resistor_cells_are_read_by_their_lr_wr_series_and_para() {
    let (circuit, warnings) = load(DIVIDER).unwrap_or_else(|errors| panic!("{errors:#?}"));
    let r1 = circuit.device("xr1").unwrap();
    assert_eq!(r1.device_type.as_str(), "resistor");
    // three 6 µm segments in series: one bar 18 µm long, 0.4 µm wide
    assert!(
        (r1.params.l.unwrap() - 18e-6).abs() < 1e-12,
        "{:?}",
        r1.params
    );
    assert!((r1.params.w.unwrap() - 0.4e-6).abs() < 1e-12);
    assert_eq!(r1.params.m, 1);
    assert_eq!(r1.terminal("p"), Some("top"));
    assert_eq!(r1.terminal("n"), Some("mid"));
    // two segments in parallel: two units of the 10 µm bar, each a device of its own
    // (a passive's m units are drawn as devices side by side)
    assert!(circuit.device("xr2").is_none());
    for unit in ["xr2.m1", "xr2.m2"] {
        let r2 = circuit.device(unit).unwrap();
        assert!((r2.params.l.unwrap() - 10e-6).abs() < 1e-12);
        assert!((r2.params.w.unwrap() - 1e-6).abs() < 1e-12);
        assert_eq!(r2.params.m, 1);
        assert_eq!(r2.terminal("p"), Some("mid"));
        assert_eq!(r2.terminal("n"), Some("bot"));
    }
    assert_eq!(circuit.device("xm1").unwrap().device_type.as_str(), "nmos");
    assert_eq!(circuit.device("xm2").unwrap().device_type.as_str(), "pmos");
    assert!(
        warnings.iter().any(|warning| warning
            == "netlist.sp:3:61: xr1: series=3 segments in series are drawn as one bar 18 µm long (3 × 6 µm)"),
        "{warnings:#?}"
    );
    // the segment spacing is named as ignored, with what is read instead
    assert!(
        warnings.iter().any(|warning| warning.contains(
            "parameter segspace of xr1 is ignored: Centroid reads w (wr), l (lr), m, series, para and the value"
        )),
        "{warnings:#?}"
    );
}

#[test]
fn a_finger_capacitor_is_read_as_its_combs_value_from_the_rule_sets_coupling() {
    let text = ".subckt filt a b\n\
        xc1 a b cfmom_2t nr=46 lr=1e-6 w=70e-9 s=70e-9 stm=2 spm=6 multi=1 ftip=140e-9\n\
        xc2 a b cfmom_2t nr=46 lr=1e-6 c=100f\n\
        .ends filt\n";
    let (circuit, warnings) = load(text).unwrap_or_else(|errors| panic!("{errors:#?}"));
    // metals 2 to 6 by the rule set's roles: met1, met2, met3 (the process has no more),
    // their coupling at their reference spacing (70 nm is closer than any of them):
    // 45 gaps of 1 µm × (112.82 + 113.64 + 105.71) aF/µm = 14.95 fF
    let c1 = circuit.device("xc1").unwrap();
    assert_eq!(c1.device_type.as_str(), "capacitor");
    let rules = support::sky130();
    let plate =
        centroid_schemas::passive_sizing::size_capacitor(&rules, 45.0 * 332.17e-18, None, None)
            .unwrap();
    assert!(
        (c1.params.w.unwrap() - plate.0).abs() < 1e-12,
        "{:?} vs {plate:?}",
        c1.params
    );
    assert!(
        (c1.params.l.unwrap() - plate.1).abs() < 1e-12,
        "{:?} vs {plate:?}",
        c1.params
    );
    assert!(
        warnings.iter().any(|warning| warning.contains(
            "xc1: the nr=46 finger capacitor is 14.9476 fF by the rule set's same-layer coupling of met1, met2, met3"
        )),
        "{warnings:#?}"
    );
    // given by its value, the value is drawn
    let c2 = circuit.device("xc2").unwrap();
    let plate2 =
        centroid_schemas::passive_sizing::size_capacitor(&rules, 100e-15, None, None).unwrap();
    assert!((c2.params.w.unwrap() - plate2.0).abs() < 1e-12);
}

#[test]
fn a_finger_capacitor_without_the_rule_sets_coupling_is_refused_with_what_is_missing() {
    let mut rules = support::sky130();
    rules.parasitics = None;
    let options = centroid_schemas::SpiceOptions {
        rules: Some(&rules),
        ..centroid_schemas::SpiceOptions::default()
    };
    let file = centroid_schemas::InputFile {
        label: "netlist.sp".to_owned(),
        bytes:
            b".subckt filt a b\nxc1 a b cfmom_2t nr=46 lr=1e-6 w=70e-9 s=70e-9 stm=2 spm=3\n.ends\n"
                .to_vec(),
    };
    let errors = centroid_schemas::spice::load_spice_netlist(&file, &options).unwrap_err();
    let errors: Vec<String> = errors.issues.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        [
            "netlist.sp:2:1: xc1: nr=46 describes a finger (MOM) capacitor, drawn as the metal-1 and metal-2 plates of its value: reading its value from its fingers needs the rule set's same-layer coupling of met1, met2 (parasitics.layers.<layer>.coupling_af_um and coupling_spacing_m, rule set 1.4.0); or give its capacitance c=…"
        ]
    );
}

#[test]
fn series_must_be_a_whole_number_of_segments() {
    let text = ".subckt r a b\n\
        xr1 a b rppolywo_m lr=6u wr=0.4u series=2.5\n\
        .ends r\n";
    let errors = load(text).unwrap_err();
    assert_eq!(
        errors,
        ["netlist.sp:2:41: xr1: series=2.5 must be a whole number of resistor segments, 1 or more"]
    );
}
