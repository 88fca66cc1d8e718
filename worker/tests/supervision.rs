//! Supervision and admission of the real `centroid-worker` binary with real
//! KLayout skill servers, over real gRPC on loopback.

mod common;

use std::time::{Duration, Instant};

use centroid_proto::{Error, ErrorCode};
use common::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_child_fails_its_candidate_retryable_and_the_next_runs_on_a_fresh_process() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;

    let victim = spawn_sleeping_candidate(&client, "victim", 60_000, 30);
    let (pid, _) = wait_until_running(&mut client, "victim", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // SAFETY: SIGKILL to the KLayout child reported by Health.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) }, 0);

    let killed_at = Instant::now();
    let status = victim.await.unwrap().expect_err("the candidate must fail");
    assert!(
        killed_at.elapsed() < Duration::from_secs(5),
        "failure reported late"
    );
    let error = Error::from_status(&status);
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(
        error.error_code(),
        ErrorCode::ServiceUnavailable,
        "{error:?}"
    );
    assert!(error.retryable);
    assert_eq!(error.details()["step_id"], "s1");

    let health = wait_for_fresh_process(&mut client, pid).await;
    assert_eq!(health.slot_health[0].restarts, 1);

    let next = run(
        &mut client,
        candidate("next", 30_000, vec![step("s1", "debug.noop", json!({}))]),
    )
    .await
    .expect("the next candidate runs");
    assert!(next.ok, "{next:?}");
    assert!(
        worker.logs().contains("killed by signal 9"),
        "{}",
        worker.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_skill_times_out_within_the_deadline_plus_one_second_and_the_slot_serves_again() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    let old_pid = health(&mut client).await.slot_health[0].pid;

    let started = Instant::now();
    let status = run(&mut client, sleep_candidate("hang", 2_000, json!(60)))
        .await
        .expect_err("the candidate must time out");
    let elapsed = started.elapsed();
    let error = Error::from_status(&status);
    assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
    assert_eq!(error.error_code(), ErrorCode::Timeout, "{error:?}");
    assert!(error.retryable);
    assert!(
        elapsed >= Duration::from_millis(1_900),
        "returned before the deadline: {elapsed:?}"
    );
    assert!(
        elapsed < Duration::from_millis(3_000),
        "TIMEOUT after {elapsed:?}, more than deadline + 1 s"
    );

    wait_for_fresh_process(&mut client, old_pid).await;
    assert!(
        !process_is_alive(old_pid),
        "the hung process must be killed"
    );

    let next = run(
        &mut client,
        sleep_candidate("after-hang", 30_000, json!(0.1)),
    )
    .await
    .expect("the slot serves again");
    assert!(next.ok, "{next:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_are_invalid_param_and_never_reach_klayout() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    let calls_before = health(&mut client).await.slot_health[0].calls_forwarded;

    let started = Instant::now();
    let response = run(
        &mut client,
        sleep_candidate("bad-type", 30_000, json!("ten")),
    )
    .await
    .expect("a refused step is a result, not a failed rpc");
    assert!(!response.ok);
    let step_error = response.steps[0].error.clone().unwrap();
    assert_eq!(
        step_error.error_code(),
        ErrorCode::InvalidParam,
        "{step_error:?}"
    );
    assert!(!step_error.retryable);
    assert_eq!(step_error.details()["pointer"], "/seconds");
    assert_eq!(response.error.as_ref(), Some(&step_error));

    // 30 s of sleep with an unexpected key: refused, and it never sleeps
    let response = run(
        &mut client,
        candidate(
            "extra-key",
            30_000,
            vec![step(
                "s1",
                "debug.sleep",
                json!({"seconds": 30, "nap": true}),
            )],
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        response.error.unwrap().error_code(),
        ErrorCode::InvalidParam
    );
    let response = run(&mut client, sleep_candidate("negative", 30_000, json!(-1)))
        .await
        .unwrap();
    assert_eq!(
        response.error.unwrap().error_code(),
        ErrorCode::InvalidParam
    );
    let response = run(
        &mut client,
        candidate(
            "unknown",
            30_000,
            vec![step("s1", "device.teleport", json!({}))],
        ),
    )
    .await
    .unwrap();
    assert_eq!(response.error.unwrap().error_code(), ErrorCode::NotFound);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a refused sleep must not sleep"
    );

    let calls_after = health(&mut client).await.slot_health[0].calls_forwarded;
    assert_eq!(calls_after, calls_before, "no tools/call may reach KLayout");

    // a plan stops at its first refused step: the sleep after it never runs
    let response = run(
        &mut client,
        candidate(
            "stops-early",
            30_000,
            vec![
                step("s1", "debug.noop", json!({})),
                step("s2", "debug.sleep", json!({"seconds": []})),
                step("s3", "debug.sleep", json!({"seconds": 30})),
            ],
        ),
    )
    .await
    .unwrap();
    assert!(!response.ok);
    assert_eq!(response.steps.len(), 2);
    assert!(response.steps[0].ok);
    assert_eq!(
        health(&mut client).await.slot_health[0].calls_forwarded,
        calls_before + 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_candidates_than_slots_are_refused_at_once() {
    // without a waiting room (`--prefetch 0`; see waiting_room.rs for one)
    let worker = WorkerProcess::start(&["--slots", "2", "--prefetch", "0"]);
    let mut client = worker.client().await;

    let mut running = Vec::new();
    for index in 0..2 {
        let mut busy_client = client.clone();
        running.push(tokio::spawn(async move {
            let plan = vec![step("s1", "debug.sleep", json!({"seconds": 2}))];
            run(
                &mut busy_client,
                candidate(&format!("busy-{index}"), 30_000, plan),
            )
            .await
        }));
    }
    wait_for_health(
        &mut client,
        Duration::from_secs(30),
        "both slots busy",
        |health| health.free_slots == 0,
    )
    .await;

    let started = Instant::now();
    let status = run(
        &mut client,
        candidate(
            "one-too-many",
            30_000,
            vec![step("s1", "debug.noop", json!({}))],
        ),
    )
    .await
    .expect_err("no free slot");
    let refused_after = started.elapsed();
    let error = Error::from_status(&status);
    assert_eq!(status.code(), tonic::Code::ResourceExhausted);
    assert_eq!(error.error_code(), ErrorCode::ResourceExhausted);
    assert!(error.retryable);
    assert!(
        refused_after < Duration::from_millis(500),
        "refused after {refused_after:?}: that is a queue"
    );

    for candidate in running {
        let response = candidate
            .await
            .unwrap()
            .expect("the admitted candidates finish");
        assert!(response.ok, "{response:?}");
    }
    assert_eq!(health(&mut client).await.rejected_busy, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_running_candidate_finish_then_the_worker_exits_zero() {
    let mut worker = WorkerProcess::start(&["--slots", "1", "--drain-grace-ms", "20000"]);
    let mut client = worker.client().await;

    let running = spawn_sleeping_candidate(&client, "in-flight", 30_000, 2);
    wait_until_running(&mut client, "in-flight", 1).await;
    worker.send_signal(libc::SIGTERM);
    wait_for_health(&mut client, Duration::from_secs(5), "draining", |health| {
        health.draining
    })
    .await;

    let status = run(
        &mut client,
        candidate("late", 30_000, vec![step("s1", "debug.noop", json!({}))]),
    )
    .await
    .expect_err("a draining worker takes no work");
    let error = Error::from_status(&status);
    assert_eq!(error.error_code(), ErrorCode::ServiceUnavailable);
    assert!(error.retryable);
    assert!(error.message.contains("draining"), "{error:?}");

    let response = running
        .await
        .unwrap()
        .expect("the in-flight candidate completes");
    assert!(response.ok, "{response:?}");
    let exit = worker.wait_for_exit(Duration::from_secs(15)).await;
    assert_eq!(exit.code(), Some(0), "{}", worker.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_fails_back_a_candidate_that_outlives_the_grace_period() {
    let mut worker = WorkerProcess::start(&["--slots", "1", "--drain-grace-ms", "500"]);
    let mut client = worker.client().await;

    let running = spawn_sleeping_candidate(&client, "too-long", 60_000, 30);
    wait_until_running(&mut client, "too-long", 1).await;
    let signalled = Instant::now();
    worker.send_signal(libc::SIGTERM);

    let status = running.await.unwrap().expect_err("failed back");
    let error = Error::from_status(&status);
    assert_eq!(
        error.error_code(),
        ErrorCode::ServiceUnavailable,
        "{error:?}"
    );
    assert!(error.retryable);
    assert!(signalled.elapsed() < Duration::from_secs(5));
    let exit = worker.wait_for_exit(Duration::from_secs(15)).await;
    assert_eq!(exit.code(), Some(0), "{}", worker.logs());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_rpc_stops_taking_work_without_exiting() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    let drained = client
        .drain(centroid_proto::v1::DrainRequest { grace_ms: 1_000 })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((drained.finished, drained.failed_back), (0, 0));
    let status = run(
        &mut client,
        candidate(
            "after-drain",
            30_000,
            vec![step("s1", "debug.noop", json!({}))],
        ),
    )
    .await
    .expect_err("drained");
    assert_eq!(
        Error::from_status(&status).error_code(),
        ErrorCode::ServiceUnavailable
    );
    let health = health(&mut client).await;
    assert!(health.draining);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_skills_reports_schemas_and_the_klayout_version() {
    let worker = WorkerProcess::start(&["--slots", "1", "--log-json"]);
    let mut client = worker.client().await;
    let skills = client
        .list_skills(centroid_proto::v1::ListSkillsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(!skills.klayout_version.is_empty());
    let sleep = skills
        .skills
        .iter()
        .find(|skill| skill.name == "debug.sleep")
        .expect("debug.sleep");
    let schema: serde_json::Value = serde_json::from_str(&sleep.input_schema_json).unwrap();
    assert_eq!(schema["required"], json!(["seconds"]));
    // a deadline far beyond anything sensible is capped, not an overflow
    let response = run(
        &mut client,
        candidate(
            "far-deadline",
            u64::MAX,
            vec![step("s1", "debug.noop", json!({}))],
        ),
    )
    .await
    .expect("capped deadline");
    assert!(response.ok);
    // --log-json: every log line is a JSON object
    let logs = worker.logs();
    let first_line = logs.lines().next().expect("some log");
    let parsed: serde_json::Value = serde_json::from_str(first_line).expect("json log line");
    assert!(
        parsed.get("message").is_some() || parsed.get("fields").is_some(),
        "{first_line}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_died_while_idle_is_replaced_before_the_next_candidate() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    let old_pid = health(&mut client).await.slot_health[0].pid;
    // SAFETY: SIGKILL to the idle KLayout child reported by Health.
    assert_eq!(
        unsafe { libc::kill(old_pid as libc::pid_t, libc::SIGKILL) },
        0
    );
    tokio::time::sleep(Duration::from_millis(200)).await;

    let response = run(
        &mut client,
        candidate(
            "after-idle-death",
            60_000,
            vec![step("s1", "debug.noop", json!({}))],
        ),
    )
    .await
    .expect("the candidate runs on a new process");
    assert!(response.ok, "{response:?}");
    let health = health(&mut client).await;
    assert_ne!(health.slot_health[0].pid, old_pid);
    assert_eq!(health.slot_health[0].restarts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_above_the_step_limit_is_refused_and_not_retryable() {
    let worker = WorkerProcess::start(&["--slots", "1", "--max-plan-steps", "3"]);
    let mut client = worker.client().await;
    let steps = (0..4)
        .map(|index| step(&format!("s{index}"), "debug.noop", json!({})))
        .collect();
    let status = run(&mut client, candidate("too-long", 10_000, steps))
        .await
        .expect_err("refused before running");
    let error = centroid_proto::Error::from_status(&status);
    assert_eq!(
        error.error_code(),
        ErrorCode::ResourceExhausted,
        "{error:?}"
    );
    assert!(!error.retryable, "a plan that long never fits: {error:?}");
    assert!(error.message.contains("limit is 3"), "{}", error.message);
    let steps = (0..3)
        .map(|index| step(&format!("s{index}"), "debug.noop", json!({})))
        .collect();
    let response = run(&mut client, candidate("fits", 10_000, steps))
        .await
        .expect("runs");
    assert!(response.ok);
}
