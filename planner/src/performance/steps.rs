//! The skill calls of a simulation, shared by a candidate's plan (its extracted
//! netlist) and the rule-set probe (the schematic): the testbench (`sim.testbench`
//! for a built-in one; the user's arrives with the request), `sim.run`; and the
//! extraction of a candidate (`extract.netlist`). Files live in `${CANDIDATE_DIR}`
//! under fixed names the outputs know.

use serde_json::{Value, json};

use super::setup::{PerformanceSetup, TestbenchSource};
use crate::plan::{Plan, PlanStep};
use crate::plan_builder::CANDIDATE_DIR;
use centroid_schemas::TESTBENCH_FILE;

/// A candidate's extracted netlist (`best_extracted.spice` of the best).
pub const EXTRACTED_FILE: &str = "extracted.spice";
/// The schematic as a SPICE subcircuit (the probe's).
pub const SCHEMATIC_FILE: &str = "schematic.spice";
/// The deck `sim.run` writes (its log is `sim.cir.log`).
pub const DECK_FILE: &str = "sim.cir";
/// How long one simulation may run (s).
pub const SIM_TIMEOUT_S: f64 = 120.0;

/// The skills that extract and simulate a finished layout: when one of them fails,
/// the layout and its checks stand and the candidate fails with the reason.
pub const SIMULATION_SKILLS: &[&str] = &["extract.netlist", "sim.testbench", "sim.run"];

/// Whether `skill` extracts or simulates (see [`SIMULATION_SKILLS`]).
pub fn is_simulation_skill(skill: &str) -> bool {
    SIMULATION_SKILLS.contains(&skill)
}

/// A file of the candidate's scratch directory, as a plan names it.
pub fn in_candidate_dir(file: &str) -> String {
    format!("{CANDIDATE_DIR}/{file}")
}

/// `sim.testbench`'s arguments for a built-in testbench; `None` for the user's.
pub fn testbench_arguments(setup: &PerformanceSetup) -> Option<Value> {
    let TestbenchSource::BuiltIn { kind, roles } = &setup.testbench else {
        return None;
    };
    let mut arguments = roles.clone();
    if !arguments.is_object() {
        arguments = json!({});
    }
    arguments["path"] = json!(in_candidate_dir(TESTBENCH_FILE));
    arguments["kind"] = json!(kind.as_str());
    arguments["circuit"] = json!(setup.circuit);
    arguments["ports"] = json!(setup.ports);
    Some(arguments)
}

/// `sim.run`'s arguments for the DUT in `dut_file`; with the AC response of the
/// setup's sweep node (the report's Bode plot).
pub fn sim_run_arguments(setup: &PerformanceSetup, dut_file: &str) -> Value {
    let mut arguments = json!({
        "dut_path": in_candidate_dir(dut_file),
        "testbench_path": in_candidate_dir(TESTBENCH_FILE),
        "deck_path": in_candidate_dir(DECK_FILE),
        "circuit": setup.circuit,
        "timeout_s": SIM_TIMEOUT_S,
    });
    if let Some(node) = &setup.sweep_node {
        arguments["ac_sweep"] = json!({"node": node});
    }
    arguments
}

/// `extract.netlist`'s arguments for the layout in `cell`.
pub fn extraction_arguments(setup: &PerformanceSetup, cell: &str) -> Value {
    json!({
        "cell": cell,
        "path": in_candidate_dir(EXTRACTED_FILE),
        "circuit": setup.circuit,
        "ports": setup.ports,
        "sensitive_nets": setup.sensitive_nets,
        "symmetric_pairs": setup.symmetric_pairs,
    })
}

/// The files a plan reads from its scratch directory that no step of it writes: the
/// request must bring them (`RunCandidateRequest.inputs`). Today only the user's
/// testbench: a `sim.run` reading `testbench.sp` with no `sim.testbench` before it.
pub fn request_inputs(plan: &Plan) -> Vec<&'static str> {
    let testbench = in_candidate_dir(TESTBENCH_FILE);
    let mut written = false;
    for step in &plan.steps {
        let path = |key: &str| step.arguments.get(key).and_then(Value::as_str);
        match step.skill.as_str() {
            "sim.testbench" if path("path") == Some(testbench.as_str()) => written = true,
            "sim.run" if path("testbench_path") == Some(testbench.as_str()) && !written => {
                return vec![TESTBENCH_FILE];
            }
            _ => {}
        }
    }
    Vec::new()
}

/// The probe's steps simulating the schematic: `sim.schematic` of the circuit's
/// devices (as `lvs.run` takes them; with the junctions the objectives ask for), the
/// testbench, `sim.run`.
pub fn schematic_steps(setup: &PerformanceSetup, devices: Vec<Value>) -> Vec<PlanStep> {
    let step = |step_id: &str, skill: &str, arguments: Value| PlanStep {
        step_id: step_id.into(),
        skill: skill.into(),
        arguments,
        optional: false,
        output_cell: String::new(),
    };
    let mut steps = vec![step(
        SCHEMATIC_STEP,
        "sim.schematic",
        json!({
            "path": in_candidate_dir(SCHEMATIC_FILE),
            "circuit": setup.circuit,
            "ports": setup.ports,
            "devices": devices,
            "junctions": setup.schematic_junctions.as_str(),
        }),
    )];
    if let Some(arguments) = testbench_arguments(setup) {
        steps.push(step("ps_sim_testbench", "sim.testbench", arguments));
    }
    steps.push(step(
        SCHEMATIC_RUN_STEP,
        "sim.run",
        sim_run_arguments(setup, SCHEMATIC_FILE),
    ));
    steps
}

/// The step ids of the probe's schematic steps.
pub const SCHEMATIC_STEP: &str = "ps_sim_schematic";
pub const SCHEMATIC_RUN_STEP: &str = "ps_sim_run";
