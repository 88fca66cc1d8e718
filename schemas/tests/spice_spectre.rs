//! Spectre netlists (as MAGICAL's examples and Virtuoso exports write them; the netlists
//! here are written for these tests): `subckt`/`ends`, nodes in parentheses, instances
//! named by any letter whose master is a subcircuit, a device model or a source,
//! `parameters`, `model … type=n`, `simulator lang=spice` sections, problems at the
//! file's own line and column.

use centroid_schemas::Circuit;

mod support;

fn load(text: &str) -> Result<(Circuit, Vec<String>), Vec<String>> {
    support::load_on_sky130("netlist.scs", text)
}

const LATCH: &str = "\
// a latch and its inverters, in Spectre
simulator lang=spectre
global 0 vdd!
parameters wn=1u
model mynfet bsim4 type=n
subckt inv in out vdd gnd
    MN0 (out in gnd gnd) mynfet w=wn l=150n
    MP0 (out in vdd vdd) pch_lvt w=2u l=150n multi=1 nf=2
ends inv
subckt latch d q qb vdd gnd
    N1 (qb d gnd gnd) nch_lvt w=wn l=150n multi=2
    I0 (q qb vdd gnd) inv
    I1 (qb q vdd gnd) inv
    V0 (vdd gnd) vsource dc=1.8
ends latch
";

#[test]
fn a_spectre_netlist_is_read_as_its_spice_equivalent() {
    let (circuit, warnings) = load(LATCH).unwrap_or_else(|errors| panic!("{errors:#?}"));
    let mut ids: Vec<&str> = circuit
        .devices
        .iter()
        .map(|device| device.id.as_str())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["I0/MN0", "I0/MP0", "I1/MN0", "I1/MP0", "N1"]);
    let n1 = circuit.device("N1").unwrap();
    // a device named N…: its master, not its letter, makes it a MOS
    assert_eq!(n1.device_type.as_str(), "nmos");
    assert_eq!(n1.params.m, 2);
    assert_eq!(n1.terminal("d"), Some("qb"));
    assert_eq!(n1.terminal("g"), Some("d"));
    assert_eq!(n1.terminal("b"), Some("gnd"));
    assert!((n1.params.w.unwrap() - 1e-6).abs() < 1e-15, "parameters wn");
    // `model mynfet bsim4 type=n` types the model
    assert_eq!(
        circuit.device("I0/MN0").unwrap().device_type.as_str(),
        "nmos"
    );
    assert_eq!(
        circuit.device("I1/MP0").unwrap().device_type.as_str(),
        "pmos"
    );
    assert_eq!(circuit.device("I1/MP0").unwrap().params.nf, 2);
    // I0 (q qb …) inv: its `in` is q, its `out` qb
    assert_eq!(circuit.device("I0/MN0").unwrap().terminal("d"), Some("qb"));
    assert_eq!(circuit.device("I0/MN0").unwrap().terminal("g"), Some("q"));
    assert!(
        warnings.contains(&"netlist.scs:14:5: V0 (a voltage source between vdd and gnd) is not laid out: a source belongs to a testbench; what it supplies comes in through a port of the circuit".to_owned()),
        "{warnings:#?}"
    );
}

#[test]
fn spice_sections_and_problems_at_the_files_line_and_column() {
    let text = "simulator lang=spectre\n\
        subckt buf (a y vdd vss)\n\
        simulator lang=spice\n\
        M1 y a vss vss nch_lvt w=1u l=150n\n\
        simulator lang=spectre\n\
        M2 (y a vdd vdd) pch_lvt w=2u l=150n\n\
        ends buf\n";
    let (circuit, _) = load(text).unwrap_or_else(|errors| panic!("{errors:#?}"));
    assert_eq!(circuit.devices.len(), 2);
    assert_eq!(circuit.device("M1").unwrap().terminal("s"), Some("vss"));
    assert_eq!(circuit.device("M2").unwrap().terminal("b"), Some("vdd"));
    let broken = "subckt buf a y vdd vss\n\
        M1 (y a vss vss) nch_lvt w=1u l=\n\
        X2 (y a vdd vdd) mystery w=2u l=150n\n\
        ends buf\n";
    let errors = load(broken).unwrap_err();
    assert!(
        errors.contains(&"netlist.scs:2:32: expected a value for l after '='".to_owned()),
        "{errors:#?}"
    );
    assert!(
        errors
            .iter()
            .any(|error| error
                .starts_with("netlist.scs:3:18: unknown subcircuit \"mystery\" for X2")),
        "{errors:#?}"
    );
}
