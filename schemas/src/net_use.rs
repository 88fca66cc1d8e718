//! Supplies known by their use, not their name: a net the netlist does not type, whose
//! name says nothing (`infer_net_type` gives signal), but which only ever biases wells
//! and feeds sources — every terminal on it the bulk or source of a MOS of one polarity,
//! at least one of them a bulk — is a supply: power when those devices are PMOS (an
//! n-well bias, e.g. an LDO's `vin`), ground when NMOS. A net touching a gate, a drain
//! or any other device stays a signal (a source follower's output with its bulk on its
//! source has the bias device's drain on it; a switch's output has no bulk on it).

use std::collections::HashSet;

use crate::circuit::{Circuit, DeviceType, NetType};

/// Types the untyped supply nets of `circuit` by their use; `declared` names the nets
/// whose type the netlist states (never changed). Returns the nets retyped, in order.
pub(crate) fn type_supplies_by_use(
    circuit: &mut Circuit,
    declared: &HashSet<String>,
) -> Vec<String> {
    let mut retyped = Vec::new();
    for index in 0..circuit.nets.len() {
        let net = &circuit.nets[index];
        if net.net_type != NetType::Signal || declared.contains(&net.name) {
            continue;
        }
        let Some(net_type) = supply_by_use(circuit, index) else {
            continue;
        };
        circuit.nets[index].net_type = net_type;
        retyped.push(circuit.nets[index].name.clone());
    }
    retyped
}

fn supply_by_use(circuit: &Circuit, index: usize) -> Option<NetType> {
    let net = &circuit.nets[index];
    let mut polarity = None;
    let mut bulks = 0;
    for connection in &net.connections {
        let device = circuit.device(&connection.device_id)?;
        if !matches!(device.device_type, DeviceType::Nmos | DeviceType::Pmos) {
            return None;
        }
        match connection.terminal_name.as_str() {
            "b" => bulks += 1,
            "s" => {}
            _ => return None,
        }
        match polarity {
            None => polarity = Some(device.device_type),
            Some(seen) if seen != device.device_type => return None,
            Some(_) => {}
        }
    }
    if bulks == 0 {
        return None;
    }
    match polarity? {
        DeviceType::Pmos => Some(NetType::Power),
        _ => Some(NetType::Ground),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::type_supplies_by_use;
    use crate::circuit::{Circuit, Device, DeviceParams, DeviceType, Net, NetType, TerminalRef};

    fn mos(id: &str, device_type: DeviceType, d: &str, g: &str, s: &str, b: &str) -> Device {
        let terminals: BTreeMap<String, String> = [("d", d), ("g", g), ("s", s), ("b", b)]
            .into_iter()
            .map(|(terminal, net)| (terminal.to_string(), net.to_string()))
            .collect();
        Device {
            id: id.into(),
            device_type,
            model: None,
            params: DeviceParams {
                w: Some(1e-6),
                l: Some(1e-6),
                m: 1,
                nf: 1,
                value: None,
            },
            terminals,
        }
    }

    fn circuit(devices: Vec<Device>) -> Circuit {
        let mut nets: Vec<Net> = Vec::new();
        for device in &devices {
            for (terminal, name) in &device.terminals {
                let at = match nets.iter().position(|net| &net.name == name) {
                    Some(at) => at,
                    None => {
                        nets.push(Net {
                            name: name.clone(),
                            connections: Vec::new(),
                            net_type: crate::circuit::infer_net_type(name),
                            current: None,
                        });
                        nets.len() - 1
                    }
                };
                nets[at].connections.push(TerminalRef {
                    device_id: device.id.clone(),
                    terminal_name: terminal.clone(),
                });
            }
        }
        Circuit {
            name: "c".into(),
            ports: Vec::new(),
            devices,
            nets,
            modules: Vec::new(),
            subcircuits: Vec::new(),
            instances: Vec::new(),
        }
    }

    fn type_of(circuit: &Circuit, name: &str) -> NetType {
        circuit.net(name).unwrap().net_type
    }

    #[test]
    fn a_net_only_biasing_wells_and_sources_is_a_supply() {
        // an LDO's input: the pass device and the error amplifier's load on `vin`
        let mut ldo = circuit(vec![
            mos("MP", DeviceType::Pmos, "out", "gate", "vin", "vin"),
            mos("M3", DeviceType::Pmos, "n1", "n1", "vin", "vin"),
            mos("M1", DeviceType::Nmos, "n1", "fb", "tail", "vss"),
        ]);
        let retyped = type_supplies_by_use(&mut ldo, &HashSet::new());
        assert_eq!(retyped, vec!["vin".to_string()]);
        assert_eq!(type_of(&ldo, "vin"), NetType::Power);
        assert_eq!(type_of(&ldo, "tail"), NetType::Signal);
        // an NMOS well bias (deep n-well style): only bulks and sources of NMOS
        let mut isolated = circuit(vec![mos("M1", DeviceType::Nmos, "o", "i", "vneg", "vneg")]);
        type_supplies_by_use(&mut isolated, &HashSet::new());
        assert_eq!(type_of(&isolated, "vneg"), NetType::Ground);
    }

    #[test]
    fn signals_stay_signals() {
        let mut follower = circuit(vec![
            // a source follower with its bulk on its source: its bias device's drain is on it
            mos("M7", DeviceType::Pmos, "vss", "out", "buf", "buf"),
            mos("M6", DeviceType::Pmos, "buf", "vbp", "vdd2", "vdd2"),
            // two NMOS switches sharing their sources: no bulk on the net
            mos("S1", DeviceType::Nmos, "a", "p1", "mux", "vss"),
            mos("S2", DeviceType::Nmos, "b", "p2", "mux", "vss"),
            // one net on the bulks of both polarities
            mos("MA", DeviceType::Pmos, "x", "y", "both", "both"),
            mos("MB", DeviceType::Nmos, "x", "y", "both", "both"),
        ]);
        let declared: HashSet<String> = HashSet::new();
        assert!(type_supplies_by_use(&mut follower, &declared).is_empty());
        assert_eq!(type_of(&follower, "buf"), NetType::Signal);
        assert_eq!(type_of(&follower, "mux"), NetType::Signal);
        assert_eq!(type_of(&follower, "both"), NetType::Signal);
    }

    #[test]
    fn a_declared_type_is_kept() {
        let mut ldo = circuit(vec![mos(
            "MP",
            DeviceType::Pmos,
            "out",
            "gate",
            "vin",
            "vin",
        )]);
        let declared: HashSet<String> = ["vin".to_string()].into_iter().collect();
        assert!(type_supplies_by_use(&mut ldo, &declared).is_empty());
        assert_eq!(type_of(&ldo, "vin"), NetType::Signal);
    }
}
