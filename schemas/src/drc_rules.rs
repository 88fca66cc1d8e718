//! `drc_rules.json`: the rule set model (seed 001 §5.3, extended in 1.1.0 with GDS
//! datatypes, layer roles, electrical values, derived layers and the grid, in 1.2.0 with
//! line-end and adjacent-side enclosures, minimum areas and wide-metal spacing, in 1.3.0 with
//! the `models` table for SPICE netlists, in 1.4.0 with the `parasitics` section —
//! [`crate::parasitics`]) and the checks a schema cannot express. Rule
//! semantics: docs/contracts.md §1.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::circuit::DeviceType;
use crate::issue::{IssueSink, name_list, pointer_join};
use crate::layer_roles::{
    REQUIRED_ROLES, inferred_role, is_known_role, names_for_role, valid_roles_text,
};
use crate::netlist::MAX_LENGTH_M;
use crate::parasitics::{Parasitics, check_parasitics};
use crate::version::SchemaVersion;

/// The grid when a rule set does not give one: 1 nm.
pub const DEFAULT_GRID_M: f64 = 1e-9;
const MAX_GRID_M: f64 = 1e-6;
const MAX_GDS_NUMBER: i64 = 65_535;
/// The most derived layers a rule set may define (a foundry deck derives a few dozen;
/// the check that none depends on itself walks each one's operands).
pub const MAX_DERIVED_LAYERS: usize = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleType {
    Width,
    Spacing,
    Enclosure,
    Extension,
    Overlap,
    Density,
    /// Minimum area of every merged shape (schema 1.2.0), `min` in m².
    Area,
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
            RuleType::Area => "area",
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
    /// Metres, a fraction for density, square metres for area.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Enclosure at line ends (1.2.0): `end_min` (m) inside every line end of `layer`, an
    /// edge shorter than `end_width` (m) with convex corners at both ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_width: Option<f64>,
    /// Enclosure on adjacent sides (1.2.0): where one side is enclosed by less than
    /// `adjacent_below` (m), the two sides next to it are enclosed by `adjacent_min` (m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjacent_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjacent_below: Option<f64>,
    /// Wide-metal spacing (1.2.0): the rule applies to the parts of `layer` wider than this (m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_over: Option<f64>,
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
    /// SPICE model name (as written) → device type (1.3.0), for SPICE/CDL netlists.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, DeviceType>,
    /// Interconnect parasitics (1.4.0), for parasitic extraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parasitics: Option<Parasitics>,
}

impl DrcRuleSet {
    pub fn layer(&self, name: &str) -> Option<&LayerDef> {
        self.layers.iter().find(|layer| layer.name == name)
    }

    pub fn layer_for_role(&self, role: &str) -> Option<&LayerDef> {
        self.layers
            .iter()
            .find(|layer| layer.role.as_deref() == Some(role))
    }

    pub fn rule(&self, rule_id: &str) -> Option<&DrcRule> {
        self.rules.iter().find(|rule| rule.id == rule_id)
    }

    /// A text for planner prompts and `centroid validate`.
    pub fn summarize(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "tech: {} (grid {} nm)",
            self.tech,
            format_number(self.grid * 1e9)
        );
        let _ = writeln!(text, "layers: {}", self.layers.len());
        for layer in &self.layers {
            let role = match (&layer.role, layer.role_is_explicit) {
                (Some(role), true) => format!(" role={role}"),
                (Some(role), false) => format!(" role={role} (inferred)"),
                (None, _) => String::new(),
            };
            let _ = writeln!(
                text,
                "  - {} {}/{}{role}",
                layer.name, layer.gds_layer, layer.gds_datatype
            );
        }
        for derived in &self.derived_layers {
            let op = match derived.op {
                DerivedOp::And => "AND",
                DerivedOp::Or => "OR",
                DerivedOp::Not => "NOT",
            };
            let _ = writeln!(
                text,
                "  - {} = {} {op} {} (derived)",
                derived.name, derived.a, derived.b
            );
        }
        let _ = writeln!(text, "rules: {}", self.rules.len());
        for rule in &self.rules {
            let mut line = format!(
                "  - {}: {} {}",
                rule.id,
                rule.rule_type.as_str(),
                rule.layer
            );
            if let Some(layer2) = &rule.layer2 {
                line.push_str(&format!("/{layer2}"));
            }
            let value = |v: f64| match rule.rule_type {
                RuleType::Density => format_number(v),
                RuleType::Area => format!("{}um2", format_number(v * 1e12)),
                _ => format!("{}um", format_number(v * 1e6)),
            };
            if let Some(min) = rule.min {
                line.push_str(&format!(" min={}", value(min)));
            }
            if let Some(max) = rule.max {
                line.push_str(&format!(" max={}", value(max)));
            }
            let lengths = [
                ("end_min", rule.end_min),
                ("end_width", rule.end_width),
                ("adjacent_min", rule.adjacent_min),
                ("adjacent_below", rule.adjacent_below),
                ("width_over", rule.width_over),
            ];
            for (name, length) in lengths {
                if let Some(length) = length {
                    line.push_str(&format!(" {name}={}um", format_number(length * 1e6)));
                }
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
    pub(crate) grid: Option<f64>,
    layers: Map<String, Value>,
    #[serde(default)]
    derived_layers: Map<String, Value>,
    rules: Vec<RuleSpec>,
    #[serde(default)]
    models: BTreeMap<String, DeviceType>,
    #[serde(default)]
    parasitics: Option<Parasitics>,
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
    end_min: Option<f64>,
    #[serde(default)]
    end_width: Option<f64>,
    #[serde(default)]
    adjacent_min: Option<f64>,
    #[serde(default)]
    adjacent_below: Option<f64>,
    #[serde(default)]
    width_over: Option<f64>,
    #[serde(default)]
    description: Option<String>,
}

/// Semantic checks of a schema-valid rule set and the model built from it.
pub(crate) fn build_rule_set(
    document: DrcDocument,
    version: SchemaVersion,
    sink: &mut IssueSink,
) -> Option<DrcRuleSet> {
    if document.tech.trim().is_empty() {
        sink.push(
            "/tech",
            "tech is empty; name the process, e.g. \"ihp_sg13g2\"",
        );
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
    let rules = build_rules(document.rules, &known_names, version, sink);
    check_models(&document.models, version, sink);
    if let Some(parasitics) = &document.parasitics {
        check_parasitics(parasitics, version, &layer_names, sink);
    }
    let rule_set = DrcRuleSet {
        tech: document.tech,
        grid,
        layers,
        derived_layers,
        rules,
        models: document.models,
        parasitics: document.parasitics,
    };
    check_required_roles(
        &rule_set,
        &["active", "poly", "contact", "metal1", "via1", "metal2"],
        sink,
    );
    if rule_set.layer_for_role("nplus").is_none() && rule_set.layer_for_role("pplus").is_none() {
        sink.push(
            "/layers",
            role_missing_message(
                "pplus",
                " (or nplus): the generator needs an implant layer to tell n and p diffusion apart",
            ),
        );
    }
    sink.is_empty().then_some(rule_set)
}

pub(crate) fn role_missing_message(role: &str, why: &str) -> String {
    let names = names_for_role(role);
    let inferred = if names.is_empty() {
        String::new()
    } else {
        format!(" or name it {}", names.join(" / "))
    };
    format!(
        "no layer has the role \"{role}\"{why}; declare one as {{\"layer\": <GDS number>, \"role\": \"{role}\"}} (schema_version 1.1.0){inferred}"
    )
}

/// Reports each role of `roles` that no layer of the rule set has.
pub(crate) fn check_required_roles(rule_set: &DrcRuleSet, roles: &[&str], sink: &mut IssueSink) {
    debug_assert!(
        roles
            .iter()
            .all(|role| REQUIRED_ROLES.contains(role) || is_known_role(role))
    );
    for role in roles {
        if rule_set.layer_for_role(role).is_none() {
            sink.push("/layers", role_missing_message(role, ""));
        }
    }
}

fn build_layers(specs: &Map<String, Value>, sink: &mut IssueSink) -> Vec<LayerDef> {
    if specs.is_empty() {
        sink.push(
            "/layers",
            "no layers are declared; map each layer name to its GDS layer number",
        );
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
            LayerSpec::Full {
                layer,
                datatype,
                role,
                sheet_resistance,
                area_capacitance,
                description,
            } => (
                layer,
                datatype.unwrap_or(0),
                role,
                sheet_resistance,
                area_capacitance,
                description,
            ),
        };
        let mut sound = true;
        for (field, value) in [("layer", number), ("datatype", datatype)] {
            if !(0..=MAX_GDS_NUMBER).contains(&value) {
                let at = if matches!(value_kind(specs, name), Some(true)) {
                    pointer_join(&pointer, field)
                } else {
                    pointer.clone()
                };
                sink.push(
                    at,
                    format!("GDS {field} {value} is out of range 0..{MAX_GDS_NUMBER}"),
                );
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
                sink.push(
                    pointer_join(&pointer, "role"),
                    format!(
                        "unknown role \"{role}\"; valid roles: {}",
                        valid_roles_text()
                    ),
                );
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
        let Some(role) = inferred_role(&layer.name) else {
            continue;
        };
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

fn build_derived_layers(
    specs: &Map<String, Value>,
    drawn: &HashSet<&str>,
    sink: &mut IssueSink,
) -> Vec<DerivedLayer> {
    if specs.len() > MAX_DERIVED_LAYERS {
        sink.push(
            "/derived_layers",
            format!(
                "{} derived layers; a rule set may define at most {MAX_DERIVED_LAYERS}",
                specs.len()
            ),
        );
        return Vec::new();
    }
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
            sink.push(
                pointer.clone(),
                format!("\"{name}\" is already a drawn layer; give the derived layer another name"),
            );
        }
        derived.push(DerivedLayer {
            name: name.clone(),
            op: spec.op,
            a: spec.a,
            b: spec.b,
        });
    }
    let names: HashSet<&str> = derived.iter().map(|layer| layer.name.as_str()).collect();
    let mut valid: Vec<&str> = drawn.iter().copied().collect();
    valid.sort_unstable();
    for layer in &derived {
        for (field, operand) in [("a", &layer.a), ("b", &layer.b)] {
            if !drawn.contains(operand.as_str()) && !names.contains(operand.as_str()) {
                sink.push(
                    pointer_join(&pointer_join("/derived_layers", &layer.name), field),
                    format!(
                        "unknown layer \"{operand}\"; declared layers: {}",
                        name_list(valid.iter().copied())
                    ),
                );
            }
        }
    }
    // A derived layer may not depend on itself.
    let by_name: HashMap<&str, &DerivedLayer> = derived
        .iter()
        .map(|layer| (layer.name.as_str(), layer))
        .collect();
    for layer in &derived {
        let mut stack = vec![layer.a.as_str(), layer.b.as_str()];
        let mut seen = HashSet::new();
        while let Some(operand) = stack.pop() {
            if operand == layer.name {
                sink.push(
                    pointer_join("/derived_layers", &layer.name),
                    format!("derived layer \"{}\" depends on itself", layer.name),
                );
                break;
            }
            if let Some(next) = by_name.get(operand).filter(|_| seen.insert(operand)) {
                stack.extend([next.a.as_str(), next.b.as_str()]);
            }
        }
    }
    derived
}

/// The first schema version with the `models` table.
const V1_3: SchemaVersion = SchemaVersion::new(1, 3, 0);

/// The `models` table: a 1.3.0 field; model names are case-insensitive (as in SPICE), so
/// two spellings of one name may not map to different types.
fn check_models(
    models: &BTreeMap<String, DeviceType>,
    version: SchemaVersion,
    sink: &mut IssueSink,
) {
    if models.is_empty() {
        return;
    }
    if version < V1_3 {
        sink.push(
            "/models",
            format!("\"models\" is a schema_version 1.3.0 field but the file declares {version}; declare \"schema_version\": \"1.3.0\""),
        );
    }
    let mut by_lower: HashMap<String, (&str, DeviceType)> = HashMap::new();
    for (name, device_type) in models {
        let pointer = pointer_join("/models", name);
        if name.trim().is_empty() {
            sink.push(pointer, "model name is empty");
            continue;
        }
        if let Some((first, first_type)) =
            by_lower.insert(name.to_lowercase(), (name, *device_type))
            && first_type != *device_type
        {
            sink.push(
                pointer,
                format!("model \"{name}\" is also mapped as \"{first}\" to {}; SPICE names are case-insensitive, map the model once", first_type.as_str()),
            );
        }
    }
}

/// The first schema version with line-end/adjacent enclosures, area rules and width_over.
const V1_2: SchemaVersion = SchemaVersion::new(1, 2, 0);

fn build_rules(
    specs: Vec<RuleSpec>,
    known_layers: &[&str],
    version: SchemaVersion,
    sink: &mut IssueSink,
) -> Vec<DrcRule> {
    let mut first_index_of_id: HashMap<String, usize> = HashMap::new();
    let mut rules = Vec::with_capacity(specs.len());
    let mut sorted_layers: Vec<&str> = known_layers.to_vec();
    sorted_layers.sort_unstable();
    // A set: 100 000 rules on 100 000 layers were 10^10 comparisons as a list.
    let known_layers: HashSet<&str> = known_layers.iter().copied().collect();
    for (index, spec) in specs.into_iter().enumerate() {
        let pointer = format!("/rules/{index}");
        if spec.id.trim().is_empty() {
            sink.push(
                format!("{pointer}/id"),
                "rule id is empty; use the foundry's rule id, e.g. \"M1.b\"",
            );
        } else if let Some(first) = first_index_of_id.get(&spec.id) {
            sink.push(
                format!("{pointer}/id"),
                format!(
                    "duplicate rule id \"{}\" (first at /rules/{first}); rule ids must be unique",
                    spec.id
                ),
            );
        } else {
            first_index_of_id.insert(spec.id.clone(), index);
        }
        for (field, layer) in [
            ("layer", Some(&spec.layer)),
            ("layer2", spec.layer2.as_ref()),
        ] {
            if let Some(layer) = layer
                && !known_layers.contains(layer.as_str())
            {
                sink.push(
                        format!("{pointer}/{field}"),
                        format!("rule \"{}\" names layer \"{layer}\", which is not declared; declared layers: {}", spec.id, name_list(sorted_layers.iter().copied())),
                    );
            }
        }
        if version < V1_2 {
            let newer = [
                ("end_min", spec.end_min),
                ("end_width", spec.end_width),
                ("adjacent_min", spec.adjacent_min),
                ("adjacent_below", spec.adjacent_below),
                ("width_over", spec.width_over),
            ];
            for (field, _) in newer.iter().filter(|(_, value)| value.is_some()) {
                sink.push(
                    format!("{pointer}/{field}"),
                    format!("\"{field}\" is a schema_version 1.2.0 field but the file declares {version}; declare \"schema_version\": \"1.2.0\""),
                );
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
            end_min: spec.end_min,
            end_width: spec.end_width,
            adjacent_min: spec.adjacent_min,
            adjacent_below: spec.adjacent_below,
            width_over: spec.width_over,
            description: spec.description,
        });
    }
    rules
}

/// Largest area a rule may name: 1 mm² (areas are in square metres).
const MAX_AREA_M2: f64 = MAX_LENGTH_M * MAX_LENGTH_M;

fn check_rule_values(spec: &RuleSpec, pointer: &str, sink: &mut IssueSink) {
    let kind = spec.rule_type.as_str();
    let needs_layer2 = matches!(
        spec.rule_type,
        RuleType::Enclosure | RuleType::Extension | RuleType::Overlap
    );
    if needs_layer2 && spec.layer2.is_none() {
        sink.push(
            pointer,
            format!("a {kind} rule relates two layers; add \"layer2\""),
        );
    }
    if matches!(spec.rule_type, RuleType::Density | RuleType::Area) && spec.layer2.is_some() {
        let article = if spec.rule_type == RuleType::Area {
            "an"
        } else {
            "a"
        };
        sink.push(
            format!("{pointer}/layer2"),
            format!("{article} {kind} rule is on one layer; remove \"layer2\""),
        );
    }
    if spec.layer2.as_deref() == Some(spec.layer.as_str()) {
        sink.push(
            format!("{pointer}/layer2"),
            format!("layer2 is the same as layer; for a same-layer {kind} rule omit layer2"),
        );
    }
    let has_end = spec.end_min.is_some() || spec.end_width.is_some();
    let has_adjacent = spec.adjacent_min.is_some() || spec.adjacent_below.is_some();
    match spec.rule_type {
        RuleType::Width | RuleType::Density => {
            if spec.min.is_none() && spec.max.is_none() {
                sink.push(pointer, format!("a {kind} rule needs \"min\" or \"max\""));
            }
        }
        RuleType::Area => {
            if spec.min.is_none() {
                sink.push(
                    pointer,
                    "an area rule needs \"min\" (square metres: 0.09 µm² is 9e-14)",
                );
            }
            if spec.max.is_some() {
                sink.push(format!("{pointer}/max"), "an area rule has only \"min\" (the smallest area of a merged shape); remove \"max\"");
            }
        }
        RuleType::Enclosure => {
            if spec.min.is_none() && !has_end && !has_adjacent {
                sink.push(
                    pointer,
                    "an enclosure rule needs \"min\" (metres), or \"end_min\" with \"end_width\", or \"adjacent_min\" with \"adjacent_below\"",
                );
            }
        }
        _ => {
            if spec.min.is_none() {
                sink.push(pointer, format!("a {kind} rule needs \"min\" (metres)"));
            }
        }
    }
    check_rule_fields(spec, pointer, sink);
    let limit = if spec.rule_type == RuleType::Area {
        MAX_AREA_M2
    } else {
        MAX_LENGTH_M
    };
    for (field, value) in [("min", spec.min), ("max", spec.max)] {
        let Some(value) = value else { continue };
        let at = format!("{pointer}/{field}");
        if !value.is_finite() || value < 0.0 {
            sink.push(at, format!("{field} = {value} must not be negative"));
        } else if spec.rule_type == RuleType::Density {
            if value > 1.0 {
                sink.push(
                    at,
                    format!(
                        "density {field} = {value} must be a fraction within [0, 1] (35% is 0.35)"
                    ),
                );
            }
        } else if value > limit {
            let hint = if spec.rule_type == RuleType::Area {
                "areas are in square metres (0.09 µm² is 9e-14)"
            } else {
                "rule values are in metres (0.18 µm is 1.8e-7)"
            };
            sink.push(at, format!("{field} = {value} is absurdly large; {hint}"));
        }
    }
    if let (Some(min), Some(max)) = (spec.min, spec.max)
        && min > max
    {
        sink.push(
            format!("{pointer}/min"),
            format!("min = {min} is greater than max = {max}; min must not exceed max"),
        );
    }
}

/// The 1.2.0 fields: each only on its rule type, each pair complete, every length sane.
fn check_rule_fields(spec: &RuleSpec, pointer: &str, sink: &mut IssueSink) {
    let kind = spec.rule_type.as_str();
    let enclosure_fields = [
        ("end_min", spec.end_min),
        ("end_width", spec.end_width),
        ("adjacent_min", spec.adjacent_min),
        ("adjacent_below", spec.adjacent_below),
    ];
    if spec.rule_type != RuleType::Enclosure {
        for (field, value) in enclosure_fields {
            if value.is_some() {
                sink.push(
                    format!("{pointer}/{field}"),
                    format!("\"{field}\" belongs to enclosure rules (layer encloses layer2); remove it from this {kind} rule"),
                );
            }
        }
    }
    if spec.width_over.is_some() {
        if spec.rule_type != RuleType::Spacing {
            sink.push(
                format!("{pointer}/width_over"),
                format!("\"width_over\" belongs to same-layer spacing rules (wide-metal spacing); remove it from this {kind} rule"),
            );
        } else if spec.layer2.is_some() {
            sink.push(
                format!("{pointer}/width_over"),
                "\"width_over\" is for same-layer spacing (the wide parts of layer to the other shapes of layer); remove \"layer2\" or \"width_over\"",
            );
        }
    }
    if spec.rule_type == RuleType::Enclosure {
        let pairs = [
            (
                "end_min",
                spec.end_min,
                "end_width",
                spec.end_width,
                "the length in metres below which an edge of layer counts as a line end",
            ),
            (
                "end_width",
                spec.end_width,
                "end_min",
                spec.end_min,
                "the margin in metres at line ends",
            ),
            (
                "adjacent_min",
                spec.adjacent_min,
                "adjacent_below",
                spec.adjacent_below,
                "the one-side enclosure in metres below which adjacent_min applies",
            ),
            (
                "adjacent_below",
                spec.adjacent_below,
                "adjacent_min",
                spec.adjacent_min,
                "the margin in metres on the two adjacent sides",
            ),
        ];
        for (field, value, partner, partner_value, what) in pairs {
            if value.is_some() && partner_value.is_none() {
                sink.push(
                    format!("{pointer}/{field}"),
                    format!(
                        "\"{field}\" needs \"{partner}\" ({what}); add it or remove \"{field}\""
                    ),
                );
            }
        }
    }
    let lengths = [
        ("end_min", spec.end_min, false),
        ("end_width", spec.end_width, true),
        ("adjacent_min", spec.adjacent_min, false),
        ("adjacent_below", spec.adjacent_below, true),
        ("width_over", spec.width_over, true),
    ];
    for (field, value, positive) in lengths {
        let Some(value) = value else { continue };
        let at = format!("{pointer}/{field}");
        if !value.is_finite() || value < 0.0 {
            sink.push(at, format!("{field} = {value} must not be negative"));
        } else if positive && value == 0.0 {
            sink.push(at, format!("{field} = 0 makes the rule apply to nothing or to everything; give a length in metres greater than 0"));
        } else if value > MAX_LENGTH_M {
            sink.push(at, format!("{field} = {value} m is absurdly large; rule values are in metres (0.18 µm is 1.8e-7)"));
        }
    }
}
