//! What a job with performance objectives simulates: the circuit under test (its
//! subcircuit name and ports), the testbench (the user's `testbench.sp`, or a built-in
//! one from the port roles), the nets the extraction treats as sensitive and the net
//! pairs it compares.
//!
//! * Sensitive nets: the testbench's inputs and outputs (the roles'), the ports its
//!   `.meas` statements measure (a user testbench), and the nets of the matched
//!   modules' devices — never a supply or ground net.
//! * Symmetric pairs: for each matched module of two devices, their gates and their
//!   drains when they are on two different nets (a differential pair's inputs and
//!   outputs, a mirror's two drains).

use centroid_schemas::performance_check::{builtin_kind, dut_ports};
use centroid_schemas::{
    Circuit, NetType, PerformanceSpec, PortRoles, SchematicJunctions, TaskContext, TestbenchKind,
    UserTestbench,
};
use serde_json::{Value, json};

/// Where the testbench comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum TestbenchSource {
    /// the user's `testbench.sp`, brought to the worker with the request
    User(UserTestbench),
    /// `sim.testbench` writes it from the port roles
    BuiltIn {
        kind: TestbenchKind,
        /// the roles as `sim.testbench` takes them (no `path`, `kind`, `circuit`, `ports`)
        roles: Value,
    },
}

/// What a job simulates, the same for every candidate and the schematic.
#[derive(Debug, Clone, PartialEq)]
pub struct PerformanceSetup {
    /// the subcircuit's name (the circuit's)
    pub circuit: String,
    /// its ports in order
    pub ports: Vec<String>,
    pub testbench: TestbenchSource,
    pub sensitive_nets: Vec<String>,
    /// the nets the router keeps short (`route.nets` `short_nets`): the outputs
    pub short_nets: Vec<String>,
    pub symmetric_pairs: Vec<[String; 2]>,
    /// the testbench node whose AC response the report plots
    pub sweep_node: Option<String>,
    pub specs: Vec<PerformanceSpec>,
    pub supplies: Vec<String>,
    pub grounds: Vec<String>,
    /// the schematic reference's source/drain junctions (`sim.schematic` `junctions`)
    pub schematic_junctions: SchematicJunctions,
}

fn push_unique(list: &mut Vec<String>, net: &str) {
    if !list.iter().any(|known| known == net) {
        list.push(net.to_owned());
    }
}

/// The circuit's supply and ground nets (net types, and the roles' supply/ground).
pub fn rails(circuit: &Circuit, roles: Option<&PortRoles>) -> (Vec<String>, Vec<String>) {
    let mut supplies = Vec::new();
    let mut grounds = Vec::new();
    for net in &circuit.nets {
        match net.net_type {
            NetType::Power => push_unique(&mut supplies, &net.name),
            NetType::Ground => push_unique(&mut grounds, &net.name),
            NetType::Signal => {}
        }
    }
    if let Some(roles) = roles {
        if let Some(supply) = &roles.supply
            && circuit.net(&supply.net).is_some()
        {
            push_unique(&mut supplies, &supply.net);
        }
        if let Some(ground) = &roles.ground {
            push_unique(&mut grounds, ground);
        }
    }
    supplies.retain(|net| !grounds.contains(net));
    (supplies, grounds)
}

/// The matched modules' nets and their two-device pairs' symmetric nets.
fn matched_nets(circuit: &Circuit, rails: &[String]) -> (Vec<String>, Vec<[String; 2]>) {
    let mut nets = Vec::new();
    let mut pairs: Vec<[String; 2]> = Vec::new();
    let is_rail = |net: &str| rails.iter().any(|rail| rail == net);
    for module in circuit
        .modules
        .iter()
        .filter(|module| module.module_type.is_matched())
    {
        let devices: Vec<_> = module
            .devices
            .iter()
            .filter_map(|member| circuit.device(&member.device_id))
            .collect();
        for device in &devices {
            for terminal in ["g", "d", "s"] {
                if let Some(net) = device.terminal(terminal)
                    && !is_rail(net)
                {
                    push_unique(&mut nets, net);
                }
            }
        }
        if let [a, b] = devices.as_slice() {
            for terminal in ["g", "d"] {
                let (Some(first), Some(second)) = (a.terminal(terminal), b.terminal(terminal))
                else {
                    continue;
                };
                let known = pairs.iter().any(|pair| {
                    (pair[0] == first && pair[1] == second)
                        || (pair[0] == second && pair[1] == first)
                });
                if first != second && !is_rail(first) && !is_rail(second) && !known {
                    pairs.push([first.to_owned(), second.to_owned()]);
                }
            }
        }
    }
    (nets, pairs)
}

/// The outputs: the roles' outputs, else the ports some device's drain is on and no
/// device's gate (an amplifier's outputs, a mirror's output; not its inputs or bias
/// nodes), rails left out.
fn output_nets(
    circuit: &Circuit,
    roles: Option<&PortRoles>,
    ports: &[String],
    rails: &[String],
) -> Vec<String> {
    let mut nets = Vec::new();
    for output in roles
        .map(|roles| roles.outputs.as_slice())
        .unwrap_or_default()
    {
        push_unique(&mut nets, output);
    }
    if nets.is_empty() {
        let on = |terminal: &str, net: &str| {
            circuit
                .devices
                .iter()
                .any(|device| device.terminal(terminal) == Some(net))
        };
        for port in ports {
            if on("d", port) && !on("g", port) {
                push_unique(&mut nets, port);
            }
        }
    }
    nets.retain(|net| !rails.contains(net) && circuit.net(net).is_some());
    nets
}

/// The roles as `sim.testbench` takes them.
fn builtin_roles(roles: &PortRoles) -> Value {
    // plain strings and numbers: serialising cannot fail
    let mut value = serde_json::to_value(roles).expect("port roles serialise");
    if let Some(clock) = value.get("clock").cloned() {
        value["clock"] = json!({"net": clock});
    }
    value
}

impl PerformanceSetup {
    /// The setup of a task, `None` when it measures no performance or has no
    /// testbench (the inputs' checks refuse that case before a job starts).
    pub fn of(
        context: &TaskContext,
        testbench: Option<&UserTestbench>,
    ) -> Option<PerformanceSetup> {
        let objectives = &context.objectives;
        if !objectives.wants_performance() {
            return None;
        }
        let circuit = &context.circuit;
        let roles = objectives.performance.ports.as_ref();
        let ports = dut_ports(objectives, circuit);
        let (supplies, grounds) = rails(circuit, roles);
        let all_rails: Vec<String> = supplies.iter().chain(&grounds).cloned().collect();
        let mut sensitive = Vec::new();
        if let Some(roles) = roles {
            if let Some(inputs) = &roles.inputs {
                push_unique(&mut sensitive, &inputs.plus);
                push_unique(&mut sensitive, &inputs.minus);
            }
            for output in &roles.outputs {
                push_unique(&mut sensitive, output);
            }
        }
        let (source, sweep_node) = match testbench {
            Some(user) => {
                for port in user.measured_ports(&ports) {
                    push_unique(&mut sensitive, port);
                }
                let output = roles.and_then(|roles| roles.outputs.first());
                let sweep = match output {
                    Some(port) => user.node_of(&ports, port).map(str::to_owned),
                    None => user
                        .measures
                        .iter()
                        .flat_map(|measure| &measure.nodes)
                        .next()
                        .cloned(),
                };
                (TestbenchSource::User(user.clone()), sweep)
            }
            None => {
                let kind = builtin_kind(objectives, circuit)?;
                let roles = roles?;
                let sweep = (kind == TestbenchKind::OtaAc)
                    .then(|| roles.outputs.first().cloned())
                    .flatten();
                let source = TestbenchSource::BuiltIn {
                    kind,
                    roles: builtin_roles(roles),
                };
                (source, sweep)
            }
        };
        let (matched, symmetric_pairs) = matched_nets(circuit, &all_rails);
        for net in &matched {
            push_unique(&mut sensitive, net);
        }
        sensitive.retain(|net| !all_rails.contains(net) && circuit.net(net).is_some());
        let short_nets = output_nets(circuit, roles, &ports, &all_rails);
        Some(PerformanceSetup {
            circuit: circuit.name.clone(),
            ports,
            testbench: source,
            sensitive_nets: sensitive,
            short_nets,
            symmetric_pairs,
            sweep_node,
            specs: objectives.performance.specs.clone(),
            supplies,
            grounds,
            schematic_junctions: objectives.performance.schematic_junctions,
        })
    }

    /// Whether the worker must be sent the user's testbench.
    pub fn needs_user_testbench(&self) -> bool {
        matches!(self.testbench, TestbenchSource::User(_))
    }
}
