//! One trace id per job, followed across processes (issue 15, seed 000 §4.6): the
//! submitter's W3C `traceparent` becomes the job's trace id; the coordinator sends
//! it with every RunCandidate; the worker puts it on the candidate and hands it to
//! the KLayout skill server. With `--log-format json` every line of every binary has
//! the seed's shape (`timestamp, level, session_id, trace_id, event_type, message,
//! data, duration_ms`), so one grep for the trace id finds the job's session
//! events, plans, evaluations and every skill call with its duration.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use centroid_proto::v1::GetJobRequest;
use centroid_proto::v1::jobs_client::JobsClient;
use centroid_runtime::trace_context;
use centroid_tests::{
    CANDIDATE_EVENTS_LOGGED, CoordinatorProcess, RedisProcess, WorkerProcess, example_request,
    small_job,
};
use serde_json::Value;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SEED_KEYS: [&str; 8] = [
    "timestamp",
    "level",
    "session_id",
    "trace_id",
    "event_type",
    "message",
    "data",
    "duration_ms",
];

/// Every line of a JSON log, parsed; a line that is not a seed-shaped entry fails.
fn entries(log: &str, process: &str) -> Vec<Value> {
    log.lines()
        .filter(|line| line.starts_with('{'))
        .map(|line| {
            let entry: Value = serde_json::from_str(line)
                .unwrap_or_else(|error| panic!("{process}: not JSON ({error}): {line}"));
            for key in SEED_KEYS {
                assert!(entry.get(key).is_some(), "{process}: no `{key}` in {line}");
            }
            entry
        })
        .collect()
}

fn of_trace<'a>(entries: &'a [Value], trace_id: &str) -> Vec<&'a Value> {
    entries
        .iter()
        .filter(|entry| entry["trace_id"] == trace_id)
        .collect()
}

fn event_types(entries: &[&Value]) -> BTreeSet<String> {
    entries
        .iter()
        .filter_map(|entry| entry["event_type"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_trace_id_follows_it_through_coordinator_worker_and_klayout() {
    let dir = tempfile::tempdir().unwrap();
    let json_logs = ["--log-format", "json"];
    let redis = RedisProcess::start(dir.path());
    // with the per-candidate events' lines (debug): the candidate's TOOL_CALL and EVALUATION
    let coordinator = CoordinatorProcess::start_with_log_filter(
        dir.path(),
        &redis.url(),
        "trace",
        "coordinator-test",
        &json_logs,
        CANDIDATE_EVENTS_LOGGED,
    );
    let mut worker =
        WorkerProcess::start_with_flags(dir.path(), &coordinator.url(), "w-trace", 1, &json_logs);

    let mut request =
        tonic::Request::new(example_request("ota5", small_job(1, 1, 5), "ota5-traced"));
    request.metadata_mut().insert(
        trace_context::TRACEPARENT,
        format!("00-{TRACE_ID}-00f067aa0ba902b7-01")
            .parse()
            .unwrap(),
    );
    let mut jobs = centroid_tests::client_for(&coordinator.url())
        .await
        .unwrap();
    let job_id = jobs.submit_job(request).await.unwrap().into_inner().job_id;
    let job = wait_done(&mut jobs, &job_id).await;
    assert_eq!(job.outcome, "completed", "{job:?}\n{}", worker.logs());
    assert_eq!(
        job.trace_id, TRACE_ID,
        "the submitter's trace id is the job's"
    );

    // the coordinator: the job's session, plan, evaluation and candidate events
    let coordinator_entries = entries(&coordinator.logs(), "coordinator");
    let traced = of_trace(&coordinator_entries, TRACE_ID);
    assert!(
        traced
            .iter()
            .all(|entry| entry["session_id"] == job_id.as_str()),
        "one trace, one session"
    );
    let types = event_types(&traced);
    for wanted in ["SESSION", "PLAN", "TOOL_CALL", "EVALUATION"] {
        assert!(
            types.contains(wanted),
            "no {wanted} entry with the trace id: {types:?}"
        );
    }
    let evaluation = traced
        .iter()
        .find(|entry| entry["event_type"] == "EVALUATION")
        .unwrap();
    assert!(
        evaluation["data"]["data"].is_object(),
        "the event's data travels as JSON: {evaluation}"
    );

    // the worker: every skill call of the candidate, with its duration
    let worker_entries = entries(&worker.logs(), "worker");
    let calls: Vec<&Value> = of_trace(&worker_entries, TRACE_ID)
        .into_iter()
        .filter(|entry| entry["event_type"] == "TOOL_CALL")
        .collect();
    assert!(
        calls.len() >= 5,
        "the candidate's skill calls carry the job's trace id: {}",
        calls.len()
    );
    for call in &calls {
        assert_eq!(call["session_id"], job_id.as_str(), "{call}");
        assert!(call["candidate_id"].is_string(), "{call}");
        assert!(call["duration_ms"].is_u64(), "{call}");
        assert!(call["data"]["skill"].is_string(), "{call}");
    }
    assert!(
        calls.iter().any(|call| call["data"]["skill"] == "drc.run"),
        "drc.run among the traced calls"
    );
    // the KLayout skill server's own lines carry it too (forwarded by the worker)
    assert!(
        worker.logs().contains(&format!("trace_id={TRACE_ID}")),
        "the skill server did not mark its log with the trace id"
    );

    // a job submitted without a traceparent gets a fresh trace id of its own
    let other = jobs
        .submit_job(example_request("ota5", small_job(1, 1, 6), "ota5-untraced"))
        .await
        .unwrap()
        .into_inner()
        .job_id;
    let other = wait_done(&mut jobs, &other).await;
    assert!(
        trace_context::parse_traceparent(&format!("00-{}-00f067aa0ba902b7-01", other.trace_id))
            .is_some()
            && other.trace_id != TRACE_ID,
        "{:?}",
        other.trace_id
    );
    worker.kill9();
}

async fn wait_done(
    jobs: &mut JobsClient<tonic::transport::Channel>,
    job_id: &str,
) -> centroid_proto::v1::JobSummary {
    let started = Instant::now();
    loop {
        let job = jobs
            .get_job(GetJobRequest {
                job_id: job_id.to_string(),
            })
            .await
            .unwrap()
            .into_inner()
            .job
            .unwrap();
        if job.state == "done" {
            return job;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{job:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
