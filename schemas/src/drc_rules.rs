//! `drc_rules.json`: the rule set model (seed 001 §5.3, extended in 1.1.0 with GDS
//! datatypes, layer roles, electrical values, derived layers and the grid) and the
//! checks a schema cannot express. Rule semantics: docs/contracts.md §1.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::issue::{IssueSink, name_list, pointer_join};
use crate::layer_roles::{REQUIRED_ROLES, inferred_role, is_known_role, names_for_role, valid_roles_text};
use crate::netlist::MAX_LENGTH_M;

/// The grid when a rule set does not give one: 1 nm.
pub const DEFAULT_GRID_M: f64 = 1e-9;
const MAX_GRID_M: f64 = 1e-6;
const MAX_GDS_NUMBER: i64 = 65_535;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleType {
    Width,
    Spacing,
    Enclosure,
    Extension,
    Overlap,
    Density,
}

impl RuleType {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleType::Width => "width",
            RuleType::Spacing => "spacing",
            RuleType::Enclosure => "enclosure",
            RuleType::Extension => "extension",
            RuleType::Overlap => "overlap",
            RuleType::Density => "density",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DerivedOp {
    And,
    Or,
    Not,
}

/// A drawn layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerDef {
    pub name: String,
    pub gds_layer: u16,
    pub gds_datatype: u16,
    /// Resolved role: explicit, else inferred from the name.
    pub role: Option<String>,
    pub role_is_explicit: bool,
    pub sheet_resistance: Option<f64>,
    pub area_capacitance: Option<f64>,
    pub description: Option<String>,
}

/// A layer computed from others (e.g. gate = poly AND active).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DerivedLayer {
    pub name: String,
    pub op: DerivedOp,
    pub a: String,
    pub b: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrcRule {
    pub id: String,
    #[serde(rename = "type")]
    pub rule_type: RuleType,
    pub layer: String,
    pub layer2: Option<String>,
    /// Metres, or a fraction for density.
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrcRuleSet {
    pub tech: String,
    /// Manufacturing grid (m).
    pub grid: f64,
    pub layers: Vec<LayerDef>,
    pub derived_layers: Vec<DerivedLayer>,
    pub rules: Vec<DrcRule>,
}

impl DrcRuleSet {
    pub fn layer(&self, name: &str) -> Option<&LayerDef> {
        self.layers.iter().find(|layer| layer.name == name)
    }

    pub fn layer_for_role(&self, role: &str) -> Option<&LayerDef> {
        self.layers.iter().find(|layer| layer.role.as_deref() == Some(role))
    }

    pub fn rule(&self, rule_id: &str) -> Option<&DrcRule> {
        self.rules.iter().find(|rule| rule.id == rule_id)
    }

    pub fn rules_for_layer(&self, layer: &str) -> Vec<&DrcRule> {
        self.rules.iter().filter(|rule| rule.layer == layer || rule.layer2.as_deref() == Some(layer)).collect()
    }

    /// A text for planner prompts and `centroid validate`.
    pub fn summarize(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "tech: {} (grid {} nm)", self.tech, format_number(self.grid * 1e9));
        let _ = writeln!(text, "layers: {}", self.layers.len());
        for layer in &self.layers {
            let role = match (&layer.role, layer.role_is_explicit) {
                (Some(role), true) => format!(" role={role}"),
                (Some(role), false) => format!(" role={role} (inferred)"),
                (None, _) => String::new(),
            };
            let _ = writeln!(text, "  - {} {}/{}{role}", layer.name, layer.gds_layer, layer.gds_datatype);
        }
        for derived in &self.derived_layers {
            let op = match derived.op {
                DerivedOp::And => "AND",
                DerivedOp::Or => "OR",
                DerivedOp::Not => "NOT",
            };
            let _ = writeln!(text, "  - {} = {} {op} {} (derived)", derived.name, derived.a, derived.b);
        }
        let _ = writeln!(text, "rules: {}", self.rules.len());
        for rule in &self.rules {
            let mut line = format!("  - {}: {} {}", rule.id, rule.rule_type.as_str(), rule.layer);
            if let Some(layer2) = &rule.layer2 {
                line.push_str(&format!("/{layer2}"));
            }
            let value = |v: f64| if rule.rule_type == RuleType::Density { format_number(v) } else { format!("{}um", format_number(v * 1e6)) };
            if let Some(min) = rule.min {
                line.push_str(&format!(" min={}", value(min)));
            }
            if let Some(max) = rule.max {
                line.push_str(&format!(" max={}", value(max)));
            }
            let _ = writeln!(text, "{line}");
        }
        text
    }
}

fn format_number(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

// ---- the document as written ----

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct DrcDocument {
    tech: String,
    #[serde(default)]
    grid: Option<f64>,
    layers: Map<String, Value>,
    #[serde(default)]
    derived_layers: Map<String, Value>,
    rules: Vec<RuleSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum LayerSpec {
    Number(i64),
    Full {
        layer: i64,
        #[serde(default)]
        datatype: Option<i64>,
        #[serde(default)]
        role: Option<String>,
        #[serde(default)]
        sheet_resistance: Option<f64>,
        #[serde(default)]
        area_capacitance: Option<f64>,
        #[serde(default)]
        description: Option<String>,
    },
}

#[derive(Debug, Clone, Deserialize)]
struct DerivedSpec {
    op: DerivedOp,
    a: String,
    b: String,
}

#[derive(Debug, Clone, Deserialize)]
struct RuleSpec {
    id: String,
    #[serde(rename = "type")]
    rule_type: RuleType,
    layer: String,
    #[serde(default)]
    layer2: Option<String>,
    #[serde(default)]
    min: Option<f64>,
    #[serde(default)]
    max: Option<f64>,
    #[serde(default)]
    description: Option<String>,
}

/// Semantic checks of a schema-valid rule set and the model built from it.
pub(crate) fn build_rule_set(document: DrcDocument, sink: &mut IssueSink) -> Option<DrcRuleSet> {
    if document.tech.trim().is_empty() {
        sink.push("/tech", "tech is empty; name the process, e.g. \"ihp_sg13g2\"");
    }
    let grid = document.grid.unwrap_or(DEFAULT_GRID_M);
    if !(grid > 0.0 && grid <= MAX_GRID_M) {
        sink.push("/grid", format!("grid = {grid} m is out of range; the manufacturing grid is in metres, e.g. 5e-9, at most {MAX_GRID_M:e}"));
    }
    let layers = build_layers(&document.layers, sink);
    let layer_names: HashSet<&str> = layers.iter().map(|layer| layer.name.as_str()).collect();
    let derived_layers = build_derived_layers(&document.derived_layers, &layer_names, sink);
    let mut known_names: Vec<&str> = layers.iter().map(|layer| layer.name.as_str()).collect();
    known_names.extend(derived_layers.iter().map(|derived| derived.name.as_str()));
    let rules = build_rules(document.rules, &known_names, sink);
    let rule_set = DrcRuleSet { tech: document.tech, grid, layers, derived_layers, rules };
    check_required_roles(&rule_set, &["active", "poly", "contact", "metal1", "via1", "metal2"], sink);
    if rule_set.layer_for_role("nplus").is_none() && rule_set.layer_for_role("pplus").is_none() {
        sink.push("/layers", role_missing_message("pplus", " (or nplus): the generator needs an implant layer to tell n and p diffusion apart"));
    }
    sink.is_empty().then_some(rule_set)
}

fn role_missing_message(role: &str, why: &str) -> String {
    let names = names_for_role(role);
    let inferred = if names.is_empty() { String::new() } else { format!(" or name it {}", names.join(" / ")) };
    format!("no layer has the role \"{role}\"{why}; declare one as {{\"layer\": <GDS number>, \"role\": \"{role}\"}} (schema_version 1.1.0){inferred}")
}

/// Reports each role of `roles` that no layer of the rule set has.
pub(crate) fn check_required_roles(rule_set: &DrcRuleSet, roles: &[&str], sink: &mut IssueSink) {
    debug_assert!(roles.iter().all(|role| REQUIRED_ROLES.contains(role) || is_known_role(role)));
    for role in roles {
        if rule_set.layer_for_role(role).is_none() {
            sink.push("/layers", role_missing_message(role, ""));
        }
    }
}

fn build_layers(specs: &Map<String, Value>, sink: &mut IssueSink) -> Vec<LayerDef> {
    if specs.is_empty() {
        sink.push("/layers", "no layers are declared; map each layer name to its GDS layer number");
    }
    let mut layers = Vec::new();
    let mut gds_owner: HashMap<(i64, i64), String> = HashMap::new();
    let mut explicit_role_owner: HashMap<String, String> = HashMap::new();
    for (name, value) in specs {
        let pointer = pointer_join("/layers", name);
        let spec: LayerSpec = match serde_json::from_value(value.clone()) {
            Ok(spec) => spec,
            Err(error) => {
                sink.push(pointer, format!("not a layer: {error}"));
                continue;
            }
        };
        let (number, datatype, role, sheet_resistance, area_capacitance, description) = match spec {
            LayerSpec::Number(number) => (number, 0, None, None, None, None),
            LayerSpec::Full { layer, datatype, role, sheet_resistance, area_capacitance, description } => {
                (layer, datatype.unwrap_or(0), role, sheet_resistance, area_capacitance, description)
            }
        };
        let mut sound = true;
        for (field, value) in [("layer", number), ("datatype", datatype)] {
            if !(0..=MAX_GDS_NUMBER).contains(&value) {
                let at = if matches!(value_kind(specs, name), Some(true)) { pointer_join(&pointer, field) } else { pointer.clone() };
                sink.push(at, format!("GDS {field} {value} is out of range 0..{MAX_GDS_NUMBER}"));
                sound = false;
            }
        }
        if name.trim().is_empty() {
            sink.push(pointer.clone(), "layer name is empty");
        }
        if sound {
            if let Some(owner) = gds_owner.get(&(number, datatype)) {
                sink.push(pointer.clone(), format!("GDS {number}/{datatype} is already the layer \"{owner}\"; each layer needs its own layer/datatype"));
            } else {
                gds_owner.insert((number, datatype), name.clone());
            }
        }
        if let Some(role) = &role {
            if !is_known_role(role) {
                sink.push(pointer_join(&pointer, "role"), format!("unknown role \"{role}\"; valid roles: {}", valid_roles_text()));
            } else if let Some(owner) = explicit_role_owner.get(role) {
                sink.push(pointer_join(&pointer, "role"), format!("role \"{role}\" is already given to layer \"{owner}\"; a role names one layer"));
            } else {
                explicit_role_owner.insert(role.clone(), name.clone());
            }
        }
        layers.push(LayerDef {
            name: name.clone(),
            gds_layer: number.clamp(0, MAX_GDS_NUMBER) as u16,
            gds_datatype: datatype.clamp(0, MAX_GDS_NUMBER) as u16,
            role_is_explicit: role.is_some(),
            role,
            sheet_resistance,
            area_capacitance,
            description,
        });
    }
    // Inferred roles fill in what no layer declares explicitly.
    let mut inferred_owner: HashMap<&'static str, String> = HashMap::new();
    for layer in layers.iter_mut().filter(|layer| layer.role.is_none()) {
        let Some(role) = inferred_role(&layer.name) else { continue };
        if explicit_role_owner.contains_key(role) {
            continue;
        }
        if let Some(owner) = inferred_owner.get(role) {
            sink.push(
                pointer_join("/layers", &layer.name),
                format!("layers \"{owner}\" and \"{}\" both look like the role \"{role}\"; declare the role of one explicitly", layer.name),
            );
            continue;
        }
        inferred_owner.insert(role, layer.name.clone());
        layer.role = Some(role.to_owned());
    }
    layers
}

/// Some(true) when the layer was written as an object.
fn value_kind(specs: &Map<String, Value>, name: &str) -> Option<bool> {
    specs.get(name).map(Value::is_object)
}

fn build_derived_layers(specs: &Map<String, Value>, drawn: &HashSet<&str>, sink: &mut IssueSink) -> Vec<DerivedLayer> {
    let mut derived = Vec::new();
    for (name, value) in specs {
        let pointer = pointer_join("/derived_layers", name);
        let spec: DerivedSpec = match serde_json::from_value(value.clone()) {
            Ok(spec) => spec,
            Err(error) => {
                sink.push(pointer, format!("not a derived layer: {error}"));
                continue;
            }
        };
        if drawn.contains(name.as_str()) {
            sink.push(pointer.clone(), format!("\"{name}\" is already a drawn layer; give the derived layer another name"));
        }
        derived.push(DerivedLayer { name: name.clone(), op: spec.op, a: spec.a, b: spec.b });
    }
    let names: HashSet<&str> = derived.iter().map(|layer| layer.name.as_str()).collect();
    for layer in &derived {
        for (field, operand) in [("a", &layer.a), ("b", &layer.b)] {
            if !drawn.contains(operand.as_str()) && !names.contains(operand.as_str()) {
                let mut valid: Vec<&str> = drawn.iter().copied().collect();
                valid.sort_unstable();
                sink.push(
                    pointer_join(&pointer_join("/derived_layers", &layer.name), field),
                    format!("unknown layer \"{operand}\"; declared layers: {}", name_list(valid)),
                );
            }
        }
    }
    // A derived layer may not depend on itself.
    let by_name: HashMap<&str, &DerivedLayer> = derived.iter().map(|layer| (layer.name.as_str(), layer)).collect();
    for layer in &derived {
        let mut stack = vec![layer.a.as_str(), layer.b.as_str()];
        let mut seen = HashSet::new();
        while let Some(operand) = stack.pop() {
            if operand == layer.name {
                sink.push(pointer_join("/derived_layers", &layer.name), format!("derived layer \"{}\" depends on itself", layer.name));
                break;
            }
            if let Some(next) = by_name.get(operand).filter(|_| seen.insert(operand)) {
                stack.extend([next.a.as_str(), next.b.as_str()]);
            }
        }
    }
    derived
}

fn build_rules(specs: Vec<RuleSpec>, known_layers: &[&str], sink: &mut IssueSink) -> Vec<DrcRule> {
    let mut first_index_of_id: HashMap<String, usize> = HashMap::new();
    let mut rules = Vec::with_capacity(specs.len());
    let mut sorted_layers: Vec<&str> = known_layers.to_vec();
    sorted_layers.sort_unstable();
    for (index, spec) in specs.into_iter().enumerate() {
        let pointer = format!("/rules/{index}");
        if spec.id.trim().is_empty() {
            sink.push(format!("{pointer}/id"), "rule id is empty; use the foundry's rule id, e.g. \"M1.b\"");
        } else if let Some(first) = first_index_of_id.get(&spec.id) {
            sink.push(format!("{pointer}/id"), format!("duplicate rule id \"{}\" (first at /rules/{first}); rule ids must be unique", spec.id));
        } else {
            first_index_of_id.insert(spec.id.clone(), index);
        }
        for (field, layer) in [("layer", Some(&spec.layer)), ("layer2", spec.layer2.as_ref())] {
            if let Some(layer) = layer {
                if !known_layers.contains(&layer.as_str()) {
                    sink.push(
                        format!("{pointer}/{field}"),
                        format!("rule \"{}\" names layer \"{layer}\", which is not declared; declared layers: {}", spec.id, name_list(sorted_layers.iter().copied())),
                    );
                }
            }
        }
        check_rule_values(&spec, &pointer, sink);
        rules.push(DrcRule {
            id: spec.id,
            rule_type: spec.rule_type,
            layer: spec.layer,
            layer2: spec.layer2,
            min: spec.min,
            max: spec.max,
            description: spec.description,
        });
    }
    rules
}

fn check_rule_values(spec: &RuleSpec, pointer: &str, sink: &mut IssueSink) {
    let kind = spec.rule_type.as_str();
    let needs_layer2 = matches!(spec.rule_type, RuleType::Enclosure | RuleType::Extension | RuleType::Overlap);
    if needs_layer2 && spec.layer2.is_none() {
        sink.push(pointer, format!("a {kind} rule relates two layers; add \"layer2\""));
    }
    if spec.rule_type == RuleType::Density && spec.layer2.is_some() {
        sink.push(format!("{pointer}/layer2"), "a density rule is on one layer; remove \"layer2\"");
    }
    if spec.layer2.as_deref() == Some(spec.layer.as_str()) {
        sink.push(format!("{pointer}/layer2"), format!("layer2 is the same as layer; for a same-layer {kind} rule omit layer2"));
    }
    match spec.rule_type {
        RuleType::Width | RuleType::Density => {
            if spec.min.is_none() && spec.max.is_none() {
                sink.push(pointer, format!("a {kind} rule needs \"min\" or \"max\""));
            }
        }
        _ => {
            if spec.min.is_none() {
                sink.push(pointer, format!("a {kind} rule needs \"min\" (metres)"));
            }
        }
    }
    for (field, value) in [("min", spec.min), ("max", spec.max)] {
        let Some(value) = value else { continue };
        let at = format!("{pointer}/{field}");
        if !value.is_finite() || value < 0.0 {
            sink.push(at, format!("{field} = {value} must not be negative"));
        } else if spec.rule_type == RuleType::Density {
            if value > 1.0 {
                sink.push(at, format!("density {field} = {value} must be a fraction within [0, 1] (35% is 0.35)"));
            }
        } else if value > MAX_LENGTH_M {
            sink.push(at, format!("{field} = {value} m is absurdly large; rule values are in metres (0.18 µm is 1.8e-7)"));
        }
    }
    if let (Some(min), Some(max)) = (spec.min, spec.max) {
        if min > max {
            sink.push(format!("{pointer}/min"), format!("min = {min} is greater than max = {max}; min must not exceed max"));
        }
    }
}

/// The roles of the layers, for messages and skills: role → layer name.
pub fn role_map(rule_set: &DrcRuleSet) -> BTreeMap<String, String> {
    rule_set.layers.iter().filter_map(|layer| Some((layer.role.clone()?, layer.name.clone()))).collect()
}
