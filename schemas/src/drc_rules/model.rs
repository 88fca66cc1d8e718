//! The rule set as the generators and checks use it: layers, derived layers, rules, the
//! grid, the `models` table and the `parasitics` section.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::circuit::DeviceType;
use crate::parasitics::Parasitics;

/// The grid when a rule set does not give one: 1 nm.
pub const DEFAULT_GRID_M: f64 = 1e-9;
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
    /// The most DC current a wire of this layer may carry per metre of its width (A/m;
    /// 1 mA/µm = 1000 A/m): what sizes the wires of a net given a current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_current_density: Option<f64>,
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
