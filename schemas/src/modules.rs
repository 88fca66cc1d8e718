//! Recognition of the analog modules a layout engineer matches and places together
//! (seed 001 §5.2.3): differential pairs, current mirrors (with their ratios), cascodes,
//! tail current sources, cross-coupled pairs and groups of matched current sources.
//!
//! Recognition is structural — it reads terminals and nets, never device names:
//! - cross-coupled pair: two equal MOS, each gate on the other's drain;
//! - differential pair: two equal MOS with a common source on a signal net, distinct
//!   gates and distinct drains, neither diode-connected, and no other MOS of their type
//!   with its source on that net (switches or drivers fed from one reference net are not
//!   pairs);
//! - tail current source: the MOS of the pair's type whose drain is the pair's common source;
//! - cascode: a MOS stacked on another of its type (its source on the other's drain, a
//!   signal net), with its own gate, neither diode-connected, not part of a pair;
//! - current mirror: MOS of one type sharing gate and source nets, with a reference that
//!   is diode-connected or whose gate is on the drain of the cascode stacked on it;
//!   ratio = (w·m/l) of each device over that of the reference (nf does not change it);
//! - matched current sources: two or more MOS of one type and length sharing gate and
//!   source nets without a reference, their gate a bias net (it drives gates of that type only).
//!
//! Parallel units (`parallel_units.rs`: devices of one size wired alike between the same
//! nets — the copies of an `m=k` instance, or an `m=k` written out device by device) are
//! one device here: recognition runs on the device standing for each set, so a module
//! needs two or more distinct members (k parallel copies match nothing among themselves)
//! and a member's strength is k times its unit's (a mirror whose output is 4 parallel
//! units of its reference's size has ratio 1:4). Each member is listed with its units
//! after it (`ModuleMember::unit_of`), so a module still draws every device.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{Map, Value, json};

use crate::circuit::{Circuit, Device, DeviceType};
use crate::module_types::{CircuitModule, ModuleMember, ModuleType};
use crate::parallel_units::{ParallelUnits, same_size, same_value};

/// Recognises the modules of a flattened circuit, in a deterministic order.
pub fn recognize_modules(circuit: &Circuit) -> Vec<CircuitModule> {
    let units = ParallelUnits::of(circuit);
    let mos: Vec<&Device> = circuit
        .devices
        .iter()
        .filter(|device| device.device_type.is_mos() && units.stands_for_its_set(&device.id))
        .collect();
    let mut builder = ModuleBuilder {
        units: &units,
        modules: Vec::new(),
        counters: BTreeMap::new(),
    };

    let cross_coupled = find_cross_coupled_pairs(&mos);
    let in_cross_pair: HashSet<&str> = cross_coupled
        .iter()
        .flat_map(|(a, b)| [a.id.as_str(), b.id.as_str()])
        .collect();
    for (a, b) in &cross_coupled {
        builder.add(
            ModuleType::CrossCoupledPair,
            vec![(a, "a"), (b, "b")],
            json!({"device_type": a.device_type.as_str(), "nets": [a.drain(), b.drain()]}),
        );
    }

    let pairs = find_differential_pairs(circuit, &mos, &in_cross_pair);
    let in_pair: HashSet<&str> = pairs
        .iter()
        .flat_map(|(a, b)| [a.id.as_str(), b.id.as_str()])
        .collect();
    for (a, b) in &pairs {
        let pair_id = builder.add(
            ModuleType::DifferentialPair,
            vec![(a, "input_a"), (b, "input_b")],
            json!({
                "device_type": a.device_type.as_str(),
                "tail_net": a.source(),
                "input_nets": [a.gate(), b.gate()],
                "output_nets": [a.drain(), b.drain()],
            }),
        );
        let tails: Vec<&Device> = mos
            .iter()
            .copied()
            .filter(|device| {
                device.device_type == a.device_type
                    && device.drain() == a.source()
                    && !in_pair.contains(device.id.as_str())
            })
            .collect();
        if !tails.is_empty() {
            builder.add(
                ModuleType::TailCurrentSource,
                tails.iter().map(|device| (*device, "tail")).collect(),
                json!({"differential_pair": pair_id, "tail_net": a.source(), "bias_net": tails[0].gate()}),
            );
        }
    }

    let cascodes = find_cascodes(circuit, &mos, &in_pair, &in_cross_pair);
    for (main, cascode) in &cascodes {
        builder.add(
            ModuleType::Cascode,
            vec![(main, "main"), (cascode, "cascode")],
            json!({"internal_net": main.drain(), "cascode_gate_net": cascode.gate(), "device_type": main.device_type.as_str()}),
        );
    }

    for group in groups_by_gate_and_source(&mos) {
        let reference = group.iter().copied().find(|device| {
            device.is_diode_connected()
                || cascodes
                    .iter()
                    .any(|(main, cascode)| main.id == device.id && cascode.drain() == device.gate())
        });
        let ratio_base = reference.unwrap_or(group[0]);
        let ratios: BTreeMap<String, f64> = group
            .iter()
            .map(|device| {
                let ratio = strength_ratio(device, ratio_base) * units.count(&device.id) as f64
                    / units.count(&ratio_base.id) as f64;
                (device.id.clone(), ratio)
            })
            .collect();
        let ratio_text = group
            .iter()
            .map(|device| format_ratio(ratios[&device.id]))
            .collect::<Vec<_>>()
            .join(":");
        let first = group[0];
        if let Some(reference) = reference {
            let mut members = vec![(reference, "reference")];
            members.extend(
                group
                    .iter()
                    .copied()
                    .filter(|device| device.id != reference.id)
                    .map(|device| (device, "output")),
            );
            let ordered_ratio = members
                .iter()
                .map(|(device, _)| format_ratio(ratios[&device.id]))
                .collect::<Vec<_>>()
                .join(":");
            builder.add(
                ModuleType::CurrentMirror,
                members,
                json!({
                    "device_type": first.device_type.as_str(),
                    "gate_net": first.gate(),
                    "source_net": first.source(),
                    "reference": reference.id,
                    "ratio": ordered_ratio,
                    "ratios": ratios,
                }),
            );
        } else if is_bias_net(circuit, first.gate().unwrap_or_default(), first.device_type)
            && group
                .iter()
                .all(|device| same_value(device.params.l, first.params.l))
        {
            builder.add(
                ModuleType::MatchedCurrentSources,
                group.iter().map(|device| (*device, "source")).collect(),
                json!({
                    "device_type": first.device_type.as_str(),
                    "gate_net": first.gate(),
                    "source_net": first.source(),
                    "ratio": ratio_text,
                    "ratios": ratios,
                }),
            );
        }
    }
    builder.modules
}

struct ModuleBuilder<'a> {
    units: &'a ParallelUnits,
    modules: Vec<CircuitModule>,
    counters: BTreeMap<&'static str, usize>,
}

impl ModuleBuilder<'_> {
    /// Adds a module of `members` (devices standing for their sets), each followed by
    /// its parallel units; returns its id.
    fn add(
        &mut self,
        module_type: ModuleType,
        members: Vec<(&Device, &str)>,
        properties: Value,
    ) -> String {
        let counter = self.counters.entry(module_type.id_prefix()).or_insert(0);
        *counter += 1;
        let id = format!("{}{}", module_type.id_prefix(), counter);
        let properties = match properties {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        self.modules.push(CircuitModule {
            id: id.clone(),
            module_type,
            devices: members
                .into_iter()
                .flat_map(|(device, role)| {
                    let member = ModuleMember {
                        device_id: device.id.clone(),
                        role: role.to_owned(),
                        unit_of: None,
                    };
                    let units = self
                        .units
                        .others(&device.id)
                        .iter()
                        .map(|unit| ModuleMember {
                            device_id: unit.clone(),
                            role: role.to_owned(),
                            unit_of: Some(device.id.clone()),
                        });
                    std::iter::once(member).chain(units)
                })
                .collect(),
            properties,
        });
        id
    }
}

fn find_cross_coupled_pairs<'a>(mos: &[&'a Device]) -> Vec<(&'a Device, &'a Device)> {
    let mut pairs = Vec::new();
    let mut used = HashSet::new();
    for (index, a) in mos.iter().enumerate() {
        for b in &mos[index + 1..] {
            if used.contains(&a.id) || used.contains(&b.id) || !same_size(a, b) {
                continue;
            }
            if a.gate() == b.drain() && b.gate() == a.drain() && a.drain() != b.drain() {
                used.insert(a.id.clone());
                used.insert(b.id.clone());
                pairs.push((*a, *b));
            }
        }
    }
    pairs
}

fn find_differential_pairs<'a>(
    circuit: &Circuit,
    mos: &[&'a Device],
    excluded: &HashSet<&str>,
) -> Vec<(&'a Device, &'a Device)> {
    let mut pairs = Vec::new();
    let mut used: HashSet<&str> = HashSet::new();
    let mut sources: BTreeMap<(&str, DeviceType), usize> = BTreeMap::new();
    for device in mos {
        if let Some(source) = device.source() {
            *sources.entry((source, device.device_type)).or_default() += 1;
        }
    }
    for (index, a) in mos.iter().enumerate() {
        for b in &mos[index + 1..] {
            let candidates_free = ![a.id.as_str(), b.id.as_str()]
                .iter()
                .any(|id| excluded.contains(id) || used.contains(id));
            if !candidates_free
                || !same_size(a, b)
                || a.is_diode_connected()
                || b.is_diode_connected()
            {
                continue;
            }
            let (Some(source), Some(gate_a), Some(gate_b)) = (a.source(), a.gate(), b.gate())
            else {
                continue;
            };
            let is_pair = Some(source) == b.source()
                && sources.get(&(source, a.device_type)) == Some(&2)
                && !circuit.net_type(source).is_supply()
                && gate_a != gate_b
                && a.drain() != b.drain()
                && !circuit.net_type(gate_a).is_supply()
                && !circuit.net_type(gate_b).is_supply();
            if is_pair {
                used.insert(&a.id);
                used.insert(&b.id);
                pairs.push((*a, *b));
            }
        }
    }
    pairs
}

/// (main, cascode) stacks.
fn find_cascodes<'a>(
    circuit: &Circuit,
    mos: &[&'a Device],
    in_pair: &HashSet<&str>,
    in_cross_pair: &HashSet<&str>,
) -> Vec<(&'a Device, &'a Device)> {
    let mut stacks = Vec::new();
    for cascode in mos {
        if in_pair.contains(cascode.id.as_str())
            || in_cross_pair.contains(cascode.id.as_str())
            || cascode.is_diode_connected()
        {
            continue;
        }
        let Some(internal) = cascode.source() else {
            continue;
        };
        if circuit.net_type(internal).is_supply() {
            continue;
        }
        for main in mos {
            let stacked = main.id != cascode.id
                && main.device_type == cascode.device_type
                && main.drain() == Some(internal)
                && !main.is_diode_connected()
                && main.gate() != cascode.gate();
            if stacked {
                stacks.push((*main, *cascode));
            }
        }
    }
    stacks
}

/// MOS devices grouped by (type, gate net, source net), groups of two or more, in device order.
fn groups_by_gate_and_source<'a>(mos: &[&'a Device]) -> Vec<Vec<&'a Device>> {
    let mut order: Vec<(DeviceType, &str, &str)> = Vec::new();
    let mut groups: BTreeMap<(DeviceType, &str, &str), Vec<&'a Device>> = BTreeMap::new();
    for device in mos {
        let (Some(gate), Some(source)) = (device.gate(), device.source()) else {
            continue;
        };
        let key = (device.device_type, gate, source);
        if !groups.contains_key(&key) {
            order.push(key);
        }
        groups.entry(key).or_default().push(device);
    }
    order
        .into_iter()
        .filter_map(|key| groups.remove(&key))
        .filter(|group| group.len() >= 2)
        .collect()
}

/// A net that drives only gates, all of devices of `device_type`: a bias line, not a clock.
fn is_bias_net(circuit: &Circuit, net_name: &str, device_type: DeviceType) -> bool {
    let Some(net) = circuit.net(net_name) else {
        return false;
    };
    if net.net_type.is_supply() {
        return false;
    }
    let gate_types: BTreeSet<DeviceType> = net
        .connections
        .iter()
        .filter(|connection| connection.terminal_name == "g")
        .filter_map(|connection| circuit.device(&connection.device_id))
        .map(|device| device.device_type)
        .collect();
    gate_types.len() == 1 && gate_types.contains(&device_type)
}

fn strength_ratio(device: &Device, base: &Device) -> f64 {
    match (device.params.strength(), base.params.strength()) {
        (Some(strength), Some(base_strength)) if base_strength > 0.0 => strength / base_strength,
        _ => 1.0,
    }
}

fn format_ratio(ratio: f64) -> String {
    let text = format!("{ratio:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}
