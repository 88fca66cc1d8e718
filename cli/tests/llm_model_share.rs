//! The farm keeps working while the model thinks: `centroid run --planner llm`
//! against a fake OpenAI-compatible server that answers every request after a
//! delay (real HTTP on loopback, real KLayout). The rule-based share of an
//! iteration is dispatched before the model's answer for it arrives; the
//! model's points are added to that running iteration when it does, run in it
//! and are recorded as the model's; the planner's call records stay complete.
//! Under `[llm] model_share = "wait"`, for a seed and the same answers, a job's
//! candidates (ids, origins, points) are the same whether the model answers at
//! once or after 2.5 s. Under "when_ready" (the default) an iteration whose
//! rule-based share is in does not wait for a late answer: the next iteration
//! starts, and the late points join it when they arrive; in the last iteration
//! a late share is drafted rule-based once slots would idle, and the answer is
//! recorded as dropped-late.

mod support;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use centroid_tests::fake_llm::{FakeLlm, Gate, Reply};
use serde_json::{Value, json};
use support::{centroid, llm_answer_every_role_accepts, repository};

/// How long the fake model takes to answer each request.
const MODEL_DELAY: Duration = Duration::from_millis(2500);

#[test]
fn the_rule_based_share_runs_while_the_model_thinks_and_its_points_join_the_iteration() {
    // iteration 0's planning gets the shared answer; every later call new points
    // (the same points again would be repeats, which the search never drafts twice)
    let fake = delayed_model(MODEL_DELAY);
    let (report, stderr, out) = run_ota5(&fake, 2, "wait");

    // the job's events, in the order the journal holds them (stderr is no terminal)
    let events = job_events(&stderr);
    let position = |what: &dyn Fn(&str) -> bool, name: &str| event_position(&events, what, name);
    let rule_share_dispatched = position(
        &|line| line.contains("candidate_dispatched") && line.contains("-i1-c0"),
        "dispatching i1-c0",
    );
    let share_added = position(
        &|line| line.contains("added to iteration 1 when the planner's advice arrived"),
        "the model's share added to iteration 1",
    );
    let model_share_dispatched = position(
        &|line| {
            line.contains("candidate_dispatched")
                && (line.contains("-i1-c2") || line.contains("-i1-c3"))
        },
        "dispatching the model's share of iteration 1",
    );
    assert!(
        rule_share_dispatched < share_added && share_added < model_share_dispatched,
        "iteration 1's rule-based share is dispatched before the model answers, its share after \
         ({rule_share_dispatched} < {share_added} < {model_share_dispatched}):\n{}",
        events.join("\n")
    );
    // the model's points ran in iteration 1, recorded as the model's
    let candidates = report["candidates"].as_array().unwrap();
    let of_iteration_1: Vec<&Value> = candidates
        .iter()
        .filter(|candidate| candidate["iteration"] == 1)
        .collect();
    assert_eq!(of_iteration_1.len(), 4, "{of_iteration_1:?}");
    let from_model: Vec<&&Value> = of_iteration_1
        .iter()
        .filter(|candidate| candidate["origin"] == "llm")
        .collect();
    assert!(!from_model.is_empty(), "{of_iteration_1:?}");
    for candidate in &from_model {
        let id = candidate["id"].as_str().unwrap();
        assert!(
            id.ends_with("-i1-c2") || id.ends_with("-i1-c3"),
            "the model's share follows the rule-based one: {id}"
        );
        assert!(
            candidate["score"].is_number() || candidate["error"].is_object(),
            "{id} ran: {candidate}"
        );
    }

    // requests seen == calls counted == transcript lines
    let transcript = std::fs::read_to_string(out.path().join("planner_transcript.jsonl")).unwrap();
    let requests = fake.requests();
    assert_eq!(
        report["planner"]["calls"].as_u64().unwrap() as usize,
        requests.len(),
        "{}",
        report["planner"]
    );
    assert_eq!(transcript.lines().count(), requests.len());
    assert_eq!(report["planner"]["fallbacks"], 0, "{}", report["planner"]);
}

/// Each candidate of a `centroid run --planner llm` of `examples/ota5` (3
/// iterations of 4, 2 slots, seed 3) whose model answers every request after
/// `delay` (the first answer, then others): (iteration, id without the job's,
/// origin, design point), in id order.
fn candidates_with_model_delay(delay: Duration) -> Vec<(u64, String, String, Value)> {
    let fake = delayed_model(delay);
    let (report, _, _) = run_ota5(&fake, 3, "wait");
    let mut candidates: Vec<(u64, String, String, Value)> = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|candidate| {
            let id = candidate["id"].as_str().unwrap();
            let parts: Vec<&str> = id.rsplitn(3, '-').take(2).collect();
            (
                candidate["iteration"].as_u64().unwrap(),
                format!("{}-{}", parts[1], parts[0]),
                candidate["origin"].as_str().unwrap_or_default().to_string(),
                candidate["design"].clone(),
            )
        })
        .collect();
    candidates.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    candidates
}

/// Same seed, same answers: the same candidates with the same ids and points,
/// whether the model answers at once (its share drafted as soon as the next
/// iteration's rule-based share is) or after the rule-based shares ran.
#[test]
fn the_candidates_are_the_same_whatever_the_model_s_latency() {
    let fast = candidates_with_model_delay(Duration::ZERO);
    let slow = candidates_with_model_delay(MODEL_DELAY);
    assert_eq!(fast.len(), 12, "{fast:?}");
    assert_eq!(fast, slow);
}

/// "when_ready": iteration 0 closes with its rule-based share while the model
/// thinks; iteration 1 starts at once with a rule-based share of the whole
/// iteration, and the late answer's points join it when they arrive — drawn,
/// recorded as the model's, with the call recorded for iteration 0. No new
/// advice is asked while that one is outstanding; the job runs its budget. (The
/// answer is held until iteration 1's first candidate is dispatched, so it
/// comes while iteration 1's own candidates keep the slots busy, however fast
/// the machine.)
#[test]
fn when_ready_the_next_iteration_starts_and_the_late_points_join_it() {
    let mut late = llm_answer_every_role_accepts();
    late["candidates"] = json!([
        {"arrangement": "ABAB", "dummies": 1, "spacing_nm": 500, "why": "wider"},
        {"arrangement": "ABBA", "dummies": 1, "spacing_nm": 500, "aspect_ratio_pct": 50, "why": "taller"}
    ]);
    let gate = Gate::default();
    let fake = FakeLlm::start_blocking(
        vec![Reply::Held(gate.clone(), Box::new(Reply::Json(late)))],
        Reply::Json(llm_answer_every_role_accepts()),
    );
    let run = Ota5Run {
        iterations: 2,
        model_share: "when_ready",
        release: Some((&gate, "-i1-c0")),
        ..Ota5Run::default()
    };
    let (report, stderr, out) = run.with(&fake);

    let events = job_events(&stderr);
    let position = |what: &dyn Fn(&str) -> bool, name: &str| event_position(&events, what, name);
    let next_started = position(
        &|line| line.contains("candidate_dispatched") && line.contains("-i1-c0"),
        "dispatching i1-c0",
    );
    let late_added = position(
        &|line| {
            line.contains(
                "added to iteration 1 when the planner's advice for iteration 0 arrived late",
            )
        },
        "the late share added to iteration 1",
    );
    assert!(
        next_started < late_added,
        "iteration 1 started before the late answer arrived ({next_started} < {late_added}):\n{}",
        events.join("\n")
    );

    // the budget: 2 × 4 candidates — iteration 0's rule-based share (2), then
    // iteration 1's (4) and the late share (2)
    let candidates = report["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 8, "{candidates:?}");
    let of_iteration = |iteration: u64| -> Vec<&Value> {
        candidates
            .iter()
            .filter(|candidate| candidate["iteration"] == iteration)
            .collect()
    };
    assert_eq!(of_iteration(0).len(), 2, "{:?}", of_iteration(0));
    assert_eq!(of_iteration(1).len(), 6, "{:?}", of_iteration(1));
    let from_model: Vec<&Value> = candidates
        .iter()
        .filter(|candidate| candidate["origin"] == "llm")
        .collect();
    assert!(!from_model.is_empty(), "the late points: {candidates:?}");
    for candidate in &from_model {
        let id = candidate["id"].as_str().unwrap();
        assert_eq!(candidate["iteration"], 1, "{candidate}");
        assert!(
            candidate["score"].is_number() || candidate["error"].is_object(),
            "{id} ran: {candidate}"
        );
    }

    // one request (iteration 0's advice; none asked while it was outstanding),
    // counted once and in the transcript with the iteration it was asked for
    let (line, _) = the_one_call(&fake, &report, out.path());
    assert_eq!(line["iteration"], 0, "{line}");
    assert_eq!(report["planner"]["fallbacks"], 0, "{}", report["planner"]);
}

/// "when_ready" with a model that does not answer within the job: iteration 0
/// closes with its rule-based share, iteration 1 (the last) runs a rule-based
/// share of the whole iteration, and once its slots would idle the share still
/// awaited (iteration 0's, carried) is drafted rule-based instead of waited
/// for — the job runs its whole budget and ends without the model's answer,
/// whose call is recorded as dropped-late (the request the server saw, counted
/// once, in the transcript with its prompt and that outcome).
#[test]
fn when_ready_the_last_iteration_drafts_a_late_share_by_rule_and_ends_without_the_model() {
    // never answered while the job runs: the gate is opened by no one
    let fake = FakeLlm::start_blocking(
        Vec::new(),
        Reply::Held(
            Gate::default(),
            Box::new(Reply::Json(llm_answer_every_role_accepts())),
        ),
    );
    let started = Instant::now();
    let run = Ota5Run {
        iterations: 2,
        model_share: "when_ready",
        // far longer than the job: no timeout fallback ends the wait
        timeout_ms: 600_000,
        release: None,
    };
    let (report, stderr, out) = run.with(&fake);
    assert!(
        started.elapsed() < Duration::from_secs(300),
        "the job did not wait for the model"
    );

    // the budget, 2 × 4: iteration 0's rule-based share (2), then iteration 1's
    // (4) and the late share drafted rule-based (2) — none of them the model's
    let candidates = report["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 8, "{candidates:?}");
    let in_iteration_1 = candidates
        .iter()
        .filter(|candidate| candidate["iteration"] == 1)
        .count();
    assert_eq!(in_iteration_1, 6, "{candidates:?}");
    for candidate in candidates {
        assert!(
            !candidate["origin"].as_str().unwrap().starts_with("llm"),
            "{candidate}"
        );
        assert!(
            candidate["score"].is_number() || candidate["error"].is_object(),
            "ran: {candidate}"
        );
    }
    let events = job_events(&stderr);
    event_position(
        &events,
        &|line| {
            line.contains("2 candidates added to iteration 1 drafted rule-based")
                && line.contains("the planner's advice for iteration 0 is late")
        },
        "the late share drafted rule-based in iteration 1",
    );

    // the one request (iteration 0's planning call; none asked while it was
    // outstanding) == calls counted == transcript lines, recorded dropped-late
    let (line, request) = the_one_call(&fake, &report, out.path());
    assert_eq!(
        (&line["role"], &line["iteration"], &line["outcome"]),
        (&json!("planner"), &json!(0), &json!("dropped-late")),
        "{line}"
    );
    assert_eq!(line["prompt"], request["messages"], "the prompt sent");
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .contains("drafted rule-based"),
        "{line}"
    );
    assert_eq!(report["planner"]["fallbacks"], 0, "{}", report["planner"]);
}

/// The job's one model call: the server saw one request, report.json counts one
/// call and the transcript (in `out`) has one line. That line and the request.
fn the_one_call(fake: &FakeLlm, report: &Value, out: &std::path::Path) -> (Value, Value) {
    let mut requests = fake.requests();
    assert_eq!(requests.len(), 1, "{}", report["planner"]);
    assert_eq!(report["planner"]["calls"].as_u64(), Some(1));
    let transcript = std::fs::read_to_string(out.join("planner_transcript.jsonl")).unwrap();
    let mut lines: Vec<Value> = transcript
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{transcript}");
    (lines.remove(0), requests.remove(0))
}

/// A fake model answering every request after `delay`: iteration 0's planning the
/// shared answer, every later call two new points.
fn delayed_model(delay: Duration) -> FakeLlm {
    let mut later = llm_answer_every_role_accepts();
    later["candidates"] = json!([
        {"arrangement": "ABAB", "dummies": 1, "spacing_nm": 500, "why": "wider"},
        {"arrangement": "ABBA", "dummies": 1, "spacing_nm": 500, "aspect_ratio_pct": 50, "why": "taller"}
    ]);
    let delayed = |answer: Value| Reply::Delay(delay, Box::new(Reply::Json(answer)));
    FakeLlm::start_blocking(
        vec![delayed(llm_answer_every_role_accepts())],
        delayed(later),
    )
}

/// `centroid run --planner llm` of `examples/ota5` with `fake` (`iterations` of 4
/// candidates, 2 slots, seed 3, `[llm] model_share = model_share`), which must
/// succeed: its report.json, stderr and out dir.
fn run_ota5(
    fake: &FakeLlm,
    iterations: u32,
    model_share: &str,
) -> (Value, String, tempfile::TempDir) {
    let run = Ota5Run {
        iterations,
        model_share,
        ..Ota5Run::default()
    };
    run.with(fake)
}

/// A `centroid run --planner llm` of `examples/ota5`: 4 candidates an iteration,
/// 2 slots, seed 3.
struct Ota5Run<'a> {
    iterations: u32,
    model_share: &'a str,
    /// the model's deadline
    timeout_ms: u64,
    /// a gate opened once a candidate whose id ends so is dispatched
    release: Option<(&'a Gate, &'a str)>,
}

impl Default for Ota5Run<'_> {
    fn default() -> Self {
        Ota5Run {
            iterations: 2,
            model_share: "when_ready",
            timeout_ms: 30_000,
            release: None,
        }
    }
}

impl Ota5Run<'_> {
    /// Runs the job with `fake` (its events read as they come, to open the gate),
    /// which must succeed: its report.json, stderr and out dir.
    fn with(&self, fake: &FakeLlm) -> (Value, String, tempfile::TempDir) {
        let out = tempfile::tempdir().unwrap();
        let mut child = centroid()
            .env("CENTROID_LLM_BASE_URL", fake.base_url())
            .env("CENTROID_LLM_MODEL", "fake-model")
            .env("CENTROID_LLM_TIMEOUT_MS", self.timeout_ms.to_string())
            .env("CENTROID_LLM_MODEL_SHARE", self.model_share)
            .env_remove("CENTROID_CONFIG")
            .args(["run", "--no-memory", "--planner", "llm"])
            .args(["--candidates", "4", "--slots", "2", "--seed", "3"])
            .args(["--patience", "1000", "--iterations"])
            .arg(self.iterations.to_string())
            .arg("--out")
            .arg(out.path())
            .arg(repository().join("examples/ota5"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = String::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            if let Some((gate, id_end)) = self.release
                && line.starts_with('[')
                && line.contains("candidate_dispatched")
                && line.contains(id_end)
            {
                gate.open();
            }
            stderr.push_str(&line);
            stderr.push('\n');
        }
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{stderr}");
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
                .unwrap();
        (report, stderr, out)
    }
}

/// The job's event lines of a run's stderr, in the order the journal holds them
/// (stderr is no terminal).
fn job_events(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.starts_with('['))
        .collect()
}

/// Where the first event `what` recognises is among `events` (named `name` in the
/// failure).
fn event_position(events: &[&str], what: &dyn Fn(&str) -> bool, name: &str) -> usize {
    events
        .iter()
        .position(|line| what(line))
        .unwrap_or_else(|| panic!("no event {name} in:\n{}", events.join("\n")))
}
