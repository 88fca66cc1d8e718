//! Flattening the hierarchy of a sound netlist into the top cell, with stable
//! hierarchical ids (`X1/M3`) and nets mapped through the subcell connections; the
//! instances walked are kept (path, subcircuit, port → flat net).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::circuit::{
    Circuit, Device, DeviceParams, Net, NetType, Subcircuit, SubcircuitInstance, TerminalRef,
    infer_net_type,
};
use crate::net_use::type_supplies_by_use;
use crate::netlist::{CellDef, NetlistDocument};

/// What joins a passive's id and the number of one of its units (`R2.m1`).
pub const PASSIVE_UNIT: &str = ".m";

/// Flattens the top cell. `document` must have passed `check_netlist`.
/// Returns the circuit (without modules) and warnings as (pointer, message).
pub(crate) fn flatten(document: &NetlistDocument) -> (Circuit, Vec<(String, String)>) {
    let cells: HashMap<&str, (usize, &CellDef)> = document
        .cells
        .iter()
        .enumerate()
        .map(|(index, cell)| (cell.name.as_str(), (index, cell)))
        .collect();
    let (top_index, top) = cells[document.top.as_str()];
    let mut flattener = Flattener {
        cells: &cells,
        devices: Vec::new(),
        instances: Vec::new(),
        declared_types: HashMap::new(),
        warnings: Vec::new(),
    };
    flattener.visit(top_index, top, "", &HashMap::new());

    let mut nets: Vec<Net> = Vec::new();
    let mut net_index: HashMap<String, usize> = HashMap::new();
    for device in &flattener.devices {
        for (terminal, net_name) in &device.terminals {
            let index = *net_index.entry(net_name.clone()).or_insert_with(|| {
                let net_type = flattener
                    .declared_types
                    .get(net_name)
                    .copied()
                    .unwrap_or_else(|| infer_net_type(net_name));
                nets.push(Net {
                    name: net_name.clone(),
                    connections: Vec::new(),
                    net_type,
                    current: None,
                });
                nets.len() - 1
            });
            nets[index].connections.push(TerminalRef {
                device_id: device.id.clone(),
                terminal_name: terminal.clone(),
            });
        }
    }
    // Declared nets of the top cell first, in their order; then the others as they appear.
    let declared_order: HashMap<&str, usize> = top
        .nets
        .iter()
        .enumerate()
        .map(|(index, declared)| (declared.name(), index))
        .collect();
    nets.sort_by_key(|net| {
        declared_order
            .get(net.name.as_str())
            .copied()
            .unwrap_or(usize::MAX)
    });
    for (declared_index, declared) in top.nets.iter().enumerate() {
        if !net_index.contains_key(declared.name()) {
            flattener.warnings.push((
                format!("/cells/{top_index}/nets/{declared_index}"),
                format!(
                    "net \"{}\" is declared but connects no device terminal",
                    declared.name()
                ),
            ));
        }
    }
    let mut circuit = Circuit {
        name: top.name.clone(),
        ports: top.ports.clone().unwrap_or_default(),
        devices: flattener.devices,
        nets,
        modules: Vec::new(),
        subcircuits: subcircuits(&cells, &flattener.instances),
        instances: flattener.instances,
    };
    let declared: HashSet<String> = flattener.declared_types.keys().cloned().collect();
    for net in type_supplies_by_use(&mut circuit, &declared) {
        let net_type = circuit.net_type(&net).as_str();
        flattener.warnings.push((
            format!("/cells/{top_index}"),
            format!("net \"{net}\" is typed {net_type}: it only biases wells and feeds sources (declare its type to override)"),
        ));
    }
    (circuit, flattener.warnings)
}

/// Each subcircuit of `instances`, flattened as if it were the top (its own
/// warnings are those of its instances, already given).
fn subcircuits(
    cells: &HashMap<&str, (usize, &CellDef)>,
    instances: &[SubcircuitInstance],
) -> Vec<Subcircuit> {
    let mut flattened: Vec<Subcircuit> = Vec::new();
    for instance in instances {
        if flattened
            .iter()
            .any(|subcircuit| subcircuit.name == instance.subcircuit)
        {
            continue;
        }
        let (index, cell) = cells[instance.subcircuit.as_str()];
        let mut flattener = Flattener {
            cells,
            devices: Vec::new(),
            instances: Vec::new(),
            declared_types: HashMap::new(),
            warnings: Vec::new(),
        };
        flattener.visit(index, cell, "", &HashMap::new());
        flattened.push(Subcircuit {
            name: cell.name.clone(),
            ports: cell
                .ports
                .clone()
                .unwrap_or_else(|| instance.ports.keys().cloned().collect()),
            devices: flattener.devices,
            instances: flattener.instances,
        });
    }
    flattened
}

struct Flattener<'a> {
    cells: &'a HashMap<&'a str, (usize, &'a CellDef)>,
    devices: Vec<Device>,
    instances: Vec<SubcircuitInstance>,
    declared_types: HashMap<String, NetType>,
    warnings: Vec<(String, String)>,
}

impl<'a> Flattener<'a> {
    /// Adds the devices of `cell`, instantiated at `prefix` (`""` for the top,
    /// `"X1/"` below), with `port_nets` mapping the cell's ports to parent nets.
    fn visit(
        &mut self,
        cell_index: usize,
        cell: &'a CellDef,
        prefix: &str,
        port_nets: &HashMap<&str, String>,
    ) {
        let resolve = |net: &str| -> String {
            port_nets
                .get(net)
                .cloned()
                .unwrap_or_else(|| format!("{prefix}{net}"))
        };
        for declared in &cell.nets {
            if let Some(net_type) = declared.declared_type() {
                self.declared_types
                    .entry(resolve(declared.name()))
                    .or_insert(net_type);
            }
        }
        for device in &cell.devices {
            let terminals: BTreeMap<String, String> = device
                .terminals
                .iter()
                .map(|(terminal, net)| (terminal.clone(), resolve(net)))
                .collect();
            let m = device.m.map_or(1, |m| m as u32);
            let params = DeviceParams {
                w: device.w,
                l: device.l,
                m,
                nf: device.nf.map_or(1, |nf| nf as u32),
                value: device.value,
            };
            let id = format!("{prefix}{}", device.id);
            if device.device_type.is_mos() || m == 1 {
                self.devices.push(Device {
                    id,
                    device_type: device.device_type,
                    model: device.model.clone(),
                    params,
                    terminals,
                });
                continue;
            }
            // a resistor or capacitor of m units: m devices in parallel (`R2.m1` …),
            // drawn and compared as an m=k written out device by device (a MOS's units
            // are fingers of its one cell)
            for unit in 1..=m {
                self.devices.push(Device {
                    id: format!("{id}{PASSIVE_UNIT}{unit}"),
                    device_type: device.device_type,
                    model: device.model.clone(),
                    params: DeviceParams { m: 1, ..params },
                    terminals: terminals.clone(),
                });
            }
        }
        for (subcell_index, subcell) in cell.subcells.iter().enumerate() {
            let (target_index, target) = self.cells[subcell.cell.as_str()];
            let child_prefix = format!("{prefix}{}/", subcell.name);
            let child_ports: HashMap<&str, String> = subcell
                .connections
                .iter()
                .map(|(port, net)| (port.as_str(), resolve(net)))
                .collect();
            if let Some(ports) = &target.ports {
                for port in ports
                    .iter()
                    .filter(|port| !child_ports.contains_key(port.as_str()))
                {
                    self.warnings.push((
                        format!("/cells/{cell_index}/subcells/{subcell_index}/connections"),
                        format!("port \"{port}\" of instance \"{}\" is not connected; it becomes the internal net \"{child_prefix}{port}\"", subcell.name),
                    ));
                }
            }
            self.instances.push(SubcircuitInstance {
                path: format!("{prefix}{}", subcell.name),
                subcircuit: target.name.clone(),
                ports: child_ports
                    .iter()
                    .map(|(port, net)| (port.to_string(), net.clone()))
                    .collect(),
            });
            self.visit(target_index, target, &child_prefix, &child_ports);
        }
    }
}

/// The JSON pointer of the definition of the flattened device `flat_id` (`X1/X2/M3`:
/// device `M3` of the cell instance `X2` of instance `X1` of the top cell) in a netlist
/// document, following the subcell names from the top.
pub(crate) fn definition_pointer(document: &serde_json::Value, flat_id: &str) -> Option<String> {
    let cells = document.get("cells")?.as_array()?;
    let index_of = |name: &str| {
        cells
            .iter()
            .position(|cell| cell.get("name").and_then(serde_json::Value::as_str) == Some(name))
    };
    let mut cell_index = index_of(document.get("top")?.as_str()?)?;
    let mut path = flat_id.split('/').peekable();
    while let Some(name) = path.next() {
        let cell = &cells[cell_index];
        let named = |list: &str, key: &str| {
            cell.get(list)?
                .as_array()?
                .iter()
                .position(|item| item.get(key).and_then(serde_json::Value::as_str) == Some(name))
        };
        if path.peek().is_none() {
            let device = named("devices", "id").or_else(|| {
                // one unit of a passive's m (`R2.m1`): the passive's definition
                let (stem, unit) = name.rsplit_once(PASSIVE_UNIT)?;
                unit.parse::<u32>().ok()?;
                cell.get("devices")?.as_array()?.iter().position(|item| {
                    item.get("id").and_then(serde_json::Value::as_str) == Some(stem)
                })
            })?;
            return Some(format!("/cells/{cell_index}/devices/{device}"));
        }
        let subcell = named("subcells", "name")?;
        cell_index = index_of(cell["subcells"][subcell].get("cell")?.as_str()?)?;
    }
    None
}
