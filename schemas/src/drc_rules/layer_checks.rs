//! The `layers` and `derived_layers` of a rule set: each checked and built.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::issue::{IssueSink, name_list, pointer_join};
use crate::layer_roles::{inferred_role, is_known_role, valid_roles_text};

use super::model::{DerivedLayer, DerivedOp, LayerDef, MAX_DERIVED_LAYERS};

/// The largest GDS layer or datatype number.
const MAX_GDS_NUMBER: i64 = 65_535;

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
        max_current_density: Option<f64>,
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

pub(super) fn build_layers(specs: &Map<String, Value>, sink: &mut IssueSink) -> Vec<LayerDef> {
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
        let (number, datatype, role, electrical, description) = match spec {
            LayerSpec::Number(number) => (number, 0, None, [None; 3], None),
            LayerSpec::Full {
                layer,
                datatype,
                role,
                sheet_resistance,
                area_capacitance,
                max_current_density,
                description,
            } => (
                layer,
                datatype.unwrap_or(0),
                role,
                [sheet_resistance, area_capacitance, max_current_density],
                description,
            ),
        };
        let [sheet_resistance, area_capacitance, max_current_density] = electrical;
        if let Some(density) = max_current_density
            && !(density.is_finite() && density > 0.0)
        {
            sink.push(
                pointer_join(&pointer, "max_current_density"),
                format!("max_current_density = {density} must be greater than 0 (A per metre of wire width; 1 mA/µm = 1000 A/m)"),
            );
        }
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
            max_current_density,
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

pub(super) fn build_derived_layers(
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
