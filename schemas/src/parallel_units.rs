//! Parallel units: devices a layout engineer draws as the units of one device, not as
//! devices to match with each other. Module recognition (`modules.rs`) takes each set as
//! one member; the measured centroid of a member is that of its units together.
//!
//! What counts as parallel (structural, never by names):
//! - two devices of one type, model and size (w, l, nf, m) with every terminal on the
//!   same net (an `m=k` written out one device per line);
//! - the devices at one place of two instances of one subcircuit inside one parent
//!   (or the top) with every port on the same net — the copies of an `m=k` instance, or
//!   such instances written out one per line: `P/M1` and `Q/M1` (also `P/X2/M1` and
//!   `Q/X2/M1`), when of one type, model and size. Their internal nets differ (each copy
//!   has its own), but the copies are wired alike between the same nets.
//!
//! The first device of a set in the circuit's device order stands for the set.

use std::collections::{BTreeMap, HashMap};

use crate::circuit::{Circuit, Device};

/// Every set of parallel units of a circuit with two devices or more.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ParallelUnits {
    /// device id → the id of the first device of its set (only devices of sets ≥ 2)
    representative: HashMap<String, String>,
    /// first device's id → the other devices of its set, in device order
    others: BTreeMap<String, Vec<String>>,
}

impl ParallelUnits {
    pub fn of(circuit: &Circuit) -> Self {
        let index: HashMap<&str, usize> = circuit
            .devices
            .iter()
            .enumerate()
            .map(|(position, device)| (device.id.as_str(), position))
            .collect();
        let mut sets = UnionFind::new(circuit.devices.len());
        join_same_nets(&circuit.devices, &mut sets);
        join_instance_copies(circuit, &index, &mut sets);
        let mut units = ParallelUnits::default();
        for (position, device) in circuit.devices.iter().enumerate() {
            let first = sets.find(position);
            if first != position {
                let first_id = circuit.devices[first].id.clone();
                units
                    .representative
                    .insert(device.id.clone(), first_id.clone());
                units
                    .representative
                    .insert(first_id.clone(), first_id.clone());
                units
                    .others
                    .entry(first_id)
                    .or_default()
                    .push(device.id.clone());
            }
        }
        units
    }

    /// Whether `device_id` stands for its set (true for a device without parallel units).
    pub fn stands_for_its_set(&self, device_id: &str) -> bool {
        self.representative
            .get(device_id)
            .is_none_or(|first| first == device_id)
    }

    /// The other units of the set `device_id` stands for (empty without any).
    pub fn others(&self, device_id: &str) -> &[String] {
        self.others.get(device_id).map_or(&[], Vec::as_slice)
    }

    /// How many devices the set `device_id` stands for holds (1 without parallel units).
    pub fn count(&self, device_id: &str) -> usize {
        1 + self.others(device_id).len()
    }

    /// The sets of two devices or more: first device → the others.
    pub fn sets(&self) -> &BTreeMap<String, Vec<String>> {
        &self.others
    }
}

pub(crate) fn same_value(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()),
        (None, None) => true,
        _ => false,
    }
}

/// Same type, model and sizes: devices a layout engineer would match unit for unit.
pub(crate) fn same_size(a: &Device, b: &Device) -> bool {
    a.device_type == b.device_type
        && a.model == b.model
        && same_value(a.params.w, b.params.w)
        && same_value(a.params.l, b.params.l)
        && a.params.nf == b.params.nf
        && a.params.m == b.params.m
        && same_value(a.params.value, b.params.value)
}

/// Devices of one size with every terminal on the same nets.
fn join_same_nets(devices: &[Device], sets: &mut UnionFind) {
    /// a device's type and each terminal's net
    type Wiring<'a> = (&'a str, Vec<(&'a str, &'a str)>);
    let mut by_nets: BTreeMap<Wiring, Vec<usize>> = BTreeMap::new();
    for (position, device) in devices.iter().enumerate() {
        let nets = device
            .terminals
            .iter()
            .map(|(terminal, net)| (terminal.as_str(), net.as_str()))
            .collect();
        by_nets
            .entry((device.device_type.as_str(), nets))
            .or_default()
            .push(position);
    }
    for group in by_nets.values() {
        for (rank, &a) in group.iter().enumerate() {
            if let Some(&b) = group[..rank]
                .iter()
                .find(|&&b| same_size(&devices[a], &devices[b]))
            {
                sets.join(b, a);
            }
        }
    }
}

/// The devices at one place of instances of one subcircuit, in one parent, on the same nets.
fn join_instance_copies(circuit: &Circuit, index: &HashMap<&str, usize>, sets: &mut UnionFind) {
    type Wiring<'a> = (Option<&'a str>, &'a str, Vec<(&'a str, &'a str)>);
    let mut copies: BTreeMap<Wiring, Vec<&str>> = BTreeMap::new();
    for instance in &circuit.instances {
        let ports = instance
            .ports
            .iter()
            .map(|(port, net)| (port.as_str(), net.as_str()))
            .collect();
        copies
            .entry((instance.parent_path(), instance.subcircuit.as_str(), ports))
            .or_default()
            .push(instance.path.as_str());
    }
    for paths in copies.values().filter(|paths| paths.len() >= 2) {
        let first = format!("{}/", paths[0]);
        for path in &paths[1..] {
            let prefix = format!("{path}/");
            for device in &circuit.devices {
                let Some(place) = device.id.strip_prefix(&first) else {
                    continue;
                };
                let Some(&copy) = index.get(format!("{prefix}{place}").as_str()) else {
                    continue;
                };
                let Some(&own) = index.get(device.id.as_str()) else {
                    continue;
                };
                if same_size(device, &circuit.devices[copy]) {
                    sets.join(own, copy);
                }
            }
        }
    }
}

/// Disjoint sets of device positions; a set's root is its smallest position.
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(size: usize) -> Self {
        UnionFind {
            parent: (0..size).collect(),
        }
    }

    fn find(&mut self, position: usize) -> usize {
        let mut root = position;
        while self.parent[root] != root {
            root = self.parent[root];
        }
        let mut walk = position;
        while self.parent[walk] != root {
            let next = self.parent[walk];
            self.parent[walk] = root;
            walk = next;
        }
        root
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        let (low, high) = if a < b { (a, b) } else { (b, a) };
        self.parent[high] = low;
    }
}
