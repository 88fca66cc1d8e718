//! The plans of a job measuring performance (issue 27) on the SKY130 5T OTA of
//! `examples/ota5_perf`: every routed candidate ends with `check.electrical`, then
//! `extract.netlist` (sensitive nets and symmetric pairs), the built-in testbench and
//! `sim.run`; the rule-set probe simulates the schematic; a user testbench is brought
//! by the request; a farm that cannot simulate the process extracts only.

use centroid_schemas::{InputFile, NetlistOptions, TaskContext, TaskInputs};
use serde_json::{Value, json};

use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::performance::steps::request_inputs;
use centroid_planner::performance::{JobSimulation, SchematicSimulation};
use centroid_planner::plan::Plan;
use centroid_planner::planner::Planner;
use centroid_planner::rules_probe::rules_probe_plan;
use centroid_planner::skill_catalog::SkillCatalog;

const NETLIST: &str = include_str!("../../examples/ota5_perf/netlist.sp");
const RULES: &str = include_str!("../../examples/ota5_spice/drc_rules.json");
const OBJECTIVES: &str = include_str!("../../examples/ota5_perf/objectives.json");
const AREA_ONLY: &str = include_str!("../../examples/ota5/objectives.json");

fn load(objectives: &str) -> (TaskContext, RawInputs) {
    let file = |label: &str, text: &str| InputFile {
        label: label.into(),
        bytes: text.as_bytes().to_vec(),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.sp", NETLIST),
        drc_rules: file("drc_rules.json", RULES),
        objectives: file("objectives.json", objectives),
    };
    let loaded = TaskContext::load_with(&inputs, &NetlistOptions::default(), "t").unwrap();
    let netlist = String::from_utf8(loaded.inputs.netlist.bytes.clone()).unwrap();
    (loaded.context, RawInputs::from_texts(RULES, &netlist))
}

fn skills() -> SkillCatalog {
    [
        "tech.load",
        "layout.create_device",
        "layout.create_common_centroid_pair",
        "layout.add_dummies",
        "layout.place",
        "drc.run",
        "layout.metrics",
        "layout.export",
        "route.info",
        "route.nets",
        "lvs.run",
        "check.electrical",
        "extract.netlist",
        "sim.schematic",
        "sim.testbench",
        "sim.run",
    ]
    .iter()
    .map(|name| (name.to_string(), Value::Null))
    .collect()
}

fn plan(objectives: &str, simulation: JobSimulation) -> Plan {
    let (context, raw) = load(objectives);
    let planner = HeuristicPlanner::new(raw)
        .with_route_pitch(Some(0.46))
        .with_simulation(simulation);
    let point = planner.design_space(&context, &skills()).default_point();
    planner.plan(&context, &point, &skills()).unwrap()
}

fn tail(plan: &Plan, count: usize) -> Vec<&str> {
    let skills: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
    skills[skills.len().saturating_sub(count)..].to_vec()
}

fn step<'a>(plan: &'a Plan, skill: &str) -> &'a Value {
    &plan
        .steps
        .iter()
        .find(|step| step.skill == skill)
        .unwrap_or_else(|| panic!("no {skill}"))
        .arguments
}

#[test]
fn a_candidate_ends_with_its_checks_extraction_testbench_and_simulation() {
    let plan = plan(OBJECTIVES, JobSimulation::default());
    assert_eq!(
        tail(&plan, 5),
        [
            "layout.export",
            "check.electrical",
            "extract.netlist",
            "sim.testbench",
            "sim.run"
        ]
    );
    let electrical = step(&plan, "check.electrical");
    assert_eq!(electrical["supplies"], json!(["vdd"]));
    assert_eq!(electrical["grounds"], json!(["vss"]));
    let extraction = step(&plan, "extract.netlist");
    assert_eq!(extraction["circuit"], "ota5");
    assert_eq!(
        extraction["ports"],
        json!(["vdd", "vss", "inp", "inn", "out", "vbias"])
    );
    let sensitive: Vec<&str> = extraction["sensitive_nets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|net| net.as_str().unwrap())
        .collect();
    for net in ["inp", "inn", "out", "n1", "tail"] {
        assert!(sensitive.contains(&net), "{net} in {sensitive:?}");
    }
    assert!(!sensitive.contains(&"vdd") && !sensitive.contains(&"vss"));
    assert_eq!(
        extraction["symmetric_pairs"],
        json!([["inp", "inn"], ["n1", "out"]])
    );
    let testbench = step(&plan, "sim.testbench");
    assert_eq!(testbench["kind"], "ota_ac");
    assert_eq!(testbench["supply"], json!({"net": "vdd", "volts": 1.8}));
    let run = step(&plan, "sim.run");
    assert_eq!(run["dut_path"], extraction["path"]);
    assert_eq!(run["testbench_path"], testbench["path"]);
    assert_eq!(run["ac_sweep"], json!({"node": "out"}));
    assert!(request_inputs(&plan).is_empty(), "the testbench is written");
}

#[test]
fn without_performance_objectives_only_the_electrical_check_is_added() {
    let plan = plan(AREA_ONLY, JobSimulation::default());
    assert_eq!(tail(&plan, 2), ["layout.export", "check.electrical"]);
}

#[test]
fn a_farm_without_the_process_models_extracts_and_does_not_simulate() {
    let simulation = JobSimulation {
        testbench: None,
        schematic: Some(SchematicSimulation::NotSimulated {
            reason: "no models".into(),
        }),
    };
    let plan = plan(OBJECTIVES, simulation);
    assert_eq!(tail(&plan, 2), ["check.electrical", "extract.netlist"]);
}

#[test]
fn a_user_testbench_is_brought_by_the_request_and_the_probe_simulates_the_schematic() {
    let testbench = "* tb\nVs vdd 0 1.8\nVg vss 0 0\nVb vbias 0 0.7\n\
                     Xdut vdd vss inp inn out vbias ota5\nVin inp 0 dc 0.9 ac 1\nVm inn 0 0.9\n\
                     .ac dec 10 1 1e9\n.meas ac ugbw_hz when vdb(out)=0\n.end\n";
    let simulation = JobSimulation {
        testbench: Some(testbench.into()),
        schematic: None,
    };
    let plan = plan(OBJECTIVES, simulation.clone());
    assert_eq!(tail(&plan, 2), ["extract.netlist", "sim.run"]);
    assert_eq!(request_inputs(&plan), ["testbench.sp"]);
    assert_eq!(step(&plan, "sim.run")["ac_sweep"], json!({"node": "out"}));

    let (context, raw) = load(OBJECTIVES);
    let setup = simulation
        .setup(&context)
        .expect("a job measuring performance");
    let probe = rules_probe_plan(&raw.drc_rules, &context.circuit, &skills(), Some(&setup));
    assert!(probe.simulates);
    let skills: Vec<&str> = probe
        .plan
        .steps
        .iter()
        .map(|step| step.skill.as_str())
        .collect();
    assert_eq!(skills[skills.len() - 2..], ["sim.schematic", "sim.run"]);
    let schematic = &probe.plan.steps[skills.len() - 2].arguments;
    assert_eq!(schematic["devices"].as_array().unwrap().len(), 5);
    // by default the schematic carries the junctions a schematic tool estimates
    assert_eq!(schematic["junctions"], "estimated");
    assert_eq!(request_inputs(&probe.plan), ["testbench.sp"]);
}

#[test]
fn the_objectives_may_ask_for_the_bare_schematic() {
    let mut objectives: Value = serde_json::from_str(OBJECTIVES).unwrap();
    objectives["schematic_junctions"] = json!("none");
    let (context, raw) = load(&objectives.to_string());
    let setup = JobSimulation::default()
        .setup(&context)
        .expect("a job measuring performance");
    let probe = rules_probe_plan(&raw.drc_rules, &context.circuit, &skills(), Some(&setup));
    let schematic = probe
        .plan
        .steps
        .iter()
        .find(|step| step.skill == "sim.schematic")
        .expect("the probe simulates the schematic");
    assert_eq!(schematic.arguments["junctions"], "none");
}

#[test]
fn the_outputs_are_routed_short_when_the_router_takes_short_nets() {
    let (context, raw) = load(OBJECTIVES);
    let planner = HeuristicPlanner::new(raw)
        .with_route_pitch(Some(0.46))
        .with_simulation(JobSimulation::default());
    let mut catalog = skills();
    let property = json!({"type": "array"});
    let properties: serde_json::Map<String, Value> =
        ["cell_name", "rows", "devices", "nets", "short_nets"]
            .iter()
            .map(|name| (name.to_string(), property.clone()))
            .collect();
    catalog.insert(
        "route.nets".into(),
        json!({"type": "object", "properties": properties}),
    );
    let point = planner.design_space(&context, &catalog).default_point();
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    // the 5T OTA's output: the port on drains and no gate (`n1` is no port, the inputs
    // and `vbias` are gates)
    assert_eq!(step(&plan, "route.nets")["short_nets"], json!(["out"]));
    // a router without the argument is not sent it
    let plain = self::plan(OBJECTIVES, JobSimulation::default());
    assert!(step(&plain, "route.nets").get("short_nets").is_none());
    // nor a job that measures no performance
    let (context, raw) = load(AREA_ONLY);
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.46));
    let point = planner.design_space(&context, &catalog).default_point();
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    assert!(step(&plan, "route.nets").get("short_nets").is_none());
}
