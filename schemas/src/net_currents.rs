//! `objectives.json` `constraints.net_currents` against the netlist and the rule set:
//! every net named exists, and every layer the router draws wires on declares the
//! current it may carry (`max_current_density`, A per metre of width), so each wire of
//! such a net can be drawn `current / max_current_density` wide. Checked once for
//! `validate`, `run` and SubmitJob (in [`crate::task_context`]); the currents are then
//! carried on the circuit's nets ([`crate::circuit::Net::current`]) to the planner.
//!
//! Any net may be given a current, a supply or a signal (an output driving a load
//! carries current too); the wires of every such net are sized alike.

use crate::circuit::Circuit;
use crate::drc_rules::{DrcRuleSet, LayerDef, RuleType};
use crate::issue::{InputIssue, name_list, pointer_join};
use crate::objectives::DesignObjectives;
use crate::rule_lookup::{Context, RuleLookup};

/// The layer roles the router draws wires on: metal-1 (rails, bars, second tracks),
/// metal-2 (stubs, trunks), and metal-3 (tracks) when the rule set has metal 3 and via 2
/// (`worker/skills/centroid_skills/routing/dims.py`, `routing_dims`).
pub fn wire_roles(rules: &DrcRuleSet) -> Vec<&'static str> {
    let mut roles = vec!["metal1", "metal2"];
    if rules.layer_for_role("metal3").is_some() && rules.layer_for_role("via2").is_some() {
        roles.push("metal3");
    }
    roles
}

/// The labels of the files the issues point into.
pub struct Labels<'a> {
    pub netlist: &'a str,
    pub drc_rules: &'a str,
    pub objectives: &'a str,
}

/// Every problem of the given net currents: a net the circuit does not have, a wire
/// layer without `max_current_density`, a width beyond the layer's maximum width.
pub fn check_net_currents(
    circuit: &Circuit,
    rules: &DrcRuleSet,
    objectives: &DesignObjectives,
    labels: &Labels<'_>,
) -> Vec<InputIssue> {
    let currents = &objectives.constraints.net_currents;
    let mut issues = Vec::new();
    if currents.is_empty() {
        return issues;
    }
    let mut names: Vec<&str> = circuit.nets.iter().map(|net| net.name.as_str()).collect();
    names.sort_unstable();
    for net in currents.keys() {
        if circuit.net(net).is_none() {
            issues.push(issue(
                labels.objectives,
                pointer_join("/constraints/net_currents", net),
                format!(
                    "net \"{net}\" is not a net of the circuit in {} (its nets: {})",
                    labels.netlist,
                    name_list(names.iter().copied())
                ),
            ));
        }
    }
    let lookup = RuleLookup::new(rules);
    let (net, amperes) = currents
        .iter()
        .fold(
            None,
            |largest: Option<(&String, f64)>, (net, &amperes)| match largest {
                Some((_, most)) if most >= amperes => largest,
                _ => Some((net, amperes)),
            },
        )
        .expect("not empty");
    for role in wire_roles(rules) {
        let Some(layer) = rules.layer_for_role(role) else {
            continue; // a rule set without metal 1 or 2 is refused elsewhere
        };
        match layer.max_current_density {
            None => issues.push(issue(
                labels.drc_rules,
                pointer_join("/layers", &layer.name),
                format!(
                    "net \"{net}\" carries {amperes} A (objectives constraints.net_currents) and \
                     its wires lie on layer \"{}\" ({role}), which declares no current limit: \
                     add \"max_current_density\" (A per metre of wire width; 1 mA/µm = 1000 A/m) \
                     to that layer, from the process's electromigration rules",
                    layer.name
                ),
            )),
            Some(density) => {
                if let Some(issue) = too_wide(&lookup, layer, role, (net, amperes, density), labels)
                {
                    issues.push(issue);
                }
            }
        }
    }
    issues
}

/// The width `amperes` needs on `layer`, when it is beyond the layer's maximum width.
fn too_wide(
    lookup: &RuleLookup<'_>,
    layer: &LayerDef,
    role: &str,
    (net, amperes, density): (&str, f64, f64),
    labels: &Labels<'_>,
) -> Option<InputIssue> {
    let needed = amperes / density;
    let widest = lookup
        .rules_for(RuleType::Width, role, None, Context::Default)
        .into_iter()
        .filter_map(|rule| Some((rule.max?, rule)))
        .fold(None, |least: Option<(f64, _)>, (max, rule)| match least {
            Some((smallest, _)) if smallest <= max => least,
            _ => Some((max, rule)),
        })?;
    (needed > widest.0).then(|| {
        issue(
            labels.objectives,
            pointer_join("/constraints/net_currents", net),
            format!(
                "net \"{net}\" carries {amperes} A: its wires on layer \"{}\" ({role}, at most \
                 {density} A/m) would be {:.3} µm wide, beyond the largest width {:.3} µm of \
                 rule {}; give a smaller current",
                layer.name,
                needed * 1e6,
                widest.0 * 1e6,
                widest.1.id
            ),
        )
    })
}

fn issue(file: &str, pointer: String, message: String) -> InputIssue {
    InputIssue {
        file: file.to_string(),
        pointer,
        message,
        location: None,
    }
}

/// The circuit with each net's current set from the objectives (after the checks).
pub fn carry_currents(circuit: &mut Circuit, objectives: &DesignObjectives) {
    for net in &mut circuit.nets {
        net.current = objectives.constraints.net_currents.get(&net.name).copied();
    }
}
