//! The rule-based planner on the ota5 example: matched modules, advertised
//! skills only, routing once the pitch is known, ReAct adjustments by reason.

mod support;

use serde_json::{Value, json};

use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::plan_builder::{cell_name, fit_to_schema};
use centroid_planner::planner::Planner;
use centroid_planner::random::SplitMix64;
use centroid_planner::react::reasons;
use centroid_planner::step_failure::{StepFailure, codes};
use support::ota5::{BASIC, load, ota5, skills};

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
    // the mirror (one gate, one source) shares diffusion; the differential pair not
    let share_of = |device: &str| {
        plan.steps
            .iter()
            .find(|step| {
                step.skill == "layout.create_common_centroid_pair"
                    && [&step.arguments["device_a"], &step.arguments["device_b"]]
                        .iter()
                        .any(|spec| spec["device_id"] == device)
            })
            .map(|step| step.arguments["share_diffusion"].clone())
    };
    assert_eq!(share_of("M3"), Some(serde_json::Value::Bool(true)));
    assert_eq!(share_of("M1"), Some(serde_json::Value::Bool(false)));
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

/// The value of a future that is ready when first polled (the rule-based planner
/// decides at once); panics otherwise.
fn at_once<T>(future: impl std::future::Future<Output = T>) -> T {
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(future).poll(&mut context) {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("the rule-based planner never waits"),
    }
}

#[test]
fn adjust_falls_back_to_abab_and_fit_drops_undeclared_arguments() {
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
    let failure = StepFailure {
        code: codes::INVALID_PARAM.into(),
        message: "ABBA needs an even m per device".into(),
        details: json!({"reason": reasons::ODD_UNIT_COUNT}),
    };
    let adjusted = at_once(planner.adjust(&plan, &pair.step_id, &failure, &catalog))
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

#[test]
fn every_matched_cell_of_every_plan_is_a_group_of_the_space() {
    // the folding of per-module dummies and rings into one spelling relies on it
    let examples = [
        "ota5",
        "miller_ota",
        "mirror_bank",
        "strongarm_comparator",
        "folded_cascode",
    ];
    for example in examples {
        let text = |file: &str| {
            let path = format!(
                "{}/../examples/{example}/{file}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read_to_string(path).unwrap()
        };
        let (netlist, rules, objectives) = (
            text("netlist.json"),
            text("drc_rules.json"),
            text("objectives.json"),
        );
        let (context, raw) = load(&netlist, &rules, &objectives);
        let mut names = BASIC.to_vec();
        names.extend([
            "layout.create_interdigitated_group",
            "layout.add_guard_ring",
        ]);
        let catalog = skills(&names);
        let planner = HeuristicPlanner::new(raw);
        let space = planner.design_space(&context, &catalog);
        let groups: Vec<String> = space
            .groups
            .iter()
            .map(|module| cell_name("mod", module))
            .collect();
        let mut rng = SplitMix64::new(7);
        let mut points = vec![space.default_point()];
        points.extend((0..20).map(|_| space.random_point(&mut rng)));
        for point in points {
            let plan = planner
                .plan(&context, &space.canonical(&point), &catalog)
                .unwrap();
            for step in plan.steps.iter().filter(|step| {
                step.skill == "layout.create_common_centroid_pair"
                    || step.skill == "layout.create_interdigitated_group"
            }) {
                let cell = step.arguments["cell_name"].as_str().unwrap().to_string();
                assert!(
                    groups.contains(&cell),
                    "{example}: {cell} not in {groups:?}"
                );
            }
        }
    }
}

#[test]
fn a_pair_takes_an_arrangement_gene_only_when_drawn_as_two_devices() {
    let catalog = skills(BASIC);
    // per module: (whether it has an arrangement gene, type, members, devices)
    let modules = |netlist: &str| {
        let (context, raw) = load(
            netlist,
            include_str!("../../examples/ota5/drc_rules.json"),
            include_str!("../../examples/ota5/objectives.json"),
        );
        let space = HeuristicPlanner::new(raw).design_space(&context, &catalog);
        context
            .circuit
            .modules
            .iter()
            .map(|module| {
                let members = module.members().count();
                (
                    space.modules.contains(&module.id),
                    module.module_type.as_str().to_owned(),
                    members,
                    module.devices.len(),
                )
            })
            .collect::<Vec<(bool, String, usize, usize)>>()
    };
    let ota5 = include_str!("../../examples/ota5/netlist.json");
    let plain = modules(ota5);
    assert!(
        plain.contains(&(true, "differential_pair".into(), 2, 2))
            && plain.contains(&(true, "current_mirror".into(), 2, 2)),
        "{plain:?}"
    );
    // the pair's halves each written out as two devices on the same nets: two members of
    // two parallel units each, drawn as one interdigitated group of four devices
    let mut netlist: Value = serde_json::from_str(ota5).unwrap();
    let devices = netlist["cells"][0]["devices"].as_array_mut().unwrap();
    for half in ["M1", "M2"] {
        let mut copy = devices
            .iter()
            .find(|device| device["id"] == half)
            .unwrap()
            .clone();
        copy["id"] = json!(format!("{half}B"));
        devices.push(copy);
    }
    let copies = modules(&netlist.to_string());
    assert!(
        copies.contains(&(false, "differential_pair".into(), 2, 4))
            && copies.contains(&(true, "current_mirror".into(), 2, 2)),
        "{copies:?}"
    );
}
