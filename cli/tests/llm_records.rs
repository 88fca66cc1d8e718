//! The LLM planner's records and freshness, with `centroid run --planner llm`
//! against a fake OpenAI-compatible server (real HTTP on loopback) and real
//! KLayout: every request the server saw is a call in report.json and a line of
//! `planner_transcript.jsonl` (with its whole prompt and raw answer); the
//! prompt planning iteration k carries iteration k−1's evaluations; a light
//! model configured serves the critic while the `[llm]` model plans.

mod support;

use centroid_tests::fake_llm::{FakeLlm, Reply};
use serde_json::Value;
use support::{centroid, llm_answer_every_role_accepts, repository};

#[test]
fn every_call_is_recorded_fresh_results_are_planned_from_and_the_light_model_critiques() {
    let fake = FakeLlm::start_blocking(vec![], Reply::Json(llm_answer_every_role_accepts()));
    let out = tempfile::tempdir().unwrap();
    let output = centroid()
        .env("CENTROID_LLM_BASE_URL", fake.base_url())
        .env("CENTROID_LLM_MODEL", "fake-heavy")
        .env("CENTROID_LLM_LIGHT_MODEL", "fake-light")
        .env("CENTROID_LLM_TIMEOUT_MS", "20000")
        // every iteration gets its own advice (under "when_ready" an advice
        // slower than the rule-based share — the first prompt's building in a
        // debug build on a loaded machine — is carried over and the next
        // iteration asks none)
        .env("CENTROID_LLM_MODEL_SHARE", "wait")
        .env_remove("CENTROID_CONFIG")
        .args(["run", "--no-memory", "--planner", "llm"])
        .args(["--candidates", "4", "--slots", "2", "--seed", "3"])
        .args(["--patience", "1000", "--iterations", "3", "--out"])
        .arg(out.path())
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    let transcript: Vec<Value> =
        std::fs::read_to_string(out.path().join("planner_transcript.jsonl"))
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
    let requests = fake.requests();
    let planner = &report["planner"];

    // requests seen == calls counted == transcript lines, prompt for prompt
    assert_eq!(
        planner["calls"].as_u64().unwrap() as usize,
        requests.len(),
        "{planner}"
    );
    assert_eq!(transcript.len(), requests.len());
    let sent: Vec<&Value> = requests
        .iter()
        .map(|request| &request["messages"])
        .collect();
    for line in &transcript {
        assert!(
            sent.contains(&&line["prompt"]),
            "the transcript holds the whole prompt the server received: {line}"
        );
        assert!(!line["answer"].as_str().unwrap().is_empty(), "{line}");
        assert!(line["duration_ms"].is_u64(), "{line}");
    }
    let tokens: u64 = transcript
        .iter()
        .map(|line| line["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(planner["prompt_tokens"].as_u64().unwrap(), tokens);

    // the light model serves the critic, the heavy one plans
    let roles_of = |model: &str| -> Vec<&str> {
        transcript
            .iter()
            .filter(|line| line["model"] == model)
            .map(|line| line["role"].as_str().unwrap())
            .collect()
    };
    let light = roles_of("fake-light");
    let heavy = roles_of("fake-heavy");
    assert!(light.contains(&"critic"), "light: {light:?}");
    assert!(
        light.iter().all(|role| *role == "critic"),
        "light: {light:?}"
    );
    assert!(
        heavy.contains(&"planner") && !heavy.contains(&"critic"),
        "heavy: {heavy:?}"
    );
    let served: Vec<&str> = requests
        .iter()
        .map(|request| request["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        served
            .iter()
            .filter(|model| **model == "fake-light")
            .count(),
        light.len(),
        "the server saw the light model's name on the critic's calls: {served:?}"
    );

    // the prompt planning iteration k carries every evaluation of iteration k−1
    let candidates = report["candidates"].as_array().unwrap();
    let planning: Vec<&Value> = transcript
        .iter()
        .filter(|line| line["role"] == "planner")
        .collect();
    for iteration in 1..3u64 {
        let line = planning
            .iter()
            .find(|line| line["iteration"] == iteration)
            .unwrap_or_else(|| panic!("a planning call for iteration {iteration}"));
        let prompt = line["prompt"].to_string();
        let before: Vec<&str> = candidates
            .iter()
            .filter(|candidate| candidate["iteration"] == iteration - 1)
            .map(|candidate| candidate["id"].as_str().unwrap())
            .collect();
        assert!(!before.is_empty());
        for id in before {
            let journal_line = prompt
                .split("\\n")
                .find(|text| text.contains(id))
                .unwrap_or_else(|| panic!("{id} is in the prompt of iteration {iteration}"));
            assert!(
                !journal_line.contains("not evaluated"),
                "iteration {iteration} is planned from {id}'s evaluation: {journal_line}"
            );
        }
    }
    // and the critic reviewed every iteration before the last
    let reviewed: Vec<u64> = transcript
        .iter()
        .filter(|line| line["role"] == "critic")
        .map(|line| line["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(
        reviewed,
        vec![1, 2],
        "critic calls made for planning iterations 1 and 2"
    );
    // one numbering: report.json's iterations count from 0 like the transcript's
    let first = candidates
        .iter()
        .map(|candidate| candidate["iteration"].as_u64().unwrap())
        .min();
    assert_eq!(first, Some(0));
    assert_eq!(report["iterations"], 3);
    let page = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(
        page.contains("<details><summary>iteration 0:"),
        "transcript collapsed"
    );
}

#[test]
fn print_prompts_shows_the_first_planning_prompt_without_a_model() {
    let output = centroid()
        .env_remove("CENTROID_LLM_MODEL")
        .env_remove("CENTROID_CONFIG")
        .args(["plan", "--planner", "llm", "--print-prompts"])
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.starts_with("=== planner call, iteration 0, model (no model configured) ==="),
        "{stdout}"
    );
    assert!(stdout.contains("--- system ---") && stdout.contains("--- user ---"));
    let netlist: Value = serde_json::from_str(
        &std::fs::read_to_string(repository().join("examples/ota5/netlist.json")).unwrap(),
    )
    .unwrap();
    for device in netlist["cells"][0]["devices"].as_array().unwrap() {
        let id = device["id"].as_str().unwrap();
        assert!(stdout.contains(id), "device {id} is in the printed prompt");
    }
    let refused = centroid()
        .args(["plan", "--print-prompts"])
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    assert_ne!(
        refused.status.code(),
        Some(0),
        "--print-prompts needs --planner llm"
    );
}
