//! Device sizes the layout generators cannot draw under the rule set, found when the inputs
//! load — the refusals of `layout.create_device` (`worker/skills/centroid_skills/mos.py`,
//! `passives.py`, `skills/devices.py`) that need no drawing to know: a gate shorter than the
//! poly width rule, a finger narrower than the diffusion width or than one contact with
//! its enclosures, a resistor bar narrower than its width rules, a capacitor plate narrower
//! than the metal width, more fingers or instances than one device cell holds. `validate`,
//! `run` and SubmitJob refuse them alike, naming the devices, the size and the rule; the
//! coordinator's probe of the rule set on a worker stays the backstop for what only
//! drawing finds.

use std::fmt::Write as _;

use crate::circuit::{Circuit, Device, DeviceType};
use crate::drc_rules::DrcRuleSet;
use crate::issue::InputIssue;
use crate::rule_lookup::{Context, Minimum, RESISTOR_CONTEXT, RuleLookup, micrometres};

/// The most gate fingers (nf × m) of one transistor cell (`skills/devices.py` MAX_FINGERS).
pub const MAX_CELL_FINGERS: u32 = 1024;
/// The most fingers (nf) and parallel instances (m) `layout.create_device` takes (its schema):
/// as many as a cell holds in all, so a power switch of several hundred fingers is drawn.
pub const MAX_CELL_NF: u32 = MAX_CELL_FINGERS;
pub const MAX_CELL_M: u32 = MAX_CELL_FINGERS;

/// One issue per distinct problem, naming the first device and the others alike.
/// `pointer_of` gives a device's definition in the netlist (the issue's pointer).
pub(crate) fn check_device_sizes(
    circuit: &Circuit,
    rules: &DrcRuleSet,
    netlist_label: &str,
    pointer_of: &dyn Fn(&str) -> String,
) -> Vec<InputIssue> {
    let lookup = RuleLookup::new(rules);
    // (message, devices) in the order found: devices with one problem share one message.
    let mut problems: Vec<(String, Vec<&str>)> = Vec::new();
    for device in &circuit.devices {
        for message in size_problems(device, &lookup) {
            match problems.iter_mut().find(|(known, _)| *known == message) {
                Some((_, devices)) => devices.push(&device.id),
                None => problems.push((message, vec![&device.id])),
            }
        }
    }
    problems
        .into_iter()
        .map(|(message, devices)| {
            let mut text = devices[0].to_owned();
            if devices.len() > 1 {
                let _ = write!(
                    text,
                    " (and {} likewise)",
                    crate::issue::name_list(devices[1..].iter().copied())
                );
            }
            InputIssue {
                file: netlist_label.to_owned(),
                pointer: pointer_of(devices[0]),
                message: format!("{text}: {message}; the rule set cannot draw it"),
                location: None,
            }
        })
        .collect()
}

fn size_problems(device: &Device, lookup: &RuleLookup<'_>) -> Vec<String> {
    let params = &device.params;
    let (Some(w), Some(l)) = (params.w, params.l) else {
        return Vec::new(); // the netlist checks require both
    };
    let mut problems = Vec::new();
    if params.nf > MAX_CELL_NF {
        problems.push(format!(
            "nf = {} fingers are more than the {MAX_CELL_NF} one device cell is drawn with",
            params.nf
        ));
    }
    if params.m > MAX_CELL_M {
        problems.push(format!(
            "m = {} parallel instances are more than the {MAX_CELL_M} one device cell is drawn with",
            params.m
        ));
    }
    let (w_nm, l_nm) = (RuleLookup::nm(w), RuleLookup::nm(l));
    match device.device_type {
        DeviceType::Nmos | DeviceType::Pmos => {
            let fingers = params.nf.max(1).saturating_mul(params.m.max(1));
            if fingers > MAX_CELL_FINGERS && params.nf <= MAX_CELL_NF && params.m <= MAX_CELL_M {
                problems.push(format!(
                    "nf × m = {fingers} gate fingers are more than the {MAX_CELL_FINGERS} one transistor cell holds"
                ));
            }
            problems.extend(gate_length(l_nm, lookup));
            problems.extend(finger_width(w_nm, params.nf.max(1), lookup));
        }
        DeviceType::Resistor => problems.extend(resistor_width(w_nm, lookup)),
        DeviceType::Capacitor => problems.extend(plate_size(w_nm, l_nm, lookup)),
    }
    problems
}

fn rule_name(minimum: Option<Minimum<'_>>) -> String {
    minimum.map_or_else(String::new, |minimum| {
        format!(" (rule {})", minimum.rule.id)
    })
}

/// `mos.py`: the gate length on the grid against the poly width rule.
fn gate_length(l_nm: i64, lookup: &RuleLookup<'_>) -> Option<String> {
    let minimum = lookup.minimum(
        crate::drc_rules::RuleType::Width,
        "poly",
        None,
        Context::Default,
    )?;
    let length = lookup.snap(l_nm as f64);
    (length < minimum.nm).then(|| {
        format!(
            "l = {} µm is below the minimum gate length {} µm{}",
            micrometres(length),
            micrometres(minimum.nm),
            rule_name(Some(minimum))
        )
    })
}

/// `mos.py`: one finger (w/nf on the grid) holds the diffusion width and one contact
/// with its diffusion enclosure.
fn finger_width(w_nm: i64, nf: u32, lookup: &RuleLookup<'_>) -> Option<String> {
    let finger = lookup.snap(w_nm as f64 / f64::from(nf));
    let active = lookup.minimum(
        crate::drc_rules::RuleType::Width,
        "active",
        None,
        Context::Default,
    );
    let active_width = active.map_or(0, |minimum| minimum.nm);
    let contact = lookup.cut_size("contact");
    let contact_space = lookup
        .min_nm(
            crate::drc_rules::RuleType::Spacing,
            "contact",
            None,
            Context::Default,
        )
        .max(lookup.grid_nm());
    let enclosure = lookup.cover("active", "contact");
    let holds_a_contact =
        contacts_in_column(lookup, finger, contact, contact_space, enclosure) >= 1;
    if finger >= active_width.max(lookup.grid_nm()) && holds_a_contact {
        return None;
    }
    let need = active_width.max(contact + 2 * enclosure);
    let why = if finger < active_width {
        rule_name(active)
    } else {
        " (one contact with its diffusion enclosure)".to_owned()
    };
    Some(format!(
        "finger width w/nf = {} µm is below {} µm{why}",
        micrometres(finger),
        micrometres(need)
    ))
}

/// `draw.contact_column`: how many cuts fit in `span` keeping `margin` to both ends.
fn contacts_in_column(
    lookup: &RuleLookup<'_>,
    span: i64,
    cut: i64,
    space: i64,
    margin: i64,
) -> i64 {
    let pitch = cut + space;
    if pitch <= 0 {
        return 0;
    }
    let mut count = ((span - 2 * margin + space).max(0)) / pitch;
    while count >= 1 {
        let length = count * cut + (count - 1) * space;
        let offset = lookup.snap_down((span - length) as f64 / 2.0);
        if offset >= margin && span - offset - length >= margin {
            return count;
        }
        count -= 1;
    }
    0
}

/// `passives.draw_resistor`: the bar at least as wide as the poly (and resistor-marker)
/// width rules where a resistor is drawn.
fn resistor_width(w_nm: i64, lookup: &RuleLookup<'_>) -> Option<String> {
    let context = Context::Roles(RESISTOR_CONTEXT);
    let width = crate::drc_rules::RuleType::Width;
    let mut minimum = lookup.minimum(width, "poly", None, context);
    if lookup.layer_for("poly_res").is_some()
        && let Some(marker) = lookup.minimum(width, "poly_res", None, context)
        && minimum.is_none_or(|poly| marker.nm > poly.nm)
    {
        minimum = Some(marker);
    }
    let minimum = minimum?;
    let w = lookup.snap(w_nm as f64);
    (w < minimum.nm).then(|| {
        format!(
            "resistor width {} µm is below the minimum {} µm{}",
            micrometres(w),
            micrometres(minimum.nm),
            rule_name(Some(minimum))
        )
    })
}

/// `passives.draw_capacitor`: both plate sides at least the metal-1 and metal-2 width.
fn plate_size(w_nm: i64, l_nm: i64, lookup: &RuleLookup<'_>) -> Option<String> {
    let metal_width = plate_metal_width(lookup);
    let (w, l) = (lookup.snap(w_nm as f64), lookup.snap(l_nm as f64));
    (w < metal_width || l < metal_width).then(|| {
        format!(
            "capacitor plate {} × {} µm is narrower than the metal width {} µm",
            micrometres(w),
            micrometres(l),
            micrometres(metal_width)
        )
    })
}

/// The narrowest plate side: the larger of the metal-1 and metal-2 width rules (one grid step).
pub(crate) fn plate_metal_width(lookup: &RuleLookup<'_>) -> i64 {
    lookup
        .width("metal1", Context::Default)
        .max(lookup.width("metal2", Context::Default))
        .max(lookup.grid_nm())
}
