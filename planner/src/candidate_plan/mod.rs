//! One candidate's plan, built in named stages from a design point: matched
//! modules, single devices, dummies and rings, placement (rows, routed when the
//! workers can route), LVS, then DRC, metrics and the output files. The same stages
//! lay a block out into its own cell (`blocks.rs`): the draft of a scope of the
//! hierarchy, its cells named with the block's prefix.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use centroid_schemas::{Circuit, Device, DeviceType};
use serde_json::{Value, json};

use crate::design_point::DesignPoint;
use crate::device_units::{RowKind, is_mos, permutation, share_diffusion, unit_spec, unit_splits};
use crate::placement_order::{fold, kind_name};
use crate::plan::Plan;
use crate::plan_builder::{PlanBuilder, TOP_CELL, cell_name, skill_id};
use crate::skill_catalog::SkillCatalog;

mod blocks;
mod checks;
pub(crate) use blocks::{block_cell, blocks_supported, draft_blocks};
pub(crate) use checks::device_spec;
mod row_devices;
mod simulation;

/// The cell a draft lays out: its name, the prefix of every cell it draws (names
/// never collide between blocks) and, for a block, the ports its cell exposes.
pub(crate) struct Target {
    pub cell: String,
    pub prefix: String,
    pub ports: Vec<String>,
}

impl Target {
    /// The top cell of a flat layout (today's names).
    pub(crate) fn top() -> Target {
        Target {
            cell: TOP_CELL.to_string(),
            prefix: String::new(),
            ports: Vec::new(),
        }
    }
}

/// A cell the placement arranges: a matched module or a single device.
struct PlacedUnit {
    cell: String,
    kind: RowKind,
    /// the devices it draws (its place in a row is that of the first one in the order)
    devices: Vec<String>,
    /// its share of a row's width: the fingers it draws
    weight: u64,
}

impl PlacedUnit {
    fn of(cell: String, devices: &[&Device]) -> PlacedUnit {
        PlacedUnit {
            cell,
            kind: RowKind::of(devices[0].device_type),
            devices: devices.iter().map(|device| device.id.clone()).collect(),
            weight: devices
                .iter()
                .map(|device| u64::from(device.params.nf.max(1) * device.params.m.max(1)))
                .sum(),
        }
    }
}

/// One candidate's plan under construction.
pub(crate) struct Draft<'a> {
    /// what this draft lays out (the whole circuit, or one scope of its hierarchy)
    circuit: &'a Circuit,
    /// the whole flat circuit (what LVS and the metrics compare)
    flat: &'a Circuit,
    point: &'a DesignPoint,
    /// every drawable device, in the point's placement order
    order: Vec<String>,
    builder: PlanBuilder<'a>,
    target: Target,
    /// the block instances placed beside the devices
    blocks: Vec<blocks::BlockInstance>,
    /// the flat ids of the devices drawn inside those blocks
    inside_blocks: HashSet<String>,
    /// devices drawn so far (in a module or alone)
    used: HashSet<String>,
    units: Vec<PlacedUnit>,
    /// the cell of each matched module drawn, by module id
    matched_cells: BTreeMap<String, String>,
    /// the cell holding everything, once placed
    top: Option<String>,
    routed: bool,
    /// matched modules and cells drawn inside the blocks (once per block)
    drawn_in_blocks: (usize, usize),
    /// whether the design space offered blocks (a flat plan then says so)
    blocks_offered: bool,
}

impl<'a> Draft<'a> {
    pub(crate) fn new(
        circuit: &'a Circuit,
        point: &'a DesignPoint,
        order: &'a [String],
        skills: &'a SkillCatalog,
    ) -> Draft<'a> {
        Draft::in_cell(
            (circuit, circuit),
            point,
            order.to_vec(),
            PlanBuilder::new(skills),
            Target::top(),
        )
    }

    /// A draft of `scope` (a block's or the top's devices) into `target`, continuing
    /// the steps of `builder`; `flat` is the whole circuit.
    pub(crate) fn in_cell(
        (scope, flat): (&'a Circuit, &'a Circuit),
        point: &'a DesignPoint,
        order: Vec<String>,
        builder: PlanBuilder<'a>,
        target: Target,
    ) -> Draft<'a> {
        Draft {
            circuit: scope,
            flat,
            point,
            order,
            builder,
            target,
            blocks: Vec::new(),
            inside_blocks: HashSet::new(),
            used: HashSet::new(),
            units: Vec::new(),
            matched_cells: BTreeMap::new(),
            top: None,
            routed: false,
            drawn_in_blocks: (0, 0),
            blocks_offered: false,
        }
    }

    /// `tech.load` with the job's rule set.
    pub(crate) fn load_technology(&mut self, drc_rules: &Value) {
        self.builder
            .push("tech.load", json!({"rules": drc_rules}), false, "");
    }

    /// Whether any device became a cell to place (or a block instance stands).
    pub(crate) fn has_cells(&self) -> bool {
        !self.units.is_empty() || !self.blocks.is_empty()
    }

    /// Says in the summary that the point is laid out flat though blocks were offered.
    pub(crate) fn offered_blocks(&mut self) {
        self.blocks_offered = true;
    }

    /// A cell name of this draft: `prefix_id` behind the target's prefix.
    fn cell(&self, prefix: &str, id: &str) -> String {
        format!("{}{}", self.target.prefix, cell_name(prefix, id))
    }

    /// One matched structure per recognised matched module whose MOS devices share
    /// a type and a unit.
    pub(crate) fn add_matched_modules(&mut self) {
        let circuit = self.circuit;
        for module in circuit
            .modules
            .iter()
            .filter(|module| module.module_type.is_matched())
        {
            let devices: Vec<&Device> = module
                .devices
                .iter()
                .filter_map(|member| circuit.device(&member.device_id))
                .filter(|device| is_mos(device) && !self.used.contains(&device.id))
                .collect();
            if devices.len() < 2
                || devices
                    .iter()
                    .any(|device| device.device_type != devices[0].device_type)
            {
                continue;
            }
            let Some(splits) = unit_splits(&devices, self.point.finger_split) else {
                continue;
            };
            let cell = self.cell("mod", &module.id);
            let same_count = devices
                .iter()
                .zip(&splits)
                .all(|(device, split)| device.params.m * split == devices[0].params.m * splits[0]);
            let added = if devices.len() == 2
                && same_count
                && splits[0] == splits[1]
                && self.builder.has("layout.create_common_centroid_pair")
            {
                self.add_pair(&module.id, &devices, splits[0], &cell)
            } else if self.builder.has("layout.create_interdigitated_group") {
                let specs: Vec<Value> = devices
                    .iter()
                    .zip(&splits)
                    .map(|(device, split)| {
                        let mut spec = unit_spec(device, *split);
                        spec["units"] = spec["m"].clone();
                        spec
                    })
                    .collect();
                let arguments = json!({
                    "devices": specs,
                    "share_diffusion": share_diffusion(&devices),
                    "cell_name": cell,
                });
                self.builder
                    .push("layout.create_interdigitated_group", arguments, false, "")
            } else {
                false
            };
            if added {
                self.used
                    .extend(devices.iter().map(|device| device.id.clone()));
                self.units.push(PlacedUnit::of(cell.clone(), &devices));
                self.matched_cells.insert(module.id.clone(), cell);
            }
        }
    }

    fn add_pair(&mut self, module_id: &str, devices: &[&Device], split: u32, cell: &str) -> bool {
        let units_per_device = devices[0].params.m.max(1) * split;
        let mut arrangement = self
            .point
            .module_arrangements
            .get(module_id)
            .unwrap_or(&self.point.arrangement)
            .clone();
        if units_per_device % 2 == 1 && arrangement != "ABAB" {
            self.builder.notes.push(format!(
                "{module_id}: {units_per_device} units per device, {arrangement} needs an even count: ABAB"
            ));
            arrangement = "ABAB".into();
        }
        let arguments = json!({
            "device_a": unit_spec(devices[0], split),
            "device_b": unit_spec(devices[1], split),
            "arrangement": arrangement,
            "share_diffusion": share_diffusion(devices),
            "cell_name": cell,
        });
        self.builder
            .push("layout.create_common_centroid_pair", arguments, false, "")
    }

    /// A device cell for every device not in a matched structure.
    pub(crate) fn add_single_devices(&mut self) {
        for device in &self.circuit.devices {
            if self.used.contains(&device.id) {
                continue;
            }
            let (Some(w), Some(l)) = (device.params.w, device.params.l) else {
                self.builder
                    .notes
                    .push(format!("{}: no w/l, not drawn", device.id));
                continue;
            };
            if !matches!(
                device.device_type,
                DeviceType::Nmos | DeviceType::Pmos | DeviceType::Resistor | DeviceType::Capacitor
            ) {
                let kind = device.device_type.as_str();
                self.builder.notes.push(format!(
                    "{}: {kind} is not drawn by the generators",
                    device.id
                ));
                continue;
            }
            let cell = self.cell("dev", &device.id);
            let arguments = json!({
                "device_id": skill_id(&device.id),
                "type": device.device_type.as_str(),
                "w": w,
                "l": l,
                "nf": device.params.nf.max(1),
                "m": device.params.m.max(1),
                "cell_name": cell,
            });
            if self
                .builder
                .push("layout.create_device", arguments, false, "")
            {
                self.used.insert(device.id.clone());
                self.units.push(PlacedUnit::of(cell, &[device]));
            }
        }
    }

    pub(crate) fn add_dummies_and_rings(&mut self) {
        let point = self.point;
        if self.builder.has("layout.add_dummies") {
            for (module, cell) in &self.matched_cells {
                let count = point.dummies_of(module);
                if count > 0 {
                    let arguments = json!({"cell": cell, "count": count});
                    self.builder.push("layout.add_dummies", arguments, true, "");
                }
            }
        }
        if self.builder.has("layout.add_guard_ring") {
            let prefix = self.target.prefix.clone();
            let ringed: HashSet<&String> = self
                .matched_cells
                .iter()
                .filter(|(module, _)| point.ring_of(module))
                .map(|(_, cell)| cell)
                .collect();
            for unit in self
                .units
                .iter_mut()
                .filter(|unit| ringed.contains(&unit.cell))
            {
                let unprefixed = unit.cell.strip_prefix(&prefix).unwrap_or(&unit.cell);
                let ring = format!("{prefix}gr_{unprefixed}");
                let arguments = json!({"cell": unit.cell, "kind": "auto", "cell_name": ring});
                if self
                    .builder
                    .push("layout.add_guard_ring", arguments, true, &ring)
                {
                    unit.cell = ring;
                }
            }
        }
    }

    /// The row kinds in the point's row order.
    fn kinds(&self) -> Vec<RowKind> {
        let kinds: Vec<RowKind> = self
            .units
            .iter()
            .map(|unit| unit.kind)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        permutation(&kinds, self.point.row_order as usize)
    }

    /// The cells of one kind in the point's order (a cell stands where its first
    /// device stands).
    fn row_of(&self, kind: RowKind) -> Vec<&PlacedUnit> {
        let place = |unit: &PlacedUnit| {
            unit.devices
                .iter()
                .filter_map(|device| self.order.iter().position(|listed| listed == device))
                .min()
                .unwrap_or(usize::MAX)
        };
        let mut cells: Vec<&PlacedUnit> =
            self.units.iter().filter(|unit| unit.kind == kind).collect();
        cells.sort_by_key(|unit| place(unit));
        cells
    }

    /// The rows of every kind, bottom to top: each kind folded into the point's
    /// number of rows (or one row per cell for tall aspect ratios).
    fn rows_by_kind(&self) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for kind in self.kinds() {
            let cells: Vec<(String, u64)> = self
                .row_of(kind)
                .into_iter()
                .map(|unit| (unit.cell.clone(), unit.weight))
                .collect();
            if cells.is_empty() {
                continue;
            }
            let count = if self.point.aspect_ratio_pct < 75 {
                cells.len()
            } else {
                self.point.rows.get(kind_name(kind)).copied().unwrap_or(1) as usize
            };
            rows.extend(fold(&cells, count));
        }
        rows
    }

    /// Whether `route.nets` cuts each kind's rows again by the cells' real widths and
    /// the tracks their channels need (which the planner does not know): when the point
    /// leaves the row counts open (no count for any kind, not one row per cell) and the
    /// workers take it. The rows of [`Draft::rows_by_kind`] are then a preference, kept
    /// unless a folding is smaller.
    fn folds_device_rows(&self) -> bool {
        self.point.aspect_ratio_pct >= 75
            && self.point.rows.is_empty()
            && self.units.len() > 1
            && self.builder.takes("route.nets", "fold_device_rows")
    }

    fn spacing_um(&self) -> f64 {
        self.point.spacing_nm as f64 / 1000.0
    }

    /// Rows of one device type each (bottom to top), then the rows of block
    /// instances, routed by `route.nets` into the target cell (TOP, or a block's);
    /// the rows of blocks are a preference the worker packs again by the blocks' real
    /// sizes (`pack_block_rows`, see [`Draft::packs_block_rows`]).
    pub(crate) fn place_in_rows_and_route(&mut self, pitch_um: f64) {
        let gap = pitch_um + self.spacing_um();
        let mut row_cells = Vec::new();
        let mut rows = self.rows_by_kind();
        let (block_rows, modules) = self.block_rows();
        let whole_rows: Vec<Vec<String>> = modules
            .iter()
            .map(|module| {
                module
                    .iter()
                    .map(|row| format!("{}ROW{}", self.target.prefix, rows.len() + row))
                    .collect()
            })
            .collect();
        rows.extend(block_rows);
        let shares_diffusion = self.builder.takes("layout.place", "devices");
        for (index, cells) in rows.iter().enumerate() {
            let row_cell = format!("{}ROW{index}", self.target.prefix);
            let mut arguments =
                json!({"cell_name": row_cell, "rows": [{"cells": cells, "gap": gap}]});
            let row_devices = self.single_devices_of(cells);
            if shares_diffusion && row_devices.len() > 1 {
                // neighbours facing one net stand on one diffusion (a series stack's inner nodes)
                arguments["devices"] = json!(row_devices);
            }
            if self.builder.push("layout.place", arguments, false, "") {
                row_cells.push(row_cell);
            }
        }
        let mut devices: Vec<Value> = self
            .drawn_devices()
            .map(|device| json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals}))
            .collect();
        devices.extend(self.block_devices());
        let nets: Vec<Value> = self
            .circuit
            .nets
            .iter()
            .map(|net| json!({"name": net.name, "net_type": net.net_type.as_str()}))
            .collect();
        let cell = self.target.cell.clone();
        let mut arguments =
            json!({"cell_name": cell, "rows": row_cells, "devices": devices, "nets": nets});
        if !self.target.ports.is_empty() {
            arguments["ports"] = json!(self.target.ports);
        }
        if self.packs_block_rows() {
            arguments["pack_block_rows"] = if whole_rows.is_empty() {
                json!({"gap": gap})
            } else {
                json!({"gap": gap, "whole_rows": whole_rows})
            };
        }
        if self.folds_device_rows() {
            arguments["fold_device_rows"] = json!({"gap": gap});
        }
        if self.builder.push("route.nets", arguments, false, "") {
            self.top = Some(cell);
            self.routed = true;
        }
    }

    /// Placement into TOP without routing (when the workers cannot route).
    pub(crate) fn place_unrouted(&mut self) {
        if !self.builder.has("layout.place") {
            return;
        }
        let rows: Vec<Vec<String>> = if self.point.aspect_ratio_pct > 150 {
            vec![
                self.kinds()
                    .iter()
                    .flat_map(|kind| self.row_of(*kind))
                    .map(|unit| unit.cell.clone())
                    .collect(),
            ]
        } else {
            self.rows_by_kind()
        };
        let spacing_um = self.spacing_um();
        let rows: Vec<Value> = rows
            .into_iter()
            .map(|cells| json!({"cells": cells, "gap": spacing_um}))
            .collect();
        let arguments = json!({"cell_name": TOP_CELL, "rows": rows, "row_gap": spacing_um});
        if self.builder.push("layout.place", arguments, false, "") {
            self.top = Some(TOP_CELL.to_string());
        }
    }

    pub(crate) fn finish(self) -> Plan {
        let point = self.point;
        let placement = if self.routed {
            "; placed in rows and routed into TOP, LVS"
        } else if self.top.is_some() {
            "; placed into TOP (not routed)"
        } else {
            "; not placed (no layout.place)"
        };
        let hierarchy = self.hierarchy_summary();
        let mut summary = format!(
            "{} steps; {} matched modules, {} cells; arrangement {}, finger split {}, {} dummies, guard ring {}, row order {}, spacing {} nm, aspect {}%{placement}",
            self.builder.steps.len(),
            self.matched_cells.len() + self.drawn_in_blocks.0,
            self.units.len() + self.drawn_in_blocks.1,
            point.arrangement,
            point.finger_split,
            point.dummies,
            if point.guard_ring { "on" } else { "off" },
            point.row_order,
            point.spacing_nm,
            point.aspect_ratio_pct,
        );
        for (module, count) in &point.module_dummies {
            summary.push_str(&format!("; {module}: {count} dummies"));
        }
        for (module, ring) in &point.module_rings {
            let ring = if *ring { "on" } else { "off" };
            summary.push_str(&format!("; {module}: guard ring {ring}"));
        }
        summary.push_str(&hierarchy);
        if !self.builder.notes.is_empty() {
            summary.push_str("; notes: ");
            summary.push_str(&self.builder.notes.join("; "));
        }
        Plan {
            summary,
            steps: self.builder.steps,
        }
    }
}
