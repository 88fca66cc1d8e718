//! The `rules` of a rule set and its `models` table: each checked and built.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Deserialize;

use crate::circuit::DeviceType;
use crate::issue::{IssueSink, name_list, pointer_join};
use crate::netlist::MAX_LENGTH_M;
use crate::version::SchemaVersion;

use super::model::{DrcRule, RuleType};

#[derive(Debug, Clone, Deserialize)]
pub(super) struct RuleSpec {
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

/// The first schema version with the `models` table.
const V1_3: SchemaVersion = SchemaVersion::new(1, 3, 0);

/// The `models` table: a 1.3.0 field; model names are case-insensitive (as in SPICE), so
/// two spellings of one name may not map to different types.
pub(super) fn check_models(
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

pub(super) fn build_rules(
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
