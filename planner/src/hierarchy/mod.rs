//! The hierarchy a blocks layout follows (issue 26): which subcircuits become blocks
//! — laid out once as their own routed cell, each instance a reference to it — and,
//! per block and for the top, the scope its plan lays out: its own devices under local
//! ids and nets (ports by their port names), the matched modules wholly inside it, and
//! the block instances it places.
//!
//! A subcircuit is a block when it holds two drawable devices or more. Its scope is
//! the subcircuit flattened on its own (`Circuit::subcircuits`: ports keep their names
//! even where an instance joins two of them); its first instance is its
//! representative, whose flat devices give the point's order, the matched modules
//! and the net types. Devices of instances that are no block stay flat in the nearest
//! block above them (local ids like `X5/M1`). A top that places blocks and draws two
//! devices or more of its own draws them as synthetic blocks, one per row kind, which
//! it places like the others (`own_devices.rs`): no full-width rows of its own under
//! the packed rows of blocks.
//!
//! Each block has a design space of its own: its scope's circuit's, computed as a
//! flat circuit's (`DesignSpace::blocks`). A point's own point for a block gives its
//! knobs and its order by local ids; without one, the block takes the order genes of
//! its representative's devices (those of its other instances move nothing), the
//! per-module genes of the matched modules inside the representative, and the
//! point's global knobs. The top's knobs lay out the parent: its devices and the rows
//! of instances, folded by its aspect ratio.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use centroid_schemas::{
    Circuit, CircuitModule, Device, Net, Subcircuit, SubcircuitInstance, TerminalRef,
};

use crate::placement_order::is_drawable;
use crate::plan_builder::cell_name;

mod own_devices;
use own_devices::split_own_devices;

/// The fewest drawable devices a subcircuit's instance holds to be laid out as a block.
pub const MIN_BLOCK_DEVICES: usize = 2;
/// Above this many devices, the engineer's default is blocks even when every
/// subcircuit is instanced once (a flat layout of a large circuit is sparse and slow).
pub const BLOCKS_BY_DEFAULT_ABOVE: usize = 30;
/// Above this many devices the flat layout is not offered at all: flat rows of a large
/// circuit grow with the square of its devices (a 500-device bank of OTAs flat: 30–116 s
/// and 80,000–560,000 µm² per candidate against 8 s and 15,400 µm² in blocks), so its
/// candidates would hold the farm's slots for layouts no search keeps.
pub const FLAT_OFFERED_UP_TO: usize = 100;

/// A block instance placed by a scope.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildBlock {
    /// the instance's name in the scope (`X2`), its device id in the scope's routing
    pub name: String,
    /// the instance's path from the top (`X1/X2`)
    pub path: String,
    pub subcircuit: String,
    /// each port the block exposes → the scope's net it joins
    pub terminals: BTreeMap<String, String>,
}

/// What one plan lays out into one cell: the top or a block.
#[derive(Debug, Clone)]
pub struct Scope {
    /// the path of the (representative) instance, `""` for the top
    pub path: String,
    /// the scope's own devices under local ids, its nets (those its devices or its
    /// blocks touch) and the matched modules wholly among its devices
    pub circuit: Circuit,
    /// the block instances it places, in the circuit's order
    pub children: Vec<ChildBlock>,
}

impl Scope {
    /// The flat id of a local device id (`X1/` + `M3`).
    pub fn flat_id(&self, local_id: &str) -> String {
        if self.path.is_empty() {
            local_id.to_string()
        } else {
            format!("{}/{local_id}", self.path)
        }
    }
}

/// A subcircuit laid out once as its own cell.
#[derive(Debug, Clone)]
pub struct Block {
    pub subcircuit: String,
    /// the ports its cell exposes (touched by its devices or its blocks), sorted
    pub ports: Vec<String>,
    pub scope: Scope,
    /// how many instances of it the circuit holds (nested ones counted per copy)
    pub instances: usize,
}

/// The blocks of a circuit, every block after the blocks it places, and the top.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    pub blocks: Vec<Block>,
    pub top: Scope,
}

impl Hierarchy {
    /// The blocks of `circuit`, or `None` when no subcircuit qualifies.
    pub fn of(circuit: &Circuit) -> Option<Hierarchy> {
        let names: HashSet<&str> = circuit
            .subcircuits
            .iter()
            .filter(|subcircuit| {
                let drawable = subcircuit.devices.iter().filter(|d| is_drawable(d));
                drawable.count() >= MIN_BLOCK_DEVICES
            })
            .map(|subcircuit| subcircuit.name.as_str())
            .collect();
        if names.is_empty() {
            return None;
        }
        let mut blocks = Vec::new();
        for subcircuit in &circuit.subcircuits {
            if !names.contains(subcircuit.name.as_str()) {
                continue;
            }
            let all: Vec<&SubcircuitInstance> = circuit
                .instances
                .iter()
                .filter(|instance| instance.subcircuit == subcircuit.name)
                .collect();
            let Some(representative) = all.first() else {
                continue;
            };
            blocks.push(Block {
                subcircuit: subcircuit.name.clone(),
                ports: subcircuit.ports.clone(),
                scope: block_scope(circuit, subcircuit, representative, &names),
                instances: all.len(),
            });
        }
        let mut top = scope_of(
            circuit,
            (&circuit.devices, &circuit.instances),
            &names,
            (String::new(), circuit.name.clone(), circuit.ports.clone()),
            |net| net.to_string(),
        );
        // the top's own devices: blocks of their own beside its other blocks (not a
        // block's: inside one, its own rows are about as wide as its few instances, and
        // blocks of their own, each with its rails and channel, made it larger)
        let mut taken: HashSet<String> = circuit
            .subcircuits
            .iter()
            .map(|subcircuit| cell_name("BLK", &subcircuit.name))
            .collect();
        blocks.extend(split_own_devices(&mut top, &circuit.name, 1, &mut taken));
        order_bottom_up(&mut blocks);
        // bottom up: a block exposes the ports its devices or its blocks' exposed
        // ports touch; a parent joins only those
        let mut exposed: HashMap<String, BTreeSet<String>> = HashMap::new();
        for block in &mut blocks {
            keep_exposed(&mut block.scope, &exposed);
            let touched: BTreeSet<String> = block
                .scope
                .circuit
                .nets
                .iter()
                .map(|net| net.name.clone())
                .collect();
            block.ports.retain(|port| touched.contains(port));
            exposed.insert(
                block.subcircuit.clone(),
                block.ports.iter().cloned().collect(),
            );
        }
        keep_exposed(&mut top, &exposed);
        Some(Hierarchy { blocks, top })
    }

    pub fn block(&self, subcircuit: &str) -> Option<&Block> {
        self.blocks
            .iter()
            .find(|block| block.subcircuit == subcircuit)
    }

    /// Whether blocks change anything: a block instanced twice or more, a large
    /// circuit, or a top placing two things or more (one instance wrapping the whole
    /// circuit alone is the flat layout with a detour).
    pub fn worth_offering(&self, circuit: &Circuit) -> bool {
        self.blocks_by_default(circuit)
            || self.top.children.len() + self.top.circuit.devices.len() >= 2
    }

    /// Whether the flat layout is offered beside blocks: not for a circuit above
    /// [`FLAT_OFFERED_UP_TO`] devices.
    pub fn flat_offered(&self, circuit: &Circuit) -> bool {
        circuit.devices.len() <= FLAT_OFFERED_UP_TO
    }

    /// Whether a layout engineer would build blocks: a block instanced twice or more,
    /// or a circuit too large to lay out flat.
    pub fn blocks_by_default(&self, circuit: &Circuit) -> bool {
        self.blocks.iter().any(|block| block.instances >= 2)
            || circuit.devices.len() > BLOCKS_BY_DEFAULT_ABOVE
    }
}

/// Drops the terminals of the scope's blocks on ports they do not expose, and the
/// nets only those touched.
fn keep_exposed(scope: &mut Scope, exposed: &HashMap<String, BTreeSet<String>>) {
    for child in &mut scope.children {
        let ports = exposed.get(&child.subcircuit);
        child
            .terminals
            .retain(|port, _| ports.is_some_and(|ports| ports.contains(port)));
    }
    let joined: HashSet<&String> = scope
        .children
        .iter()
        .flat_map(|child| child.terminals.values())
        .collect();
    scope
        .circuit
        .nets
        .retain(|net| !net.connections.is_empty() || joined.contains(&net.name));
}

/// Sorts blocks so that each comes after every block it places.
fn order_bottom_up(blocks: &mut Vec<Block>) {
    let mut ordered: Vec<Block> = Vec::new();
    while !blocks.is_empty() {
        let placed: HashSet<String> = ordered
            .iter()
            .map(|block| block.subcircuit.clone())
            .collect();
        let ready = blocks
            .iter()
            .position(|block| {
                block
                    .scope
                    .children
                    .iter()
                    .all(|child| placed.contains(&child.subcircuit))
            })
            .unwrap_or(0);
        ordered.push(blocks.remove(ready));
    }
    *blocks = ordered;
}

/// The scope of a block: its subcircuit's devices and instances, its nets typed as
/// the representative's flat nets.
fn block_scope(
    circuit: &Circuit,
    subcircuit: &Subcircuit,
    representative: &SubcircuitInstance,
    names: &HashSet<&str>,
) -> Scope {
    let prefix = representative.prefix();
    scope_of(
        circuit,
        (&subcircuit.devices, &subcircuit.instances),
        names,
        (
            representative.path.clone(),
            subcircuit.name.clone(),
            subcircuit.ports.clone(),
        ),
        |local| {
            representative
                .ports
                .get(local)
                .cloned()
                .unwrap_or_else(|| format!("{prefix}{local}"))
        },
    )
}

/// The scope of a cell given its flattened devices and instances (ids and paths
/// relative to it): the devices not inside a block below it, the block instances
/// nearest below it, the nets they touch (typed as `flat_net` names them in the
/// circuit) and the circuit's matched modules wholly among its devices (those of the
/// representative at `path`).
fn scope_of(
    circuit: &Circuit,
    (devices, instances): (&[Device], &[SubcircuitInstance]),
    names: &HashSet<&str>,
    (path, name, ports): (String, String, Vec<String>),
    flat_net: impl Fn(&str) -> String,
) -> Scope {
    let block_paths: HashSet<&str> = instances
        .iter()
        .filter(|instance| names.contains(instance.subcircuit.as_str()))
        .map(|instance| instance.path.as_str())
        .collect();
    // whether a path lies inside a block instance of this cell
    let inside_block = |relative: &str| -> bool {
        let mut current = relative;
        while let Some((parent, _)) = current.rsplit_once('/') {
            if block_paths.contains(parent) {
                return true;
            }
            current = parent;
        }
        false
    };
    let own: Vec<Device> = devices
        .iter()
        .filter(|device| !inside_block(&device.id))
        .cloned()
        .collect();
    let children: Vec<ChildBlock> = instances
        .iter()
        .filter(|child| block_paths.contains(child.path.as_str()) && !inside_block(&child.path))
        .map(|child| ChildBlock {
            name: child.path.clone(),
            path: if path.is_empty() {
                child.path.clone()
            } else {
                format!("{path}/{}", child.path)
            },
            subcircuit: child.subcircuit.clone(),
            terminals: child.ports.clone(),
        })
        .collect();
    let nets = local_nets(circuit, &own, &children, flat_net);
    let flat_prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let local_of: HashMap<String, String> = own
        .iter()
        .map(|device| (format!("{flat_prefix}{}", device.id), device.id.clone()))
        .collect();
    let modules: Vec<CircuitModule> = circuit
        .modules
        .iter()
        .filter(|module| {
            let members = &module.devices;
            members
                .iter()
                .all(|member| local_of.contains_key(&member.device_id))
        })
        .map(|module| {
            let mut module = module.clone();
            for member in &mut module.devices {
                member.device_id = local_of[&member.device_id].clone();
            }
            module
        })
        .collect();
    Scope {
        path,
        circuit: Circuit {
            name,
            ports,
            devices: own,
            nets,
            modules,
            instances: Vec::new(),
            subcircuits: Vec::new(),
        },
        children,
    }
}

/// The nets a scope's devices and blocks touch, with the flat circuit's net types.
fn local_nets(
    circuit: &Circuit,
    devices: &[Device],
    children: &[ChildBlock],
    flat_net: impl Fn(&str) -> String,
) -> Vec<Net> {
    let mut nets: Vec<Net> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut touch = |name: &str, connection: Option<TerminalRef>| {
        let at = *index.entry(name.to_string()).or_insert_with(|| {
            let flat = flat_net(name);
            nets.push(Net {
                name: name.to_string(),
                connections: Vec::new(),
                net_type: circuit.net_type(&flat),
                current: circuit.net(&flat).and_then(|net| net.current),
            });
            nets.len() - 1
        });
        nets[at].connections.extend(connection);
    };
    for device in devices {
        for (terminal, net) in &device.terminals {
            let connection = TerminalRef {
                device_id: device.id.clone(),
                terminal_name: terminal.clone(),
            };
            touch(net, Some(connection));
        }
    }
    for child in children {
        for net in child.terminals.values() {
            touch(net, None);
        }
    }
    nets
}
