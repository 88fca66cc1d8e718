//! What each device type of a circuit needs of the rule set before a layout can be drawn
//! (mirrors the KLayout skills: `worker/skills/centroid_skills/skills/devices.py` draws,
//! `skills/lvs.py` extracts). A circuit whose devices the rule set cannot draw is refused
//! when the inputs load — before any candidate runs — naming the device, its type and the
//! missing layer role. What a foundry deck expects beyond these: docs/contracts.md §1.

use crate::circuit::{Circuit, DeviceType};
use crate::drc_rules::{DrcRuleSet, role_missing_message};
use crate::issue::{InputIssue, name_list};

/// Layer roles a device type needs beyond the roles every rule set has (active, poly,
/// contact, metal1, via1, metal2, and pplus or nplus), with what the layer is for.
pub fn roles_for_device(device_type: DeviceType) -> &'static [(&'static str, &'static str)] {
    match device_type {
        DeviceType::Nmos => &[],
        DeviceType::Pmos => &[(
            "nwell",
            "the n-well around the pmos diffusion and its well tap",
        )],
        DeviceType::Resistor => &[(
            "poly_res",
            "the resistor-body marker over the poly bar; without it the bar is extracted as a plain poly wire (a short) and LVS fails",
        )],
        // The plate capacitor is metal1 under metal2, both roles every rule set has.
        DeviceType::Capacitor => &[],
    }
}

/// One issue per (device type, missing role), naming the devices that need it.
pub(crate) fn check_devices_drawable(
    circuit: &Circuit,
    rules: &DrcRuleSet,
    rules_label: &str,
    netlist_label: &str,
) -> Vec<InputIssue> {
    let mut issues = Vec::new();
    for device_type in [
        DeviceType::Nmos,
        DeviceType::Pmos,
        DeviceType::Resistor,
        DeviceType::Capacitor,
    ] {
        let devices: Vec<&str> = circuit
            .devices
            .iter()
            .filter(|device| device.device_type == device_type)
            .map(|device| device.id.as_str())
            .collect();
        let Some(first) = devices.first() else {
            continue;
        };
        for (role, purpose) in roles_for_device(device_type) {
            if rules.layer_for_role(role).is_some() {
                continue;
            }
            let kind = device_type.as_str();
            let others = if devices.len() > 1 {
                format!(
                    " (and every other {kind}: {})",
                    name_list(devices[1..].iter().copied())
                )
            } else {
                String::new()
            };
            let why = format!(
                " ({purpose}), which device {first} ({kind}) of {netlist_label} needs{others}"
            );
            issues.push(InputIssue {
                file: rules_label.to_owned(),
                pointer: "/layers".to_owned(),
                message: role_missing_message(role, &why),
                location: None,
            });
        }
    }
    issues
}
