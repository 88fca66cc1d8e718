//! The stages of a candidate's plan after its layout is drawn: LVS against the
//! circuit, then DRC, the layout's metrics and the output files.

use std::collections::HashSet;

use centroid_schemas::{Device, SeriesStacks};
use serde_json::{Value, json};

use super::Draft;
use crate::plan_builder::{CANDIDATE_DIR, TOP_CELL, skill_id};

/// A device as `lvs.run` and `sim.schematic` take it (id, type, terminals, sizes).
pub(crate) fn device_spec(device: &Device) -> Value {
    let mut spec = json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals});
    if let Some(w) = device.params.w {
        spec["w"] = json!(w);
    }
    if let Some(l) = device.params.l {
        spec["l"] = json!(l);
    }
    spec["nf"] = json!(device.params.nf.max(1));
    spec["m"] = json!(device.params.m.max(1));
    spec
}

impl<'a> Draft<'a> {
    pub(super) fn drawn_devices(&self) -> impl Iterator<Item = &'a Device> + '_ {
        self.circuit
            .devices
            .iter()
            .filter(|device| self.used.contains(&device.id))
    }

    /// Whether the flat device `device_id` is drawn (in this draft or in a block).
    fn drawn_anywhere(&self, device_id: &str) -> bool {
        self.used.contains(device_id) || self.inside_blocks.contains(device_id)
    }

    /// LVS of TOP against every drawn device of the whole (flat) circuit.
    pub(crate) fn add_lvs(&mut self) {
        if !self.routed || !self.builder.has("lvs.run") {
            return;
        }
        let devices: Vec<Value> = self
            .flat
            .devices
            .iter()
            .filter(|device| self.drawn_anywhere(&device.id))
            .map(device_spec)
            .collect();
        let arguments = json!({"cell": TOP_CELL, "devices": devices, "circuit_name": TOP_CELL});
        self.builder.push("lvs.run", arguments, false, "");
    }

    /// DRC, metrics, the GDS and the picture of every checked cell (TOP once placed).
    pub(crate) fn add_checks_and_outputs(&mut self) {
        let checked_cells: Vec<String> = match &self.top {
            Some(top) => vec![top.clone()],
            None => self.units.iter().map(|unit| unit.cell.clone()).collect(),
        };
        let file_stem = |cell: &String| {
            if self.top.is_some() {
                "layout".to_string()
            } else {
                cell.clone()
            }
        };
        let outputs: Vec<(String, String)> = checked_cells
            .iter()
            .map(|cell| (cell.clone(), file_stem(cell)))
            .collect();
        if self.builder.has("drc.run") {
            let builder = &mut self.builder;
            for (cell, _) in &outputs {
                let report = format!("{CANDIDATE_DIR}/drc_{cell}.lyrdb");
                builder.push(
                    "drc.run",
                    json!({"cell": cell, "report_path": report}),
                    false,
                    "",
                );
            }
        }
        if self.builder.has("layout.metrics") {
            let matched = self.matched_groups();
            let builder = &mut self.builder;
            for (cell, _) in &outputs {
                let arguments = json!({"cell": cell, "matched": matched});
                builder.push("layout.metrics", arguments, true, "");
            }
        }
        let builder = &mut self.builder;
        if builder.has("layout.export") {
            for (cell, stem) in &outputs {
                let path = format!("{CANDIDATE_DIR}/{stem}.gds");
                builder.push(
                    "layout.export",
                    json!({"cell": cell, "path": path}),
                    false,
                    "",
                );
            }
        }
    }

    /// Every matched module the recognition found with two drawn members or more,
    /// as `layout.metrics` measures them from the geometry (wherever they stand): a
    /// member of parallel units is measured as one device (`units`: member → its other
    /// drawn units), and a member that is one segment of a series stack as the whole
    /// stack (`stacked`: member → the other drawn segments of its units' stacks), so a
    /// stack drawn as a block and one whose segments stand apart are measured alike.
    fn matched_groups(&self) -> Vec<Value> {
        let stacks = SeriesStacks::of(self.flat);
        self.flat
            .modules
            .iter()
            .filter(|module| module.module_type.is_matched())
            .filter_map(|module| {
                let mut devices = Vec::new();
                let mut units = serde_json::Map::new();
                let mut stacked = serde_json::Map::new();
                let in_module: HashSet<&str> = module
                    .devices
                    .iter()
                    .map(|member| member.device_id.as_str())
                    .collect();
                for member in module.members() {
                    let drawn: Vec<&str> = std::iter::once(member.device_id.as_str())
                        .chain(module.units_of(&member.device_id))
                        .filter(|device| self.drawn_anywhere(device))
                        .collect();
                    let segments: Vec<String> = drawn
                        .iter()
                        .flat_map(|unit| stacks.others(unit))
                        .filter(|segment| {
                            !in_module.contains(segment) && self.drawn_anywhere(segment)
                        })
                        .map(skill_id)
                        .collect();
                    let Some((first, others)) = drawn.split_first() else {
                        continue;
                    };
                    let first = skill_id(first);
                    if !others.is_empty() {
                        let others: Vec<String> =
                            others.iter().map(|unit| skill_id(unit)).collect();
                        units.insert(first.clone(), json!(others));
                    }
                    if !segments.is_empty() {
                        stacked.insert(first.clone(), json!(segments));
                    }
                    devices.push(first);
                }
                (devices.len() >= 2).then(|| {
                    let mut group = json!({"module": module.id, "devices": devices});
                    if !units.is_empty() {
                        group["units"] = Value::Object(units);
                    }
                    if !stacked.is_empty() {
                        group["stacked"] = Value::Object(stacked);
                    }
                    group
                })
            })
            .collect()
    }
}
