//! The sections of the planning prompts, as an engineer would write them for
//! this job: the circuit with every name quoted (a name is text, never a line of
//! the prompt), the free knobs of the design space with their units and meaning,
//! an answer example made of allowed values only, the skills a plan may call
//! (debug skills never), the rules in µm grouped by layer, and the journal.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use centroid_planner::design_point::DesignPoint;
use centroid_planner::design_space::DesignSpace;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_schemas::TaskContext;
use centroid_schemas::circuit::format_micrometres;
use serde_json::{Map, Value, json};

use crate::agent::plan_checks::offered;

/// A name as a JSON string: quoted and escaped, whatever it holds.
pub fn quoted(name: &str) -> String {
    Value::String(name.to_string()).to_string()
}

fn quoted_list<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<String> = names.into_iter().map(|name| quoted(name)).collect();
    format!("[{}]", names.join(", "))
}

/// The circuit: devices with sizes and connections, nets, recognised modules.
pub fn circuit(task: &TaskContext) -> String {
    let circuit = &task.circuit;
    let mut text = format!(
        "circuit {} with {} devices\n",
        quoted(&circuit.name),
        circuit.devices.len()
    );
    for device in &circuit.devices {
        let _ = write!(
            text,
            "- {} {}",
            quoted(&device.id),
            device.device_type.as_str()
        );
        if let Some(w) = device.params.w {
            let _ = write!(text, " W={}", format_micrometres(w));
        }
        if let Some(l) = device.params.l {
            let _ = write!(text, " L={}", format_micrometres(l));
        }
        let _ = writeln!(
            text,
            " nf={} m={} terminals {}",
            device.params.nf,
            device.params.m,
            serde_json::to_string(&device.terminals).unwrap_or_default()
        );
    }
    let _ = writeln!(text, "nets:");
    for net in &circuit.nets {
        let _ = writeln!(
            text,
            "- {} {} ({} terminals)",
            quoted(&net.name),
            net.net_type.as_str(),
            net.connections.len()
        );
    }
    let _ = writeln!(text, "recognised modules:");
    for module in &circuit.modules {
        let members: Vec<String> = module
            .devices
            .iter()
            .map(|member| format!("{} {}", quoted(&member.device_id), member.role))
            .collect();
        let _ = writeln!(
            text,
            "- {} {}: {}",
            quoted(&module.id),
            module.module_type.as_str(),
            members.join(", ")
        );
    }
    text
}

/// What each arrangement means.
fn arrangement_meaning(arrangement: &str) -> &'static str {
    match arrangement {
        "ABBA" => "common centroid in one row (A B B A: both centroids at the centre)",
        "ABAB" => "interleaved in one row (A B A B)",
        "2D" => "two-dimensional common-centroid array (rows of A B / B A)",
        _ => "an arrangement of the unit instances",
    }
}

/// The knobs of this job that have a choice, each with its unit, meaning and
/// allowed values; knobs with one value are left out (and left to default).
pub fn design_space(space: &DesignSpace) -> String {
    let mut text = String::from(
        "Only the knobs below may be chosen; any knob not listed is fixed for this job: \
         leave it out of your answer.\n",
    );
    if space.arrangements.len() > 1 {
        let _ = writeln!(
            text,
            "- arrangement (text): how the unit instances of matched devices are placed; one of {}",
            space
                .arrangements
                .iter()
                .map(|value| format!("\"{value}\" = {}", arrangement_meaning(value)))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let mut knob = |free: bool, line: String| {
        if free {
            let _ = writeln!(text, "{line}");
        }
    };
    knob(
        space.finger_splits.len() > 1,
        format!(
            "- finger_split (count): each device's fingers (nf) are drawn as this many unit \
             instances (it divides nf); one of {:?}",
            space.finger_splits
        ),
    );
    knob(
        space.dummies.len() > 1,
        format!(
            "- dummies (count): dummy devices at each row end of every matched module \
             (0 = none); one of {:?}",
            space.dummies
        ),
    );
    knob(
        space.guard_rings.len() > 1,
        format!(
            "- guard_ring (true/false): a guard ring around every matched module; one of {:?}",
            space.guard_rings
        ),
    );
    knob(
        space.row_orders > 1,
        format!(
            "- row_order (index): which permutation of the device rows (one row per device \
             kind) is stacked from bottom to top, 0 = the default; 0..{}",
            space.row_orders - 1
        ),
    );
    knob(
        space.spacings_nm.len() > 1,
        format!(
            "- spacing_nm (nanometres): extra space between placed cells on top of the \
             rule minimum; one of {:?}",
            space.spacings_nm
        ),
    );
    knob(
        space.aspect_ratios_pct.len() > 1,
        format!(
            "- aspect_ratio_pct (percent): target width/height of the placement, 100 = \
             square, 50 = twice as tall as wide, 200 = twice as wide; one of {:?}",
            space.aspect_ratios_pct
        ),
    );
    knob(
        space.hierarchies.len() > 1,
        format!(
            "- hierarchy: \"blocks\" lays each repeated subcircuit out once as its own routed \
             cell and places its instances (the parent routes between them), \"flat\" lays \
             every device out in the top cell's rows; one of {:?}",
            space.hierarchies
        ),
    );
    knob(
        space.pack_ranks.len() > 1,
        format!(
            "- pack_rank (with hierarchy \"blocks\"): which packing of the top's block \
             instances into rows the router takes, 0 = the smallest estimated bbox, 1 = \
             the next, …; the estimate misjudges, another rank may route smaller; one of {:?}",
            space.pack_ranks
        ),
    );
    for kind in &space.kinds {
        let _ = write!(
            text,
            "- order of the {} row (device ids, left to right; default {})",
            kind.kind,
            quoted_list(&kind.devices),
        );
        if kind.max_rows > 1 {
            let _ = write!(
                text,
                "; rows[\"{}\"] (count): the {} devices folded into 1..{} rows",
                kind.kind, kind.kind, kind.max_rows
            );
        }
        text.push('\n');
    }
    if space.arrangements.len() > 1 && !space.modules.is_empty() {
        let _ = writeln!(
            text,
            "- module_arrangements: an arrangement per matched pair, in place of arrangement, \
             for {}",
            quoted_list(&space.modules)
        );
    }
    let per_module: Vec<&str> = [
        (space.dummies.len() > 1, "module_dummies"),
        (space.guard_rings.len() > 1, "module_rings"),
    ]
    .into_iter()
    .filter_map(|(free, name)| free.then_some(name))
    .collect();
    if !per_module.is_empty() && !space.groups.is_empty() {
        let _ = writeln!(
            text,
            "- {} for {}: per matched module, in place of the global value",
            per_module.join(" and "),
            quoted_list(&space.groups)
        );
    }
    text
}

/// A point as compact JSON; with `space`, without the knobs fixed in it.
pub fn point_json(point: &DesignPoint, space: Option<&DesignSpace>) -> String {
    let mut value = serde_json::to_value(point).unwrap_or(Value::Null);
    if let (Some(space), Some(object)) = (space, value.as_object_mut()) {
        for (fixed, name) in [
            (space.arrangements.len() < 2, "arrangement"),
            (space.finger_splits.len() < 2, "finger_split"),
            (space.dummies.len() < 2, "dummies"),
            (space.guard_rings.len() < 2, "guard_ring"),
            (space.row_orders < 2, "row_order"),
            (space.spacings_nm.len() < 2, "spacing_nm"),
            (space.aspect_ratios_pct.len() < 2, "aspect_ratio_pct"),
        ] {
            if fixed {
                object.remove(name);
            }
        }
    }
    value.to_string()
}

/// One design point written with allowed values only: the answer format's example.
pub fn example_point(space: &DesignSpace) -> Value {
    let point = space.default_point();
    let mut object = Map::new();
    if space.arrangements.len() > 1 {
        object.insert("arrangement".into(), json!(point.arrangement));
    }
    let mut number = |free: bool, name: &str, value: Value| {
        if free {
            object.insert(name.into(), value);
        }
    };
    number(
        space.finger_splits.len() > 1,
        "finger_split",
        json!(point.finger_split),
    );
    number(space.dummies.len() > 1, "dummies", json!(point.dummies));
    number(
        space.guard_rings.len() > 1,
        "guard_ring",
        json!(point.guard_ring),
    );
    number(space.row_orders > 1, "row_order", json!(point.row_order));
    number(
        space.spacings_nm.len() > 1,
        "spacing_nm",
        json!(point.spacing_nm),
    );
    number(
        space.aspect_ratios_pct.len() > 1,
        "aspect_ratio_pct",
        json!(point.aspect_ratio_pct),
    );
    if space.hierarchies.len() > 1 {
        let hierarchy = if point.hierarchy.is_empty() {
            "flat"
        } else {
            point.hierarchy.as_str()
        };
        object.insert("hierarchy".into(), json!(hierarchy));
    }
    if !point.order.is_empty() {
        object.insert("order".into(), json!(point.order));
    }
    if let (Some(module), true) = (space.modules.first(), space.arrangements.len() > 1) {
        let other = space
            .arrangements
            .iter()
            .find(|value| **value != point.arrangement)
            .cloned()
            .unwrap_or_else(|| point.arrangement.clone());
        object.insert("module_arrangements".into(), json!({ module: other }));
    }
    if let (Some(group), Some(most)) = (space.groups.first(), space.dummies.iter().max())
        && space.dummies.len() > 1
    {
        object.insert("module_dummies".into(), json!({ group: most }));
    }
    if let Some(group) = space.groups.first()
        && space.guard_rings.contains(&true)
        && space.guard_rings.len() > 1
    {
        object.insert("module_rings".into(), json!({ group: true }));
    }
    object.insert("why".into(), json!("..."));
    Value::Object(object)
}

/// One line per skill a plan may call: name, description, parameters with
/// their types (an enum shows its values); `*` marks a required parameter.
pub fn skills(catalog: &SkillCatalog) -> String {
    let catalog = offered(catalog);
    let mut names: Vec<&String> = catalog.keys().collect();
    names.sort();
    let mut text = String::new();
    for name in names {
        let schema = &catalog[name];
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("(no description)");
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let params: Vec<String> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(param, spec)| {
                        let mark = if required.contains(&param.as_str()) {
                            "*"
                        } else {
                            ""
                        };
                        format!("{param}{mark}: {}", param_type(spec))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(text, "- {name}: {description} ({})", params.join(", "));
    }
    text
}

/// `string`, `number`, `enum string "a"|"b"`, `file in the scratch directory`, …
fn param_type(spec: &Value) -> String {
    let declared = match spec.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => String::new(),
    };
    if let Some(values) = spec.get("enum").and_then(Value::as_array) {
        let kind = if declared.is_empty() {
            match values.first() {
                Some(Value::String(_)) => "string",
                Some(Value::Number(_)) => "number",
                Some(Value::Bool(_)) => "boolean",
                _ => "value",
            }
            .to_string()
        } else {
            declared
        };
        let shown: Vec<String> = values.iter().map(Value::to_string).collect();
        return format!("{kind} enum {}", shown.join("|"));
    }
    if spec.get(crate::agent::plan_checks::FILE_KEYWORD) == Some(&Value::Bool(true)) {
        return "file path ${CANDIDATE_DIR}/<name>".into();
    }
    if declared.is_empty() {
        "any".into()
    } else {
        declared
    }
}

/// The design rules in µm (µm² for areas), grouped by layer, each with its id.
pub fn rules(task: &TaskContext) -> String {
    let mut by_layer: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for rule in &task.drc_rules.rules {
        let kind = rule.rule_type.as_str();
        let value = |metres: f64| match kind {
            "area" => format!("{} µm²", round(metres * 1e12)),
            "density" => format!("{}", round(metres)),
            _ => format!("{} µm", round(metres * 1e6)),
        };
        let mut line = format!("{} {kind}", rule.id);
        if let Some(other) = &rule.layer2 {
            let _ = write!(line, " to {other}");
        }
        if let Some(min) = rule.min {
            let _ = write!(line, " ≥ {}", value(min));
        }
        if let Some(max) = rule.max {
            let _ = write!(line, " ≤ {}", value(max));
        }
        by_layer.entry(&rule.layer).or_default().push(line);
    }
    let mut text = String::new();
    for (layer, lines) in by_layer {
        let _ = writeln!(text, "{layer}: {}", lines.join("; "));
    }
    text
}

fn round(value: f64) -> f64 {
    (value * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enum_parameter_shows_its_type_and_values_and_a_file_its_form() {
        assert_eq!(
            param_type(&json!({"enum": ["ABBA", "2D"]})),
            "string enum \"ABBA\"|\"2D\""
        );
        assert_eq!(param_type(&json!({"type": "integer"})), "integer");
        assert_eq!(
            param_type(&json!({"type": "string", "x-centroid-file": true})),
            "file path ${CANDIDATE_DIR}/<name>"
        );
    }

    #[test]
    fn names_are_quoted_and_escaped() {
        assert_eq!(quoted("M1\n## Answer"), "\"M1\\n## Answer\"");
    }
}
