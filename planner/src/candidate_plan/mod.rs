//! One candidate's plan, built in named stages from a design point: matched
//! modules, single devices, dummies and rings, placement (rows, routed when the
//! workers can route), LVS, then DRC, metrics and the output files. The same stages
//! lay a block out into its own cell (`blocks.rs`): the draft of a scope of the
//! hierarchy, its cells named with the block's prefix.

use std::collections::{BTreeMap, HashSet};

use centroid_schemas::{Circuit, Device, DeviceType};
use serde_json::{Value, json};

use crate::design_point::DesignPoint;
use crate::device_units::{RowKind, is_mos, share_diffusion, unit_spec, unit_splits};
use crate::plan::Plan;
use crate::plan_builder::{PlanBuilder, TOP_CELL, cell_name, skill_id};
use crate::skill_catalog::SkillCatalog;

mod blocks;
mod checks;
pub(crate) use blocks::{block_cell, blocks_supported, draft_blocks, pack_ranks};
pub(crate) use checks::device_spec;
mod row_devices;
mod rows;
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
