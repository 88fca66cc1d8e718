//! The figures a layout engineer compares between two layouts (and with ALIGN's
//! reports): wire length, via count, the length mismatch of partner nets (the
//! same terminal of the two devices of a matched pair), and the centroid error of
//! every matched group the module recognition found, measured from the geometry
//! (gate centroids, µm) wherever its devices stand — read from a candidate's
//! `route.nets` and `layout.metrics` results.
//!
//! They refine the score (see [`LayoutFigures::refinement`] and
//! [`LayoutFigures::geometric_matching`]): a layout with shorter wires, balanced
//! partner nets and matched devices closer to a common centroid ranks above an
//! otherwise equal one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One matched group as the geometry has it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupFigure {
    pub module: String,
    pub devices: Vec<String>,
    /// `common_centroid`, `interdigitated` (one matched cell) or `separate`
    pub structure: String,
    /// the largest distance between two devices' gate centroids
    pub centroid_error_um: f64,
    /// each member's gate centroid (x, y µm; over its units and stack segments)
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub centroids_um: BTreeMap<String, [f64; 2]>,
}

/// One block of a hierarchical layout: a subcircuit drawn once, placed `instances` times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlockFigure {
    pub cell: String,
    pub instances: u64,
    /// the devices (and units) it draws
    pub devices: u64,
    pub bbox_area_um2: f64,
    pub device_area_um2: f64,
    /// device area / bbox area
    pub utilisation: f64,
}

/// A net given a current (objectives `constraints.net_currents`) on one wire layer of
/// one routed cell: the width its current needs and the narrowest wire of the sized kind
/// drawn (`route.nets` `net_currents`; issue 26).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CurrentWidth {
    pub cell: String,
    pub net: String,
    pub current_a: f64,
    pub layer: String,
    pub needed_um: f64,
    pub drawn_um: Option<f64>,
    /// which wires of that layer were sized (rails, trunks) or none
    pub wires: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutFigures {
    /// routed wire length over all nets (`route.nets`)
    #[serde(default)]
    pub wirelength_um: Option<f64>,
    #[serde(default)]
    pub nets: Option<u64>,
    /// via cuts in the layout (contacts are not vias)
    #[serde(default)]
    pub via_count: Option<i64>,
    /// Σ |length(a) − length(b)| over the partner net pairs
    #[serde(default)]
    pub partner_mismatch_um: Option<f64>,
    #[serde(default)]
    pub partner_pairs: u64,
    /// the largest centroid error of any matched group
    #[serde(default)]
    pub max_centroid_error_um: Option<f64>,
    #[serde(default)]
    pub groups: Vec<GroupFigure>,
    /// the typical size of a device cell: √(device area / device cells), the
    /// length the other figures are compared with
    #[serde(default)]
    pub device_scale_um: Option<f64>,
    /// the blocks of a hierarchical layout (empty when flat)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<BlockFigure>,
    /// [`Self::geometric_matching`] as the evaluator used it: half of the
    /// `matching_max` objective (the report shows it, not only the centroid errors)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geometric_matching_score: Option<f64>,
    /// the widths the nets given a current took, per routed cell and layer
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub current_widths: Vec<CurrentWidth>,
}

impl LayoutFigures {
    /// Reads the figures from one step's result (`route.nets`, `layout.metrics`);
    /// other steps add nothing.
    pub fn read_step(&mut self, skill: &str, data: &Value) {
        match skill {
            "route.nets" => self.read_routing(data),
            "layout.metrics" => self.read_metrics(data),
            _ => {}
        }
    }

    fn read_routing(&mut self, data: &Value) {
        let Some(nets) = data.get("nets").and_then(Value::as_object) else {
            return;
        };
        let cell = data.get("cell_name").and_then(Value::as_str).unwrap_or("");
        for entry in data
            .get("net_currents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Ok(width) = serde_json::from_value::<CurrentWidth>(entry.clone()) {
                self.current_widths.push(CurrentWidth {
                    cell: cell.to_string(),
                    ..width
                });
            }
        }
        let length = |net: &str| {
            nets.get(net)
                .and_then(|entry| entry.get("wire_um"))
                .and_then(Value::as_f64)
        };
        self.wirelength_um = data.get("wire_um").and_then(Value::as_f64);
        self.nets = Some(nets.len() as u64);
        let mut mismatch = 0.0;
        let mut pairs = 0;
        for pair in data
            .get("partner_nets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let names: Vec<&str> = pair
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if let [a, b] = names[..]
                && let (Some(a), Some(b)) = (length(a), length(b))
            {
                mismatch += (a - b).abs();
                pairs += 1;
            }
        }
        self.partner_mismatch_um = Some(round(mismatch));
        self.partner_pairs = pairs;
    }

    fn read_metrics(&mut self, data: &Value) {
        if let Some(vias) = data.get("via_count").and_then(Value::as_i64) {
            self.via_count = Some(self.via_count.unwrap_or(0) + vias);
        }
        if let (Some(area), Some(cells)) = (
            data.get("device_area_um2").and_then(Value::as_f64),
            data.get("device_instances").and_then(Value::as_f64),
        ) && cells > 0.0
        {
            self.device_scale_um = Some(round((area / cells).sqrt()));
        }
        for group in data
            .get("matched_groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Ok(figure) = serde_json::from_value::<GroupFigure>(group.clone()) {
                self.groups.push(figure);
            }
        }
        if let Some(error) = data.get("max_centroid_error_um").and_then(Value::as_f64) {
            self.max_centroid_error_um = Some(self.max_centroid_error_um.unwrap_or(0.0).max(error));
        }
        for block in data
            .get("blocks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Ok(figure) = serde_json::from_value::<BlockFigure>(block.clone()) {
                self.blocks.push(figure);
            }
        }
    }

    /// Whether anything was measured.
    pub fn is_empty(&self) -> bool {
        *self == LayoutFigures::default()
    }

    /// How close the matched groups are to a common centroid, in [0, 1]: the mean
    /// over groups of 1 / (1 + error / device scale); `None` without groups.
    pub fn geometric_matching(&self) -> Option<f64> {
        let scale = self.device_scale_um.filter(|scale| *scale > 0.0)?;
        if self.groups.is_empty() {
            return None;
        }
        let sum: f64 = self
            .groups
            .iter()
            .map(|group| 1.0 / (1.0 + group.centroid_error_um / scale))
            .sum();
        Some(sum / self.groups.len() as f64)
    }

    /// The factor in [0.9, 1] the score is multiplied by: 0.9 + 0.05·w + 0.05·s with
    /// w = 1 / (1 + wire length / (nets · device scale)) and s = 1 / (1 + partner
    /// mismatch / device scale); 1 when the layout was not routed.
    pub fn refinement(&self) -> f64 {
        let (Some(scale), Some(wire), Some(nets)) =
            (self.device_scale_um, self.wirelength_um, self.nets)
        else {
            return 1.0;
        };
        if scale <= 0.0 || nets == 0 {
            return 1.0;
        }
        let wires = 1.0 / (1.0 + wire / (nets as f64 * scale));
        let symmetry = 1.0 / (1.0 + self.partner_mismatch_um.unwrap_or(0.0) / scale);
        0.9 + 0.05 * wires + 0.05 * symmetry
    }
}

fn round(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_widths_of_nets_given_a_current_are_kept_per_cell() {
        let mut figures = LayoutFigures::default();
        figures.read_step(
            "route.nets",
            &json!({"cell_name": "TOP", "nets": {"vdd": {"wire_um": 1.0}},
                    "net_currents": [{"net": "vdd", "current_a": 0.001, "layer": "li1",
                                      "role": "metal1", "needed_um": 5.56, "drawn_um": 5.6,
                                      "wires": "rails"}]}),
        );
        assert_eq!(
            figures.current_widths,
            [CurrentWidth {
                cell: "TOP".into(),
                net: "vdd".into(),
                current_a: 0.001,
                layer: "li1".into(),
                needed_um: 5.56,
                drawn_um: Some(5.6),
                wires: "rails".into(),
            }]
        );
        assert!(
            serde_json::to_value(&figures).unwrap()["current_widths"][0]["drawn_um"] == json!(5.6)
        );
    }

    #[test]
    fn routing_and_metrics_give_the_figures() {
        let mut figures = LayoutFigures::default();
        figures.read_step(
            "route.nets",
            &json!({"wire_um": 30.0, "partner_nets": [["a", "b"], ["c", "missing"]],
                    "nets": {"a": {"wire_um": 10.0}, "b": {"wire_um": 12.5}, "c": {"wire_um": 7.5}}}),
        );
        figures.read_step(
            "layout.metrics",
            &json!({"via_count": 14, "device_area_um2": 16.0, "device_instances": 4,
                    "max_centroid_error_um": 3.0,
                    "matched_groups": [
                        {"module": "dp", "devices": ["M1", "M2"], "structure": "common_centroid", "centroid_error_um": 0.0, "units": 4},
                        {"module": "cm", "devices": ["M3", "M4"], "structure": "separate", "centroid_error_um": 3.0, "units": 2}]}),
        );
        assert_eq!(figures.wirelength_um, Some(30.0));
        assert_eq!(figures.nets, Some(3));
        assert_eq!(figures.partner_mismatch_um, Some(2.5));
        assert_eq!(figures.partner_pairs, 1);
        assert_eq!(figures.via_count, Some(14));
        assert_eq!(figures.device_scale_um, Some(2.0));
        assert_eq!(figures.groups.len(), 2);
        // (1/(1+0) + 1/(1+3/2)) / 2
        let matching = figures.geometric_matching().unwrap();
        assert!((matching - 0.7).abs() < 1e-9, "{matching}");
        // 0.9 + 0.05/(1+30/6) + 0.05/(1+2.5/2)
        let expected = 0.9 + 0.05 / 6.0 + 0.05 / 2.25;
        assert!((figures.refinement() - expected).abs() < 1e-9);
        assert!(figures.blocks.is_empty());
    }

    #[test]
    fn the_blocks_of_a_hierarchical_layout_are_kept() {
        let mut figures = LayoutFigures::default();
        figures.read_step(
            "layout.metrics",
            &json!({"blocks": [{"cell": "BLK_ota", "instances": 4, "devices": 5,
                                "bbox_area_um2": 200.0, "device_area_um2": 80.0, "utilisation": 0.4}]}),
        );
        assert_eq!(figures.blocks.len(), 1);
        assert_eq!(figures.blocks[0].cell, "BLK_ota");
        assert_eq!(figures.blocks[0].instances, 4);
        let written = serde_json::to_value(&figures).unwrap();
        assert_eq!(written["blocks"][0]["utilisation"], 0.4);
        assert!(
            serde_json::to_value(LayoutFigures::default())
                .unwrap()
                .get("blocks")
                .is_none()
        );
    }

    #[test]
    fn shorter_wires_and_smaller_centroid_errors_rank_higher() {
        let figures = |wire: f64, error: f64| LayoutFigures {
            wirelength_um: Some(wire),
            nets: Some(4),
            device_scale_um: Some(2.0),
            partner_mismatch_um: Some(0.0),
            groups: vec![GroupFigure {
                centroid_error_um: error,
                ..GroupFigure::default()
            }],
            ..LayoutFigures::default()
        };
        assert!(figures(10.0, 0.0).refinement() > figures(20.0, 0.0).refinement());
        assert!(figures(10.0, 0.0).geometric_matching() > figures(10.0, 1.0).geometric_matching());
        assert_eq!(LayoutFigures::default().refinement(), 1.0);
        assert_eq!(LayoutFigures::default().geometric_matching(), None);
    }
}
