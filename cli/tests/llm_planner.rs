//! `centroid run --planner llm` against a fake OpenAI-compatible server this test
//! starts (real HTTP on loopback, scripted replies), with real KLayout processes:
//! a good answer is used; garbage, `{}`, a plan naming a skill nobody has, HTTP
//! 500, 429-then-success and a timeout each end in a passing job, with the
//! fallbacks counted in report.json and the calls in the job's events.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use centroid_tests::fake_llm::{FakeLlm, Reply};
use serde_json::{Value, json};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from)
}

/// An answer every role accepts: design points for the planner, feedback for the
/// critic, guidance for the meta-prompt agent.
fn good_answer() -> Value {
    json!({
        "thought": "common centroid with one dummy per row end keeps the pair matched",
        "candidates": [
            {"arrangement": "ABAB", "dummies": 0, "spacing_nm": 200, "why": "compact"},
            {"arrangement": "ABBA", "dummies": 1, "aspect_ratio_pct": 50, "why": "matched"}
        ],
        "qualitative_feedback": "the candidates passed; area can shrink",
        "suggestions": ["fewer dummies"],
        "system_prompt": "Prefer compact placements."
    })
}

struct Run {
    code: Option<i32>,
    report: Value,
    stderr: String,
}

/// `centroid run` of `example` with the LLM planner pointed at `fake`.
fn run_with(fake: &FakeLlm, example: &str, iterations: u32, timeout_ms: u64) -> Run {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
        .env("CENTROID_LLM_BASE_URL", fake.base_url())
        .env("CENTROID_LLM_MODEL", "fake-model")
        .env("CENTROID_LLM_API_KEY", "test-key")
        .env("CENTROID_LLM_TIMEOUT_MS", timeout_ms.to_string())
        .env_remove("CENTROID_CONFIG")
        .args([
            "run",
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
    let fake = FakeLlm::start_blocking(vec![], Reply::Json(good_answer()));
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
}

#[test]
fn every_bad_model_ends_in_a_passing_job_with_the_fallback_counted_on_every_example() {
    let plan_with_unknown_skill = json!({
        "thought": "teleport the devices",
        "plan": {"plan_summary": "x", "steps": [
            {"step_id": "s1", "name": "t", "skill_name": "layout.teleport", "params": {}, "expected_output": "", "dependencies": []}
        ]}
    });
    // each bad mode on another example circuit, so every example runs once
    let cases: Vec<(&str, &str, Vec<Reply>, Reply, u64)> = vec![
        (
            "garbage",
            "ota5",
            vec![],
            Reply::Text("I think ABBA is nice".into()),
            1,
        ),
        (
            "empty object",
            "miller_ota",
            vec![],
            Reply::Json(json!({})),
            1,
        ),
        (
            "unknown skill",
            "folded_cascode",
            vec![],
            Reply::Json(plan_with_unknown_skill),
            1,
        ),
        ("HTTP 500", "mirror_bank", vec![], Reply::Status(500), 1),
        (
            "429 then success",
            "strongarm_comparator",
            vec![Reply::StatusRetryAfter(429, 1)],
            Reply::Json(good_answer()),
            0,
        ),
        (
            "timeout",
            "ota5_spice",
            vec![],
            Reply::Delay(
                Duration::from_secs(30),
                Box::new(Reply::Json(good_answer())),
            ),
            1,
        ),
        (
            "good, another process",
            "gf180/ota5",
            vec![],
            Reply::Json(good_answer()),
            0,
        ),
    ];
    for (what, example, script, fallback, fallbacks) in cases {
        let fake = FakeLlm::start_blocking(script, fallback);
        let run = run_with(&fake, example, 1, 3_000);
        assert_passed(&run, what);
        let planner = planner(&run);
        assert_eq!(planner["fallbacks"], fallbacks, "{what}: {planner}");
        assert!(planner["calls"].as_u64().unwrap() >= 1, "{what}: {planner}");
        if fallbacks == 1 {
            assert!(
                origins(&run).iter().all(|origin| origin != "llm"),
                "{what}: no model point after a fallback: {:?}",
                origins(&run)
            );
        } else {
            assert!(origins(&run).iter().any(|origin| origin == "llm"), "{what}");
        }
    }
}

#[test]
fn with_no_model_configured_the_heuristic_planner_says_so_and_plans() {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
        .env_remove("CENTROID_LLM_BASE_URL")
        .env_remove("CENTROID_LLM_MODEL")
        .args([
            "run",
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
