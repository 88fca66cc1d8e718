//! The bulk of a MOS line written with three nodes (`M1 d g s model`). A layout engineer
//! expects an nmos in the substrate, tied to the ground, and a pmos in an n-well tied to
//! the supply — not to its source, which would give every such pmos a well of its own.
//! So the bulk is, in this order: the net most other transistors of the same type in the
//! same subcircuit have as bulk; the first ground (nmos) or supply (pmos) net in reach —
//! a port of the subcircuit, a node of its lines, a `.global` — by the usual names
//! (`vss`, `gnd`, `0` …; `vdd`, `vcc` …); else the device's own source. A warning says
//! which, and why.

use std::collections::HashMap;

use crate::circuit::{DeviceType, NetType, infer_net_type};
use crate::spice::build::Builder;
use crate::spice::models::Usage;
use crate::spice::parser::{Body, ElementKind, Name, Subckt};

/// The bulk a three-node nmos and pmos of one subcircuit get, and why.
#[derive(Debug, Default)]
pub(super) struct BulkDefaults {
    nmos: Option<(Name, &'static str)>,
    pmos: Option<(Name, &'static str)>,
}

impl BulkDefaults {
    pub fn for_type(&self, device_type: DeviceType) -> Option<&(Name, &'static str)> {
        match device_type {
            DeviceType::Nmos => self.nmos.as_ref(),
            DeviceType::Pmos => self.pmos.as_ref(),
            DeviceType::Resistor | DeviceType::Capacitor => None,
        }
    }
}

impl Builder<'_, '_> {
    pub(super) fn bulk_defaults(&self, body: &Body, subckt: Option<&Subckt>) -> BulkDefaults {
        let three_node = body.elements.iter().any(|element| {
            matches!(element.kind, ElementKind::Mos | ElementKind::Instance)
                && element.nodes.len() == 3
        });
        if !three_node {
            return BulkDefaults::default();
        }
        // (type, bulk key) → (count, first name)
        let mut bulks: HashMap<(DeviceType, String), (usize, &Name)> = HashMap::new();
        for element in &body.elements {
            let (usage, four) = match element.kind {
                ElementKind::Mos => (Usage::Mos, element.nodes.len() == 4),
                ElementKind::Instance => (Usage::Instance, element.nodes.len() == 4),
                _ => continue,
            };
            let model = element.target.as_ref().map(|name| name.text.as_str());
            let calls_subckt = element
                .target
                .as_ref()
                .is_some_and(|target| self.subckt_index.contains_key(&target.key()));
            if element.kind == ElementKind::Instance && calls_subckt {
                continue;
            }
            let Ok(Some(device_type)) = self.resolver.resolve(model, usage) else {
                continue;
            };
            if four && device_type.is_mos() {
                let bulk = &element.nodes[3];
                let entry = bulks.entry((device_type, bulk.key())).or_insert((0, bulk));
                entry.0 += 1;
            }
        }
        let in_reach: Vec<&Name> = subckt
            .into_iter()
            .flat_map(|subckt| &subckt.ports)
            .chain(body.elements.iter().flat_map(|element| &element.nodes))
            .chain(&self.deck.globals)
            .collect();
        let pick = |device_type: DeviceType, net_type: NetType, named: &'static str| {
            let most_used = bulks
                .iter()
                .filter(|((kind, _), _)| *kind == device_type)
                .max_by_key(|(_, (count, name))| (*count, std::cmp::Reverse(name.at)))
                .map(|(_, (_, name))| ((*name).clone(), "the bulk of the others of its type here"));
            most_used.or_else(|| {
                in_reach
                    .iter()
                    .find(|name| infer_net_type(&name.text) == net_type)
                    .map(|name| ((*name).clone(), named))
            })
        };
        BulkDefaults {
            nmos: pick(DeviceType::Nmos, NetType::Ground, "the ground net"),
            pmos: pick(DeviceType::Pmos, NetType::Power, "the supply net"),
        }
    }
}
