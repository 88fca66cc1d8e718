//! Bulk nets the rule set cannot keep apart, refused when the inputs load. Every nmos
//! stands in the one p-type substrate (Centroid draws no deep n-well or isolated p-well),
//! so nmos bulks on different nets would be shorted through it; every distinct pmos bulk
//! net needs an n-well of its own, kept apart from the others by the rule set's n-well
//! spacing rule. The message names the nets, their devices and the rule.

use std::collections::BTreeMap;

use crate::circuit::{Circuit, DeviceType};
use crate::drc_rules::{DrcRuleSet, RuleType};
use crate::issue::{InputIssue, name_list};
use crate::rule_lookup::{Context, RuleLookup};

/// Bulk net → the devices of one type on it, in netlist order of the nets' first device.
fn bulk_nets(circuit: &Circuit, device_type: DeviceType) -> Vec<(&str, Vec<&str>)> {
    let mut order: Vec<&str> = Vec::new();
    let mut devices: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for device in &circuit.devices {
        if device.device_type != device_type {
            continue;
        }
        let Some(bulk) = device.terminal("b") else {
            continue;
        };
        let entry = devices.entry(bulk).or_default();
        if entry.is_empty() {
            order.push(bulk);
        }
        entry.push(&device.id);
    }
    order
        .into_iter()
        .map(|net| (net, devices.remove(net).unwrap_or_default()))
        .collect()
}

/// The nets with their devices, the first few of each.
fn describe(nets: &[(&str, Vec<&str>)]) -> String {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = nets
        .iter()
        .take(SHOWN)
        .map(|(net, devices)| format!("{net} ({})", name_list(devices.iter().copied())))
        .collect();
    if nets.len() > SHOWN {
        parts.push(format!("… ({} more nets)", nets.len() - SHOWN));
    }
    parts.join(", ")
}

/// `pointer_of` gives a device's definition in the netlist: an nmos issue points at the
/// first device whose bulk is not on the first net.
pub(crate) fn check_bulk_wells(
    circuit: &Circuit,
    rules: &DrcRuleSet,
    (rules_label, netlist_label): (&str, &str),
    pointer_of: &dyn Fn(&str) -> String,
) -> Vec<InputIssue> {
    let mut issues = Vec::new();
    let nmos = bulk_nets(circuit, DeviceType::Nmos);
    if nmos.len() > 1 {
        issues.push(InputIssue {
            file: netlist_label.to_owned(),
            pointer: pointer_of(nmos[1].1[0]),
            message: format!(
                "nmos bulks are on {} nets — {} —: every nmos stands in the one p-type substrate and the rule set has no layer that isolates a p-well from it, so these nets would be shorted; connect every nmos bulk to one net",
                nmos.len(),
                describe(&nmos)
            ),
            location: None,
        });
    }
    let pmos = bulk_nets(circuit, DeviceType::Pmos);
    let lookup = RuleLookup::new(rules);
    if pmos.len() > 1
        && let Some(nwell) = lookup.layer_for("nwell")
        && lookup
            .minimum(RuleType::Spacing, "nwell", None, Context::Default)
            .is_none()
    {
        issues.push(InputIssue {
            file: rules_label.to_owned(),
            pointer: "/rules".to_owned(),
            message: format!(
                "pmos bulks are on {} nets — {} — of {netlist_label}: each needs an n-well of its own, kept apart by the n-well spacing rule, which the rule set lacks; add a spacing rule on layer \"{}\"",
                pmos.len(),
                describe(&pmos),
                nwell.name
            ),
            location: None,
        });
    }
    issues
}
