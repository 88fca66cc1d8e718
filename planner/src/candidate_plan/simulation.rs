//! The stages of a candidate's plan after its outputs: the electrical check (every
//! routed layout), then — for a job measuring performance — the extraction of the
//! layout's netlist with its parasitics, the testbench and the simulation. They come
//! last, so that a failing simulation leaves the layout, its checks and its GDS
//! behind.

use std::collections::HashSet;

use centroid_schemas::Circuit;
use serde_json::json;

use super::Draft;
use crate::performance::steps::{extraction_arguments, sim_run_arguments, testbench_arguments};
use crate::performance::{PerformanceSetup, steps::EXTRACTED_FILE};

impl<'a> Draft<'a> {
    /// `check.electrical` of the routed layout, with the circuit's rails.
    pub(crate) fn add_electrical_check(&mut self, supplies: &[String], grounds: &[String]) {
        let Some(top) = self.top.clone().filter(|_| self.routed) else {
            return;
        };
        if !self.builder.has("check.electrical") {
            return;
        }
        let mut arguments = json!({"cell": top, "supplies": supplies, "grounds": grounds});
        let by_design = gate_only_nets(self.flat);
        if by_design > 0 && self.builder.takes("check.electrical", "gate_only_nets") {
            arguments["gate_only_nets"] = json!(by_design);
        }
        let rails: HashSet<&str> = supplies.iter().chain(grounds).map(String::as_str).collect();
        let dummies = circuit_dummies(self.flat, &rails);
        if dummies > 0 && self.builder.takes("check.electrical", "circuit_dummies") {
            arguments["circuit_dummies"] = json!(dummies);
        }
        self.builder.push("check.electrical", arguments, false, "");
    }

    /// The setup's outputs as the `short_nets` of the top cell's `route.nets` (when the
    /// workers' router takes them): no partner balancing stretches their tracks, their
    /// trunks stand nearest the rows and a pitch apart.
    pub(crate) fn keep_outputs_short(&mut self, setup: &PerformanceSetup) {
        let Some(top) = self.top.clone().filter(|_| self.routed) else {
            return;
        };
        if setup.short_nets.is_empty() || !self.builder.takes("route.nets", "short_nets") {
            return;
        }
        for step in self.builder.steps.iter_mut().filter(|step| {
            step.skill == "route.nets" && step.arguments.get("cell_name") == Some(&json!(top))
        }) {
            step.arguments["short_nets"] = json!(setup.short_nets);
        }
    }

    /// `extract.netlist`, and with `simulate` the testbench and `sim.run` on it.
    /// Nothing when the layout is not routed, the rule set has no parasitics or the
    /// workers lack the skills (said in the plan's notes).
    pub(crate) fn add_extraction_and_simulation(
        &mut self,
        setup: &PerformanceSetup,
        has_parasitics: bool,
        simulate: bool,
    ) {
        let Some(top) = self.top.clone().filter(|_| self.routed) else {
            self.builder
                .notes
                .push("not simulated: the layout is not routed".into());
            return;
        };
        if !has_parasitics {
            self.builder
                .notes
                .push("not simulated: the rule set has no parasitics section (1.4.0)".into());
            return;
        }
        let builtin = testbench_arguments(setup);
        let mut needed = vec!["extract.netlist", "sim.run"];
        if builtin.is_some() {
            needed.push("sim.testbench");
        }
        if let Some(missing) = needed.iter().find(|skill| !self.builder.has(skill)) {
            self.builder
                .notes
                .push(format!("not simulated: the workers lack {missing}"));
            return;
        }
        if !self.builder.push(
            "extract.netlist",
            extraction_arguments(setup, &top),
            false,
            "",
        ) || !simulate
        {
            return;
        }
        if let Some(arguments) = builtin
            && !self.builder.push("sim.testbench", arguments, false, "")
        {
            return;
        }
        self.builder.push(
            "sim.run",
            sim_run_arguments(setup, EXTRACTED_FILE),
            false,
            "",
        );
    }
}

/// The circuit's own nets (not its ports) that reach MOS gates only: by design (a clock or
/// bias the netlist leaves internal), so as many floating gates in the layout are the
/// circuit's, not the layout's (`check.electrical`'s `gate_only_nets`).
pub(crate) fn gate_only_nets(circuit: &Circuit) -> usize {
    let mos: HashSet<&str> = circuit
        .devices
        .iter()
        .filter(|device| device.device_type.is_mos())
        .map(|device| device.id.as_str())
        .collect();
    circuit
        .nets
        .iter()
        .filter(|net| !circuit.ports.contains(&net.name) && !net.connections.is_empty())
        .filter(|net| {
            net.connections.iter().all(|connection| {
                connection.terminal_name == "g" && mos.contains(connection.device_id.as_str())
            })
        })
        .count()
}

/// The circuit's own dummies off the rails: gate fingers of MOS devices whose drain, gate
/// and source are one net that is not a supply or ground (a device the netlist shorts on a
/// signal net, e.g. a start-up circuit's), so as many floating dummies in the layout are
/// the circuit's, not the layout's (`check.electrical`'s `circuit_dummies`).
pub(crate) fn circuit_dummies(circuit: &Circuit, rails: &HashSet<&str>) -> usize {
    circuit
        .devices
        .iter()
        .filter(|device| device.device_type.is_mos())
        .filter(|device| {
            let gate = device.terminal("g");
            gate.is_some_and(|gate| !rails.contains(gate))
                && device.terminal("d") == gate
                && device.terminal("s") == gate
        })
        .map(|device| (device.params.m * device.params.nf) as usize)
        .sum()
}
