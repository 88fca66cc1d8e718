//! What the schemas crate's integration tests share.
#![allow(dead_code)] // each test binary uses some of these

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{Circuit, DrcRuleSet, InputFile, SpiceOptions, load_drc_rules};

/// The circuit of a SPICE netlist given as text (panics with the errors when it is
/// refused).
pub fn spice(text: &str) -> Circuit {
    let file = InputFile {
        label: "netlist.sp".to_owned(),
        bytes: text.as_bytes().to_vec(),
    };
    match load_spice_netlist(&file, &SpiceOptions::default()) {
        Ok((loaded, _)) => loaded.value,
        Err(errors) => panic!("{text}\n{errors}"),
    }
}

/// The SKY130 rule set of the examples.
pub fn sky130() -> DrcRuleSet {
    let file = InputFile {
        label: "drc_rules.json".to_owned(),
        bytes: include_bytes!("../../../examples/pdk/sky130.json").to_vec(),
    };
    load_drc_rules(&file).unwrap().value
}

/// A netlist file `label` holding `text`, read with the SKY130 rule set: the circuit and
/// the warnings, or the errors (each `file:line:col: message`).
pub fn load_on_sky130(label: &str, text: &str) -> Result<(Circuit, Vec<String>), Vec<String>> {
    let rules = sky130();
    let options = SpiceOptions {
        rules: Some(&rules),
        ..SpiceOptions::default()
    };
    let file = InputFile {
        label: label.to_owned(),
        bytes: text.as_bytes().to_vec(),
    };
    match load_spice_netlist(&file, &options) {
        Ok((loaded, _)) => Ok((
            loaded.value,
            loaded.warnings.iter().map(ToString::to_string).collect(),
        )),
        Err(errors) => Err(errors.issues.iter().map(ToString::to_string).collect()),
    }
}
