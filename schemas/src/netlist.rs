//! `netlist.json`: the document as written, and the checks a schema cannot express.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Deserialize;

use crate::circuit::{DeviceType, NetType};
use crate::issue::{IssueSink, name_list, pointer_join};
use crate::netlist_hierarchy::{check_hierarchy_is_acyclic, check_hierarchy_size};
use crate::printable_names::check_printable;

/// Physical bounds on a drawn length (m): below 1 nm or above 1 mm a value was
/// almost certainly written in the wrong unit.
pub const MIN_LENGTH_M: f64 = 1e-9;
pub const MAX_LENGTH_M: f64 = 1e-3;
/// A resistor's bar may be longer: a folded bar of megohms (a PDK cell's `series=46`
/// segments of 35 µm is 1.6 mm); 1 cm still catches a length written in micrometres.
pub const MAX_RESISTOR_LENGTH_M: f64 = 1e-2;
/// A MOS's total width may be as large (an LDO's pass device: 8 mm over many fingers);
/// each finger, `w / nf`, at most [`MAX_LENGTH_M`].
pub const MAX_MOS_WIDTH_M: f64 = 1e-2;
/// Bounds on multiplicity and finger count.
pub const MAX_MULTIPLICITY: f64 = 10_000.0;
pub const MAX_FINGERS: f64 = 1_000.0;
/// The deepest cell hierarchy read (as for SPICE subcircuits).
pub const MAX_HIERARCHY_DEPTH: usize = 100;
/// The most devices the flattened top cell may hold. Far more than an analog block has;
/// it bounds the work after loading (module recognition compares devices in pairs), and
/// without it a hierarchy of a few dozen cells, each instantiating the next twice, would
/// flatten to billions.
pub const MAX_FLAT_DEVICES: u64 = 10_000;

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct NetlistDocument {
    pub cells: Vec<CellDef>,
    pub top: String,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct CellDef {
    pub name: String,
    #[serde(default)]
    pub ports: Option<Vec<String>>,
    pub devices: Vec<DeviceDef>,
    #[serde(default)]
    pub nets: Vec<NetDecl>,
    #[serde(default)]
    pub subcells: Vec<SubcellDef>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum NetDecl {
    Name(String),
    Typed {
        name: String,
        #[serde(rename = "type", default)]
        net_type: Option<NetType>,
    },
}

impl NetDecl {
    pub fn name(&self) -> &str {
        match self {
            NetDecl::Name(name) | NetDecl::Typed { name, .. } => name,
        }
    }

    pub fn declared_type(&self) -> Option<NetType> {
        match self {
            NetDecl::Name(_) => None,
            NetDecl::Typed { net_type, .. } => *net_type,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct DeviceDef {
    pub id: String,
    #[serde(rename = "type")]
    pub device_type: DeviceType,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub w: Option<f64>,
    #[serde(default)]
    pub l: Option<f64>,
    #[serde(default)]
    pub m: Option<f64>,
    #[serde(default)]
    pub nf: Option<f64>,
    #[serde(default)]
    pub value: Option<f64>,
    pub terminals: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SubcellDef {
    pub name: String,
    pub cell: String,
    #[serde(default)]
    pub connections: BTreeMap<String, String>,
}

impl CellDef {
    /// Names a subcell instance may connect: the declared ports, or else every net of the cell.
    pub fn port_names(&self) -> BTreeSet<&str> {
        if let Some(ports) = &self.ports {
            return ports.iter().map(String::as_str).collect();
        }
        let mut names: BTreeSet<&str> = self.nets.iter().map(NetDecl::name).collect();
        for device in &self.devices {
            names.extend(device.terminals.values().map(String::as_str));
        }
        for subcell in &self.subcells {
            names.extend(subcell.connections.values().map(String::as_str));
        }
        names
    }
}

/// Semantic checks of a schema-valid netlist. Returns true when the document is sound.
pub(crate) fn check_netlist(document: &NetlistDocument, sink: &mut IssueSink) -> bool {
    let mut first_index_of_cell: HashMap<&str, usize> = HashMap::new();
    for (cell_index, cell) in document.cells.iter().enumerate() {
        let pointer = format!("/cells/{cell_index}/name");
        if !check_printable(&cell.name, &pointer, "cell name", sink) {
            continue;
        }
        if cell.name.trim().is_empty() {
            sink.push(pointer, "cell name is empty; give the cell a name");
        } else if let Some(first) = first_index_of_cell.insert(&cell.name, cell_index) {
            first_index_of_cell.insert(&cell.name, first);
            sink.push(pointer, format!("duplicate cell name \"{}\" (first defined at /cells/{first}); cell names must be unique", cell.name));
        }
    }
    let cell_names = || name_list(document.cells.iter().map(|cell| cell.name.as_str()));
    if check_printable(&document.top, "/top", "top cell name", sink)
        && !first_index_of_cell.contains_key(document.top.as_str())
    {
        sink.push(
            "/top",
            format!(
                "top cell \"{}\" is not defined; defined cells: {}",
                document.top,
                cell_names()
            ),
        );
    }
    // The ports of each cell, computed once (not once per instance of the cell).
    let ports: Vec<BTreeSet<&str>> = document.cells.iter().map(CellDef::port_names).collect();
    for (cell_index, cell) in document.cells.iter().enumerate() {
        check_cell(
            document,
            cell_index,
            cell,
            &first_index_of_cell,
            &ports,
            sink,
        );
    }
    if check_hierarchy_is_acyclic(document, &first_index_of_cell, sink)
        && let Some(&top) = first_index_of_cell.get(document.top.as_str())
    {
        check_hierarchy_size(document, &first_index_of_cell, top, sink);
    }
    sink.is_empty()
}

fn check_cell(
    document: &NetlistDocument,
    cell_index: usize,
    cell: &CellDef,
    cells: &HashMap<&str, usize>,
    ports_of: &[BTreeSet<&str>],
    sink: &mut IssueSink,
) {
    let cell_pointer = format!("/cells/{cell_index}");
    let mut instance_names: HashMap<&str, String> = HashMap::new();
    for (device_index, device) in cell.devices.iter().enumerate() {
        let pointer = format!("{cell_pointer}/devices/{device_index}");
        check_instance_name(
            &device.id,
            &format!("{pointer}/id"),
            "device id",
            &mut instance_names,
            sink,
        );
        check_device(device, &pointer, sink);
    }
    for (subcell_index, subcell) in cell.subcells.iter().enumerate() {
        let pointer = format!("{cell_pointer}/subcells/{subcell_index}");
        check_instance_name(
            &subcell.name,
            &format!("{pointer}/name"),
            "subcell instance name",
            &mut instance_names,
            sink,
        );
        if !check_printable(&subcell.cell, &format!("{pointer}/cell"), "cell name", sink) {
            continue;
        }
        let Some(&target_index) = cells.get(subcell.cell.as_str()) else {
            sink.push(
                format!("{pointer}/cell"),
                format!(
                    "unknown cell \"{}\"; defined cells: {}",
                    subcell.cell,
                    name_list(document.cells.iter().map(|cell| cell.name.as_str()))
                ),
            );
            continue;
        };
        let target = &document.cells[target_index];
        let ports = &ports_of[target_index];
        for (port, net) in &subcell.connections {
            let port_pointer = pointer_join(&format!("{pointer}/connections"), port);
            if !check_printable(port, &port_pointer, "port name", sink)
                || !check_printable(net, &port_pointer, "net name", sink)
            {
                continue;
            }
            if !ports.contains(port.as_str()) {
                sink.push(
                    port_pointer.clone(),
                    format!(
                        "cell \"{}\" has no port \"{port}\"; its ports: {}",
                        target.name,
                        name_list(ports.iter().copied())
                    ),
                );
            }
            if net.trim().is_empty() {
                sink.push(port_pointer, "net name is empty");
            }
        }
    }
    for (net_index, net) in cell.nets.iter().enumerate() {
        let pointer = match net {
            NetDecl::Name(_) => format!("{cell_pointer}/nets/{net_index}"),
            NetDecl::Typed { .. } => format!("{cell_pointer}/nets/{net_index}/name"),
        };
        check_printable(net.name(), &pointer, "net name", sink);
    }
    if let Some(ports) = &cell.ports {
        let mut seen = BTreeSet::new();
        for (port_index, port) in ports.iter().enumerate() {
            let port_pointer = format!("{cell_pointer}/ports/{port_index}");
            if check_printable(port, &port_pointer, "port name", sink)
                && !seen.insert(port.as_str())
            {
                sink.push(port_pointer, format!("duplicate port \"{port}\""));
            }
        }
    }
}

fn check_instance_name<'a>(
    name: &'a str,
    pointer: &str,
    what: &str,
    seen: &mut HashMap<&'a str, String>,
    sink: &mut IssueSink,
) {
    if !check_printable(name, pointer, what, sink) {
        return;
    }
    if name.trim().is_empty() {
        sink.push(
            pointer,
            format!("{what} is empty; give it a name unique in its cell"),
        );
        return;
    }
    if name.contains('/') {
        sink.push(pointer, format!("{what} \"{name}\" contains '/', which separates hierarchy levels; use another character"));
    }
    if let Some(first) = seen.get(name) {
        sink.push(
            pointer,
            format!(
                "duplicate {what} \"{name}\" (first at {first}); ids must be unique within a cell"
            ),
        );
    } else {
        seen.insert(name, pointer.to_owned());
    }
}

fn check_device(device: &DeviceDef, pointer: &str, sink: &mut IssueSink) {
    let kind = device.device_type.as_str();
    let required_size = match device.device_type {
        DeviceType::Nmos | DeviceType::Pmos => "total gate width of one instance",
        DeviceType::Resistor | DeviceType::Capacitor => "drawn width",
    };
    let max_w = if device.device_type.is_mos() {
        MAX_MOS_WIDTH_M
    } else {
        MAX_LENGTH_M
    };
    check_length(device.w, ("w", max_w), required_size, kind, pointer, sink);
    if device.device_type.is_mos() {
        check_finger_width(device, pointer, sink);
    }
    let l_meaning = match device.device_type {
        DeviceType::Nmos | DeviceType::Pmos => "gate length",
        DeviceType::Resistor | DeviceType::Capacitor => "drawn length",
    };
    let max_l = match device.device_type {
        DeviceType::Resistor => MAX_RESISTOR_LENGTH_M,
        _ => MAX_LENGTH_M,
    };
    check_length(device.l, ("l", max_l), l_meaning, kind, pointer, sink);
    check_count(device.m, "m", MAX_MULTIPLICITY, pointer, sink);
    check_count(device.nf, "nf", MAX_FINGERS, pointer, sink);
    if !device.device_type.is_mos() && device.nf.is_some_and(|nf| nf != 1.0) {
        sink.push(
            format!("{pointer}/nf"),
            format!(
                "nf applies to MOS devices only; a {kind} has nf 1 (use m for parallel copies)"
            ),
        );
    }
    if let Some(value) = device.value
        && (!value.is_finite() || value <= 0.0)
    {
        sink.push(
            format!("{pointer}/value"),
            "value must be a positive number (ohm or farad)",
        );
    }
    let valid_terminals = device.device_type.terminal_names();
    for required in valid_terminals {
        if !device.terminals.contains_key(*required) {
            sink.push(
                format!("{pointer}/terminals"),
                format!(
                    "missing terminal \"{required}\"; a {kind} has terminals {}",
                    valid_terminals.join(", ")
                ),
            );
        }
    }
    for (terminal, net) in &device.terminals {
        let terminal_pointer = pointer_join(&format!("{pointer}/terminals"), terminal);
        if !check_printable(terminal, &terminal_pointer, "terminal name", sink)
            || !check_printable(net, &terminal_pointer, "net name", sink)
        {
            continue;
        }
        if !valid_terminals.contains(&terminal.as_str()) {
            sink.push(
                terminal_pointer.clone(),
                format!(
                    "unknown terminal \"{terminal}\" for a {kind}; valid terminals: {}",
                    valid_terminals.join(", ")
                ),
            );
        }
        if net.trim().is_empty() {
            sink.push(
                terminal_pointer,
                "net name is empty; connect the terminal to a named net",
            );
        }
    }
}

/// A MOS finger (`w / nf`) at most [`MAX_LENGTH_M`]: a wide device is drawn as fingers.
fn check_finger_width(device: &DeviceDef, pointer: &str, sink: &mut IssueSink) {
    let (Some(w), nf) = (device.w, device.nf.unwrap_or(1.0)) else {
        return;
    };
    if !(w.is_finite() && w <= MAX_MOS_WIDTH_M && nf >= 1.0) || w / nf <= MAX_LENGTH_M {
        return; // the bounds of w and nf are reported on their own
    }
    let fewest = (w / MAX_LENGTH_M).ceil();
    sink.push(
        format!("{pointer}/nf"),
        format!(
            "{}: w = {w} m over nf = {nf} is a finger {} µm wide, more than the 1 mm a finger may be; give nf = {fewest} fingers or more, or m parallel devices",
            device.id,
            (w / nf * 1e6 * 1000.0).round() / 1000.0
        ),
    );
}

/// `(field, maximum)`: the field's name and its largest sound value (m).
fn check_length(
    value: Option<f64>,
    (field, maximum): (&str, f64),
    meaning: &str,
    kind: &str,
    pointer: &str,
    sink: &mut IssueSink,
) {
    let pointer = format!("{pointer}/{field}");
    match value {
        None => sink.push(pointer, format!("a {kind} needs {field} ({meaning}, in metres), e.g. 1e-6 for 1 µm")),
        Some(value) if !value.is_finite() || value <= 0.0 => {
            sink.push(pointer, format!("{field} = {value} must be greater than 0 (metres, e.g. 1e-6 for 1 µm)"));
        }
        Some(value) if value < MIN_LENGTH_M => sink.push(
            pointer,
            format!("{field} = {value:e} m is below 1 nm; lengths are in metres (0.5 µm is 5e-7), valid range {MIN_LENGTH_M:e}..{maximum:e}"),
        ),
        Some(value) if value > maximum => sink.push(
            pointer,
            format!(
                "{field} = {value} m is absurdly large; lengths are in metres ({value} µm would be {:e}), valid range {MIN_LENGTH_M:e}..{maximum:e}",
                value * 1e-6
            ),
        ),
        Some(_) => {}
    }
}

fn check_count(value: Option<f64>, field: &str, maximum: f64, pointer: &str, sink: &mut IssueSink) {
    if let Some(value) = value
        && (value.fract() != 0.0 || !(1.0..=maximum).contains(&value))
    {
        sink.push(
            format!("{pointer}/{field}"),
            format!("{field} = {value} must be a whole number from 1 to {maximum}"),
        );
    }
}
