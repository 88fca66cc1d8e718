//! A design point written as JSON (by a model, or by a user with `centroid plan
//! --point`) checked against the design space: every value one the space allows,
//! every device, row kind and matched module one of the circuit's; a block's own
//! point (`blocks`) checked against that block's space. A missing coordinate takes
//! the default point's value. Problems are worded for a repair
//! round ("order[2]: … is not a device of the circuit").

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

use crate::design_point::{BLOCKS, DesignPoint, FLAT};
use crate::design_space::DesignSpace;

/// Problems found in an answer, one line each.
pub type Problems = Vec<String>;

/// One design point; a missing coordinate takes the default point's value.
pub fn design_point(value: &Value, space: &DesignSpace) -> Result<DesignPoint, Problems> {
    let Value::Object(object) = value else {
        return Err(vec!["expected an object".into()]);
    };
    let default = space.default_point();
    let mut problems = Problems::new();
    let mut number = |name: &str, allowed: &[u32], fallback: u32| -> u32 {
        match object.get(name) {
            None => fallback,
            Some(value) => match value.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if allowed.contains(&n) => n,
                // a knob offered one value draws the same whatever it is set to
                Some(_) if allowed.len() == 1 => allowed[0],
                _ => {
                    problems.push(format!("{name}: {value} is not one of {allowed:?}"));
                    fallback
                }
            },
        }
    };
    let finger_split = number("finger_split", &space.finger_splits, default.finger_split);
    let dummies = number("dummies", &space.dummies, default.dummies);
    let orders: Vec<u32> = (0..space.row_orders.max(1)).collect();
    let row_order = number("row_order", &orders, default.row_order);
    let spacing_nm = number("spacing_nm", &space.spacings_nm, default.spacing_nm);
    let aspect_ratio_pct = number(
        "aspect_ratio_pct",
        &space.aspect_ratios_pct,
        default.aspect_ratio_pct,
    );
    let ranks = if space.pack_ranks.is_empty() {
        vec![0]
    } else {
        space.pack_ranks.clone()
    };
    let pack_rank = number("pack_rank", &ranks, default.pack_rank);
    let arrangement = match object.get("arrangement") {
        None => default.arrangement.clone(),
        Some(Value::String(name)) if space.arrangements.contains(name) => name.clone(),
        Some(Value::String(_)) if space.arrangements.len() == 1 => space.arrangements[0].clone(),
        Some(value) => {
            problems.push(format!(
                "arrangement: {value} is not one of {:?}",
                space.arrangements
            ));
            default.arrangement.clone()
        }
    };
    let guard_ring = match object.get("guard_ring") {
        None => default.guard_ring,
        Some(Value::Bool(flag)) if space.guard_rings.contains(flag) => *flag,
        Some(Value::Bool(_)) if space.guard_rings.len() == 1 => space.guard_rings[0],
        Some(value) => {
            problems.push(format!(
                "guard_ring: {value} is not one of {:?}",
                space.guard_rings
            ));
            default.guard_ring
        }
    };
    let hierarchy = match object.get("hierarchy") {
        None | Some(Value::Null) => default.hierarchy.clone(),
        Some(Value::String(name)) if space.hierarchies.contains(name) => {
            if name == BLOCKS {
                name.clone()
            } else {
                String::new()
            }
        }
        Some(value) => {
            let allowed = if space.hierarchies.is_empty() {
                vec![FLAT.to_string()]
            } else {
                space.hierarchies.clone()
            };
            if value.as_str() == Some(FLAT) {
                String::new()
            } else {
                problems.push(format!("hierarchy: {value} is not one of {allowed:?}"));
                default.hierarchy.clone()
            }
        }
    };
    let (order, rows, module_arrangements) = placement_genes(object, space, &mut problems);
    let module_dummies = group_genes(object, "module_dummies", space, &mut problems, |value| {
        value
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| space.dummies.contains(n))
    });
    let module_rings = group_genes(object, "module_rings", space, &mut problems, |value| {
        value
            .as_bool()
            .filter(|ring| space.guard_rings.contains(ring))
    });
    let blocks = block_points(object, space, &mut problems);
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(DesignPoint {
        arrangement,
        finger_split,
        dummies,
        guard_ring,
        row_order,
        spacing_nm,
        aspect_ratio_pct,
        order,
        rows,
        module_arrangements,
        module_dummies,
        module_rings,
        pack_rank,
        hierarchy,
        blocks,
    })
}

/// The optional `blocks` object: subcircuit → that block's own point, each checked
/// against the block's space (its problems behind `blocks.<subcircuit>.`).
fn block_points(
    object: &Map<String, Value>,
    space: &DesignSpace,
    problems: &mut Problems,
) -> BTreeMap<String, DesignPoint> {
    let mut points = BTreeMap::new();
    let Some(value) = object.get("blocks").filter(|value| !value.is_null()) else {
        return points;
    };
    let Some(entries) = value.as_object() else {
        problems.push(format!(
            "blocks: {value} is not an object of block subcircuit → point"
        ));
        return points;
    };
    for (subcircuit, written) in entries {
        let Some(block) = space.blocks.get(subcircuit) else {
            let known: Vec<&String> = space.blocks.keys().collect();
            problems.push(format!(
                "blocks.{subcircuit}: not a block of the circuit; blocks: {known:?}"
            ));
            continue;
        };
        match design_point(written, &block.space) {
            Ok(point) => {
                points.insert(subcircuit.clone(), point);
            }
            Err(found) => problems.extend(
                found
                    .into_iter()
                    .map(|problem| format!("blocks.{subcircuit}.{problem}")),
            ),
        }
    }
    points
}

/// An optional map `name` of matched module → value (`module_dummies`,
/// `module_rings`): every module one of the space's groups, every value one that
/// `allowed` accepts. Absent: the global value for every module.
fn group_genes<T>(
    object: &Map<String, Value>,
    name: &str,
    space: &DesignSpace,
    problems: &mut Problems,
    allowed: impl Fn(&Value) -> Option<T>,
) -> BTreeMap<String, T> {
    let mut genes = BTreeMap::new();
    let Some(value) = object.get(name).filter(|value| !value.is_null()) else {
        return genes;
    };
    let Some(entries) = value.as_object() else {
        problems.push(format!(
            "{name}: {value} is not an object of matched module → value"
        ));
        return genes;
    };
    for (module, gene) in entries {
        match allowed(gene) {
            Some(gene) if space.groups.contains(module) => {
                genes.insert(module.clone(), gene);
            }
            _ => problems.push(format!(
                "{name}.{module}: {gene} is not allowed; modules: {:?}, dummies {:?}, rings {:?}",
                space.groups, space.dummies, space.guard_rings
            )),
        }
    }
    genes
}

/// The optional placement genes of an answered point: `order` (device ids of the
/// space), `rows` (kind → rows, at most the kind's `max_rows`) and
/// `module_arrangements` (matched module → arrangement). Absent: the default.
fn placement_genes(
    object: &Map<String, Value>,
    space: &DesignSpace,
    problems: &mut Problems,
) -> (Vec<String>, BTreeMap<String, u32>, BTreeMap<String, String>) {
    let known: HashSet<&String> = space.kinds.iter().flat_map(|kind| &kind.devices).collect();
    let mut order = Vec::new();
    match object.get("order") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(device) if known.contains(&device.to_string()) => {
                        order.push(device.to_string())
                    }
                    _ => problems.push(format!(
                        "order[{index}]: {item} is not a device of the circuit"
                    )),
                }
            }
        }
        Some(value) => problems.push(format!("order: {value} is not an array of device ids")),
    }
    let mut rows = BTreeMap::new();
    if let Some(value) = object.get("rows").filter(|value| !value.is_null()) {
        for (kind, count) in value.as_object().into_iter().flatten() {
            let limit = space.kinds.iter().find(|known| known.kind == *kind);
            match (limit, count.as_u64()) {
                (Some(limit), Some(count)) if (1..=u64::from(limit.max_rows)).contains(&count) => {
                    if count > 1 {
                        rows.insert(kind.clone(), count as u32);
                    }
                }
                _ => problems.push(format!(
                    "rows.{kind}: {count} is not a row count of a device kind of the circuit"
                )),
            }
        }
    }
    let mut module_arrangements = BTreeMap::new();
    if let Some(value) = object
        .get("module_arrangements")
        .filter(|value| !value.is_null())
    {
        for (module, arrangement) in value.as_object().into_iter().flatten() {
            match arrangement.as_str() {
                Some(name) if space.modules.contains(module) && space.arrangements.iter().any(|known| known == name) => {
                    module_arrangements.insert(module.clone(), name.to_string());
                }
                _ => problems.push(format!(
                    "module_arrangements.{module}: {arrangement} is not one of {:?} for a matched module",
                    space.arrangements
                )),
            }
        }
    }
    (order, rows, module_arrangements)
}
