//! What the LLM planner's prompts say and what it accepts, against a fake
//! OpenAI-compatible server (real HTTP on loopback, scripted replies): no prompt
//! offers a debug skill or a value outside the job's design space; a model plan
//! reading an absolute path or calling a debug skill is refused before dispatch
//! (a rejected answer with its reason, no plan); a point the journal already
//! holds, spelled differently, is reported as a repeat and named in the next
//! prompt.

use std::sync::Arc;

use centroid_coordinator::agent::LlmPlanner;
use centroid_coordinator::llm::{LlmClient, LlmSettings};
use centroid_planner::advice::{AdviceRequest, JournalEntry};
use centroid_planner::candidate::Origin;
use centroid_planner::design_point::DesignPoint;
use centroid_planner::heuristic::{HeuristicPlanner, RawInputs};
use centroid_planner::planner::Planner;
use centroid_planner::skill_catalog::SkillCatalog;
use centroid_schemas::{InputFile, TaskContext, TaskInputs};
use centroid_tests::fake_llm::{FakeLlm, Reply};
use serde_json::{Value, json};

/// A routing worker's skills (so: no 2-D arrangement, no guard ring) and the
/// debug skills every worker has.
fn skills() -> SkillCatalog {
    let mut catalog: SkillCatalog = [
        "tech.load",
        "layout.create_device",
        "layout.create_common_centroid_pair",
        "layout.add_dummies",
        "layout.place",
        "route.info",
        "route.nets",
        "drc.run",
        "layout.metrics",
        "layout.export",
    ]
    .iter()
    .map(|name| (name.to_string(), Value::Null))
    .collect();
    catalog.insert(
        "layout.read".into(),
        json!({"type": "object", "description": "read a GDS file",
               "properties": {"path": {"type": "string", "x-centroid-file": true}},
               "required": ["path"]}),
    );
    catalog.insert(
        "debug.sleep".into(),
        json!({"type": "object", "description": "sleep (tests)",
               "properties": {"seconds": {"type": "number", "maximum": 3600}}}),
    );
    catalog.insert(
        "debug.fail".into(),
        json!({"type": "object", "description": "raise (tests)"}),
    );
    catalog
}

fn example(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/ota5/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

fn task() -> (Arc<TaskContext>, RawInputs) {
    let file = |label: &str| InputFile {
        label: label.into(),
        bytes: example(label).into_bytes(),
    };
    let inputs = TaskInputs {
        netlist: file("netlist.json"),
        drc_rules: file("drc_rules.json"),
        objectives: file("objectives.json"),
    };
    let context = TaskContext::load(&inputs, "t").expect("ota5 loads");
    let raw = RawInputs {
        drc_rules: serde_json::from_str(&example("drc_rules.json")).unwrap(),
        netlist: serde_json::from_str(&example("netlist.json")).unwrap(),
    };
    (Arc::new(context), raw)
}

fn planner(fake: &FakeLlm, raw: RawInputs) -> Arc<LlmPlanner> {
    planner_with_window(fake, raw, 8192)
}

fn planner_with_window(fake: &FakeLlm, raw: RawInputs, window: u32) -> Arc<LlmPlanner> {
    let settings = LlmSettings {
        base_url: fake.base_url(),
        model: "fake-model".into(),
        timeout_ms: 5_000,
        max_context_tokens: window,
        ..LlmSettings::default()
    };
    let client = LlmClient::new(settings).unwrap();
    let heuristic = HeuristicPlanner::new(raw).with_route_pitch(Some(1.0));
    Arc::new(LlmPlanner::new(heuristic, client).with_candidate_deadline(60_000))
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

fn entry(iteration: u32, point: DesignPoint, passed: bool) -> JournalEntry {
    JournalEntry {
        candidate_id: format!("job-i{iteration}-c0"),
        iteration,
        origin: Origin::Draft,
        point,
        passed: Some(passed),
        score: if passed { 0.7 } else { 0.0 },
        area_um2: 120.0,
        drc_violations: if passed { 0 } else { 3 },
        lvs: "match".into(),
        reasons: if passed {
            Vec::new()
        } else {
            vec!["3 DRC violations".into()]
        },
        matching_score: 0.8,
        centroid_error_um: Some(0.01),
    }
}

fn prompt_text(request: &Value) -> String {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn no_prompt_offers_a_debug_skill_or_a_value_outside_the_space() {
    let answer = json!({"thought": "t", "candidates": [{"arrangement": "ABAB"}],
                        "qualitative_feedback": "fine", "suggestions": []});
    let fake = FakeLlm::start(vec![], Reply::Json(answer)).await;
    let (task, raw) = task();
    let planner = planner(&fake, raw);
    let space = planner.design_space(&task, &skills());
    assert_eq!(space.arrangements, ["ABBA", "ABAB"], "a routed space");
    assert_eq!(space.guard_rings, [false]);
    let first = planner.clone().advise(request(&task, &planner, 0)).await;
    assert_eq!(first.fallback, None);
    let mut later = request(&task, &planner, 1);
    later.journal = vec![entry(0, space.default_point(), false)];
    let second = planner.clone().advise(later).await;
    assert!(second.calls.iter().any(|call| call.role == "critic"));
    let requests = fake.requests();
    assert!(requests.len() >= 3, "planning, critic, planning");
    for request in &requests {
        let text = prompt_text(request);
        for outside in [
            "debug.",
            "\"2D\"",
            "two-dimensional",
            "module_rings",
            "guard_ring",
        ] {
            assert!(!text.contains(outside), "{outside:?} in a prompt:\n{text}");
        }
    }
    if std::env::var_os("SHOW_PROMPTS").is_some() {
        for request in &requests {
            println!("{}\n=====", prompt_text(request));
        }
    }
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    for knob in [
        "row_order",
        "spacing_nm (nanometres)",
        "aspect_ratio_pct (percent)",
    ] {
        assert!(system.contains(knob), "{knob} not explained:\n{system}");
    }
    assert!(!system.contains("guard ring"), "the guidance: {system}");
    let user = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("\"M1\"") && user.contains("- layout.read: read a GDS file"),
        "names quoted, skills described: {user}"
    );
    assert!(
        user.contains("µm") && !user.contains("e-0"),
        "rules in µm: {user}"
    );
}

#[tokio::test]
async fn a_plan_with_an_absolute_path_or_a_debug_skill_is_refused_before_dispatch() {
    let step = |skill: &str, params: Value| {
        json!({"thought": "t", "candidates": [], "plan": {"plan_summary": "p", "steps": [
            {"step_id": "s1", "name": "n", "skill_name": skill, "params": params,
             "expected_output": "", "dependencies": []}]}})
    };
    let fake = FakeLlm::start(
        vec![Reply::Json(step(
            "layout.read",
            json!({"path": "/etc/hostname"}),
        ))],
        Reply::Json(step("debug.sleep", json!({"seconds": 3600}))),
    )
    .await;
    let (task, raw) = task();
    let planner = planner(&fake, raw);
    let advice = planner.clone().advise(request(&task, &planner, 0)).await;
    assert!(advice.plan.is_none(), "no plan reaches a worker");
    assert_eq!(advice.fallback.as_deref(), Some("invalid_answer"));
    let outcomes: Vec<(&str, &str)> = advice
        .calls
        .iter()
        .map(|call| (call.role.as_str(), call.outcome.as_str()))
        .collect();
    assert_eq!(outcomes, [("planner", "rejected"), ("repair", "rejected")]);
    assert!(
        advice.calls[0].reason.contains("scratch directory"),
        "{}",
        advice.calls[0].reason
    );
    assert!(
        advice.calls[1].reason.contains("debug skill"),
        "{}",
        advice.calls[1].reason
    );
    let repair = prompt_text(&fake.requests()[1]);
    assert!(
        repair.contains("is not a file of the candidate's scratch directory"),
        "the repair round tells why: {repair}"
    );
}

#[tokio::test]
async fn a_repeated_point_is_reported_as_a_repeat_and_named_in_the_next_prompt() {
    let fake = FakeLlm::start(vec![], Reply::Json(json!({}))).await;
    let (task, raw) = task();
    let probe = planner(&fake, raw.clone());
    let space = probe.design_space(&task, &skills());
    let tried = space.default_point();
    // the same layout, spelled with the defaults left out
    let answer = json!({"thought": "again", "candidates": [
        {"arrangement": tried.arrangement, "dummies": tried.dummies}]});
    let fake = FakeLlm::start(vec![], Reply::Json(answer)).await;
    let planner = planner(&fake, raw);
    let mut asked = request(&task, &planner, 1);
    asked.journal = vec![entry(0, tried.clone(), true)];
    let advice = planner.clone().advise(asked.clone()).await;
    let planning = advice
        .calls
        .iter()
        .find(|call| call.role == "planner")
        .unwrap();
    assert!(
        planning.summary.ends_with("1 points (0 new, 1 repeats)"),
        "{}",
        planning.summary
    );
    asked.iteration = 2;
    planner.clone().advise(asked).await;
    let last = prompt_text(fake.requests().last().unwrap());
    assert!(
        last.contains("Repeats in your last answer") && last.contains("job-i0-c0"),
        "{last}"
    );
}

#[tokio::test]
async fn a_small_window_keeps_the_journal_and_the_critique_before_the_skills() {
    let answer = json!({"thought": "t", "candidates": [{"arrangement": "ABAB"}],
                        "qualitative_feedback": "the pair broke a spacing rule",
                        "suggestions": ["more spacing"]});
    let fake = FakeLlm::start(vec![], Reply::Json(answer)).await;
    let (task, raw) = task();
    let planner = planner_with_window(&fake, raw, 2048);
    let space = planner.design_space(&task, &skills());
    let mut asked = request(&task, &planner, 1);
    asked.journal = vec![entry(0, space.default_point(), false)];
    let advice = planner.clone().advise(asked.clone()).await;
    assert_eq!(advice.fallback, None);
    // the critique of iteration 0, asked with planning 1, is in planning 2's prompt
    asked.iteration = 2;
    let advice = planner.clone().advise(asked).await;
    assert_eq!(advice.fallback, None);
    let roles: Vec<&str> = advice.calls.iter().map(|call| call.role.as_str()).collect();
    assert_eq!(roles, ["planner"], "iteration 0 is reviewed once");
    let last = fake.requests().last().cloned().unwrap();
    let user = last["messages"][1]["content"].as_str().unwrap().to_owned();
    for section in ["## Journal", "## Critic's feedback", "job-i0-c0"] {
        assert!(
            user.contains(section),
            "{section} missing at 2048 tokens:\n{user}"
        );
    }
    if let Some(skills) = user.find("## Skills a plan may call") {
        assert!(
            skills > user.find("## Journal").unwrap(),
            "the skills come after the journal"
        );
    }
}
