//! `centroid run --planner llm` against a fake OpenAI-compatible server this test
//! starts (real HTTP on loopback, scripted replies), with real KLayout processes:
//! a good answer is used; garbage, `{}`, a plan naming a skill nobody has, HTTP
//! 500, 429-then-success and a timeout each end in a passing job on every example
//! circuit, with the fallbacks counted in report.json and the calls in the job's
//! events.

mod support;

use std::time::Duration;

use centroid_tests::fake_llm::{FakeLlm, Reply};
use serde_json::{Value, json};
use support::{centroid, llm_answer_every_role_accepts, repository};

struct Run {
    code: Option<i32>,
    report: Value,
    stderr: String,
}

/// `centroid run` of `example` with the LLM planner pointed at `fake`.
fn run_with(fake: &FakeLlm, example: &str, iterations: u32, timeout_ms: u64) -> Run {
    let out = tempfile::tempdir().unwrap();
    let output = centroid()
        .env("CENTROID_LLM_BASE_URL", fake.base_url())
        .env("CENTROID_LLM_MODEL", "fake-model")
        .env("CENTROID_LLM_API_KEY", "test-key")
        .env("CENTROID_LLM_TIMEOUT_MS", timeout_ms.to_string())
        // what becomes of each answer (used, repaired, a fallback after a failure
        // or the timeout) whenever it comes: under "when_ready" an answer slower
        // than the last iteration's rule-based share is replaced by a rule-based
        // share (llm_model_share.rs tests that)
        .env("CENTROID_LLM_MODEL_SHARE", "wait")
        .env_remove("CENTROID_CONFIG")
        .args([
            "run",
            "--no-memory",
            "--planner",
            "llm",
            "--candidates",
            "4",
            "--slots",
            "2",
        ])
        .args([
            "--seed",
            "3",
            // every iteration runs: what the critic and the planner see does not
            // hang on whether an iteration happened to improve on the one before
            "--patience",
            "1000",
            "--iterations",
            &iterations.to_string(),
            "--out",
        ])
        .arg(out.path())
        .arg(repository().join("examples").join(example))
        .output()
        .unwrap();
    let report = std::fs::read_to_string(out.path().join("report.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    Run {
        code: output.status.code(),
        report,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn planner(run: &Run) -> &Value {
    &run.report["planner"]
}

fn assert_passed(run: &Run, what: &str) {
    assert_eq!(
        run.code,
        Some(0),
        "{what}: the job must pass; stderr: {}",
        run.stderr
    );
    assert_eq!(run.report["best"]["passed"], true, "{what}");
    assert_eq!(run.report["best"]["checks"]["drc"], "clean", "{what}");
    assert_eq!(planner(run)["kind"], "llm", "{what}");
    assert_eq!(planner(run)["model"], "fake-model", "{what}");
}

fn origins(run: &Run) -> Vec<String> {
    run.report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|candidate| candidate["origin"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_good_answer_is_used_and_the_critic_and_prompt_see_the_circuit() {
    let fake = FakeLlm::start_blocking(vec![], Reply::Json(llm_answer_every_role_accepts()));
    let run = run_with(&fake, "ota5", 3, 20_000);
    assert_passed(&run, "good answers");
    let planner = planner(&run);
    assert_eq!(planner["fallbacks"], 0, "{planner}");
    let llm_points = origins(&run)
        .iter()
        .filter(|origin| *origin == "llm")
        .count();
    assert!(
        llm_points >= 2,
        "the model's points became candidates: {:?}",
        origins(&run)
    );
    let roles: Vec<&str> = planner["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["role"].as_str().unwrap())
        .collect();
    assert!(roles.contains(&"planner"), "{roles:?}");
    assert!(
        roles.contains(&"critic"),
        "the critic reviews iteration 1 while iteration 2 runs: {roles:?}"
    );
    assert!(planner["prompt_tokens"].as_u64().unwrap() > 0);
    // every request carried the key and every device id of the circuit
    let netlist: Value = serde_json::from_str(
        &std::fs::read_to_string(repository().join("examples/ota5/netlist.json")).unwrap(),
    )
    .unwrap();
    let requests = fake.requests();
    let first = requests[0]["messages"].to_string();
    for device in netlist["cells"][0]["devices"].as_array().unwrap() {
        let id = device["id"].as_str().unwrap();
        assert!(first.contains(id), "device {id} is in the planning prompt");
    }
    assert!(
        fake.headers()
            .iter()
            .all(|headers| headers.get("authorization").map(String::as_str)
                == Some("Bearer test-key"))
    );
    // and the job's W3C trace id, so the model server's logs meet ours
    let trace_id = run.report["trace_id"].as_str().unwrap();
    assert_eq!(trace_id.len(), 32, "{trace_id}");
    for headers in fake.headers() {
        let traceparent = headers.get("traceparent").map(String::as_str).unwrap_or("");
        assert!(
            traceparent.starts_with(&format!("00-{trace_id}-")),
            "{traceparent} does not carry the job's trace id {trace_id}"
        );
    }
}

/// Every example circuit: both processes, JSON and SPICE netlists.
const EXAMPLES: &[&str] = &[
    "ota5",
    "miller_ota",
    "folded_cascode",
    "mirror_bank",
    "strongarm_comparator",
    "ota5_spice",
    "gf180/ota5",
    "gf180/miller_ota",
    "gf180/folded_cascode",
    "gf180/mirror_bank",
    "gf180/strongarm_comparator",
];

/// Runs every example with a model answering `script` then `fallback`; each
/// job must pass with `fallbacks` fallbacks counted.
fn every_example_passes(what: &str, script: Vec<Reply>, fallback: Reply, fallbacks: u64) {
    // long enough for the prompt's building and both rounds on a loaded machine:
    // a shorter deadline turns the answer tested into a timeout fallback
    every_example_passes_within(what, script, fallback, fallbacks, 20_000);
}

/// As [`every_example_passes`], with the model's deadline `timeout_ms`.
fn every_example_passes_within(
    what: &str,
    script: Vec<Reply>,
    fallback: Reply,
    fallbacks: u64,
    timeout_ms: u64,
) {
    for example in EXAMPLES {
        let fake = FakeLlm::start_blocking(script.clone(), fallback.clone());
        let run = run_with(&fake, example, 1, timeout_ms);
        let what = format!("{what} on {example}");
        assert_passed(&run, &what);
        let planner = planner(&run);
        assert_eq!(planner["fallbacks"], fallbacks, "{what}: {planner}");
        // a call for the requests the server saw (a retry is an attempt of its
        // call; none when the deadline passed before the prompt was built and sent)
        let calls = planner["calls"].as_u64().unwrap() as usize;
        let requests = fake.requests().len();
        assert!(
            calls <= requests && (calls >= 1 || requests == 0),
            "{what}: {requests} requests: {planner}"
        );
        let from_model = origins(&run)
            .iter()
            .filter(|origin| *origin == "llm")
            .count();
        if fallbacks == 1 {
            assert_eq!(from_model, 0, "{what}: no model point after a fallback");
        } else {
            assert!(from_model >= 1, "{what}: {:?}", origins(&run));
        }
    }
}

#[test]
fn garbage_ends_in_passing_jobs() {
    every_example_passes(
        "garbage",
        vec![],
        Reply::Text("I think ABBA is nice".into()),
        1,
    );
}

#[test]
fn an_empty_object_ends_in_passing_jobs() {
    every_example_passes("{}", vec![], Reply::Json(json!({})), 1);
}

#[test]
fn a_plan_naming_an_unknown_skill_ends_in_passing_jobs() {
    let plan = json!({
        "thought": "teleport the devices",
        "plan": {"plan_summary": "x", "steps": [
            {"step_id": "s1", "name": "t", "skill_name": "layout.teleport", "params": {}, "expected_output": "", "dependencies": []}
        ]}
    });
    every_example_passes("unknown skill", vec![], Reply::Json(plan), 1);
}

#[test]
fn http_500_ends_in_passing_jobs() {
    every_example_passes("HTTP 500", vec![], Reply::Status(500), 1);
}

#[test]
fn a_429_then_success_is_used() {
    // the retry waits the 1 s the server asks: a deadline of 3 s left too little for the
    // second request and the prompt's building on a loaded machine (a flaky fallback)
    every_example_passes_within(
        "429 then success",
        vec![Reply::StatusRetryAfter(429, 1)],
        Reply::Json(llm_answer_every_role_accepts()),
        0,
        10_000,
    );
}

#[test]
fn a_timeout_ends_in_passing_jobs() {
    let slow = Reply::Delay(
        Duration::from_secs(30),
        Box::new(Reply::Json(llm_answer_every_role_accepts())),
    );
    every_example_passes_within("timeout", vec![], slow, 1, 3_000);
}

#[test]
fn with_no_model_configured_the_heuristic_planner_says_so_and_plans() {
    let out = tempfile::tempdir().unwrap();
    let output = centroid()
        .env_remove("CENTROID_LLM_MODEL")
        .args([
            "run",
            "--no-memory",
            "--planner",
            "llm",
            "--candidates",
            "2",
            "--slots",
            "1",
        ])
        .args(["--iterations", "1", "--out"])
        .arg(out.path())
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(report["planner"]["kind"], "heuristic");
    assert_eq!(report["planner"]["calls"], 0);
    assert!(
        report["planner"]["requested"]
            .as_str()
            .unwrap()
            .contains("base_url"),
        "{}",
        report["planner"]
    );
}

#[test]
fn a_failed_model_plan_keeps_its_error_code_in_the_report() {
    let plan = json!({
        "thought": "look at a cell that does not exist",
        "candidates": [{"arrangement": "ABBA"}],
        "plan": {"plan_summary": "x", "steps": [
            {"step_id": "s1", "name": "t", "skill_name": "layout.cell_info",
             "params": {"cell": "no_such_cell"}, "expected_output": "", "dependencies": []}
        ]}
    });
    let fake = FakeLlm::start_blocking(vec![], Reply::Json(plan));
    let run = run_with(&fake, "ota5", 2, 3_000);
    assert_passed(&run, "a failing model plan");
    let failed: Vec<&Value> = run.report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|candidate| candidate["origin"] == "llm_plan")
        .collect();
    assert!(
        !failed.is_empty(),
        "the model's plan ran: {:?}",
        origins(&run)
    );
    for candidate in failed {
        let code = candidate["error"]["code"].as_str().unwrap_or_default();
        assert!(
            ["NOT_FOUND", "INVALID_PARAM"].contains(&code),
            "the worker's code, not ERROR: {candidate}"
        );
    }
}
