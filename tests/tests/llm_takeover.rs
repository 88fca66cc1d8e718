//! Takeover with the LLM planner: the coordinator driving a job is killed
//! (`kill -9`) and the coordinator that takes the job over starts with nothing
//! in memory, reads the planner's memory from the job's record, and the next
//! planning prompt still carries the critic's last feedback; the job completes
//! with every candidate counted once. Killed once the critic gave its feedback
//! (the fake model's later critiques are invalid, so that feedback can come
//! from the record only), and killed while the model's share of an iteration is
//! awaited (its rule-based share running; the advice is asked again) — under
//! `[llm] model_share = "wait"`, and under "when_ready" with a late share carried
//! over to the next iteration (the record says which iteration's advice it
//! awaits; that advice is asked again and its points join the running one).

use std::collections::HashSet;
use std::time::Duration;

use centroid_proto::v1::{GetJobResponse, JobEvent};
use centroid_tests::fake_llm::{FakeLlm, Reply};
use centroid_tests::{Sandbox, assert_accounted_once, event_data, small_job};
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

/// A planning answer that is a critique too, carrying `feedback`.
fn planner_and_critic_answer(feedback: &str) -> Value {
    let mut answer = planner_answer();
    answer["qualitative_feedback"] = json!(feedback);
    answer["suggestions"] = json!([]);
    answer
}

/// A sandbox (one worker of 2 slots) whose coordinator plans with `fake`
/// (`[llm] model_share = model_share`), and the id of an LLM job on `ota5` (3
/// iterations of 4) submitted to it.
async fn llm_job(fake: &FakeLlm, model_share: &str) -> (Sandbox, String, tempfile::NamedTempFile) {
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        format!(
            "[coordinator.llm]\nbase_url = \"{}\"\nmodel = \"fake-model\"\ntimeout_ms = 30000\n\
             model_share = \"{model_share}\"\n",
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
    (sandbox, job_id, config)
}

/// Polls the job's stored record until `ready` says so (within 180 s), then kills
/// the coordinator (-9) and starts it again: the job must be resumed and completed.
/// The number of model requests seen before the kill.
async fn take_over_when(
    sandbox: &mut Sandbox,
    fake: &FakeLlm,
    job_id: &str,
    moment: &str,
    ready: impl Fn(&str) -> bool,
) -> usize {
    let key = format!("{}:job:{job_id}", sandbox.prefix);
    let started = std::time::Instant::now();
    loop {
        let record = sandbox.redis.cli(&["GET", &key]);
        if ready(&record) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "never reached ({moment}): {record}\n{}",
            sandbox.coordinator.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let asked_before = fake.requests().len();
    sandbox.coordinator.kill9();
    sandbox.coordinator.restart();
    sandbox.wait_for_workers(&["w1"]).await;
    let done = sandbox.wait_done(job_id, Duration::from_secs(300)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "completed", "{summary:?}");
    assert!(sandbox.coordinator.logs().contains("resuming job"));
    asked_before
}

/// Every candidate counted once, none twice, and the job's budget (3 iterations of
/// 4) run: the job and its events.
async fn assert_budget_once(sandbox: &Sandbox, job_id: &str) -> (GetJobResponse, Vec<JobEvent>) {
    let (job, events) = assert_accounted_once(sandbox, job_id).await;
    let ids: HashSet<&String> = job
        .candidates
        .iter()
        .map(|candidate| &candidate.candidate_id)
        .collect();
    assert_eq!(ids.len(), job.candidates.len(), "no candidate twice");
    assert_eq!(
        job.candidates.len(),
        12,
        "the budget, 3 iterations of 4: {:?}",
        job.candidates
    );
    (job, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_taken_over_keeps_the_critics_last_feedback() {
    // planning 0; the critic of 0 (the feedback) and planning 1, asked at once
    // (in either order); then answers every planning call accepts and no
    // critique does
    let script = vec![Reply::Json(planner_and_critic_answer(FEEDBACK)); 3];
    let fake = FakeLlm::start(script, Reply::Json(planner_answer())).await;
    // "wait": every iteration asks its advice, so the coordinator taking over asks
    // again (under "when_ready" the iterations left may all have their advice by
    // the kill, and nothing is asked after it)
    let (mut sandbox, job_id, _config) = llm_job(&fake, "wait").await;

    // killed once the critic's feedback is in the job's record
    let asked_before = take_over_when(
        &mut sandbox,
        &fake,
        &job_id,
        "the feedback in the record",
        |record| fake.requests().len() >= 3 && record.contains("MARKER-ONE"),
    )
    .await;

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

/// Whether the stored record shows iteration `iteration` running its rule-based
/// share while its model's share is awaited, with `marker` (the critic's
/// feedback) in the planner's memory.
fn awaiting_model_share(record: &str, iteration: u64, marker: &str) -> bool {
    let Ok(record) = serde_json::from_str::<Value>(record) else {
        return false;
    };
    let phase = &record["phase"];
    record["iteration"] == iteration
        && phase["name"] == "executing"
        && phase["model_share"].is_object()
        && record["planner_memory"]["feedback"]
            .as_str()
            .is_some_and(|feedback| feedback.contains(marker))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_taken_over_while_the_model_s_share_is_awaited_completes_once() {
    const MARKER: &str = "MARKER-TWO: mirror the load pair";
    // every answer after 4 s, a planning answer and a critique at once
    let slow = Reply::Delay(
        Duration::from_secs(4),
        Box::new(Reply::Json(planner_and_critic_answer(MARKER))),
    );
    let fake = FakeLlm::start(Vec::new(), slow).await;
    let (mut sandbox, job_id, _config) = llm_job(&fake, "wait").await;

    // killed while iteration 2's rule-based share runs and its advice (asked
    // with the critic's feedback on iteration 0 in the prompt) is awaited
    let asked_before = take_over_when(
        &mut sandbox,
        &fake,
        &job_id,
        "iteration 2 awaiting its model's share",
        |record| awaiting_model_share(record, 2, MARKER),
    )
    .await;

    // the advice for iteration 2 was asked again, from the record's memory
    let requests = fake.requests();
    let planning: Vec<&Value> = requests[asked_before..]
        .iter()
        .filter(|request| !is_critic(request))
        .filter(|request| !system_prompt(request).starts_with("You improve"))
        .collect();
    assert!(!planning.is_empty(), "iteration 2 was planned again");
    for request in planning {
        let prompt = request["messages"].to_string();
        assert!(
            prompt.contains("On iteration 0: MARKER-TWO"),
            "the planning prompt after the takeover carries the critic's last feedback: {prompt}"
        );
    }

    let (_, events) = assert_budget_once(&sandbox, &job_id).await;
    // each iteration's model's share was added once
    let mut added: Vec<u64> = events
        .iter()
        .map(event_data)
        .filter(|data| data["about"] == "model_share_added")
        .map(|data| data["iteration"].as_u64().unwrap())
        .collect();
    added.sort_unstable();
    assert_eq!(added, [0, 1, 2], "model shares added");
}

/// Whether the stored record shows iteration `iteration` running with a model's
/// share carried over from iteration `asked_for` (that iteration closed without
/// its late answer).
fn awaiting_carried_share(record: &str, iteration: u64, asked_for: u64) -> bool {
    let Ok(record) = serde_json::from_str::<Value>(record) else {
        return false;
    };
    let phase = &record["phase"];
    record["iteration"] == iteration
        && phase["name"] == "executing"
        && phase["model_share"]["asked_for"] == asked_for
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_taken_over_while_a_late_share_is_carried_completes_its_budget_once() {
    // every answer after 10 s: longer than iteration 0's rule-based share runs
    let slow = Reply::Delay(
        Duration::from_secs(10),
        Box::new(Reply::Json(planner_and_critic_answer("MARKER-THREE"))),
    );
    let fake = FakeLlm::start(Vec::new(), slow).await;
    let (mut sandbox, job_id, _config) = llm_job(&fake, "when_ready").await;

    // killed while iteration 1 runs and iteration 0's late answer is awaited
    let asked_before = take_over_when(
        &mut sandbox,
        &fake,
        &job_id,
        "iteration 1 running with iteration 0's share carried over",
        |record| awaiting_carried_share(record, 1, 0),
    )
    .await;
    assert!(
        fake.requests().len() > asked_before,
        "the advice awaited was asked again"
    );

    let (job, events) = assert_budget_once(&sandbox, &job_id).await;
    // iteration 0 ran its rule-based share only; the late share joined a later one
    let of_iteration_0 = job
        .candidates
        .iter()
        .filter(|candidate| candidate.candidate_id.contains("-i0-"))
        .count();
    assert_eq!(of_iteration_0, 2, "{:?}", job.candidates);
    let added: Vec<u64> = events
        .iter()
        .map(event_data)
        .filter(|data| data["about"] == "model_share_added")
        .map(|data| data["iteration"].as_u64().unwrap())
        .collect();
    assert!(
        !added.is_empty() && !added.contains(&0),
        "the late share joined a later iteration: {added:?}"
    );
}
