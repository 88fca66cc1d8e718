//! A parent's own devices as blocks of their own (issue 26): in a scope that places
//! block instances, the devices of its own (not inside any block below it) are no
//! rows of the parent — full-width rows under the packed rows of blocks, most of
//! them empty — but synthetic leaf blocks, one per row kind (nmos, pmos, passive),
//! each laid out like any block (its rows, taps, wells, routed with its ports) and
//! placed by the parent as one more instance, which its packing sets beside the
//! others as a tile about as tall as they are (one kind's rows and no channel
//! between kinds: a block of both kinds stood twice as tall as its neighbours).
//! The hierarchy splits the top's own devices only: inside a block placing a few
//! instances, its own rows were about as wide as the rows of instances, and blocks of
//! their own, each with its rails and its channel, made the block larger (a nested
//! two-stage amplifier block: 703 → 751 µm², the whole circuit 1,861 → 2,036 µm²).
//!
//! Such a block is no subcircuit of the netlist: LVS flattens the layout, so a cell
//! that groups devices differently from the netlist is fine. It keeps the parent's
//! local ids, nets and the matched modules wholly among its devices (a matched
//! module among the own devices is one device type: drawn inside one block as
//! before), and its instance path is the parent's own, so its devices' flat ids are
//! those they had in the parent. Its ports are the nets its devices share with the
//! parent's ports, the parent's blocks or its other own devices.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use centroid_schemas::{Circuit, Device, Net};

use super::{Block, ChildBlock, MIN_BLOCK_DEVICES, Scope};
use crate::device_units::RowKind;
use crate::placement_order::{is_drawable, kind_name};
use crate::plan_builder::cell_name;

/// Moves the drawable own devices of `scope` (named `parent`, instanced `instances`
/// times) into blocks of their own, one per row kind, placed by it: none (and
/// `scope` unchanged) when it places no block or draws fewer than
/// [`MIN_BLOCK_DEVICES`] devices of its own. `taken`: the names of every block cell
/// so far (`BLK_…`), extended by the new ones.
pub(super) fn split_own_devices(
    scope: &mut Scope,
    parent: &str,
    instances: usize,
    taken: &mut HashSet<String>,
) -> Vec<Block> {
    let own = &scope.circuit;
    let drawable: Vec<&Device> = own.devices.iter().filter(|d| is_drawable(d)).collect();
    if scope.children.is_empty() || drawable.len() < MIN_BLOCK_DEVICES {
        return Vec::new();
    }
    let mut kinds: BTreeMap<RowKind, Vec<&Device>> = BTreeMap::new();
    for device in drawable {
        kinds
            .entry(RowKind::of(device.device_type))
            .or_default()
            .push(device);
    }
    // the nets each device reaches: the parent's ports and its blocks' terminals, the
    // other devices' terminals (another kind's, or a device left undrawn)
    let mut reached: BTreeMap<&String, BTreeSet<Option<RowKind>>> = BTreeMap::new();
    for net in own.ports.iter().chain(
        scope
            .children
            .iter()
            .flat_map(|child| child.terminals.values()),
    ) {
        reached.entry(net).or_default().insert(None);
    }
    for device in &own.devices {
        let kind = is_drawable(device).then(|| RowKind::of(device.device_type));
        for net in device.terminals.values() {
            reached.entry(net).or_default().insert(kind);
        }
    }
    let mut blocks = Vec::new();
    let mut children = Vec::new();
    for (kind, devices) in &kinds {
        let ids: HashSet<&str> = devices.iter().map(|device| device.id.as_str()).collect();
        let touched: BTreeSet<&String> = devices
            .iter()
            .flat_map(|device| device.terminals.values())
            .collect();
        let ports: Vec<String> = touched
            .iter()
            .filter(|net| reached[*net].iter().any(|by| *by != Some(*kind)))
            .map(|net| (*net).clone())
            .collect();
        let subcircuit = unique(format!("{parent}_own_{}", kind_name(*kind)), |name| {
            taken.contains(&cell_name("BLK", name))
        });
        taken.insert(cell_name("BLK", &subcircuit));
        let name = unique(format!("own_{}", kind_name(*kind)), |name| {
            scope.children.iter().any(|child| child.name == name)
        });
        let circuit = Circuit {
            name: subcircuit.clone(),
            ports: ports.clone(),
            devices: devices.iter().map(|device| (*device).clone()).collect(),
            nets: nets_of(&own.nets, &ids, |_| false),
            modules: own
                .modules
                .iter()
                .filter(|module| {
                    let members = &module.devices;
                    members.iter().all(|m| ids.contains(m.device_id.as_str()))
                })
                .cloned()
                .collect(),
            instances: Vec::new(),
            subcircuits: Vec::new(),
        };
        children.push(ChildBlock {
            name,
            path: scope.path.clone(),
            subcircuit: subcircuit.clone(),
            terminals: ports.iter().map(|net| (net.clone(), net.clone())).collect(),
        });
        blocks.push(Block {
            subcircuit,
            ports,
            scope: Scope {
                path: scope.path.clone(),
                circuit,
                children: Vec::new(),
            },
            instances,
        });
    }
    scope.children.extend(children);
    // the parent keeps its undrawn devices and the nets they or its blocks join
    let joined: HashSet<&String> = scope
        .children
        .iter()
        .flat_map(|child| child.terminals.values())
        .collect();
    let parent_circuit = &mut scope.circuit;
    parent_circuit.devices.retain(|device| !is_drawable(device));
    let kept: HashSet<&str> = parent_circuit
        .devices
        .iter()
        .map(|device| device.id.as_str())
        .collect();
    parent_circuit.nets = nets_of(&parent_circuit.nets, &kept, |net| {
        joined.contains(&net.name)
    });
    parent_circuit.modules.retain(|module| {
        module
            .devices
            .iter()
            .all(|m| kept.contains(m.device_id.as_str()))
    });
    blocks
}

/// `name`, with `_` appended while `taken` says it is.
fn unique(mut name: String, taken: impl Fn(&str) -> bool) -> String {
    while taken(&name) {
        name.push('_');
    }
    name
}

/// The nets touched by the devices `ids`, with only their connections, and the nets
/// `also` keeps (without any).
fn nets_of(nets: &[Net], ids: &HashSet<&str>, also: impl Fn(&Net) -> bool) -> Vec<Net> {
    nets.iter()
        .filter_map(|net| {
            let connections: Vec<_> = net
                .connections
                .iter()
                .filter(|connection| ids.contains(connection.device_id.as_str()))
                .cloned()
                .collect();
            (!connections.is_empty() || also(net)).then(|| Net {
                connections,
                ..net.clone()
            })
        })
        .collect()
}
