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
//! Step arguments are fitted to the skill's advertised input schema: properties a
//! closed schema does not declare are dropped, and an optional step whose required
//! properties the planner cannot fill is left out.

use std::collections::{BTreeSet, HashSet};

use centroid_proto::{Error, ErrorCode};
use centroid_schemas::{Device, DeviceType, TaskContext};
use serde_json::{Map, Value, json};

use crate::model::{DesignPoint, Plan, PlanStep};
use crate::planner::{Adjustment, DesignSpace, PlanError, Planner, SkillCatalog};

pub const TOP_CELL: &str = "TOP";

/// Placeholder the worker replaces by the candidate's scratch directory.
const CANDIDATE_DIR: &str = "${CANDIDATE_DIR}";

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum RowKind {
    Nmos,
    Pmos,
    Passive,
}

struct PlacedUnit {
    cell: String,
    kind: RowKind,
}

fn row_kind(device_type: DeviceType) -> RowKind {
    match device_type {
        DeviceType::Nmos => RowKind::Nmos,
        DeviceType::Pmos => RowKind::Pmos,
        _ => RowKind::Passive,
    }
}

fn is_mos(device: &Device) -> bool {
    matches!(device.device_type, DeviceType::Nmos | DeviceType::Pmos)
}

/// The finger split of a module: the largest divisor of every device's `nf` that is
/// at most the point's value. Each device becomes `split` units of `nf/split`
/// fingers and `w/split` width: the same fingers, W and L (what LVS compares).
/// Splitting a finger itself would change the device, so `nf = 1` stays one unit.
fn common_split(devices: &[&Device], wanted: u32) -> u32 {
    (1..=wanted.max(1))
        .rev()
        .find(|split| {
            devices
                .iter()
                .all(|device| device.params.nf.max(1) % split == 0)
        })
        .unwrap_or(1)
}

fn unit_fingers(device: &Device, split: u32) -> u32 {
    device.params.nf.max(1) / split
}

/// A device id as the skills accept it (`^[A-Za-z0-9_.$:-]+$`): flattened ids such as
/// `X1/M1` become `X1_M1`, used alike by the generators, the router and LVS.
pub fn skill_id(device_id: &str) -> String {
    device_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.$:-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn unit_spec(device: &Device, split: u32) -> Value {
    let params = &device.params;
    json!({
        "device_id": skill_id(&device.id),
        "type": device.device_type.as_str(),
        "w": params.w.unwrap_or(0.0) / split as f64,
        "l": params.l.unwrap_or(0.0),
        "nf": unit_fingers(device, split),
        "m": params.m.max(1) * split,
    })
}

fn unit_key(device: &Device, split: u32) -> (String, String, String, u32) {
    let params = &device.params;
    (
        device.device_type.as_str().to_string(),
        format!("{:e}", params.w.unwrap_or(0.0) / split as f64),
        format!("{:e}", params.l.unwrap_or(0.0)),
        unit_fingers(device, split),
    )
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The k-th permutation (lexicographic) of `items`.
fn permutation<T: Clone>(items: &[T], mut k: usize) -> Vec<T> {
    let mut pool: Vec<T> = items.to_vec();
    let mut out = Vec::with_capacity(items.len());
    let mut factorials = vec![1usize; items.len() + 1];
    for i in 1..=items.len() {
        factorials[i] = factorials[i - 1] * i;
    }
    k %= factorials[items.len()].max(1);
    for remaining in (1..=items.len()).rev() {
        let index = k / factorials[remaining - 1];
        k %= factorials[remaining - 1];
        out.push(pool.remove(index));
    }
    out
}

/// Drops properties a closed schema does not declare. `None` when a required
/// property is missing (the step cannot be called as planned).
pub fn fit_to_schema(arguments: Value, schema: &Value) -> Option<Value> {
    let Value::Object(mut fields) = arguments else {
        return Some(arguments);
    };
    let Some(schema) = schema.as_object() else {
        return Some(Value::Object(fields));
    };
    if let Some(properties) = schema.get("properties").and_then(Value::as_object)
        && schema.get("additionalProperties") == Some(&Value::Bool(false))
    {
        fields.retain(|name, _| properties.contains_key(name));
    }
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        let missing = required
            .iter()
            .filter_map(Value::as_str)
            .any(|name| !fields.contains_key(name));
        if missing {
            return None;
        }
    }
    Some(Value::Object(fields))
}

struct PlanBuilder<'a> {
    skills: &'a SkillCatalog,
    steps: Vec<PlanStep>,
    notes: Vec<String>,
}

impl PlanBuilder<'_> {
    fn has(&self, skill: &str) -> bool {
        self.skills.contains_key(skill)
    }

    /// Adds a step (fitted to the schema); returns whether it was added.
    fn push(&mut self, skill: &str, arguments: Value, optional: bool, output_cell: &str) -> bool {
        let schema = self.skills.get(skill).cloned().unwrap_or(Value::Null);
        let Some(arguments) = fit_to_schema(arguments, &schema) else {
            self.notes.push(format!(
                "left out {skill}: its schema needs arguments the planner cannot fill"
            ));
            return false;
        };
        let step_id = format!("s{:02}_{}", self.steps.len() + 1, skill.replace('.', "_"));
        self.steps.push(PlanStep {
            step_id,
            skill: skill.to_string(),
            arguments,
            optional,
            output_cell: output_cell.to_string(),
        });
        true
    }
}

impl Planner for HeuristicPlanner {
    fn design_space(&self, context: &TaskContext, skills: &SkillCatalog) -> DesignSpace {
        let max_nf = context
            .circuit
            .devices
            .iter()
            .filter(|device| is_mos(device))
            .map(|device| device.params.nf)
            .max()
            .unwrap_or(1);
        let finger_splits: Vec<u32> = (1..=max_nf.clamp(1, 4))
            .filter(|split| max_nf % split == 0)
            .collect();
        let kinds: BTreeSet<RowKind> = context
            .circuit
            .devices
            .iter()
            .map(|device| row_kind(device.device_type))
            .collect();
        let row_orders = (1..=kinds.len().max(1) as u32).product::<u32>().min(6);
        DesignSpace {
            // route.nets needs one row of devices per row cell: no 2-D modules when routing
            arrangements: if self.routing(skills).is_some() {
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
            guard_rings: if skills.contains_key("layout.add_guard_ring")
                && self.routing(skills).is_none()
            {
                vec![false, true]
            } else {
                vec![false]
            },
            row_orders,
            spacings_nm: vec![0, 200, 500],
            // a routed row holds one device type: no single mixed row
            aspect_ratios_pct: if self.routing(skills).is_some() {
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
        let circuit = &context.circuit;
        let mut builder = PlanBuilder {
            skills,
            steps: Vec::new(),
            notes: Vec::new(),
        };
        builder.push("tech.load", json!({"rules": self.raw.drc_rules}), false, "");

        let mut used: HashSet<String> = HashSet::new();
        let mut units: Vec<PlacedUnit> = Vec::new();
        let mut matched_cells: Vec<String> = Vec::new();
        for module in circuit
            .modules
            .iter()
            .filter(|module| module.module_type.is_matched())
        {
            let devices: Vec<&Device> = module
                .devices
                .iter()
                .filter_map(|member| circuit.device(&member.device_id))
                .filter(|device| is_mos(device) && !used.contains(&device.id))
                .collect();
            if devices.len() < 2
                || devices
                    .iter()
                    .any(|device| device.device_type != devices[0].device_type)
            {
                continue;
            }
            let split = common_split(&devices, point.finger_split);
            let same_unit = devices
                .iter()
                .all(|device| unit_key(device, split) == unit_key(devices[0], split));
            if !same_unit {
                continue;
            }
            let cell = format!("mod_{}", sanitize(&module.id));
            let same_count = devices
                .iter()
                .all(|device| device.params.m == devices[0].params.m);
            let added = if devices.len() == 2
                && same_count
                && builder.has("layout.create_common_centroid_pair")
            {
                let units_per_device = devices[0].params.m.max(1) * split;
                let mut arrangement = point.arrangement.clone();
                if units_per_device % 2 == 1 && arrangement != "ABAB" {
                    builder.notes.push(format!(
                        "{}: {} units per device, {arrangement} needs an even count: ABAB",
                        module.id, units_per_device
                    ));
                    arrangement = "ABAB".into();
                }
                builder.push(
                    "layout.create_common_centroid_pair",
                    json!({
                        "device_a": unit_spec(devices[0], split),
                        "device_b": unit_spec(devices[1], split),
                        "arrangement": arrangement,
                        "cell_name": cell,
                    }),
                    false,
                    "",
                )
            } else if builder.has("layout.create_interdigitated_group") {
                let specs: Vec<Value> = devices
                    .iter()
                    .map(|device| {
                        let mut spec = unit_spec(device, split);
                        spec["units"] = spec["m"].clone();
                        spec
                    })
                    .collect();
                builder.push(
                    "layout.create_interdigitated_group",
                    json!({"devices": specs, "cell_name": cell}),
                    false,
                    "",
                )
            } else {
                false
            };
            if !added {
                continue;
            }
            used.extend(devices.iter().map(|device| device.id.clone()));
            units.push(PlacedUnit {
                cell: cell.clone(),
                kind: row_kind(devices[0].device_type),
            });
            matched_cells.push(cell);
        }

        for device in &circuit.devices {
            if used.contains(&device.id) {
                continue;
            }
            let (Some(w), Some(l)) = (device.params.w, device.params.l) else {
                builder
                    .notes
                    .push(format!("{}: no w/l, not drawn", device.id));
                continue;
            };
            if !matches!(
                device.device_type,
                DeviceType::Nmos | DeviceType::Pmos | DeviceType::Resistor | DeviceType::Capacitor
            ) {
                builder.notes.push(format!(
                    "{}: {} is not drawn by the generators",
                    device.id,
                    device.device_type.as_str()
                ));
                continue;
            }
            let cell = format!("dev_{}", sanitize(&device.id));
            let added = builder.push(
                "layout.create_device",
                json!({
                    "device_id": skill_id(&device.id),
                    "type": device.device_type.as_str(),
                    "w": w,
                    "l": l,
                    "nf": device.params.nf.max(1),
                    "m": device.params.m.max(1),
                    "cell_name": cell,
                }),
                false,
                "",
            );
            if added {
                used.insert(device.id.clone());
                units.push(PlacedUnit {
                    cell,
                    kind: row_kind(device.device_type),
                });
            }
        }
        if units.is_empty() {
            return Err(PlanError::Empty("no device could be drawn".into()));
        }

        if point.dummies > 0 && builder.has("layout.add_dummies") {
            for cell in &matched_cells {
                builder.push(
                    "layout.add_dummies",
                    json!({"cell": cell, "count": point.dummies}),
                    true,
                    "",
                );
            }
        }
        if point.guard_ring && builder.has("layout.add_guard_ring") {
            for unit in units
                .iter_mut()
                .filter(|unit| matched_cells.contains(&unit.cell))
            {
                let ring = format!("gr_{}", unit.cell);
                if builder.push(
                    "layout.add_guard_ring",
                    json!({"cell": unit.cell, "kind": "auto", "cell_name": ring}),
                    true,
                    &ring,
                ) {
                    unit.cell = ring;
                }
            }
        }

        let spacing_um = point.spacing_nm as f64 / 1000.0;
        let mut top: Option<String> = None;
        let mut kinds: Vec<RowKind> = units
            .iter()
            .map(|unit| unit.kind)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        kinds = permutation(&kinds, point.row_order as usize);
        // per kind: matched modules in the middle, single devices alternating around them
        let row_of = |kind: RowKind| -> Vec<String> {
            let mut order: Vec<String> = units
                .iter()
                .filter(|unit| {
                    unit.kind == kind
                        && matched_cells
                            .iter()
                            .any(|cell| unit.cell.ends_with(cell.as_str()))
                })
                .map(|unit| unit.cell.clone())
                .collect();
            let singles = units.iter().filter(|unit| {
                unit.kind == kind
                    && !matched_cells
                        .iter()
                        .any(|cell| unit.cell.ends_with(cell.as_str()))
            });
            for (index, single) in singles.enumerate() {
                if index % 2 == 0 {
                    order.push(single.cell.clone())
                } else {
                    order.insert(0, single.cell.clone())
                }
            }
            order
        };
        let mut routed = false;
        if let Some(pitch_um) = self.routing(skills) {
            // rows of one device type each (bottom to top), routed by route.nets
            let rows: Vec<Vec<String>> = if point.aspect_ratio_pct < 75 {
                kinds
                    .iter()
                    .flat_map(|kind| row_of(*kind).into_iter().map(|cell| vec![cell]))
                    .collect()
            } else {
                kinds
                    .iter()
                    .map(|kind| row_of(*kind))
                    .filter(|row| !row.is_empty())
                    .collect()
            };
            let mut row_cells = Vec::new();
            for (index, cells) in rows.iter().enumerate() {
                let row_cell = format!("ROW{index}");
                if builder.push("layout.place", json!({"cell_name": row_cell, "rows": [{"cells": cells, "gap": pitch_um + spacing_um}]}), false, "") {
                    row_cells.push(row_cell);
                }
            }
            let devices: Vec<Value> = circuit
                .devices
                .iter()
                .filter(|device| used.contains(&device.id))
                .map(|device| json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals}))
                .collect();
            let nets: Vec<Value> = circuit
                .nets
                .iter()
                .map(|net| json!({"name": net.name, "net_type": net.net_type.as_str()}))
                .collect();
            if builder.push(
                "route.nets",
                json!({"cell_name": TOP_CELL, "rows": row_cells, "devices": devices, "nets": nets}),
                false,
                "",
            ) {
                top = Some(TOP_CELL.to_string());
                routed = true;
            }
        } else if builder.has("layout.place") {
            let rows: Vec<Vec<String>> = match point.aspect_ratio_pct {
                pct if pct > 150 => vec![kinds.iter().flat_map(|kind| row_of(*kind)).collect()],
                pct if pct < 75 => kinds
                    .iter()
                    .flat_map(|kind| row_of(*kind).into_iter().map(|cell| vec![cell]))
                    .collect(),
                _ => kinds
                    .iter()
                    .map(|kind| row_of(*kind))
                    .filter(|row| !row.is_empty())
                    .collect(),
            };
            let rows: Vec<Value> = rows
                .into_iter()
                .map(|cells| json!({"cells": cells, "gap": spacing_um}))
                .collect();
            if builder.push(
                "layout.place",
                json!({"cell_name": TOP_CELL, "rows": rows, "row_gap": spacing_um}),
                false,
                "",
            ) {
                top = Some(TOP_CELL.to_string());
            }
        }
        let checked_cells: Vec<String> = match &top {
            Some(top) => vec![top.clone()],
            None => units.iter().map(|unit| unit.cell.clone()).collect(),
        };
        if routed && builder.has("lvs.run") {
            let devices: Vec<Value> = circuit
                .devices
                .iter()
                .filter(|device| used.contains(&device.id))
                .map(|device| {
                    let mut spec = json!({"id": skill_id(&device.id), "type": device.device_type.as_str(), "terminals": device.terminals});
                    if let Some(w) = device.params.w { spec["w"] = json!(w); }
                    if let Some(l) = device.params.l { spec["l"] = json!(l); }
                    spec["nf"] = json!(device.params.nf.max(1));
                    spec["m"] = json!(device.params.m.max(1));
                    spec
                })
                .collect();
            builder.push(
                "lvs.run",
                json!({"cell": TOP_CELL, "devices": devices, "circuit_name": TOP_CELL}),
                false,
                "",
            );
        }
        if builder.has("drc.run") {
            for cell in &checked_cells {
                builder.push("drc.run", json!({"cell": cell, "report_path": format!("{CANDIDATE_DIR}/drc_{cell}.lyrdb")}), false, "");
            }
        }
        if builder.has("layout.metrics") {
            for cell in &checked_cells {
                builder.push("layout.metrics", json!({"cell": cell}), true, "");
            }
        }
        if builder.has("layout.export") {
            for cell in &checked_cells {
                let name = if top.is_some() {
                    "layout".to_string()
                } else {
                    cell.clone()
                };
                builder.push(
                    "layout.export",
                    json!({"cell": cell, "path": format!("{CANDIDATE_DIR}/{name}.gds")}),
                    false,
                    "",
                );
            }
        }
        if builder.has("layout.render") {
            for cell in &checked_cells {
                let name = if top.is_some() {
                    "layout".to_string()
                } else {
                    cell.clone()
                };
                builder.push(
                    "layout.render",
                    json!({"cell": cell, "path": format!("{CANDIDATE_DIR}/{name}.png")}),
                    true,
                    "",
                );
            }
        }
        let mut summary = format!(
            "{} steps; {} matched modules, {} cells; arrangement {}, finger split {}, {} dummies, guard ring {}, row order {}, spacing {} nm, aspect {}%{}",
            builder.steps.len(),
            matched_cells.len(),
            units.len(),
            point.arrangement,
            point.finger_split,
            point.dummies,
            if point.guard_ring { "on" } else { "off" },
            point.row_order,
            point.spacing_nm,
            point.aspect_ratio_pct,
            if routed {
                "; placed in rows and routed into TOP, LVS"
            } else if top.is_some() {
                "; placed into TOP (not routed)"
            } else {
                "; not placed (no layout.place)"
            },
        );
        if !builder.notes.is_empty() {
            summary.push_str("; notes: ");
            summary.push_str(&builder.notes.join("; "));
        }
        Ok(Plan {
            summary,
            steps: builder.steps,
        })
    }

    fn adjust(
        &self,
        plan: &Plan,
        step_id: &str,
        error: &Error,
        _skills: &SkillCatalog,
    ) -> Option<Adjustment> {
        let index = plan.steps.iter().position(|step| step.step_id == step_id)?;
        let step = &plan.steps[index];
        let message = error.message.to_lowercase();
        let mut adjusted = plan.clone();
        let code = error.error_code();

        // A pair whose unit count does not fit the arrangement: fall back to ABAB.
        if step.skill == "layout.create_common_centroid_pair"
            && code == ErrorCode::InvalidParam
            && step.arguments.get("arrangement").and_then(Value::as_str) != Some("ABAB")
            && (message.contains("even") || message.contains("arrangement"))
        {
            adjusted.steps[index].arguments["arrangement"] = json!("ABAB");
            return Some(Adjustment {
                plan: adjusted,
                note: format!("{step_id}: {}; arrangement → ABAB", error.message),
            });
        }
        // Placement conflicts: open the gaps.
        if step.skill == "layout.place"
            && (code == ErrorCode::Conflict
                || message.contains("overlap")
                || message.contains("closer"))
        {
            let arguments = &mut adjusted.steps[index].arguments;
            let row_gap = arguments
                .get("row_gap")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            if row_gap >= 2.0 {
                return None;
            }
            arguments["row_gap"] = json!(row_gap + 0.5);
            if let Some(rows) = arguments.get_mut("rows").and_then(Value::as_array_mut) {
                for row in rows {
                    let gap = row.get("gap").and_then(Value::as_f64).unwrap_or(0.0);
                    row["gap"] = json!(gap + 0.5);
                }
            }
            return Some(Adjustment {
                plan: adjusted,
                note: format!("{step_id}: {}; gaps +0.5 µm", error.message),
            });
        }
        // A schema complaint about one optional argument: drop the argument.
        if code == ErrorCode::InvalidParam
            && let Some(path) = error.details().get("path").and_then(Value::as_str)
            && let Some(name) = path
                .strip_prefix("$.")
                .map(|rest| rest.split(['.', '[']).next().unwrap_or(rest).to_string())
            && let Some(fields) = adjusted.steps[index].arguments.as_object_mut()
            && fields.contains_key(&name)
            && ![
                "cell",
                "cell_name",
                "device_a",
                "device_b",
                "devices",
                "rules",
                "rows",
                "path",
            ]
            .contains(&name.as_str())
        {
            fields.remove(&name);
            return Some(Adjustment {
                plan: adjusted,
                note: format!("{step_id}: {}; dropped argument {name}", error.message),
            });
        }
        // An optional step that fails: leave it out; later steps use its input cell.
        if step.optional {
            let removed = adjusted.steps.remove(index);
            if !removed.output_cell.is_empty()
                && let Some(input_cell) = removed.arguments.get("cell").and_then(Value::as_str)
            {
                let replacement = Value::String(input_cell.to_string());
                for later in adjusted.steps.iter_mut().skip(index) {
                    replace_string(&mut later.arguments, &removed.output_cell, &replacement);
                }
            }
            return Some(Adjustment {
                plan: adjusted,
                note: format!("{step_id}: {}; optional step left out", error.message),
            });
        }
        None
    }
}

fn replace_string(value: &mut Value, from: &str, to: &Value) {
    match value {
        Value::String(text) if text == from => *value = to.clone(),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| replace_string(item, from, to)),
        Value::Object(fields) => fields
            .values_mut()
            .for_each(|field| replace_string(field, from, to)),
        _ => {}
    }
}

/// The plan used with `noop_plan`: one `debug.noop` (or `debug.sleep`) step.
pub fn noop_plan(sleep_ms: u64) -> Plan {
    let step = if sleep_ms > 0 {
        PlanStep {
            step_id: "s01_debug_sleep".into(),
            skill: "debug.sleep".into(),
            arguments: json!({"seconds": sleep_ms as f64 / 1000.0}),
            optional: false,
            output_cell: String::new(),
        }
    } else {
        PlanStep {
            step_id: "s01_debug_noop".into(),
            skill: "debug.noop".into(),
            arguments: Value::Object(Map::new()),
            optional: false,
            output_cell: String::new(),
        }
    };
    Plan {
        summary: "debug plan".into(),
        steps: vec![step],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use centroid_schemas::{InputFile, TaskInputs};

    fn ota5() -> (TaskContext, RawInputs) {
        let netlist = include_str!("../../../examples/ota5/netlist.json");
        let rules = include_str!("../../../examples/ota5/drc_rules.json");
        let objectives = include_str!("../../../examples/ota5/objectives.json");
        let file = |label: &str, text: &str| InputFile {
            label: label.into(),
            bytes: text.as_bytes().to_vec(),
        };
        let inputs = TaskInputs {
            netlist: file("netlist.json", netlist),
            drc_rules: file("drc_rules.json", rules),
            objectives: file("objectives.json", objectives),
        };
        let context = TaskContext::load(&inputs, "t").unwrap();
        (
            context,
            RawInputs {
                drc_rules: serde_json::from_str(rules).unwrap(),
                netlist: serde_json::from_str(netlist).unwrap(),
            },
        )
    }

    fn skills(names: &[&str]) -> SkillCatalog {
        names
            .iter()
            .map(|name| (name.to_string(), Value::Null))
            .collect()
    }

    const BASIC: &[&str] = &[
        "tech.load",
        "layout.create_device",
        "layout.create_common_centroid_pair",
        "layout.add_dummies",
        "layout.place",
        "drc.run",
        "layout.metrics",
        "layout.export",
    ];

    #[test]
    fn ota5_plan_matches_the_pair_and_the_mirror_and_uses_only_advertised_skills() {
        let (context, raw) = ota5();
        let planner = HeuristicPlanner::new(raw);
        let catalog = skills(BASIC);
        let space = planner.design_space(&context, &catalog);
        let plan = planner
            .plan(&context, &space.default_point(), &catalog)
            .unwrap();
        let skills_used: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
        assert_eq!(
            skills_used
                .iter()
                .filter(|skill| **skill == "layout.create_common_centroid_pair")
                .count(),
            2,
            "{skills_used:?}"
        );
        assert!(
            skills_used.contains(&"layout.create_device"),
            "the tail device"
        );
        assert!(
            !skills_used.contains(&"lvs.run") && !skills_used.contains(&"route.nets"),
            "not advertised: not planned"
        );
        assert!(
            plan.steps
                .iter()
                .all(|step| catalog.contains_key(&step.skill))
        );
        let pair = plan
            .steps
            .iter()
            .find(|step| step.skill == "layout.create_common_centroid_pair")
            .unwrap();
        assert_eq!(pair.arguments["arrangement"], "ABBA");
        assert_eq!(
            pair.arguments["device_a"]["m"], 2,
            "nf=2 split into two units"
        );
    }

    #[test]
    fn routing_and_lvs_are_planned_once_advertised_and_the_pitch_is_known() {
        let (context, raw) = ota5();
        let mut names = BASIC.to_vec();
        names.extend(["route.info", "route.nets", "lvs.run"]);
        let catalog = skills(&names);
        let point = HeuristicPlanner::new(raw.clone())
            .design_space(&context, &catalog)
            .default_point();
        let without_pitch = HeuristicPlanner::new(raw.clone())
            .plan(&context, &point, &catalog)
            .unwrap();
        assert!(
            !without_pitch
                .steps
                .iter()
                .any(|step| step.skill == "route.nets")
        );
        let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
        let plan = planner.plan(&context, &point, &catalog).unwrap();
        let skills_used: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
        let route = skills_used
            .iter()
            .position(|skill| *skill == "route.nets")
            .expect("routed");
        let lvs = skills_used
            .iter()
            .position(|skill| *skill == "lvs.run")
            .expect("lvs");
        let drc = skills_used
            .iter()
            .position(|skill| *skill == "drc.run")
            .unwrap();
        assert!(route < lvs && route < drc);
        assert_eq!(
            plan.steps[lvs].arguments["devices"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
    }

    #[test]
    fn adjust_falls_back_to_abab_and_fit_drops_undeclared_arguments() {
        let (context, raw) = ota5();
        let planner = HeuristicPlanner::new(raw);
        let catalog = skills(BASIC);
        let plan = planner
            .plan(
                &context,
                &planner.design_space(&context, &catalog).default_point(),
                &catalog,
            )
            .unwrap();
        let pair = plan
            .steps
            .iter()
            .find(|step| step.skill == "layout.create_common_centroid_pair")
            .unwrap();
        let error = Error::new(ErrorCode::InvalidParam, "ABBA needs an even m per device");
        let adjusted = planner
            .adjust(&plan, &pair.step_id, &error, &catalog)
            .unwrap();
        let new_pair = adjusted
            .plan
            .steps
            .iter()
            .find(|step| step.step_id == pair.step_id)
            .unwrap();
        assert_eq!(new_pair.arguments["arrangement"], "ABAB");
        let schema = json!({"type": "object", "properties": {"cell": {}}, "required": ["cell"], "additionalProperties": false});
        assert_eq!(
            fit_to_schema(json!({"cell": "a", "extra": 1}), &schema),
            Some(json!({"cell": "a"}))
        );
        assert_eq!(fit_to_schema(json!({"extra": 1}), &schema), None);
    }
}
