//! The rule set's `parasitics` section (schema 1.4.0): per routing layer its sheet
//! resistance, area and fringe capacitance to substrate and lateral coupling; overlap
//! capacitance between layer pairs; the resistance of one contact or via cut. Each value
//! carries its `source`. Parasitic extraction (the worker's `extract.netlist`) reads it;
//! the units are in the field names (Ω/□, aF/µm², aF/µm, metres, Ω).

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::issue::{IssueSink, name_list, pointer_join};
use crate::version::SchemaVersion;

/// The first schema version with the `parasitics` section.
pub const V1_4: SchemaVersion = SchemaVersion::new(1, 4, 0);

/// One routing layer's coefficients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParasiticLayer {
    /// Sheet resistance, Ω per square.
    pub sheet_resistance_ohm: f64,
    /// Area capacitance to substrate, aF/µm².
    pub area_cap_af_um2: f64,
    /// Fringe (perimeter) capacitance to substrate, aF/µm of edge.
    pub fringe_cap_af_um: f64,
    /// Lateral coupling between two parallel wires at `coupling_spacing_m`, aF/µm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupling_af_um: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupling_spacing_m: Option<f64>,
    /// `C(s) = coupling · (spacing + offset) / (s + offset)` (0 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupling_offset_m: Option<f64>,
    /// Wires farther apart do not couple (default 8 × `coupling_spacing_m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupling_halo_m: Option<f64>,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// Capacitance between two layers where they overlap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParasiticOverlap {
    /// The upper layer.
    pub layer: String,
    /// The lower layer.
    pub layer2: String,
    pub area_cap_af_um2: f64,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One contact or via cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParasiticCut {
    pub resistance_ohm: f64,
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Parasitics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub layers: BTreeMap<String, ParasiticLayer>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<ParasiticOverlap>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cuts: BTreeMap<String, ParasiticCut>,
    /// How far a same-layer shape shields an edge's fringe capacitance to substrate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fringe_shield: Option<FringeShield>,
}

/// magic's `sidehalo`: a shape of the layer within `halo_m` in front of an edge leaves
/// (2/π)·atan(0.02 · area capacitance · d) of its fringe capacitance to substrate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FringeShield {
    pub halo_m: f64,
    pub source: String,
}

/// The checks a schema cannot express: the section needs 1.4.0, names declared layers
/// (not derived ones: coefficients belong to drawn layers), and an overlap relates two
/// different layers once.
pub(crate) fn check_parasitics(
    parasitics: &Parasitics,
    version: SchemaVersion,
    layer_names: &HashSet<&str>,
    sink: &mut IssueSink,
) {
    if version < V1_4 {
        sink.push(
            "/parasitics",
            format!("\"parasitics\" is a schema_version 1.4.0 field but the file declares {version}; declare \"schema_version\": \"1.4.0\""),
        );
    }
    let mut sorted: Vec<&str> = layer_names.iter().copied().collect();
    sorted.sort_unstable();
    let unknown = |name: &str, pointer: String, sink: &mut IssueSink| {
        if !layer_names.contains(name) {
            sink.push(
                pointer,
                format!(
                    "\"{name}\" is not a declared layer; declared layers: {}",
                    name_list(sorted.iter().copied())
                ),
            );
        }
    };
    for name in parasitics.layers.keys() {
        unknown(name, pointer_join("/parasitics/layers", name), sink);
    }
    for name in parasitics.cuts.keys() {
        unknown(name, pointer_join("/parasitics/cuts", name), sink);
    }
    let mut pairs = HashSet::new();
    for (index, overlap) in parasitics.overlaps.iter().enumerate() {
        let pointer = format!("/parasitics/overlaps/{index}");
        unknown(&overlap.layer, format!("{pointer}/layer"), sink);
        unknown(&overlap.layer2, format!("{pointer}/layer2"), sink);
        if overlap.layer == overlap.layer2 {
            sink.push(
                pointer,
                "an overlap relates two different layers (same-layer coupling is the layer's coupling_af_um)",
            );
        } else if !pairs.insert((overlap.layer.clone(), overlap.layer2.clone()))
            || pairs.contains(&(overlap.layer2.clone(), overlap.layer.clone()))
        {
            sink.push(
                pointer,
                format!(
                    "the overlap of \"{}\" and \"{}\" is given twice",
                    overlap.layer, overlap.layer2
                ),
            );
        }
    }
}
