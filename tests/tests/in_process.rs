//! The coordinator library in-process (as `centroid run` would use it) against a
//! scripted fake worker served by tonic on 127.0.0.1:0, on both stores: a job
//! completes; a worker that is always unavailable leads to dead letters after
//! `max_deliveries`; an INVALID_PARAM step is adjusted (ReAct) and run again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use centroid_coordinator::config::CommandLine;
use centroid_coordinator::model::JobInputs;
use centroid_coordinator::store::redis::RedisStoreSettings;
use centroid_coordinator::store::{InProcessStore, RedisStore, Store};
use centroid_coordinator::{Coordinator, CoordinatorConfig, SubmitOptions};
use centroid_proto::v1::worker_server::{Worker, WorkerServer};
use centroid_proto::v1::{
    CancelCandidateRequest, CancelCandidateResponse, DrainRequest, DrainResponse, HealthRequest,
    HealthResponse, ListSkillsRequest, ListSkillsResponse, RunCandidateRequest,
    RunCandidateResponse, StepResult, WorkerInfo,
};
use centroid_proto::{Error, ErrorCode, PROTOCOL_VERSION};
use centroid_tests::{RedisProcess, repository_root};
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

#[derive(Clone, Copy, PartialEq)]
enum Script {
    Succeed,
    AlwaysUnavailable,
    FirstPairInvalid,
}

#[derive(Clone)]
struct FakeWorker {
    script: Script,
    calls: Arc<Mutex<HashMap<String, u32>>>,
}

#[tonic::async_trait]
impl Worker for FakeWorker {
    async fn run_candidate(
        &self,
        request: Request<RunCandidateRequest>,
    ) -> Result<Response<RunCandidateResponse>, Status> {
        let request = request.into_inner();
        let call = {
            let mut calls = self.calls.lock().unwrap();
            let count = calls.entry(request.candidate_id.clone()).or_default();
            *count += 1;
            *count
        };
        if self.script == Script::AlwaysUnavailable {
            return Err(
                Error::new(ErrorCode::ServiceUnavailable, "klayout process died").to_status(),
            );
        }
        let mut steps = Vec::new();
        for step in &request.plan {
            let arguments: serde_json::Value = serde_json::from_str(&step.arguments_json).unwrap();
            if self.script == Script::FirstPairInvalid
                && step.skill == "layout.create_common_centroid_pair"
                && call == 1
                && arguments["arrangement"] != "ABAB"
            {
                // as the skill server says it (tests/tests/skill_reasons.rs holds it to that)
                let error = Error::new(
                    ErrorCode::InvalidParam,
                    "ABBA needs an even m per device (use ABAB or a custom pattern)",
                )
                .with_details(serde_json::json!({"m": 3, "reason": "odd_unit_count"}));
                steps.push(StepResult {
                    step_id: step.step_id.clone(),
                    skill: step.skill.clone(),
                    ok: false,
                    error: Some(error.clone()),
                    data_json: "null".into(),
                    duration_ms: 1,
                });
                return Ok(Response::new(RunCandidateResponse {
                    candidate_id: request.candidate_id,
                    session_id: request.session_id,
                    ok: false,
                    steps,
                    artifacts: vec![],
                    error: Some(error),
                    worker_id: "fake".into(),
                    slot: 0,
                    duration_ms: 1,
                }));
            }
            let data = match step.skill.as_str() {
                "drc.run" => serde_json::json!({"total": 0, "clean": true}),
                "route.info" => serde_json::json!({"pitch_um": 0.5}),
                "lvs.run" => serde_json::json!({"match": true}),
                "layout.metrics" => {
                    serde_json::json!({"bbox_area_um2": 100.0, "device_area_um2": 60.0, "matching_score": 1.0})
                }
                _ => serde_json::json!({}),
            };
            steps.push(StepResult {
                step_id: step.step_id.clone(),
                skill: step.skill.clone(),
                ok: true,
                error: None,
                data_json: data.to_string(),
                duration_ms: 1,
            });
        }
        Ok(Response::new(RunCandidateResponse {
            candidate_id: request.candidate_id,
            session_id: request.session_id,
            ok: true,
            steps,
            artifacts: vec![],
            error: None,
            worker_id: "fake".into(),
            slot: 0,
            duration_ms: 1,
        }))
    }

    async fn list_skills(
        &self,
        _request: Request<ListSkillsRequest>,
    ) -> Result<Response<ListSkillsResponse>, Status> {
        Ok(Response::new(ListSkillsResponse {
            skills: vec![],
            klayout_version: "fake".into(),
            skill_server_version: "fake".into(),
        }))
    }

    async fn health(
        &self,
        _request: Request<HealthRequest>,
    ) -> Result<Response<HealthResponse>, Status> {
        Ok(Response::new(HealthResponse::default()))
    }

    async fn drain(
        &self,
        _request: Request<DrainRequest>,
    ) -> Result<Response<DrainResponse>, Status> {
        Ok(Response::new(DrainResponse::default()))
    }

    async fn cancel_candidate(
        &self,
        _request: Request<CancelCandidateRequest>,
    ) -> Result<Response<CancelCandidateResponse>, Status> {
        // Scripted candidates finish on their own; nothing runs to stop.
        Ok(Response::new(CancelCandidateResponse { found: false }))
    }
}

async fn serve_fake(script: Script) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let fake = FakeWorker {
        script,
        calls: Arc::new(Mutex::new(HashMap::new())),
    };
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(WorkerServer::new(fake))
            .serve_with_incoming_shutdown(TcpListenerStream::new(listener), std::future::pending()),
    );
    format!("http://{address}")
}

const SKILLS: &[&str] = &[
    "tech.load",
    "layout.create_device",
    "layout.create_common_centroid_pair",
    "layout.create_interdigitated_group",
    "layout.add_dummies",
    "layout.place",
    "route.info",
    "route.nets",
    "lvs.run",
    "drc.run",
    "layout.metrics",
    "layout.export",
    "debug.noop",
    "debug.sleep",
];

fn config(max_deliveries: u32) -> CoordinatorConfig {
    let command_line = CommandLine {
        heartbeat_interval_ms: Some(100),
        heartbeat_timeout_ms: Some(60_000),
        lease_timeout_ms: Some(61_000),
        max_deliveries: Some(max_deliveries),
        consumer: Some("in-process".into()),
        ..CommandLine::default()
    };
    let mut config =
        CoordinatorConfig::load_with_environment(&command_line, HashMap::new()).unwrap();
    config.retry_base_ms = 10;
    config.retry_max_ms = 50;
    config
}

fn ota5() -> JobInputs {
    let dir = repository_root().join("examples/ota5");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    JobInputs {
        netlist_json: read("netlist.json"),
        drc_rules_json: read("drc_rules.json"),
        objectives_json: read("objectives.json"),
        testbench_sp: String::new(),
    }
}

async fn start(store: Arc<dyn Store>, script: Script, max_deliveries: u32) -> Coordinator {
    let coordinator = Coordinator::start(config(max_deliveries), store)
        .await
        .unwrap();
    let address = serve_fake(script).await;
    let registered = coordinator.registry().register(WorkerInfo {
        worker_id: "fake".into(),
        address,
        slots: 2,
        skills: SKILLS.iter().map(|skill| skill.to_string()).collect(),
        klayout_version: "fake".into(),
        protocol_version: PROTOCOL_VERSION,
        hostname: "localhost".into(),
        instance_id: "fake-instance".into(),
        prefetch: 0,
    });
    assert_eq!(registered, Ok(true), "a new worker");
    coordinator
}

async fn scenarios(make_store: impl Fn() -> Arc<dyn Store>) {
    // a job completes, candidates are evaluated, the best passes
    let coordinator = start(make_store(), Script::Succeed, 6).await;
    let submitted = coordinator
        .submit(
            ota5(),
            SubmitOptions {
                candidates_per_iteration: 3,
                max_iterations: 2,
                seed: 5,
                ..SubmitOptions::default()
            },
        )
        .await
        .unwrap();
    let job = coordinator
        .wait(&submitted.job_id, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        job.outcome().map(|outcome| outcome.as_str()),
        Some("completed"),
        "{job:?}"
    );
    assert!(job.best_passed);
    let view = coordinator.get(&submitted.job_id).await.unwrap();
    assert!(
        view.candidates
            .iter()
            .all(|candidate| candidate.evaluation.is_some())
    );
    coordinator.shutdown().await;

    // bad inputs are refused with their structured issues
    let coordinator = start(make_store(), Script::Succeed, 6).await;
    let mut bad = ota5();
    bad.objectives_json =
        r#"{"schema_version": "1.0.0", "objectives": [{"name": "speed_max", "weight": 1}]}"#.into();
    match coordinator.submit(bad, SubmitOptions::default()).await {
        Err(centroid_coordinator::CoordinatorError::InvalidInputs(issues)) => {
            assert!(
                issues.iter().any(|issue| issue.file.contains("objectives")
                    && issue.pointer.starts_with("/objectives")),
                "{issues:?}"
            );
        }
        other => panic!("bad inputs accepted: {other:?}"),
    }
    // what no candidate could draw is refused as `validate` and `run` refuse it: the
    // same load pipeline, the same issues
    let mut undrawable = ota5();
    let mut netlist: serde_json::Value = serde_json::from_str(&undrawable.netlist_json).unwrap();
    for device in netlist["cells"][0]["devices"].as_array_mut().unwrap() {
        device["l"] = serde_json::json!(1e-8);
    }
    undrawable.netlist_json = netlist.to_string();
    let expected = centroid_schemas::TaskContext::load(&undrawable.task_inputs(), "cli")
        .unwrap_err()
        .issues;
    assert!(
        expected[0].message.contains("minimum gate length"),
        "{expected:?}"
    );
    match coordinator
        .submit(undrawable, SubmitOptions::default())
        .await
    {
        Err(centroid_coordinator::CoordinatorError::InvalidInputs(issues)) => {
            assert_eq!(issues, expected);
        }
        other => panic!("undrawable inputs accepted: {other:?}"),
    }
    coordinator.shutdown().await;

    // the time budget ends the job
    let coordinator = start(make_store(), Script::Succeed, 6).await;
    let submitted = coordinator
        .submit(
            ota5(),
            SubmitOptions {
                candidates_per_iteration: 2,
                max_iterations: 50,
                time_budget_ms: 1,
                ..SubmitOptions::default()
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let job = coordinator
        .wait(&submitted.job_id, Duration::from_secs(30))
        .await
        .unwrap();
    assert!(job.is_finished(), "{job:?}");
    assert!(job.error.contains("time budget"), "{job:?}");
    assert!(job.iteration < 49);
    coordinator.shutdown().await;

    // a worker that is always unavailable: retried, then dead-lettered after max_deliveries
    let store = make_store();
    let coordinator = start(store.clone(), Script::AlwaysUnavailable, 2).await;
    let submitted = coordinator
        .submit(
            ota5(),
            SubmitOptions {
                candidates_per_iteration: 2,
                max_iterations: 1,
                noop_plan: true,
                ..SubmitOptions::default()
            },
        )
        .await
        .unwrap();
    let job = coordinator
        .wait(&submitted.job_id, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        job.outcome().map(|outcome| outcome.as_str()),
        Some("failed"),
        "{job:?}"
    );
    let view = coordinator.get(&submitted.job_id).await.unwrap();
    for result in view.results.values() {
        assert_eq!(result.status.as_str(), "dead_lettered", "{result:?}");
    }
    let dead = store.dead_letters(100).await.unwrap();
    assert_eq!(
        dead.iter()
            .filter(|(job_id, _, _)| *job_id == submitted.job_id)
            .count(),
        2
    );
    assert_eq!(
        store.queue_pending_count().await.unwrap(),
        0,
        "dead letters are acknowledged"
    );
    coordinator.shutdown().await;

    // INVALID_PARAM on a step: the planner adjusts it (ReAct) and the candidate runs again
    let coordinator = start(make_store(), Script::FirstPairInvalid, 6).await;
    let submitted = coordinator
        .submit(
            ota5(),
            SubmitOptions {
                candidates_per_iteration: 1,
                max_iterations: 1,
                seed: 1,
                ..SubmitOptions::default()
            },
        )
        .await
        .unwrap();
    let job = coordinator
        .wait(&submitted.job_id, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        job.outcome().map(|outcome| outcome.as_str()),
        Some("completed"),
        "{job:?}"
    );
    let view = coordinator.get(&submitted.job_id).await.unwrap();
    let result = view.results.values().next().unwrap();
    assert!(result.ok);
    assert!(
        result
            .adjustments
            .iter()
            .any(|note| note.contains("arrangement → ABAB")),
        "{:?}",
        result.adjustments
    );
    assert_eq!(
        result.plan, None,
        "a job's view lists results without their plans"
    );
    let plan = view.best_plan.as_ref().unwrap();
    assert!(
        plan.steps
            .iter()
            .any(|step| step.arguments["arrangement"] == "ABAB")
    );
    coordinator.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_coordinator_with_memory_store() {
    scenarios(|| Arc::new(InProcessStore::new()) as Arc<dyn Store>).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_coordinator_with_redis_store() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    let url = redis.url();
    let counter = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let stores: Arc<Mutex<Vec<Arc<dyn Store>>>> = Arc::new(Mutex::new(Vec::new()));
    // connect the stores up front (the factory is synchronous)
    for index in 0..5 {
        let settings = RedisStoreSettings {
            url: url.clone(),
            prefix: format!("inproc{index}"),
            ..RedisStoreSettings::default()
        };
        let store: Arc<dyn Store> = Arc::new(
            RedisStore::connect(settings, Duration::from_secs(10))
                .await
                .unwrap(),
        );
        stores.lock().unwrap().push(store);
    }
    scenarios(move || {
        let index = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        stores.lock().unwrap()[index].clone()
    })
    .await;
}

/// Limits (issue 15): a coordinator refuses jobs beyond `max_active_jobs` and jobs
/// whose first iteration would overfill the queue with RESOURCE_EXHAUSTED (retryable,
/// saying which limit), and an iteration above `max_candidates_per_iteration` as an
/// invalid option; nothing is created for a refused job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submissions_beyond_the_limits_are_refused_with_the_limit_named() {
    let limited = CoordinatorConfig {
        max_active_jobs: 1,
        max_queue_len: 50,
        max_candidates_per_iteration: 40,
        ..config(6)
    };
    let store: Arc<dyn Store> = Arc::new(InProcessStore::new());
    // no worker: the first job stays active, waiting for one
    let coordinator = Coordinator::start(limited, store.clone()).await.unwrap();
    let options = |candidates: u32| SubmitOptions {
        candidates_per_iteration: candidates,
        max_iterations: 1,
        ..SubmitOptions::default()
    };
    let status = |error: centroid_coordinator::CoordinatorError| Status::from(error);

    let too_many = coordinator.submit(ota5(), options(41)).await.unwrap_err();
    let refused = Error::from_status(&status(too_many));
    assert_eq!(refused.error_code(), ErrorCode::InvalidParam);
    assert!(
        refused.message.contains("max_candidates_per_iteration"),
        "{}",
        refused.message
    );

    coordinator
        .submit(ota5(), options(4))
        .await
        .expect("the first job");
    let second = coordinator.submit(ota5(), options(4)).await.unwrap_err();
    let refused = Error::from_status(&status(second));
    assert_eq!(refused.error_code(), ErrorCode::ResourceExhausted);
    assert!(refused.retryable, "try again when a job ends");
    assert!(
        refused.message.contains("max_active_jobs"),
        "{}",
        refused.message
    );
    assert_eq!(
        store.active_jobs().await.unwrap().len(),
        1,
        "nothing created for a refused job"
    );
    coordinator.shutdown().await;

    // the queue: 31 candidates do not fit a queue of 30
    let mut config = CoordinatorConfig {
        max_queue_len: 30,
        ..config(6)
    };
    config.max_candidates_per_iteration = 40;
    let coordinator = Coordinator::start(config, Arc::new(InProcessStore::new()))
        .await
        .unwrap();
    let overfull = coordinator.submit(ota5(), options(31)).await.unwrap_err();
    let refused = Error::from_status(&status(overfull));
    assert_eq!(refused.error_code(), ErrorCode::ResourceExhausted);
    assert!(
        refused.message.contains("max_queue_len"),
        "{}",
        refused.message
    );
    coordinator.shutdown().await;
}
