//! The LLM planner against a fake OpenAI-compatible server (real HTTP on
//! loopback, scripted replies), without workers: the prompt holds every device
//! id of a 100-device circuit within the token budget, an invalid answer gets one
//! repair round, a repeated failure makes the meta-prompt agent rewrite the
//! guidance (asked at the same time as the critic and the planning call, for the
//! next planning call), and ReAct's action is validated against the skill's schema (else the
//! rule-based adjustment is used) and asked of the `[llm.light]` model when one is
//! named.

use std::sync::Arc;

use centroid_coordinator::agent::LlmPlanner;
use centroid_coordinator::agent::prompts::Budget;
use centroid_coordinator::llm::tokens::count_tokens;
use centroid_coordinator::llm::{LlmClient, LlmSettings};
use centroid_planner::advice::{AdviceRequest, JournalEntry};
use centroid_planner::candidate::Origin;
use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_planner::step_failure::{StepFailure, codes};
use centroid_schemas::{InputFile, TaskContext, TaskInputs};
use centroid_tests::fake_llm::{FakeLlm, Reply};
use serde_json::{Value, json};

const SKILLS: &[&str] = &[
    "tech.load",
    "layout.create_device",
    "layout.create_common_centroid_pair",
    "layout.add_dummies",
    "layout.place",
    "drc.run",
    "layout.metrics",
    "layout.export",
];

fn skills() -> SkillCatalog {
    let mut catalog: SkillCatalog = SKILLS
        .iter()
        .map(|name| (name.to_string(), Value::Null))
        .collect();
    catalog.insert(
        "layout.create_common_centroid_pair".into(),
        json!({
            "type": "object",
            "description": "two matched devices in one common-centroid cell",
            "properties": {
                "cell_name": {"type": "string"},
                "device_a": {"type": "object"},
                "device_b": {"type": "object"},
                "arrangement": {"enum": ["ABBA", "ABAB", "2D"]},
                "dummies": {"type": "integer", "minimum": 0}
            },
            "required": ["cell_name", "device_a", "device_b"]
        }),
    );
    catalog
}

fn file(label: &str, text: String) -> InputFile {
    InputFile {
        label: label.into(),
        bytes: text.into_bytes(),
    }
}

fn example(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/ota5/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

/// ota5, or a flat circuit of `devices` transistors in differential pairs.
fn task(devices: Option<usize>) -> (Arc<TaskContext>, RawInputs) {
    let netlist = match devices {
        None => example("netlist.json"),
        Some(count) => {
            let devices: Vec<Value> = (0..count)
                .map(|index| {
                    json!({"id": format!("MN{index:03}"), "type": "nmos", "w": 2e-6, "l": 5e-7,
                           "nf": 2, "m": 1, "terminals": {"g": format!("in{}", index / 2 % 2),
                           "d": format!("d{index}"), "s": format!("t{}", index / 2), "b": "vss"}})
                })
                .collect();
            let mut nets: Vec<String> = vec!["in0".into(), "in1".into(), "vss".into()];
            nets.extend((0..count).map(|index| format!("d{index}")));
            nets.extend((0..count / 2 + 1).map(|index| format!("t{index}")));
            json!({"schema_version": "1.0.0", "top": "big",
                   "cells": [{"name": "big", "nets": nets, "devices": devices}]})
            .to_string()
        }
    };
    let rules = example("drc_rules.json");
    let inputs = TaskInputs {
        netlist: file("netlist.json", netlist.clone()),
        drc_rules: file("drc_rules.json", rules.clone()),
        objectives: file("objectives.json", example("objectives.json")),
    };
    let context = TaskContext::load(&inputs, "t").expect("the circuit loads");
    let raw = RawInputs {
        drc_rules: serde_json::from_str(&rules).unwrap(),
        netlist: serde_json::from_str(&netlist).unwrap(),
    };
    (Arc::new(context), raw)
}

fn settings(fake: &FakeLlm, max_context_tokens: u32) -> LlmSettings {
    LlmSettings {
        base_url: fake.base_url(),
        model: "fake-model".into(),
        timeout_ms: 5_000,
        max_context_tokens,
        ..LlmSettings::default()
    }
}

fn planner(fake: &FakeLlm, raw: RawInputs, max_context_tokens: u32) -> Arc<LlmPlanner> {
    let client = LlmClient::new(settings(fake, max_context_tokens)).unwrap();
    Arc::new(LlmPlanner::new(HeuristicPlanner::new(raw), client))
}

fn request(task: &Arc<TaskContext>, planner: &LlmPlanner, iteration: u32) -> AdviceRequest {
    AdviceRequest {
        job_id: "job".into(),
        iteration,
        count: 2,
        task: task.clone(),
        skills: skills(),
        space: planner.design_space(task, &skills()),
        journal: Vec::new(),
        history: Vec::new(),
    }
}

fn messages(request: &Value) -> (String, String) {
    let messages = request["messages"].as_array().unwrap();
    let text = |index: usize| messages[index]["content"].as_str().unwrap().to_owned();
    (text(0), text(1))
}

#[tokio::test]
async fn every_device_id_is_in_the_prompt_and_the_prompt_stays_within_budget() {
    let answer = json!({"thought": "t", "candidates": [{"arrangement": "ABBA"}]});
    for window in [8192u32, 2048] {
        let fake = FakeLlm::start(vec![], Reply::Json(answer.clone())).await;
        let (task, raw) = task(Some(100));
        let planner = planner(&fake, raw, window);
        let advice = planner.clone().advise(request(&task, &planner, 0)).await;
        assert_eq!(advice.fallback, None, "window {window}");
        assert_eq!(advice.points.len(), 1);
        let requests = fake.requests();
        assert_eq!(requests.len(), 1);
        let (system, user) = messages(&requests[0]);
        for device in &task.circuit.devices {
            assert!(
                user.contains(&device.id),
                "{} missing at {window}",
                device.id
            );
        }
        let budget = Budget::of(&settings(&fake, window));
        let used = count_tokens(&system) + count_tokens(&user);
        assert!(
            used <= budget.prompt && budget.prompt < window as usize,
            "{used} tokens over the budget {} of a {window}-token window",
            budget.prompt
        );
        if window == 2048 {
            assert!(user.contains("truncated"), "a long part is cut, marked");
        }
    }
}

#[tokio::test]
async fn an_invalid_answer_gets_one_repair_round_with_the_problems() {
    let fake = FakeLlm::start(
        vec![Reply::Json(
            json!({"thought": "t", "candidates": [{"arrangement": "XYZ", "dummies": 9}]}),
        )],
        Reply::Json(
            json!({"thought": "fixed", "candidates": [{"arrangement": "ABAB", "dummies": 0}]}),
        ),
    )
    .await;
    let (task, raw) = task(None);
    let planner = planner(&fake, raw, 8192);
    let advice = planner.clone().advise(request(&task, &planner, 0)).await;
    assert_eq!(advice.fallback, None);
    assert_eq!(advice.points[0].arrangement, "ABAB");
    assert_eq!(advice.points[0].dummies, 0);
    let outcomes: Vec<(&str, &str)> = advice
        .calls
        .iter()
        .map(|call| (call.role.as_str(), call.outcome.as_str()))
        .collect();
    assert_eq!(outcomes, [("planner", "rejected"), ("repair", "used")]);
    let first = fake.requests()[0]["messages"].to_string();
    assert!(
        first.contains("Layout knowledge") && first.contains("process_ihp_sg13g2.md#"),
        "the process's notes are retrieved into the prompt"
    );
    let repair = fake.requests()[1]["messages"].to_string();
    assert!(repair.contains("arrangement") && repair.contains("is not one of"));
}

#[tokio::test]
async fn per_module_dummies_and_rings_of_an_answer_are_checked_against_the_groups() {
    let (task, raw) = task(None);
    let probe = FakeLlm::start(vec![], Reply::Json(json!({}))).await;
    let groups = planner(&probe, raw.clone(), 8192)
        .design_space(&task, &skills())
        .groups;
    assert_eq!(groups.len(), 2, "ota5: the pair and the mirror");
    let (first, second) = (&groups[0], &groups[1]);
    let fake = FakeLlm::start(
        vec![Reply::Json(json!({"thought": "t", "candidates": [{
            "dummies": 1,
            "module_dummies": {"nosuch": 1, (second.as_str()): 7},
            "module_rings": {(first.as_str()): "yes"}
        }]}))],
        Reply::Json(json!({"thought": "fixed", "candidates": [{
            "dummies": 1, "module_dummies": {(second.as_str()): 2}
        }]})),
    )
    .await;
    let planner = planner(&fake, raw, 8192);
    let advice = planner.clone().advise(request(&task, &planner, 0)).await;
    assert_eq!(advice.fallback, None);
    let point = &advice.points[0];
    assert_eq!((point.dummies_of(first), point.dummies_of(second)), (1, 2));
    let repair = fake.requests()[1]["messages"].to_string();
    for problem in [
        "module_dummies.nosuch".to_string(),
        format!("module_dummies.{second}: 7"),
        format!("module_rings.{first}"),
    ] {
        assert!(repair.contains(&problem), "{problem} not in {repair}");
    }
    let system = messages(&fake.requests()[0]).0;
    assert!(
        system.contains("module_dummies for") && !system.contains("module_rings"),
        "the space names the groups, and offers no ring where rings are not allowed"
    );
}

#[tokio::test]
async fn garbage_twice_is_a_fallback() {
    let fake = FakeLlm::start(vec![], Reply::Text("no JSON here".into())).await;
    let (task, raw) = task(None);
    let planner = planner(&fake, raw, 8192);
    let advice = planner.clone().advise(request(&task, &planner, 0)).await;
    assert_eq!(advice.fallback.as_deref(), Some("invalid_answer"));
    assert!(advice.points.is_empty() && advice.plan.is_none());
    assert_eq!(advice.calls.len(), 2);
}

fn failed_entry(iteration: u32, index: u32, point: DesignPoint) -> JournalEntry {
    JournalEntry {
        candidate_id: format!("job-i{iteration}-c{index}"),
        iteration,
        origin: Origin::Draft,
        point,
        passed: Some(false),
        score: 0.1,
        area_um2: 300.0,
        drc_violations: 4,
        lvs: "match".into(),
        reasons: vec!["4 DRC violations".into()],
        matching_score: 0.0,
        centroid_error_um: None,
    }
}

#[tokio::test]
async fn a_repeated_failure_makes_the_meta_prompt_agent_rewrite_the_guidance() {
    let answer = json!({
        "thought": "space the modules",
        "candidates": [{"spacing_nm": 500}],
        "qualitative_feedback": "every candidate broke a spacing rule",
        "suggestions": ["more spacing"],
        "system_prompt": "Always leave 500 nm between modules."
    });
    let fake = FakeLlm::start(vec![], Reply::Json(answer)).await;
    let (task, raw) = task(None);
    let planner = planner(&fake, raw, 8192);
    let space = planner.design_space(&task, &skills());
    let point = space.default_point();
    let mut journal = vec![failed_entry(0, 0, point.clone())];
    let mut first = request(&task, &planner, 1);
    first.journal = journal.clone();
    let advice = planner.clone().advise(first).await;
    assert!(
        advice.guidance.is_none(),
        "one failing iteration is no pattern"
    );
    assert!(advice.calls.iter().any(|call| call.role == "critic"));
    journal.push(failed_entry(1, 0, point));
    let mut second = request(&task, &planner, 2);
    second.journal = journal;
    let advice = planner.clone().advise(second.clone()).await;
    let guidance = advice.guidance.expect("rewritten after two DRC failures");
    assert_eq!(guidance.version, 1);
    assert_eq!(guidance.because, "drc");
    let roles: Vec<&str> = advice.calls.iter().map(|call| call.role.as_str()).collect();
    assert_eq!(
        roles,
        ["critic", "meta", "planner"],
        "recorded in that order"
    );
    // asked together with the critic and the meta-prompt agent, planning 2 had
    // the guidance and the critique (of iteration 0) of before
    let (system, user) = messages(&last_planning(&fake));
    assert!(!system.contains("Always leave 500 nm"), "{system}");
    assert!(
        user.contains("On iteration 0: every candidate broke a spacing rule"),
        "the critic's feedback on iteration 0: {user}"
    );
    // the next planning call has both
    let mut third = second;
    third.iteration = 3;
    planner.clone().advise(third).await;
    let (system, user) = messages(&last_planning(&fake));
    assert!(
        system.contains("Always leave 500 nm"),
        "the new guidance plans"
    );
    assert!(
        user.contains("On iteration 1: every candidate broke a spacing rule"),
        "the critic's feedback on iteration 1: {user}"
    );
    assert_eq!(planner.guidance_history().len(), 2);
}

/// The last planning request the server received (not a critic's or the
/// meta-prompt agent's).
fn last_planning(fake: &FakeLlm) -> Value {
    fake.requests()
        .into_iter()
        .rev()
        .find(|request| {
            let (system, _) = messages(request);
            !system.starts_with("You are the critic") && !system.starts_with("You improve")
        })
        .expect("a planning request")
}

/// An advice's critic, meta-prompt and planning calls are asked at once: with a
/// model answering each after a delay, the advice takes about one delay, not
/// three; each call is recorded, in the order critic, meta, planner.
#[tokio::test]
async fn the_critic_the_meta_prompt_agent_and_the_planner_are_asked_at_once() {
    const DELAY: std::time::Duration = std::time::Duration::from_millis(1500);
    let answer = json!({
        "thought": "space the modules",
        "candidates": [{"spacing_nm": 500}],
        "qualitative_feedback": "every candidate broke a spacing rule",
        "suggestions": ["more spacing"],
        "system_prompt": "Always leave 500 nm between modules."
    });
    let fake = FakeLlm::start(vec![], Reply::Delay(DELAY, Box::new(Reply::Json(answer)))).await;
    let (task, raw) = task(None);
    let planner = planner(&fake, raw, 8192);
    let point = planner.design_space(&task, &skills()).default_point();
    let mut first = request(&task, &planner, 1);
    first.journal = vec![failed_entry(0, 0, point.clone())];
    planner.clone().advise(first.clone()).await;
    let mut second = request(&task, &planner, 2);
    second.journal = first.journal;
    second.journal.push(failed_entry(1, 0, point));
    let asked = std::time::Instant::now();
    let advice = planner.clone().advise(second).await;
    let took = asked.elapsed();
    let roles: Vec<&str> = advice.calls.iter().map(|call| call.role.as_str()).collect();
    assert_eq!(roles, ["critic", "meta", "planner"]);
    assert!(advice.calls.iter().all(|call| call.outcome == "used"));
    assert!(
        took >= DELAY && took < 2 * DELAY,
        "three calls of {DELAY:?} each took {took:?} together"
    );
    assert_eq!(
        fake.requests().len(),
        2 + 3,
        "planning and critic, then three"
    );
}

#[tokio::test]
async fn react_uses_a_valid_action_and_falls_back_on_an_invalid_one() {
    let (task, raw) = task(None);
    let heuristic_plan = |planner: &LlmPlanner| {
        let space = planner.design_space(&task, &skills());
        planner
            .plan(&task, &space.default_point(), &skills())
            .unwrap()
    };
    let error = StepFailure {
        code: codes::INVALID_PARAM.into(),
        message: "ABBA needs an even m per device".into(),
        details: json!({"reason": "odd_unit_count"}),
    };

    let fake = FakeLlm::start(vec![], Reply::Json(json!({}))).await;
    let probe = planner(&fake, raw.clone(), 8192);
    let plan = heuristic_plan(&probe);
    let pair = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.create_common_centroid_pair")
        .unwrap()
        .clone();
    let mut arguments = pair.arguments.clone();
    arguments["arrangement"] = json!("ABAB");
    let action = json!({"thought": "odd units: interleave instead",
                        "action": {"step_id": pair.step_id, "skill_name": pair.skill, "params": arguments}});
    let fake = FakeLlm::start(vec![], Reply::Json(action)).await;
    let planner_ok = planner(&fake, raw.clone(), 8192);
    let adjusted = planner_ok
        .adjust(&plan, &pair.step_id, &error, &skills())
        .await;
    let adjustment = adjusted.adjustment.expect("the model's action");
    assert_eq!(adjusted.fallback, None);
    assert!(adjustment.note.starts_with("Thought: odd units"));
    let step = adjustment
        .plan
        .steps
        .iter()
        .find(|step| step.step_id == pair.step_id)
        .unwrap();
    assert_eq!(step.arguments["arrangement"], "ABAB");
    let prompt = fake.requests()[0]["messages"].to_string();
    assert!(prompt.contains("odd_unit_count") && prompt.contains(&pair.step_id));

    // an action whose params break the schema: repaired once, then the rules adjust
    let mut bad = pair.arguments.clone();
    bad["arrangement"] = json!("SPIRAL");
    let action = json!({"thought": "spiral", "action": {"step_id": pair.step_id, "skill_name": pair.skill, "params": bad}});
    let fake = FakeLlm::start(vec![], Reply::Json(action)).await;
    let planner_bad = planner(&fake, raw, 8192);
    let adjusted = planner_bad
        .adjust(&plan, &pair.step_id, &error, &skills())
        .await;
    assert_eq!(adjusted.fallback.as_deref(), Some("invalid_answer"));
    assert_eq!(adjusted.calls.len(), 2);
    let rules = adjusted.adjustment.expect("the rule-based adjustment");
    assert!(!rules.note.starts_with("Thought"));
    let step = rules
        .plan
        .steps
        .iter()
        .find(|step| step.step_id == pair.step_id)
        .unwrap();
    assert_eq!(step.arguments["arrangement"], "ABAB");
}

#[tokio::test]
async fn a_react_repair_is_asked_of_the_light_model() {
    let (task, raw) = task(None);
    let heavy = FakeLlm::start(vec![], Reply::Json(json!({}))).await;
    let planner_heavy = planner(&heavy, raw.clone(), 8192);
    let space = planner_heavy.design_space(&task, &skills());
    let plan = planner_heavy
        .plan(&task, &space.default_point(), &skills())
        .unwrap();
    let pair = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.create_common_centroid_pair")
        .unwrap()
        .clone();
    let mut arguments = pair.arguments.clone();
    arguments["arrangement"] = json!("ABAB");
    let action = json!({"thought": "odd units: interleave instead",
                        "action": {"step_id": pair.step_id, "skill_name": pair.skill, "params": arguments}});
    let light = FakeLlm::start(vec![], Reply::Json(action)).await;
    let light_client = LlmClient::new(LlmSettings {
        model: "fake-light".into(),
        ..settings(&light, 8192)
    })
    .unwrap();
    let client = LlmClient::new(settings(&heavy, 8192)).unwrap();
    let planner =
        LlmPlanner::new(HeuristicPlanner::new(raw), client).with_light(Some(light_client));
    let error = StepFailure {
        code: codes::INVALID_PARAM.into(),
        message: "ABBA needs an even m per device".into(),
        details: json!({"reason": "odd_unit_count"}),
    };
    let adjusted = planner
        .adjust(&plan, &pair.step_id, &error, &skills())
        .await;
    assert_eq!(adjusted.fallback, None);
    assert!(adjusted.adjustment.is_some());
    assert_eq!(light.requests().len(), 1, "ReAct asked the light model");
    assert_eq!(light.requests()[0]["model"], "fake-light");
    assert!(heavy.requests().is_empty(), "the heavy model was not asked");
    assert!(
        adjusted
            .calls
            .iter()
            .all(|call| call.model == "fake-light" && call.role == "react"),
        "{:?}",
        adjusted.calls
    );
}
