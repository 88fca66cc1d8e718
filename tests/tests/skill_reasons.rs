//! The contract between the skills and the planner's ReAct adjustment is
//! structural: the planner keys on `error.details.reason`. This test starts the
//! real skill server (real KLayout), provokes every (skill, reason) pair the
//! planner relies on, and fails when a skill stops giving that reason — or when
//! the planner starts relying on a reason this test cannot provoke.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

use centroid_planner::react::reasons;
use centroid_tests::{python, repository_root, skills_dir};
use centroid_worker::skill_process::{SkillProcess, SkillServerCommand, ToolCallResult};
use serde_json::{Value, json};

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(60)
}

async fn call(process: &mut SkillProcess, skill: &str, arguments: Value) -> ToolCallResult {
    process
        .call_tool(skill, arguments, deadline())
        .await
        .expect("the skill server answers")
}

/// The reason of a failed call (panics when the call succeeded).
fn reason(result: &ToolCallResult, what: &str) -> String {
    assert!(
        !result.ok,
        "{what}: expected a failure, got {:?}",
        result.data
    );
    let error = result.error.as_ref().expect("a failed call has an error");
    error
        .details
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn every_reason_the_planner_relies_on_is_given_by_the_skills() {
    let command = SkillServerCommand {
        python: python(),
        skills_dir: skills_dir(),
        memory_limit_bytes: 0,
        signoff_decks: String::new(),
    };
    let mut process = SkillProcess::spawn(&command, 0).expect("the skill server starts");
    process.initialize(deadline()).await.expect("initialize");
    let rules: Value = serde_json::from_str(
        &std::fs::read_to_string(repository_root().join("examples/pdk/sky130.json")).unwrap(),
    )
    .unwrap();
    assert!(
        call(&mut process, "tech.load", json!({"rules": rules}))
            .await
            .ok
    );

    let mut provoked: BTreeSet<(String, String)> = BTreeSet::new();
    let mut record = |skill: &str, result: &ToolCallResult, what: &str| {
        provoked.insert((skill.to_string(), reason(result, what)));
    };

    // an odd unit count per device in ABBA
    let unit = json!({"type": "nmos", "w": 1e-6, "l": 1.5e-7, "nf": 1, "m": 3});
    let mut device_a = unit.clone();
    device_a["device_id"] = json!("MA");
    let mut device_b = unit.clone();
    device_b["device_id"] = json!("MB");
    let pair = json!({"device_a": device_a, "device_b": device_b, "arrangement": "ABBA", "cell_name": "pair"});
    let result = call(&mut process, "layout.create_common_centroid_pair", pair).await;
    record(
        "layout.create_common_centroid_pair",
        &result,
        "ABBA with m = 3",
    );

    // two device cells placed on top of each other, then edge to edge
    let mut width_um = 0.0;
    for name in ["A", "B"] {
        let device = json!({"device_id": format!("M{name}"), "type": "nmos", "w": 1e-6, "l": 1.5e-7, "nf": 1, "m": 1, "cell_name": format!("dev{name}")});
        let created = call(&mut process, "layout.create_device", device).await;
        assert!(created.ok, "{:?}", created.error);
        width_um = created.data["width_um"].as_f64().expect("width_um");
    }
    let stacked = json!({"cell_name": "stacked", "items": [{"cell": "devA", "x": 0, "y": 0}, {"cell": "devB", "x": 0, "y": 0}]});
    let result = call(&mut process, "layout.place", stacked).await;
    record("layout.place", &result, "two cells at one place");
    let abutted = json!({"cell_name": "abutted", "items": [{"cell": "devA", "x": 0, "y": 0}, {"cell": "devB", "x": width_um, "y": 0}]});
    let result = call(&mut process, "layout.place", abutted).await;
    record("layout.place", &result, "two cells edge to edge");

    // arguments the input schema refuses
    let result = call(&mut process, "debug.sleep", json!({"seconds": "soon"})).await;
    record("debug.sleep", &result, "a string for a number");
    let pointer = result.error.as_ref().unwrap().details["pointer"].clone();
    assert_eq!(pointer, json!("/seconds"), "the schema reason says where");

    let relied_on: BTreeSet<(String, String)> = reasons::RELIED_ON
        .iter()
        .map(|(skill, reason)| (skill.to_string(), reason.to_string()))
        .collect();
    let missing: Vec<_> = relied_on.difference(&provoked).collect();
    assert!(
        missing.is_empty(),
        "reasons the planner relies on but the skills did not give: {missing:?} (given: {provoked:?})"
    );
    process.shut_down(Duration::from_secs(2)).await;
}
