//! What the schemas crate's integration tests share.

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{Circuit, InputFile, SpiceOptions};

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
