//! The performance objectives against the circuit and the testbench: which testbench a
//! job simulates (the user's `testbench.sp`, else a built-in one chosen by module
//! recognition or by `testbench`), the ports of the circuit under test, and the checks
//! that need both files — the roles name nets of the circuit, every port has a role
//! (built-in testbenches), every spec names a measure the testbench defines.

use crate::circuit::Circuit;
use crate::issue::InputIssue;
use crate::module_types::ModuleType;
use crate::objectives::DesignObjectives;
use crate::performance::TestbenchKind;
use crate::testbench::UserTestbench;

/// The built-in testbench for the circuit: the objectives' `testbench`, else by
/// recognition — a differential pair with a cross-coupled pair is a comparator
/// (`comparator_delay`), a differential pair an OTA (`ota_ac`).
pub fn builtin_kind(objectives: &DesignObjectives, circuit: &Circuit) -> Option<TestbenchKind> {
    if let Some(kind) = objectives.performance.testbench {
        return Some(kind);
    }
    let has = |wanted: ModuleType| {
        circuit
            .modules
            .iter()
            .any(|module| module.module_type == wanted)
    };
    match (
        has(ModuleType::DifferentialPair),
        has(ModuleType::CrossCoupledPair),
    ) {
        (true, true) => Some(TestbenchKind::ComparatorDelay),
        (true, false) => Some(TestbenchKind::OtaAc),
        _ => None,
    }
}

/// The ports of the circuit under test, in order: the netlist's declared ports (a
/// SPICE subcircuit's pins), else the nets the port roles name, in the circuit's net
/// order.
pub fn dut_ports(objectives: &DesignObjectives, circuit: &Circuit) -> Vec<String> {
    if !circuit.ports.is_empty() {
        return circuit.ports.clone();
    }
    let Some(roles) = &objectives.performance.ports else {
        return Vec::new();
    };
    let named: Vec<&str> = roles.named_nets().into_iter().map(|(_, net)| net).collect();
    circuit
        .nets
        .iter()
        .map(|net| net.name.clone())
        .filter(|net| named.contains(&net.as_str()))
        .collect()
}

/// Problems of the performance objectives against the circuit and the testbench
/// (`objectives_label`: the objectives file's label), and warnings.
pub fn check_performance(
    objectives: &DesignObjectives,
    circuit: &Circuit,
    objectives_label: &str,
    testbench: Option<&UserTestbench>,
) -> (Vec<InputIssue>, Vec<InputIssue>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let issue = |pointer: String, message: String| InputIssue {
        file: objectives_label.to_owned(),
        pointer,
        message,
        location: None,
    };
    if let Some(roles) = &objectives.performance.ports {
        for (pointer, net) in roles.named_nets() {
            let is_testbench_supply = pointer == "/supply/net";
            if circuit.net(net).is_none() && !is_testbench_supply {
                errors.push(issue(
                    format!("/ports{pointer}"),
                    format!("\"{net}\" is not a net of {}", circuit.name),
                ));
            }
        }
    }
    if !objectives.wants_performance() {
        if let Some(testbench) = testbench {
            warnings.push(testbench.issue_at(
                1,
                "not simulated: the objectives have no performance_max weight and no performance spec",
            ));
        }
        return (errors, warnings);
    }
    let ports = dut_ports(objectives, circuit);
    let measures: Vec<String> = match testbench {
        Some(testbench) => {
            user_testbench_issues(testbench, circuit, &ports, &mut errors);
            testbench
                .measure_names()
                .into_iter()
                .map(str::to_owned)
                .collect()
        }
        None => match builtin_kind(objectives, circuit) {
            Some(kind) => {
                builtin_issues(objectives, circuit, &ports, kind, &issue, &mut errors);
                kind.measures()
                    .iter()
                    .map(|name| (*name).to_owned())
                    .collect()
            }
            None => {
                errors.push(issue(
                    "/performance".into(),
                    format!("performance is measured by a testbench: put testbench.sp (the circuit {} instantiated, .meas statements) in the circuit folder, or name a built-in one with \"testbench\" (module recognition found no OTA or comparator)", circuit.name),
                ));
                return (errors, warnings);
            }
        },
    };
    for (index, spec) in objectives.performance.specs.iter().enumerate() {
        let generic_ratio = spec.measure.starts_with("ratio_error_")
            && measures.iter().any(|name| name.starts_with("ratio_error_"));
        if !measures.contains(&spec.measure) && !generic_ratio {
            errors.push(issue(
                format!("/performance/{index}/measure"),
                format!(
                    "the testbench does not measure \"{}\"; its measures: {}",
                    spec.measure,
                    measures.join(", ")
                ),
            ));
        }
    }
    (errors, warnings)
}

fn user_testbench_issues(
    testbench: &UserTestbench,
    circuit: &Circuit,
    ports: &[String],
    errors: &mut Vec<InputIssue>,
) {
    if testbench.measures.is_empty() {
        errors.push(testbench.issue_at(
            1,
            "no .meas statement: the measures are the testbench's .meas names",
        ));
    }
    match &testbench.dut {
        None => errors.push(testbench.issue_at(
            1,
            format!(
                "no instance of the circuit: write one line \"Xdut <{}'s ports in order> {}\"",
                circuit.name, circuit.name
            ),
        )),
        Some(dut) if ports.is_empty() => errors.push(testbench.issue_at(
            dut.line,
            format!("{} declares no ports: declare them in the netlist (\"ports\"), or give port roles in objectives.json", circuit.name),
        )),
        Some(dut) if dut.nodes.len() != ports.len() => errors.push(testbench.issue_at(
            dut.line,
            format!(
                "the instance of {} has {} nodes; the circuit has {} ports ({})",
                circuit.name,
                dut.nodes.len(),
                ports.len(),
                ports.join(" ")
            ),
        )),
        Some(_) => {}
    }
}

fn builtin_issues(
    objectives: &DesignObjectives,
    circuit: &Circuit,
    ports: &[String],
    kind: TestbenchKind,
    issue: &dyn Fn(String, String) -> InputIssue,
    errors: &mut Vec<InputIssue>,
) {
    let Some(roles) = &objectives.performance.ports else {
        errors.push(issue(
            "/ports".into(),
            format!("the built-in {} testbench needs the roles of {}'s ports (supply, ground, inputs, outputs, bias …), or put testbench.sp in the circuit folder", kind.as_str(), circuit.name),
        ));
        return;
    };
    if roles.supply.is_none() {
        errors.push(issue(
            "/ports".into(),
            "a built-in testbench needs \"supply\" {\"net\", \"volts\"}".into(),
        ));
    }
    let needs_inputs = !matches!(kind, TestbenchKind::MirrorRatio);
    if needs_inputs && (roles.inputs.is_none() || roles.outputs.is_empty()) {
        errors.push(issue(
            "/ports".into(),
            format!(
                "the built-in {} testbench needs \"inputs\" and \"outputs\"",
                kind.as_str()
            ),
        ));
    }
    if matches!(kind, TestbenchKind::MirrorRatio) {
        errors.push(issue(
            "/testbench".into(),
            "the built-in mirror_ratio testbench is not driven from port roles yet; write testbench.sp".into(),
        ));
    }
    let named: Vec<&str> = roles.named_nets().into_iter().map(|(_, net)| net).collect();
    let unassigned: Vec<&str> = ports
        .iter()
        .map(String::as_str)
        .filter(|port| !named.contains(port))
        .collect();
    if !unassigned.is_empty() {
        errors.push(issue(
            "/ports".into(),
            format!(
                "every port of {} needs a role for a built-in testbench; without one: {}",
                circuit.name,
                unassigned.join(", ")
            ),
        ));
    }
}

/// The checks of a loaded job and its testbench file (`None`: the circuit folder has
/// none): every problem, or the warnings.
pub fn check_job_testbench(
    context: &crate::TaskContext,
    objectives_label: &str,
    testbench: Option<&crate::InputFile>,
) -> Result<Vec<InputIssue>, crate::InputErrors> {
    let testbench = testbench
        .map(|file| UserTestbench::read(file, &context.circuit.name))
        .transpose()?;
    let (errors, warnings) = check_performance(
        &context.objectives,
        &context.circuit,
        objectives_label,
        testbench.as_ref(),
    );
    match errors.is_empty() {
        true => Ok(warnings),
        false => Err(crate::InputErrors { issues: errors }),
    }
}
