//! The placement order genes: which devices share a row kind, the order a layout
//! engineer would start from (matched devices side by side, the devices of one
//! branch next to each other: the fewest places a shared net spans), and how a point's
//! order is completed and folded into rows.

use std::collections::{BTreeMap, HashSet};

use centroid_schemas::{Circuit, CircuitModule, Device, DeviceType};

use crate::design_point::DesignPoint;
use crate::device_units::{RowKind, is_mos, unit_splits};
use crate::kind_order::KindOrder;
use crate::row_arrangement::{NetPlaces, arrange_by_nets, record_places};

/// The most rows one device kind is folded into.
const MOST_ROWS: usize = 3;

pub fn kind_name(kind: RowKind) -> &'static str {
    match kind {
        RowKind::Nmos => "nmos",
        RowKind::Pmos => "pmos",
        RowKind::Passive => "passive",
    }
}

/// Whether the generators draw `device` (a known type with W and L).
pub fn is_drawable(device: &Device) -> bool {
    device.params.w.is_some()
        && device.params.l.is_some()
        && matches!(
            device.device_type,
            DeviceType::Nmos | DeviceType::Pmos | DeviceType::Resistor | DeviceType::Capacitor
        )
}

/// The devices of each row kind in the default order: the devices of each matched
/// module next to each other, the other devices alternating around them — then the
/// blocks (a matched module's devices, or one device) ordered so that the signal
/// nets they share span the fewest places and, of orders alike, stand above the
/// same nets of the rows arranged before ([`arrange_by_nets`]), as an engineer puts
/// the devices of one branch next to each other.
pub fn default_kinds(circuit: &Circuit) -> Vec<KindOrder> {
    let drawable: Vec<&Device> = circuit.devices.iter().filter(|d| is_drawable(d)).collect();
    let mut kinds: Vec<RowKind> = drawable
        .iter()
        .map(|device| RowKind::of(device.device_type))
        .collect();
    kinds.sort();
    kinds.dedup();
    let mut grouped: HashSet<&str> = HashSet::new();
    let mut matched_by_kind: BTreeMap<RowKind, Vec<Vec<String>>> = BTreeMap::new();
    for module in circuit
        .modules
        .iter()
        .filter(|m| m.module_type.is_matched())
    {
        let mut blocks: BTreeMap<RowKind, Vec<String>> = BTreeMap::new();
        for member in &module.devices {
            if let Some(device) = drawable.iter().find(|d| d.id == member.device_id)
                && grouped.insert(device.id.as_str())
            {
                blocks
                    .entry(RowKind::of(device.device_type))
                    .or_default()
                    .push(device.id.clone());
            }
        }
        for (kind, block) in blocks {
            matched_by_kind.entry(kind).or_default().push(block);
        }
    }
    let mut places = NetPlaces::new();
    kinds
        .into_iter()
        .map(|kind| {
            let mut blocks = matched_by_kind.remove(&kind).unwrap_or_default();
            let singles = drawable.iter().filter(|device| {
                RowKind::of(device.device_type) == kind && !grouped.contains(device.id.as_str())
            });
            for (index, single) in singles.enumerate() {
                if index % 2 == 0 {
                    blocks.push(vec![single.id.clone()]);
                } else {
                    blocks.insert(0, vec![single.id.clone()]);
                }
            }
            let blocks = arrange_by_nets(blocks, circuit, &places);
            record_places(&blocks, circuit, &mut places);
            let devices: Vec<String> = blocks.into_iter().flatten().collect();
            let max_rows = (devices.len() / 2).clamp(1, MOST_ROWS) as u32;
            KindOrder {
                kind: kind_name(kind).to_string(),
                devices,
                max_rows,
            }
        })
        .collect()
}

/// The MOS devices of matched module `module` when the planner may draw them as
/// one matched cell: two or more, of one type, cut into one common unit.
fn matched_cell_devices<'a>(
    circuit: &'a Circuit,
    module: &CircuitModule,
) -> Option<Vec<&'a Device>> {
    let devices: Vec<&Device> = module
        .devices
        .iter()
        .filter_map(|member| circuit.device(&member.device_id))
        .filter(|device| is_mos(device))
        .collect();
    let first = devices.first()?;
    let one_cell = devices.len() >= 2
        && devices
            .iter()
            .all(|device| device.device_type == first.device_type)
        && unit_splits(&devices, 1).is_some();
    one_cell.then_some(devices)
}

/// The matched modules drawn as one cell at every design point (every member a
/// drawable MOS device of one type, cut into one common unit): their devices move
/// together.
pub fn bound_modules(circuit: &Circuit) -> Vec<Vec<String>> {
    circuit
        .modules
        .iter()
        .filter(|module| module.module_type.is_matched())
        .filter_map(|module| {
            let devices = matched_cell_devices(circuit, module)?;
            let whole = devices.len() == module.devices.len()
                && devices.iter().all(|device| is_drawable(device));
            whole.then(|| devices.iter().map(|device| device.id.clone()).collect())
        })
        .collect()
}

/// Every matched module the planner may draw as a matched cell, by id: the modules
/// whose dummies and ring a point may choose one by one. Every matched cell of
/// every plan is one of them — which devices a module draws depends on the modules
/// drawn before it (a device is drawn once), so this asks only for what any drawn
/// subset has: two MOS devices of one type.
pub fn matched_groups(circuit: &Circuit) -> Vec<String> {
    circuit
        .modules
        .iter()
        .filter(|module| module.module_type.is_matched())
        .filter(|module| {
            let mut per_type: BTreeMap<RowKind, usize> = BTreeMap::new();
            for device in module
                .devices
                .iter()
                .filter_map(|member| circuit.device(&member.device_id))
                .filter(|device| is_mos(device))
            {
                *per_type.entry(RowKind::of(device.device_type)).or_default() += 1;
            }
            per_type.values().any(|count| *count >= 2)
        })
        .map(|module| module.id.clone())
        .collect()
}

/// `point`'s order of every device of `kinds`: its listed devices first (those
/// `kinds` knows, each once), then the rest in the default order; the devices of
/// a `bound` module stand together where its first one stands (so that two
/// spellings of one placement are one order). The order is built of references
/// and cloned once at the end: the search completes the order of every point it
/// draws.
pub fn complete(point: &DesignPoint, kinds: &[KindOrder], bound: &[Vec<String>]) -> Vec<String> {
    let known: HashSet<&str> = kinds
        .iter()
        .flat_map(|kind| &kind.devices)
        .map(String::as_str)
        .collect();
    let mut seen: HashSet<&str> = HashSet::with_capacity(point.order.len());
    let mut order: Vec<&String> = point
        .order
        .iter()
        .filter(|device| known.contains(device.as_str()) && seen.insert(device.as_str()))
        .collect();
    for device in kinds.iter().flat_map(|kind| &kind.devices) {
        if !seen.contains(device.as_str()) {
            order.push(device);
        }
    }
    for group in bound {
        let Some(at) = order.iter().position(|device| group.contains(*device)) else {
            continue;
        };
        let members: Vec<&String> = group
            .iter()
            .filter(|device| order.contains(device))
            .collect();
        order.retain(|device| !group.contains(*device));
        let at = at.min(order.len());
        order.splice(at..at, members);
    }
    order.into_iter().cloned().collect()
}

/// Cuts `cells` (in order, each with a weight) into `rows` contiguous rows of
/// about equal weight; never an empty row.
pub fn fold<T: Clone>(cells: &[(T, u64)], rows: usize) -> Vec<Vec<T>> {
    let rows = rows.clamp(1, cells.len().max(1));
    let total: u64 = cells.iter().map(|(_, weight)| weight).sum();
    let mut folded: Vec<Vec<T>> = vec![Vec::new()];
    let mut so_far = 0u64;
    for (index, (cell, weight)) in cells.iter().enumerate() {
        let left = cells.len() - index;
        let rows_to_fill = rows - folded.len();
        let current_full = so_far * rows as u64 >= total * folded.len() as u64;
        if !folded.last().is_some_and(Vec::is_empty)
            && rows_to_fill > 0
            && (current_full || left <= rows_to_fill)
        {
            folded.push(Vec::new());
        }
        folded
            .last_mut()
            .expect("one row at least")
            .push(cell.clone());
        so_far += weight;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design_space::DesignSpace;
    use crate::random::SplitMix64;

    /// `complete` as it was written before it kept references (each device cloned
    /// into a set of names and the order): the spelling it must still give.
    fn reference_complete(
        point: &DesignPoint,
        kinds: &[KindOrder],
        bound: &[Vec<String>],
    ) -> Vec<String> {
        let known: HashSet<&String> = kinds.iter().flat_map(|kind| &kind.devices).collect();
        let mut seen: HashSet<String> = HashSet::new();
        let mut order: Vec<String> = point
            .order
            .iter()
            .filter(|device| known.contains(device) && seen.insert((*device).clone()))
            .cloned()
            .collect();
        for device in kinds.iter().flat_map(|kind| &kind.devices) {
            if !seen.contains(device) {
                order.push(device.clone());
            }
        }
        for group in bound {
            let Some(at) = order.iter().position(|device| group.contains(device)) else {
                continue;
            };
            let members: Vec<String> = group
                .iter()
                .filter(|device| order.contains(device))
                .cloned()
                .collect();
            order.retain(|device| !group.contains(device));
            let at = at.min(order.len());
            order.splice(at..at, members);
        }
        order
    }

    #[test]
    fn completed_orders_are_spelled_as_before() {
        let kind = |name: &str, devices: &[&str]| KindOrder {
            kind: name.into(),
            devices: devices.iter().map(|device| device.to_string()).collect(),
            max_rows: 2,
        };
        let kinds = vec![
            kind("nmos", &["M1", "M2", "M5", "M6"]),
            kind("pmos", &["M3", "M4", "M7"]),
        ];
        let bound = vec![
            vec!["M3".to_string(), "M4".to_string()],
            vec!["M6".to_string(), "M9".to_string(), "M1".to_string()],
        ];
        let space = DesignSpace {
            arrangements: vec!["ABBA".into()],
            finger_splits: vec![1],
            dummies: vec![0],
            guard_rings: vec![false],
            row_orders: 1,
            spacings_nm: vec![0],
            aspect_ratios_pct: vec![100],
            kinds: kinds.clone(),
            modules: vec![],
            bound: vec![],
            groups: vec![],
            hierarchies: Vec::new(),
            top_devices: Vec::new(),
            pack_ranks: Vec::new(),
            blocks: Default::default(),
        };
        let mut rng = SplitMix64::new(29);
        for round in 0..500 {
            let mut point = space.random_point(&mut rng);
            // written orders: partial, repeated, with devices the space does not know
            match round % 4 {
                0 => point.order.truncate(round % 7),
                1 => point.order.push(point.order[round % 3].clone()),
                2 => point.order.insert(round % 5, "M9".into()),
                _ => point.order.reverse(),
            }
            for bound in [&bound[..], &[]] {
                assert_eq!(
                    complete(&point, &kinds, bound),
                    reference_complete(&point, &kinds, bound),
                    "{:?}",
                    point.order
                );
            }
        }
        let mut point = space.default_point();
        point.order.clear();
        assert_eq!(
            complete(&point, &kinds, &bound),
            reference_complete(&point, &kinds, &bound)
        );
    }

    #[test]
    fn folding_balances_the_weight_and_keeps_the_order() {
        let cells: Vec<(&str, u64)> = vec![("a", 4), ("b", 4), ("c", 4), ("d", 4)];
        assert_eq!(fold(&cells, 2), vec![vec!["a", "b"], vec!["c", "d"]]);
        assert_eq!(fold(&cells, 1), vec![vec!["a", "b", "c", "d"]]);
        let uneven: Vec<(&str, u64)> = vec![("a", 10), ("b", 1), ("c", 1)];
        assert_eq!(fold(&uneven, 3), vec![vec!["a"], vec!["b"], vec!["c"]]);
        assert_eq!(fold(&uneven, 2), vec![vec!["a"], vec!["b", "c"]]);
        assert_eq!(fold(&uneven, 9).len(), 3, "never more rows than cells");
    }
}
