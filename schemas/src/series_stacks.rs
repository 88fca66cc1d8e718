//! Series stacks: MOS devices of one type in series under one gate net — one long
//! transistor drawn as segments (a stacked-device cell such as ALIGN's `*_s_pcell_*`
//! subcircuits, or the same written out device by device). A matched member that is one
//! segment of a stack is matched as the whole stack: its current is set by every
//! segment, so a layout is measured by all of them (`layout.metrics`, the planner's
//! matched groups), whether the stack is drawn as a block or its segments stand apart.
//!
//! What counts as a stack (structural, never by names): two MOS devices of one type with
//! the same gate and bulk nets are joined when a drain or source of one and a drain or
//! source of the other share a net that nothing else touches (two terminals in the whole
//! circuit, not a port of the top cell, not their gate): the node between two segments.
//! A cascode (its own gate) is not a segment of the device below it.

use std::collections::{BTreeMap, HashMap};

use crate::circuit::{Circuit, Device};

/// Every series stack of a circuit with two segments or more.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SeriesStacks {
    /// device id → the position of its stack in `stacks` (only devices of stacks ≥ 2)
    stack_of: HashMap<String, usize>,
    /// each stack's devices, in the circuit's device order
    stacks: Vec<Vec<String>>,
}

impl SeriesStacks {
    pub fn of(circuit: &Circuit) -> Self {
        let mut on_net: HashMap<&str, Vec<(usize, &str)>> = HashMap::new();
        for (position, device) in circuit.devices.iter().enumerate() {
            for (terminal, net) in &device.terminals {
                on_net
                    .entry(net.as_str())
                    .or_default()
                    .push((position, terminal.as_str()));
            }
        }
        let mut root: Vec<usize> = (0..circuit.devices.len()).collect();
        for (net, terminals) in &on_net {
            let [(a, a_terminal), (b, b_terminal)] = terminals[..] else {
                continue;
            };
            let channel = |terminal: &str| terminal == "d" || terminal == "s";
            if a != b
                && channel(a_terminal)
                && channel(b_terminal)
                && !circuit.ports.iter().any(|port| port == net)
                && segments_of_one_transistor(&circuit.devices[a], &circuit.devices[b])
            {
                let (ra, rb) = (find(&mut root, a), find(&mut root, b));
                root[ra.max(rb)] = ra.min(rb);
            }
        }
        let mut members: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for (position, device) in circuit.devices.iter().enumerate() {
            let first = find(&mut root, position);
            members.entry(first).or_default().push(device.id.clone());
        }
        let mut stacks = SeriesStacks::default();
        for devices in members.into_values().filter(|devices| devices.len() >= 2) {
            for device in &devices {
                stacks.stack_of.insert(device.clone(), stacks.stacks.len());
            }
            stacks.stacks.push(devices);
        }
        stacks
    }

    /// The other segments of `device_id`'s stack, in device order (empty when it stands
    /// alone).
    pub fn others<'a>(&'a self, device_id: &'a str) -> impl Iterator<Item = &'a str> {
        self.stack_of
            .get(device_id)
            .map_or(&[][..], |&stack| self.stacks[stack].as_slice())
            .iter()
            .map(String::as_str)
            .filter(move |other| *other != device_id)
    }

    /// The stacks of two segments or more, each in device order.
    pub fn stacks(&self) -> &[Vec<String>] {
        &self.stacks
    }
}

/// Two MOS of one type under one gate net, on one bulk net.
fn segments_of_one_transistor(a: &Device, b: &Device) -> bool {
    a.device_type.is_mos()
        && a.device_type == b.device_type
        && a.gate().is_some()
        && a.gate() == b.gate()
        && a.terminal("b") == b.terminal("b")
}

fn find(root: &mut [usize], position: usize) -> usize {
    let mut top = position;
    while root[top] != top {
        top = root[top];
    }
    let mut walk = position;
    while root[walk] != top {
        let next = root[walk];
        root[walk] = top;
        walk = next;
    }
    top
}
