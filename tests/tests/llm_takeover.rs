//! Takeover with the LLM planner: the coordinator driving a job is killed
//! (`kill -9`) after the critic gave its feedback; the coordinator that takes
//! the job over starts with nothing in memory, reads the planner's memory from
//! the job's record, and the next planning prompt still carries the critic's
//! last feedback. The fake model's later critiques are invalid, so that
//! feedback can come from the record only.

use std::time::Duration;

use centroid_tests::fake_llm::{FakeLlm, Reply};
use centroid_tests::{Sandbox, small_job};
use serde_json::{Value, json};

const FEEDBACK: &str = "MARKER-ONE: keep the input pair interdigitated";

fn planner_answer() -> Value {
    json!({
        "thought": "common centroid keeps the pair matched",
        "candidates": [
            {"arrangement": "ABAB", "dummies": 0, "spacing_nm": 200, "why": "compact"},
            {"arrangement": "ABBA", "dummies": 1, "aspect_ratio_pct": 50, "why": "matched"}
        ]
    })
}

fn system_prompt(request: &Value) -> String {
    request["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn is_critic(request: &Value) -> bool {
    system_prompt(request).starts_with("You are the critic")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_taken_over_keeps_the_critics_last_feedback() {
    // planning 0, the critic of 0 (the feedback), planning 1; then answers
    // every planning call accepts and no critique does
    let script = vec![
        Reply::Json(planner_answer()),
        Reply::Json(json!({"qualitative_feedback": FEEDBACK, "suggestions": []})),
        Reply::Json(planner_answer()),
    ];
    let fake = FakeLlm::start(script, Reply::Json(planner_answer())).await;
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        format!(
            "[coordinator.llm]\nbase_url = \"{}\"\nmodel = \"fake-model\"\ntimeout_ms = 20000\n",
            fake.base_url()
        ),
    )
    .unwrap();
    let config_path = config.path().to_str().unwrap().to_string();
    let mut sandbox = Sandbox::start(&["--config", &config_path]);
    sandbox.add_worker("w1", 2).await;
    let mut options = small_job(4, 3, 5);
    options.planner = "llm".into();
    options.patience = 100;
    let job_id = sandbox.submit_example("ota5", options).await;

    // killed once the critic's feedback is in the job's record
    let key = format!("{}:job:{job_id}", sandbox.prefix);
    let started = std::time::Instant::now();
    loop {
        let record = sandbox.redis.cli(&["GET", &key]);
        if fake.requests().len() >= 3 && record.contains("MARKER-ONE") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the feedback never reached the record: {record}\n{}",
            sandbox.coordinator.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let asked_before = fake.requests().len();
    sandbox.coordinator.kill9();
    sandbox.coordinator.restart();
    sandbox.wait_for_workers(&["w1"]).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(300)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    assert!(sandbox.coordinator.logs().contains("resuming job"));

    let requests = fake.requests();
    let after: Vec<&Value> = requests[asked_before..].iter().collect();
    assert!(
        after.iter().any(|request| is_critic(request)),
        "the coordinator taking over asked the critic (whose answers are invalid)"
    );
    let planning: Vec<&&Value> = after
        .iter()
        .filter(|request| !is_critic(request))
        .filter(|request| !system_prompt(request).starts_with("You improve"))
        .collect();
    assert!(
        !planning.is_empty(),
        "the job planned again after the takeover"
    );
    for request in planning {
        let prompt = request["messages"].to_string();
        assert!(
            prompt.contains("MARKER-ONE"),
            "the planning prompt after the takeover carries the critic's last feedback: {prompt}"
        );
    }
}
