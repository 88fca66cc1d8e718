//! The circuit model (seed 001 §5.2.3): devices and nets of the flattened top cell,
//! with net types and the recognised modules.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::module_types::CircuitModule;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceType {
    Nmos,
    Pmos,
    Resistor,
    Capacitor,
}

impl DeviceType {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceType::Nmos => "nmos",
            DeviceType::Pmos => "pmos",
            DeviceType::Resistor => "resistor",
            DeviceType::Capacitor => "capacitor",
        }
    }

    pub fn is_mos(self) -> bool {
        matches!(self, DeviceType::Nmos | DeviceType::Pmos)
    }

    /// The terminals a device of this type has, all required.
    pub fn terminal_names(self) -> &'static [&'static str] {
        if self.is_mos() {
            &["g", "d", "s", "b"]
        } else {
            &["p", "n"]
        }
    }
}

/// Sizes of one device (seed 001 §5.2.3). Lengths in metres.
///
/// As in SPICE/BSIM, `w` is the total width of one instance, split over its `nf`
/// fingers (each finger `w / nf` wide); `m` is the number of parallel instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceParams {
    pub w: Option<f64>,
    pub l: Option<f64>,
    pub m: u32,
    pub nf: u32,
    /// Resistance (Ω) or capacitance (F) when the netlist gives it (schema 1.1.0).
    pub value: Option<f64>,
}

impl DeviceParams {
    /// Total drawn width over all fingers and instances (m).
    pub fn total_width(&self) -> Option<f64> {
        self.w.map(|w| w * f64::from(self.m))
    }

    /// Drive strength W_total / L, the quantity current-mirror ratios compare.
    pub fn strength(&self) -> Option<f64> {
        Some(self.total_width()? / self.l?)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Device {
    /// Hierarchical id, e.g. `X1/M3` for device `M3` of subcell instance `X1`.
    pub id: String,
    #[serde(rename = "type")]
    pub device_type: DeviceType,
    pub model: Option<String>,
    pub params: DeviceParams,
    /// Terminal name → net name.
    pub terminals: BTreeMap<String, String>,
}

impl Device {
    pub fn terminal(&self, name: &str) -> Option<&str> {
        self.terminals.get(name).map(String::as_str)
    }

    /// Gate, drain, source of a MOS device.
    pub fn gate(&self) -> Option<&str> {
        self.terminal("g")
    }
    pub fn drain(&self) -> Option<&str> {
        self.terminal("d")
    }
    pub fn source(&self) -> Option<&str> {
        self.terminal("s")
    }

    /// A MOS whose gate is tied to its drain.
    pub fn is_diode_connected(&self) -> bool {
        self.device_type.is_mos() && self.gate().is_some() && self.gate() == self.drain()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetType {
    Signal,
    Power,
    Ground,
}

impl NetType {
    pub fn as_str(self) -> &'static str {
        match self {
            NetType::Signal => "signal",
            NetType::Power => "power",
            NetType::Ground => "ground",
        }
    }

    pub fn is_supply(self) -> bool {
        !matches!(self, NetType::Signal)
    }
}

/// Infers a net's type from its name (seed 001 §5.2.4, extended to the usual names).
///
/// The last segment of a hierarchical name counts, case-insensitive: names starting
/// with vdd, vcc, avdd, dvdd, pvdd or vpwr are power; names starting with vss, gnd,
/// agnd, dgnd, pgnd, avss, dvss or vgnd, and `0`, are ground; everything else is a signal.
pub fn infer_net_type(net_name: &str) -> NetType {
    const POWER_PREFIXES: [&str; 6] = ["vdd", "vcc", "avdd", "dvdd", "pvdd", "vpwr"];
    const GROUND_PREFIXES: [&str; 8] =
        ["vss", "gnd", "agnd", "dgnd", "pgnd", "avss", "dvss", "vgnd"];
    let leaf = net_name
        .rsplit('/')
        .next()
        .unwrap_or(net_name)
        .to_ascii_lowercase();
    if POWER_PREFIXES.iter().any(|prefix| leaf.starts_with(prefix)) {
        NetType::Power
    } else if leaf == "0"
        || GROUND_PREFIXES
            .iter()
            .any(|prefix| leaf.starts_with(prefix))
    {
        NetType::Ground
    } else {
        NetType::Signal
    }
}

/// One terminal of one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalRef {
    pub device_id: String,
    pub terminal_name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Net {
    pub name: String,
    pub connections: Vec<TerminalRef>,
    pub net_type: NetType,
    /// The DC current (A) its wires must carry, from `objectives.json`
    /// `constraints.net_currents` (set once the three inputs are checked together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<f64>,
}

/// The flattened circuit of the top cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Circuit {
    /// The top cell's name.
    pub name: String,
    /// The top cell's declared ports, in order (a SPICE subcircuit's pins); empty when
    /// the netlist declares none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    pub devices: Vec<Device>,
    pub nets: Vec<Net>,
    pub modules: Vec<CircuitModule>,
    /// The subcircuit instances the flattening walked, parents before their
    /// children (empty for a netlist without hierarchy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<SubcircuitInstance>,
    /// Each subcircuit instantiated, flattened on its own (local ids and nets), in
    /// the order of its first instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subcircuits: Vec<Subcircuit>,
}

/// One subcircuit (a cell of the netlist) flattened as if it were the top: its
/// devices with local ids (`M3`, `X2/M1`) on local nets (its ports by their names,
/// `X2/n1` inside its own instances), and the instances below it (paths relative to it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subcircuit {
    pub name: String,
    /// Its declared ports, in order (or, undeclared, the ports its instances connect).
    pub ports: Vec<String>,
    pub devices: Vec<Device>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<SubcircuitInstance>,
}

/// One subcircuit instance of the hierarchy: its devices are the flat devices whose
/// ids start with `path/`, its internal nets are named `path/net`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubcircuitInstance {
    /// The instance names from the top, e.g. `X1` or `X1/X2` (copies of `m=k`: one
    /// instance each).
    pub path: String,
    /// The name of the cell (subcircuit) instantiated.
    pub subcircuit: String,
    /// Each connected port of the subcircuit → the flat net it is joined to.
    pub ports: BTreeMap<String, String>,
}

impl SubcircuitInstance {
    /// The prefix of the ids and internal nets of this instance (`X1/`).
    pub fn prefix(&self) -> String {
        format!("{}/", self.path)
    }

    /// The path of the instance containing this one (`None` below the top).
    pub fn parent_path(&self) -> Option<&str> {
        self.path.rsplit_once('/').map(|(parent, _)| parent)
    }

    /// The instance's name inside its parent (`X2` of `X1/X2`).
    pub fn local_name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

impl Circuit {
    pub fn device(&self, device_id: &str) -> Option<&Device> {
        self.devices.iter().find(|device| device.id == device_id)
    }

    pub fn net(&self, net_name: &str) -> Option<&Net> {
        self.nets.iter().find(|net| net.name == net_name)
    }

    /// The subcircuit named `name`, flattened on its own.
    pub fn subcircuit(&self, name: &str) -> Option<&Subcircuit> {
        self.subcircuits
            .iter()
            .find(|subcircuit| subcircuit.name == name)
    }

    /// The subcircuit instance at `path` (`X1/X2`).
    pub fn instance(&self, path: &str) -> Option<&SubcircuitInstance> {
        self.instances.iter().find(|instance| instance.path == path)
    }

    pub fn net_type(&self, net_name: &str) -> NetType {
        self.net(net_name)
            .map_or_else(|| infer_net_type(net_name), |net| net.net_type)
    }

    /// A text for planner prompts and `centroid validate`.
    pub fn summarize(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "circuit: {}", self.name);
        let _ = writeln!(text, "devices: {}", self.devices.len());
        for device in &self.devices {
            let _ = write!(text, "  - {}: {}", device.id, device.device_type.as_str());
            if let Some(w) = device.params.w {
                let _ = write!(text, ", W={}", format_micrometres(w));
            }
            if let Some(l) = device.params.l {
                let _ = write!(text, ", L={}", format_micrometres(l));
            }
            if device.device_type.is_mos() || device.params.nf != 1 {
                let _ = write!(text, ", nf={}", device.params.nf);
            }
            let _ = write!(text, ", m={}", device.params.m);
            let terminals: Vec<String> = device
                .terminals
                .iter()
                .map(|(terminal, net)| format!("{terminal}={net}"))
                .collect();
            let _ = writeln!(text, " ({})", terminals.join(" "));
        }
        let _ = writeln!(text, "nets: {}", self.nets.len());
        for net in &self.nets {
            let _ = writeln!(
                text,
                "  - {} ({}, {} terminals)",
                net.name,
                net.net_type.as_str(),
                net.connections.len()
            );
        }
        let _ = writeln!(text, "modules: {}", self.modules.len());
        for module in &self.modules {
            let _ = writeln!(text, "  - {}", module.describe());
        }
        text
    }
}

/// Formats metres as micrometres with up to four decimals, e.g. `0.5um`.
pub fn format_micrometres(metres: f64) -> String {
    let micrometres = metres * 1e6;
    let text = format!("{micrometres:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}um")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_types_from_usual_names() {
        for power in [
            "vdd",
            "VDD",
            "vdda",
            "avdd",
            "dvdd",
            "vcc",
            "vpwr",
            "X1/vdd_core",
        ] {
            assert_eq!(infer_net_type(power), NetType::Power, "{power}");
        }
        for ground in [
            "vss", "gnd", "GND", "agnd", "dgnd", "avss", "dvss", "vgnd", "0", "vssa",
        ] {
            assert_eq!(infer_net_type(ground), NetType::Ground, "{ground}");
        }
        for signal in ["out", "vbias", "vcm", "inp", "tail", "vd", "X1/gnd2x"] {
            let expected = if signal.ends_with("gnd2x") {
                NetType::Ground
            } else {
                NetType::Signal
            };
            assert_eq!(infer_net_type(signal), expected, "{signal}");
        }
    }

    #[test]
    fn micrometre_formatting() {
        assert_eq!(format_micrometres(0.5e-6), "0.5um");
        assert_eq!(format_micrometres(4e-6), "4um");
        assert_eq!(format_micrometres(0.13e-6), "0.13um");
    }
}
