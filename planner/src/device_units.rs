//! How the planner cuts devices into unit instances and sorts them into rows.

use centroid_schemas::{Device, DeviceType};
use serde_json::{Value, json};

use crate::plan_builder::skill_id;

/// The rows a placement groups cells into (one device kind per row when routed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowKind {
    Nmos,
    Pmos,
    Passive,
}

impl RowKind {
    pub fn of(device_type: DeviceType) -> RowKind {
        match device_type {
            DeviceType::Nmos => RowKind::Nmos,
            DeviceType::Pmos => RowKind::Pmos,
            _ => RowKind::Passive,
        }
    }
}

pub fn is_mos(device: &Device) -> bool {
    matches!(device.device_type, DeviceType::Nmos | DeviceType::Pmos)
}

/// The finger split of a module: the largest divisor of every device's `nf` that is
/// at most the point's value. Each device becomes `split` units of `nf/split`
/// fingers and `w/split` width: the same fingers, W and L (what LVS compares).
/// Splitting a finger itself would change the device, so `nf = 1` stays one unit.
pub fn common_split(devices: &[&Device], wanted: u32) -> u32 {
    (1..=wanted.max(1))
        .rev()
        .find(|split| {
            devices
                .iter()
                .all(|device| device.params.nf.max(1) % split == 0)
        })
        .unwrap_or(1)
}

/// How each device of a matched module is cut into identical units, or `None` when
/// no cut gives every device the same unit (type, finger width, L, fingers per
/// unit). First the module's common split (as the point asks); else, for ratioed
/// devices (a 1:4 mirror of 1- and 4-finger devices), each device cut into units
/// of the fingers all devices have in common (their gcd), so a 4-finger device
/// becomes four units of the 1-finger devices' unit.
pub fn unit_splits(devices: &[&Device], wanted: u32) -> Option<Vec<u32>> {
    let same_unit = |splits: &[u32]| {
        devices
            .iter()
            .zip(splits)
            .all(|(device, split)| unit_key(device, *split) == unit_key(devices[0], splits[0]))
    };
    let common = vec![common_split(devices, wanted); devices.len()];
    if same_unit(&common) {
        return Some(common);
    }
    let unit = devices
        .iter()
        .map(|device| device.params.nf.max(1))
        .fold(0, gcd);
    let per_device: Vec<u32> = devices
        .iter()
        .map(|device| device.params.nf.max(1) / unit.max(1))
        .collect();
    same_unit(&per_device).then_some(per_device)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

fn unit_fingers(device: &Device, split: u32) -> u32 {
    device.params.nf.max(1) / split
}

/// The unit device of `device` cut `split` ways, as the module skills take it.
pub fn unit_spec(device: &Device, split: u32) -> Value {
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

/// Whether matched devices may share source/drain regions between their units: one
/// gate net, one source net and one bulk net for all (a current mirror, a bias or
/// cascode pair), so that neighbouring units facing a source — or a device's drain
/// facing itself — face the same net. A differential pair (two gate nets) may not.
pub fn share_diffusion(devices: &[&Device]) -> bool {
    let Some(first) = devices.first() else {
        return false;
    };
    first.gate().is_some()
        && first.source().is_some()
        && devices.iter().all(|device| {
            device.gate() == first.gate()
                && device.source() == first.source()
                && device.terminal("b") == first.terminal("b")
        })
}

/// What two units must share to be interchangeable in a matched structure: the
/// device (type, finger width, L, fingers per unit) and the bulk net — a matched
/// cell stands in one well, so devices on two bulk nets (a PMOS with its bulk tied
/// to its source) are drawn as cells of their own.
pub fn unit_key(device: &Device, split: u32) -> (String, String, String, u32, Option<&str>) {
    let params = &device.params;
    (
        device.device_type.as_str().to_string(),
        format!("{:e}", params.w.unwrap_or(0.0) / split as f64),
        format!("{:e}", params.l.unwrap_or(0.0)),
        unit_fingers(device, split),
        device.terminal("b"),
    )
}

/// The k-th permutation (lexicographic) of `items`.
pub fn permutation<T: Clone>(items: &[T], mut k: usize) -> Vec<T> {
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use centroid_schemas::DeviceParams;

    use super::*;

    fn pmos(id: &str, source: &str, bulk: &str) -> Device {
        let terminals: BTreeMap<String, String> =
            [("d", "out"), ("g", "in"), ("s", source), ("b", bulk)]
                .into_iter()
                .map(|(terminal, net)| (terminal.to_string(), net.to_string()))
                .collect();
        Device {
            id: id.into(),
            device_type: DeviceType::Pmos,
            model: None,
            params: DeviceParams {
                w: Some(2e-6),
                l: Some(5e-7),
                m: 1,
                nf: 2,
                value: None,
            },
            terminals,
        }
    }

    #[test]
    fn devices_on_two_bulk_nets_are_no_matched_cell() {
        let (a, b) = (pmos("M1", "vdd", "vdd"), pmos("M2", "vdd", "vdd"));
        assert_eq!(unit_splits(&[&a, &b], 2), Some(vec![2, 2]));
        let tied = pmos("M3", "x", "x");
        assert_eq!(
            unit_splits(&[&a, &tied], 2),
            None,
            "one matched cell stands in one well"
        );
    }
}
