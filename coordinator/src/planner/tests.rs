//! The rule-based planner on the ota5 example: matched modules, advertised
//! skills only, routing once the pitch is known, ReAct adjustments by reason.

use centroid_proto::{Error, ErrorCode};
use centroid_schemas::{InputFile, TaskContext, TaskInputs};
use serde_json::{Value, json};

use crate::planner::heuristic::{HeuristicPlanner, RawInputs};
use crate::planner::plan_builder::fit_to_schema;
use crate::planner::react::reasons;
use crate::planner::{Planner, SkillCatalog};

fn ota5() -> (TaskContext, RawInputs) {
    let netlist = include_str!("../../../examples/ota5/netlist.json");
    let rules = include_str!("../../../examples/ota5/drc_rules.json");
    let objectives = include_str!("../../../examples/ota5/objectives.json");
    let file = |label: &str, text: &str| InputFile {
        label: label.into(),
        bytes: text.as_bytes().to_vec(),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json", netlist),
        drc_rules: file("drc_rules.json", rules),
        objectives: file("objectives.json", objectives),
    };
    let context = TaskContext::load(&inputs, "t").unwrap();
    (
        context,
        RawInputs {
            drc_rules: serde_json::from_str(rules).unwrap(),
            netlist: serde_json::from_str(netlist).unwrap(),
        },
    )
}

fn skills(names: &[&str]) -> SkillCatalog {
    names
        .iter()
        .map(|name| (name.to_string(), Value::Null))
        .collect()
}

const BASIC: &[&str] = &[
    "tech.load",
    "layout.create_device",
    "layout.create_common_centroid_pair",
    "layout.add_dummies",
    "layout.place",
    "drc.run",
    "layout.metrics",
    "layout.export",
];

#[test]
fn ota5_plan_matches_the_pair_and_the_mirror_and_uses_only_advertised_skills() {
    let (context, raw) = ota5();
    let planner = HeuristicPlanner::new(raw);
    let catalog = skills(BASIC);
    let space = planner.design_space(&context, &catalog);
    let plan = planner
        .plan(&context, &space.default_point(), &catalog)
        .unwrap();
    let skills_used: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
    assert_eq!(
        skills_used
            .iter()
            .filter(|skill| **skill == "layout.create_common_centroid_pair")
            .count(),
        2,
        "{skills_used:?}"
    );
    assert!(
        skills_used.contains(&"layout.create_device"),
        "the tail device"
    );
    assert!(
        !skills_used.contains(&"lvs.run") && !skills_used.contains(&"route.nets"),
        "not advertised: not planned"
    );
    assert!(
        plan.steps
            .iter()
            .all(|step| catalog.contains_key(&step.skill))
    );
    let pair = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.create_common_centroid_pair")
        .unwrap();
    assert_eq!(pair.arguments["arrangement"], "ABBA");
    assert_eq!(
        pair.arguments["device_a"]["m"], 2,
        "nf=2 split into two units"
    );
}

#[test]
fn routing_and_lvs_are_planned_once_advertised_and_the_pitch_is_known() {
    let (context, raw) = ota5();
    let mut names = BASIC.to_vec();
    names.extend(["route.info", "route.nets", "lvs.run"]);
    let catalog = skills(&names);
    let point = HeuristicPlanner::new(raw.clone())
        .design_space(&context, &catalog)
        .default_point();
    let without_pitch = HeuristicPlanner::new(raw.clone())
        .plan(&context, &point, &catalog)
        .unwrap();
    assert!(
        !without_pitch
            .steps
            .iter()
            .any(|step| step.skill == "route.nets")
    );
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let plan = planner.plan(&context, &point, &catalog).unwrap();
    let skills_used: Vec<&str> = plan.steps.iter().map(|step| step.skill.as_str()).collect();
    let route = skills_used
        .iter()
        .position(|skill| *skill == "route.nets")
        .expect("routed");
    let lvs = skills_used
        .iter()
        .position(|skill| *skill == "lvs.run")
        .expect("lvs");
    let drc = skills_used
        .iter()
        .position(|skill| *skill == "drc.run")
        .unwrap();
    assert!(route < lvs && route < drc);
    assert_eq!(
        plan.steps[lvs].arguments["devices"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

#[tokio::test]
async fn adjust_falls_back_to_abab_and_fit_drops_undeclared_arguments() {
    let (context, raw) = ota5();
    let planner = HeuristicPlanner::new(raw);
    let catalog = skills(BASIC);
    let plan = planner
        .plan(
            &context,
            &planner.design_space(&context, &catalog).default_point(),
            &catalog,
        )
        .unwrap();
    let pair = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.create_common_centroid_pair")
        .unwrap();
    let error = Error::new(ErrorCode::InvalidParam, "ABBA needs an even m per device")
        .with_details(json!({"reason": reasons::ODD_UNIT_COUNT}));
    let adjusted = planner
        .adjust(&plan, &pair.step_id, &error, &catalog)
        .await
        .adjustment
        .unwrap();
    let new_pair = adjusted
        .plan
        .steps
        .iter()
        .find(|step| step.step_id == pair.step_id)
        .unwrap();
    assert_eq!(new_pair.arguments["arrangement"], "ABAB");
    let schema = json!({"type": "object", "properties": {"cell": {}}, "required": ["cell"], "additionalProperties": false});
    assert_eq!(
        fit_to_schema(json!({"cell": "a", "extra": 1}), &schema),
        Some(json!({"cell": "a"}))
    );
    assert_eq!(fit_to_schema(json!({"extra": 1}), &schema), None);
}
