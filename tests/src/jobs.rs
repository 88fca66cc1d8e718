//! Jobs seen from a test: the options of small test jobs, their events, and the
//! assertions every fault test makes (each candidate accounted for once).

use std::time::{Duration, Instant};

use centroid_proto::v1::{GetJobResponse, JobEvent, JobOptions, SubmitJobRequest};

use crate::{Sandbox, repository_root};

/// Options of a small OTA job for tests.
pub fn small_job(candidates: u32, iterations: u32, seed: u64) -> JobOptions {
    JobOptions {
        candidates_per_iteration: candidates,
        max_iterations: iterations,
        seed,
        time_budget_ms: 0,
        candidate_deadline_ms: 120_000,
        noop_plan: false,
        sleep_ms: 0,
        signoff_deck: String::new(),
        planner: String::new(),
        patience: 0,
        priority: 0,
    }
}

/// Options of a job whose candidates each run `debug.sleep` for `sleep_ms`
/// (dispatch mechanics without KLayout work).
pub fn sleep_job(candidates: u32, iterations: u32, sleep_ms: u64) -> JobOptions {
    JobOptions {
        candidates_per_iteration: candidates,
        max_iterations: iterations,
        seed: 7,
        time_budget_ms: 0,
        candidate_deadline_ms: 60_000,
        noop_plan: true,
        sleep_ms,
        signoff_deck: String::new(),
        planner: String::new(),
        patience: 0,
        priority: 0,
    }
}

/// Kind of an event as the enum.
pub fn kind(event: &JobEvent) -> centroid_proto::v1::JobEventKind {
    centroid_proto::v1::JobEventKind::try_from(event.kind)
        .unwrap_or(centroid_proto::v1::JobEventKind::Unspecified)
}

pub fn event_data(event: &JobEvent) -> serde_json::Value {
    serde_json::from_str(&event.data_json).unwrap_or(serde_json::Value::Null)
}

/// Every candidate of the job view finished (none failed, lost or abandoned).
pub fn assert_all_finished(job: &GetJobResponse) {
    assert!(
        job.candidates
            .iter()
            .all(|candidate| candidate.status == "finished"),
        "{:?}",
        job.candidates
    );
}

/// Every candidate of the job has exactly one result (in the job view, in the
/// event log, and in Redis), none is still queued.
pub async fn assert_accounted_once(
    sandbox: &Sandbox,
    job_id: &str,
) -> (GetJobResponse, Vec<JobEvent>) {
    use centroid_proto::v1::JobEventKind;
    let job = sandbox.get_job(job_id).await;
    let summary = job.job.clone().expect("job summary");
    assert!(summary.candidates_total > 0);
    assert_eq!(
        summary.candidates_finished, summary.candidates_total,
        "every candidate has a result: {summary:?}"
    );
    for candidate in &job.candidates {
        assert_ne!(
            candidate.status, "queued",
            "{} still queued",
            candidate.candidate_id
        );
    }
    let events = sandbox.events(job_id).await;
    let mut finished: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for event in events
        .iter()
        .filter(|event| kind(event) == JobEventKind::CandidateFinished)
    {
        *finished.entry(event.candidate_id.clone()).or_default() += 1;
    }
    for candidate in job
        .candidates
        .iter()
        .filter(|candidate| candidate.status != "abandoned")
    {
        assert_eq!(
            finished.get(&candidate.candidate_id).copied().unwrap_or(0),
            1,
            "{} finished events",
            candidate.candidate_id
        );
    }
    let results_in_redis: usize = sandbox
        .redis
        .cli(&["HLEN", &format!("{}:job:{job_id}:results", sandbox.prefix)])
        .parse()
        .unwrap_or(0);
    assert_eq!(
        results_in_redis,
        job.candidates.len(),
        "one result per candidate in redis"
    );
    (job, events)
}

/// Follows the job's events from the beginning until one satisfies `predicate`;
/// panics with the coordinator's log after `timeout` or when the job ends first.
pub async fn wait_for_event(
    sandbox: &Sandbox,
    job_id: &str,
    timeout: Duration,
    what: &str,
    predicate: impl Fn(&JobEvent) -> bool,
) -> JobEvent {
    let mut stream = sandbox.watch(job_id).await;
    let started = Instant::now();
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        let event = tokio::time::timeout(left, stream.message())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{what}: not within {timeout:?}:\n{}",
                    sandbox.coordinator.logs()
                )
            })
            .expect("watch stream")
            .unwrap_or_else(|| panic!("{what}: the job ended first"));
        if predicate(&event) {
            return event;
        }
    }
}

/// Waits until some candidate of the job is dispatched to `worker_id`; its id.
pub async fn wait_for_running_on(
    sandbox: &Sandbox,
    job_id: &str,
    worker_id: &str,
    timeout: Duration,
) -> String {
    use centroid_proto::v1::JobEventKind;
    let what = format!("a candidate dispatched to {worker_id}");
    wait_for_event(sandbox, job_id, timeout, &what, |event| {
        kind(event) == JobEventKind::CandidateDispatched
            && event_data(event)["worker_id"] == worker_id
    })
    .await
    .candidate_id
}

/// SubmitJob of `examples/<example>` under the job name `name`.
pub fn example_request(example: &str, options: JobOptions, name: &str) -> SubmitJobRequest {
    let dir = repository_root().join("examples").join(example);
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).expect("example file");
    SubmitJobRequest {
        netlist_json: read("netlist.json"),
        drc_rules_json: read("drc_rules.json"),
        objectives_json: read("objectives.json"),
        options: Some(options),
        name: name.to_string(),
        testbench_sp: String::new(),
    }
}
