//! The built-in rule-based planner.
//!
//! Plan of one candidate (each step only when a live worker advertises the skill):
//! `tech.load` → one matched structure per recognised matched module
//! (`layout.create_common_centroid_pair` for two equal devices in the point's
//! arrangement, `layout.create_interdigitated_group` for ratioed or larger groups)
//! → `layout.create_device` for every other device → `layout.add_dummies` →
//! `layout.add_guard_ring` → `layout.place` (rows by device type, in the point's
//! row order, spacing and aspect ratio) → routing and `lvs.run` when advertised →
//! `drc.run` → `layout.metrics` → `layout.export` → `layout.render`.
//!
//! Step arguments are fitted to the skill's advertised input schema (see
//! [`crate::planner::plan_builder`]); ReAct adjustments are [`crate::planner::react`].

use std::collections::{BTreeSet, HashSet};

use centroid_proto::Error;
use centroid_schemas::{Circuit, Device, DeviceType, TaskContext};
use serde_json::{Value, json};

use crate::model::{DesignPoint, Plan};
use crate::planner::device_units::{
    RowKind, common_split, is_mos, permutation, unit_key, unit_spec,
};
use crate::planner::plan_builder::{CANDIDATE_DIR, PlanBuilder, TOP_CELL, cell_name, skill_id};
use crate::planner::{Adjustment, DesignSpace, PlanError, Planner, SkillCatalog, react};

/// The rule set and netlist as JSON, passed through to `tech.load` and `lvs.run`.
#[derive(Debug, Clone, Default)]
pub struct RawInputs {
    pub drc_rules: Value,
    pub netlist: Value,
}

impl RawInputs {
    /// The job's rule set and netlist as JSON (`null` where a file does not parse;
    /// the inputs were checked at submission).
    pub fn from_job_inputs(inputs: &crate::model::JobInputs) -> RawInputs {
        RawInputs {
            drc_rules: serde_json::from_str(&inputs.drc_rules_json).unwrap_or(Value::Null),
            netlist: serde_json::from_str(&inputs.netlist_json).unwrap_or(Value::Null),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct HeuristicPlanner {
    raw: RawInputs,
    /// `route.info`'s `pitch_um` for this rule set (probed once per job); routing
    /// and LVS are planned only when it is known
    route_pitch_um: Option<f64>,
}

impl HeuristicPlanner {
    pub fn new(raw: RawInputs) -> HeuristicPlanner {
        HeuristicPlanner {
            raw,
            route_pitch_um: None,
        }
    }

    pub fn with_route_pitch(mut self, pitch_um: Option<f64>) -> HeuristicPlanner {
        self.route_pitch_um = pitch_um;
        self
    }

    fn routing(&self, skills: &SkillCatalog) -> Option<f64> {
        let advertised = ["route.nets", "layout.place"]
            .iter()
            .all(|skill| skills.contains_key(*skill));
        self.route_pitch_um.filter(|_| advertised)
    }
}

/// Whether the workers can route (then the planner needs `route.info`'s pitch first).
pub fn routing_advertised(skills: &SkillCatalog) -> bool {
    ["route.info", "route.nets", "layout.place"]
        .iter()
        .all(|skill| skills.contains_key(*skill))
}

impl Planner for HeuristicPlanner {
    fn design_space(&self, context: &TaskContext, skills: &SkillCatalog) -> DesignSpace {
        let devices = &context.circuit.devices;
        let max_nf = devices
            .iter()
            .filter(|device| is_mos(device))
            .map(|device| device.params.nf)
            .max()
            .unwrap_or(1);
        let finger_splits: Vec<u32> = (1..=max_nf.clamp(1, 4))
            .filter(|split| max_nf % split == 0)
            .collect();
        let kinds: BTreeSet<RowKind> = devices
            .iter()
            .map(|device| RowKind::of(device.device_type))
            .collect();
        let row_orders = (1..=kinds.len().max(1) as u32).product::<u32>().min(6);
        let routed = self.routing(skills).is_some();
        DesignSpace {
            // route.nets needs one row of devices per row cell: no 2-D modules when routing
            arrangements: if routed {
                vec!["ABBA".into(), "ABAB".into()]
            } else {
                vec!["ABBA".into(), "2D".into(), "ABAB".into()]
            },
            finger_splits,
            dummies: if skills.contains_key("layout.add_dummies") {
                vec![0, 1, 2]
            } else {
                vec![0]
            },
            // routed layouts get bulk taps from the router: no guard rings there
            guard_rings: if skills.contains_key("layout.add_guard_ring") && !routed {
                vec![false, true]
            } else {
                vec![false]
            },
            row_orders,
            spacings_nm: vec![0, 200, 500],
            // a routed row holds one device type: no single mixed row
            aspect_ratios_pct: if routed {
                vec![100, 50]
            } else {
                vec![100, 50, 200]
            },
        }
    }

    fn plan(
        &self,
        context: &TaskContext,
        point: &DesignPoint,
        skills: &SkillCatalog,
    ) -> Result<Plan, PlanError> {
        let required: Vec<String> = ["tech.load", "layout.create_device"]
            .iter()
            .filter(|skill| !skills.contains_key(**skill))
            .map(|skill| skill.to_string())
            .collect();
        if !required.is_empty() {
            return Err(PlanError::MissingSkills(required));
        }
        let mut draft = Draft::new(&context.circuit, point, skills);
        draft
            .builder
            .push("tech.load", json!({"rules": self.raw.drc_rules}), false, "");
        draft.add_matched_modules();
        draft.add_single_devices();
        if draft.units.is_empty() {
            return Err(PlanError::Empty("no device could be drawn".into()));
        }
        draft.add_dummies_and_rings();
        match self.routing(skills) {
            Some(pitch_um) => draft.place_in_rows_and_route(pitch_um),
            None => draft.place_unrouted(),
        }
        draft.add_lvs();
        draft.add_checks_and_outputs();
        Ok(draft.finish())
    }

    fn adjust(
        &self,
        plan: &Plan,
        step_id: &str,
        error: &Error,
        _skills: &SkillCatalog,
    ) -> Option<Adjustment> {
        react::adjust(plan, step_id, error)
    }
}

/// A cell the placement arranges: a matched module or a single device.
struct PlacedUnit {
    cell: String,
    kind: RowKind,
}

/// One candidate's plan under construction.
struct Draft<'a> {
    circuit: &'a Circuit,
    point: &'a DesignPoint,
    builder: PlanBuilder<'a>,
    /// devices drawn so far (in a module or alone)
    used: HashSet<String>,
    units: Vec<PlacedUnit>,
    matched_cells: Vec<String>,
    /// the cell holding everything, once placed
    top: Option<String>,
    routed: bool,
}

impl<'a> Draft<'a> {
    fn new(circuit: &'a Circuit, point: &'a DesignPoint, skills: &'a SkillCatalog) -> Draft<'a> {
        Draft {
            circuit,
            point,
            builder: PlanBuilder::new(skills),
            used: HashSet::new(),
            units: Vec::new(),
            matched_cells: Vec::new(),
            top: None,
            routed: false,
        }
    }

    /// One matched structure per recognised matched module whose MOS devices share
    /// a type and a unit.
    fn add_matched_modules(&mut self) {
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
            let split = common_split(&devices, self.point.finger_split);
            if !devices
                .iter()
                .all(|device| unit_key(device, split) == unit_key(devices[0], split))
            {
                continue;
            }
            let cell = cell_name("mod", &module.id);
            let same_count = devices
                .iter()
                .all(|device| device.params.m == devices[0].params.m);
            let added = if devices.len() == 2
                && same_count
                && self.builder.has("layout.create_common_centroid_pair")
            {
                self.add_pair(&module.id, &devices, split, &cell)
            } else if self.builder.has("layout.create_interdigitated_group") {
                let specs: Vec<Value> = devices
                    .iter()
                    .map(|device| {
                        let mut spec = unit_spec(device, split);
                        spec["units"] = spec["m"].clone();
                        spec
                    })
                    .collect();
                let arguments = json!({"devices": specs, "cell_name": cell});
                self.builder
                    .push("layout.create_interdigitated_group", arguments, false, "")
            } else {
                false
            };
            if added {
                self.used
                    .extend(devices.iter().map(|device| device.id.clone()));
                self.units.push(PlacedUnit {
                    cell: cell.clone(),
                    kind: RowKind::of(devices[0].device_type),
                });
                self.matched_cells.push(cell);
            }
        }
    }

    fn add_pair(&mut self, module_id: &str, devices: &[&Device], split: u32, cell: &str) -> bool {
        let units_per_device = devices[0].params.m.max(1) * split;
        let mut arrangement = self.point.arrangement.clone();
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
            "cell_name": cell,
        });
        self.builder
            .push("layout.create_common_centroid_pair", arguments, false, "")
    }

    /// A device cell for every device not in a matched structure.
    fn add_single_devices(&mut self) {
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
            let cell = cell_name("dev", &device.id);
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
                self.units.push(PlacedUnit {
                    cell,
                    kind: RowKind::of(device.device_type),
                });
            }
        }
    }

    fn add_dummies_and_rings(&mut self) {
        let point = self.point;
        if point.dummies > 0 && self.builder.has("layout.add_dummies") {
            for cell in &self.matched_cells {
                let arguments = json!({"cell": cell, "count": point.dummies});
                self.builder.push("layout.add_dummies", arguments, true, "");
            }
        }
        if point.guard_ring && self.builder.has("layout.add_guard_ring") {
            for unit in self
                .units
                .iter_mut()
                .filter(|unit| self.matched_cells.contains(&unit.cell))
            {
                let ring = format!("gr_{}", unit.cell);
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

    /// The cells of one kind: matched modules in the middle, single devices
    /// alternating around them.
    fn row_of(&self, kind: RowKind) -> Vec<String> {
        let is_matched = |unit: &PlacedUnit| {
            self.matched_cells
                .iter()
                .any(|cell| unit.cell.ends_with(cell.as_str()))
        };
        let mut order: Vec<String> = self
            .units
            .iter()
            .filter(|unit| unit.kind == kind && is_matched(unit))
            .map(|unit| unit.cell.clone())
            .collect();
        let singles = self
            .units
            .iter()
            .filter(|unit| unit.kind == kind && !is_matched(unit));
        for (index, single) in singles.enumerate() {
            if index % 2 == 0 {
                order.push(single.cell.clone())
            } else {
                order.insert(0, single.cell.clone())
            }
        }
        order
    }

    /// One row per kind (or per cell for tall aspect ratios).
    fn rows_by_kind(&self) -> Vec<Vec<String>> {
        let kinds = self.kinds();
        if self.point.aspect_ratio_pct < 75 {
            kinds
                .iter()
                .flat_map(|kind| self.row_of(*kind).into_iter().map(|cell| vec![cell]))
                .collect()
        } else {
            kinds
                .iter()
                .map(|kind| self.row_of(*kind))
                .filter(|row| !row.is_empty())
                .collect()
        }
    }

    fn spacing_um(&self) -> f64 {
        self.point.spacing_nm as f64 / 1000.0
    }

    /// Rows of one device type each (bottom to top), routed by `route.nets` into TOP.
    fn place_in_rows_and_route(&mut self, pitch_um: f64) {
        let gap = pitch_um + self.spacing_um();
        let mut row_cells = Vec::new();
        for (index, cells) in self.rows_by_kind().iter().enumerate() {
            let row_cell = format!("ROW{index}");
            let arguments = json!({"cell_name": row_cell, "rows": [{"cells": cells, "gap": gap}]});
            if self.builder.push("layout.place", arguments, false, "") {
                row_cells.push(row_cell);
            }
        }
        let devices: Vec<Value> = self
            .drawn_devices()
            .map(|device| json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals}))
            .collect();
        let nets: Vec<Value> = self
            .circuit
            .nets
            .iter()
            .map(|net| json!({"name": net.name, "net_type": net.net_type.as_str()}))
            .collect();
        let arguments =
            json!({"cell_name": TOP_CELL, "rows": row_cells, "devices": devices, "nets": nets});
        if self.builder.push("route.nets", arguments, false, "") {
            self.top = Some(TOP_CELL.to_string());
            self.routed = true;
        }
    }

    /// Placement into TOP without routing (when the workers cannot route).
    fn place_unrouted(&mut self) {
        if !self.builder.has("layout.place") {
            return;
        }
        let rows: Vec<Vec<String>> = if self.point.aspect_ratio_pct > 150 {
            vec![
                self.kinds()
                    .iter()
                    .flat_map(|kind| self.row_of(*kind))
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

    fn drawn_devices(&self) -> impl Iterator<Item = &'a Device> + '_ {
        self.circuit
            .devices
            .iter()
            .filter(|device| self.used.contains(&device.id))
    }

    fn add_lvs(&mut self) {
        if !self.routed || !self.builder.has("lvs.run") {
            return;
        }
        let devices: Vec<Value> = self
            .drawn_devices()
            .map(|device| {
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
            })
            .collect();
        let arguments = json!({"cell": TOP_CELL, "devices": devices, "circuit_name": TOP_CELL});
        self.builder.push("lvs.run", arguments, false, "");
    }

    /// DRC, metrics, the GDS and the picture of every checked cell (TOP once placed).
    fn add_checks_and_outputs(&mut self) {
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
        let builder = &mut self.builder;
        if builder.has("drc.run") {
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
        if builder.has("layout.metrics") {
            for (cell, _) in &outputs {
                builder.push("layout.metrics", json!({"cell": cell}), true, "");
            }
        }
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
        if builder.has("layout.render") {
            for (cell, stem) in &outputs {
                let path = format!("{CANDIDATE_DIR}/{stem}.png");
                builder.push(
                    "layout.render",
                    json!({"cell": cell, "path": path}),
                    true,
                    "",
                );
            }
        }
    }

    fn finish(self) -> Plan {
        let point = self.point;
        let placement = if self.routed {
            "; placed in rows and routed into TOP, LVS"
        } else if self.top.is_some() {
            "; placed into TOP (not routed)"
        } else {
            "; not placed (no layout.place)"
        };
        let mut summary = format!(
            "{} steps; {} matched modules, {} cells; arrangement {}, finger split {}, {} dummies, guard ring {}, row order {}, spacing {} nm, aspect {}%{placement}",
            self.builder.steps.len(),
            self.matched_cells.len(),
            self.units.len(),
            point.arrangement,
            point.finger_split,
            point.dummies,
            if point.guard_ring { "on" } else { "off" },
            point.row_order,
            point.spacing_nm,
            point.aspect_ratio_pct,
        );
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
