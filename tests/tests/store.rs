//! One suite, two stores: every test runs against the in-process store and
//! against the Redis store on a real redis-server (AOF on).

use std::sync::Arc;
use std::time::Duration;

use centroid_coordinator::model::{
    ArtifactMeta, CandidateRecord, CandidateResult, CandidateStatus, DesignPoint, EventKind,
    EventRecord, JobInputs, JobOptions, JobPhase, JobRecord, JobState, Origin, Outcome, Plan,
    PlanStep, Round, StepOutcome,
};
use centroid_coordinator::store::redis::RedisStoreSettings;
use centroid_coordinator::store::{InProcessStore, RedisStore, Store};
use centroid_tests::RedisProcess;

fn job(job_id: &str, created_ms: u64) -> JobRecord {
    let options = JobOptions {
        candidates_per_iteration: 2,
        max_iterations: 1,
        seed: 1,
        time_budget_ms: 0,
        candidate_deadline_ms: 1000,
        noop_plan: true,
        sleep_ms: 0,
        signoff_deck: String::new(),
        planner: String::new(),
        patience: 0,
        priority: 1,
    };
    JobRecord::new(job_id.into(), "t".into(), options, created_ms)
}

fn inputs() -> JobInputs {
    JobInputs {
        netlist_json: "{}".into(),
        drc_rules_json: "{}".into(),
        objectives_json: "{}".into(),
        testbench_sp: String::new(),
    }
}

fn candidate(job_id: &str, index: usize) -> CandidateRecord {
    CandidateRecord {
        candidate_id: format!("{job_id}-c{index}"),
        job_id: job_id.into(),
        iteration: 0,
        parent_id: String::new(),
        origin: Origin::Draft,
        design_point: DesignPoint {
            arrangement: "ABBA".into(),
            finger_split: 1,
            dummies: 0,
            guard_ring: false,
            row_order: 0,
            spacing_nm: 0,
            aspect_ratio_pct: 100,
            order: Vec::new(),
            rows: Default::default(),
            module_arrangements: Default::default(),
            module_dummies: Default::default(),
            module_rings: Default::default(),
            hierarchy: String::new(),
            blocks: Default::default(),
        },
        plan: plan(),
        required_skills: vec![],
        evaluation: None,
    }
}

/// A plan of one step, as candidates and results carry it.
fn plan() -> Plan {
    Plan {
        summary: "one step".into(),
        steps: vec![PlanStep {
            step_id: "s01".into(),
            skill: "tech.load".into(),
            arguments: serde_json::json!({"rules": {"layers": [1, 2]}}),
            optional: false,
            output_cell: String::new(),
        }],
    }
}

fn result(candidate_id: &str, worker: &str) -> CandidateResult {
    CandidateResult {
        candidate_id: candidate_id.into(),
        status: CandidateStatus::Finished,
        ok: true,
        worker_id: worker.into(),
        attempts: 1,
        error_code: String::new(),
        error_message: String::new(),
        steps: vec![StepOutcome {
            step_id: "s01".into(),
            skill: "tech.load".into(),
            ok: true,
            error_code: String::new(),
            error_message: String::new(),
            data: serde_json::json!({"layers": 2}),
            duration_ms: 3,
        }],
        artifacts: vec![],
        duration_ms: 1,
        slot_ms: 0,
        finished_ms: 1,
        plan: Some(plan()),
        adjustments: vec![],
    }
}

fn event(kind: EventKind, last: bool) -> EventRecord {
    EventRecord {
        kind,
        timestamp_ms: 1,
        state: JobState::Init,
        candidate_id: String::new(),
        iteration: 0,
        message: String::new(),
        data: serde_json::Value::Null,
        last,
    }
}

async fn suite(store: Arc<dyn Store>) {
    // jobs
    store
        .create_job(&job("job-a", 10), &inputs())
        .await
        .unwrap();
    store
        .create_job(&job("job-b", 20), &inputs())
        .await
        .unwrap();
    assert_eq!(
        store.get_job("job-a").await.unwrap().unwrap().job_id,
        "job-a"
    );
    assert!(store.get_job("job-zz").await.unwrap().is_none());
    assert_eq!(store.get_inputs("job-a").await.unwrap().unwrap(), inputs());
    let listed: Vec<String> = store
        .list_jobs(10)
        .await
        .unwrap()
        .into_iter()
        .map(|job| job.job_id)
        .collect();
    assert_eq!(listed, vec!["job-b", "job-a"], "most recent first");
    assert_eq!(store.active_jobs().await.unwrap(), vec!["job-a", "job-b"]);
    let mut finished = job("job-a", 10);
    finished.phase = JobPhase::Finished {
        outcome: Outcome::Completed,
    };
    store.finish_job(&finished).await.unwrap();
    assert_eq!(store.active_jobs().await.unwrap(), vec!["job-b"]);

    // the driver lease: one owner at a time, renewable, taken over once it lapses
    assert!(
        store
            .lease_job("job-b", "coordinator-1", Duration::from_millis(300))
            .await
            .unwrap()
    );
    assert!(
        !store
            .lease_job("job-b", "coordinator-2", Duration::from_millis(300))
            .await
            .unwrap()
    );
    assert!(
        store
            .lease_job("job-b", "coordinator-1", Duration::from_millis(300))
            .await
            .unwrap(),
        "renewal"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        store
            .lease_job("job-b", "coordinator-2", Duration::from_millis(300))
            .await
            .unwrap(),
        "lapsed: taken over"
    );
    store.release_job("job-b", "coordinator-1").await.unwrap();
    assert!(
        !store
            .lease_job("job-b", "coordinator-1", Duration::from_millis(300))
            .await
            .unwrap(),
        "release by a non-holder is a no-op"
    );
    store.release_job("job-b", "coordinator-2").await.unwrap();
    assert!(
        store
            .lease_job("job-b", "coordinator-1", Duration::from_millis(300))
            .await
            .unwrap()
    );
    store.release_job("job-b", "coordinator-1").await.unwrap();

    // cancellation requests live apart from the job record
    assert_eq!(store.cancel_requested("job-b").await.unwrap(), None);
    store.request_cancel("job-b", "user").await.unwrap();
    assert_eq!(
        store.cancel_requested("job-b").await.unwrap().as_deref(),
        Some("user")
    );

    // enqueue + read + ack
    let mut running = job("job-b", 20);
    running.phase = JobPhase::Executing(Round::queued(vec!["c0".into()], 1, 20));
    let candidates = vec![
        candidate("job-b", 0),
        candidate("job-b", 1),
        candidate("job-b", 2),
    ];
    store
        .enqueue_iteration(&running, &candidates, candidates.len())
        .await
        .unwrap();
    assert_eq!(
        store.get_job("job-b").await.unwrap().unwrap().state(),
        JobState::Executing,
        "job written with the candidates"
    );
    let stored = store.candidates("job-b").await.unwrap();
    assert_eq!(
        stored, candidates,
        "candidates come back whole, sorted by id"
    );
    let listed = store.candidate_listing("job-b").await.unwrap();
    let without_plans: Vec<CandidateRecord> = candidates
        .iter()
        .map(|candidate| CandidateRecord {
            plan: Plan::default(),
            ..candidate.clone()
        })
        .collect();
    assert_eq!(listed, without_plans, "a listing leaves the plans out");
    assert_eq!(
        store.candidate_ids("job-b").await.unwrap(),
        vec!["job-b-c0", "job-b-c1", "job-b-c2"],
        "ids without the records, sorted"
    );
    assert!(store.candidate_ids("job-none").await.unwrap().is_empty());
    let read = store.queue_read("c1", 2).await.unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(read[0].candidate_id, "job-b-c0");
    let rest = store.queue_read("c2", 10).await.unwrap();
    assert_eq!(rest.len(), 1, "each entry goes to one consumer");
    assert!(store.queue_read("c1", 10).await.unwrap().is_empty());
    assert_eq!(store.queue_pending_count().await.unwrap(), 3);

    // leases: renewed entries are not reclaimed, lapsed ones are, by another consumer
    tokio::time::sleep(Duration::from_millis(300)).await;
    store
        .queue_renew("c1", &[read[0].entry_id.clone()])
        .await
        .unwrap();
    let reclaimed = store
        .queue_reclaim("c3", Duration::from_millis(250), 10)
        .await
        .unwrap();
    let reclaimed_ids: Vec<&str> = reclaimed
        .iter()
        .map(|entry| entry.candidate_id.as_str())
        .collect();
    assert!(
        reclaimed_ids.contains(&"job-b-c1") && reclaimed_ids.contains(&"job-b-c2"),
        "{reclaimed_ids:?}"
    );
    assert!(
        !reclaimed_ids.contains(&"job-b-c0"),
        "a renewed lease is not reclaimed"
    );
    assert!(
        store
            .queue_reclaim("c4", Duration::from_millis(250), 10)
            .await
            .unwrap()
            .is_empty(),
        "reclaiming renews the lease"
    );
    store.queue_ack(&read[0].entry_id).await.unwrap();
    store.queue_ack(&rest[0].entry_id).await.unwrap();
    assert_eq!(store.queue_pending_count().await.unwrap(), 1);

    // dead letters
    store
        .dead_letter(&read[1], "too many deliveries")
        .await
        .unwrap();
    assert_eq!(store.queue_pending_count().await.unwrap(), 0);
    let dead = store.dead_letters(10).await.unwrap();
    assert_eq!(
        dead,
        vec![(
            "job-b".to_string(),
            "job-b-c1".to_string(),
            "too many deliveries".to_string()
        )]
    );

    // results: first wins
    assert!(
        store
            .record_result("job-b", &result("job-b-c0", "w1"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_result("job-b", &result("job-b-c0", "w2"))
            .await
            .unwrap(),
        "a late duplicate is ignored"
    );
    assert_eq!(
        store.results("job-b").await.unwrap()["job-b-c0"],
        result("job-b-c0", "w1")
    );
    let listed = store.result_listing("job-b").await.unwrap();
    let mut lean = result("job-b-c0", "w1");
    lean.plan = None;
    lean.steps[0].data = serde_json::Value::Null;
    assert_eq!(
        listed["job-b-c0"], lean,
        "a listing leaves the steps' data and the plan out"
    );
    assert!(store.has_result("job-b", "job-b-c0").await.unwrap());
    assert_eq!(store.result_ids("job-b").await.unwrap(), vec!["job-b-c0"]);
    let one = store.get_result("job-b", "job-b-c0").await.unwrap();
    assert_eq!(one.map(|result| result.worker_id).as_deref(), Some("w1"));
    assert_eq!(store.get_result("job-b", "job-b-c1").await.unwrap(), None);
    assert!(!store.has_result("job-b", "job-b-c1").await.unwrap());
    assert_eq!(store.bump_deliveries("job-b", "job-b-c1").await.unwrap(), 1);
    assert_eq!(store.bump_deliveries("job-b", "job-b-c1").await.unwrap(), 2);
    // a delivery: the counter bumped and what the dispatcher reads, in one call
    let delivered = store.deliver("job-b", "job-b-c1").await.unwrap();
    assert_eq!(delivered.deliveries, 3);
    assert_eq!(
        delivered.job.as_ref().map(|job| job.job_id.as_str()),
        Some("job-b")
    );
    assert_eq!(delivered.cancel.as_deref(), Some("user"));
    assert_eq!(
        delivered
            .candidate
            .map(|candidate| candidate.candidate_id)
            .as_deref(),
        Some("job-b-c1")
    );
    assert!(!delivered.has_result);
    assert!(store.deliver("job-b", "job-b-c0").await.unwrap().has_result);
    let unknown = store.deliver("job-none", "job-none-c0").await.unwrap();
    assert!(unknown.job.is_none() && unknown.candidate.is_none());

    // events with cursors
    let first = store
        .append_event("job-b", &event(EventKind::StateChanged, false))
        .await
        .unwrap();
    store
        .append_event("job-b", &event(EventKind::PlanCreated, false))
        .await
        .unwrap();
    store
        .append_event("job-b", &event(EventKind::Completed, true))
        .await
        .unwrap();
    let all = store.events_after("job-b", None, 100).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].0, first);
    let after_first = store
        .events_after("job-b", Some(&first), 100)
        .await
        .unwrap();
    assert_eq!(
        after_first
            .iter()
            .map(|(_, event)| event.kind)
            .collect::<Vec<_>>(),
        vec![EventKind::PlanCreated, EventKind::Completed]
    );
    assert!(
        store
            .events_after("job-b", Some(&all[2].0), 100)
            .await
            .unwrap()
            .is_empty()
    );

    // artifacts
    let meta = |candidate: &str, name: &str| ArtifactMeta {
        candidate_id: candidate.into(),
        name: name.into(),
        media_type: "application/x-gdsii".into(),
        size: 3,
    };
    store
        .put_artifact("job-b", &meta("job-b-c0", "layout.gds"), b"gds")
        .await
        .unwrap();
    store
        .put_artifact("job-b", &meta("job-b-c1", "layout.gds"), b"xyz")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_artifact("job-b", "job-b-c0", "layout.gds")
            .await
            .unwrap()
            .unwrap(),
        b"gds"
    );
    store
        .delete_candidate_artifacts("job-b", "job-b-c1")
        .await
        .unwrap();
    let kept: Vec<String> = store
        .artifacts("job-b")
        .await
        .unwrap()
        .into_iter()
        .map(|meta| meta.candidate_id)
        .collect();
    assert_eq!(kept, vec!["job-b-c0"]);
    assert!(
        store
            .get_artifact("job-b", "job-b-c1", "layout.gds")
            .await
            .unwrap()
            .is_none()
    );

    // a window of an iteration in the queue: every candidate written, only the first
    // `queued` enqueued; the rest follow in later calls
    let window_job = job("job-w", 30);
    let all: Vec<CandidateRecord> = (0..4).map(|index| candidate("job-w", index)).collect();
    store.enqueue_iteration(&window_job, &all, 1).await.unwrap();
    assert_eq!(
        store.candidates("job-w").await.unwrap().len(),
        4,
        "all written"
    );
    let first = store.queue_read("c9", 10).await.unwrap();
    assert_eq!(
        first
            .iter()
            .map(|entry| entry.candidate_id.as_str())
            .collect::<Vec<_>>(),
        vec!["job-w-c0"]
    );
    store
        .enqueue_iteration(&window_job, &all[1..3], 2)
        .await
        .unwrap();
    let next = store.queue_read("c9", 10).await.unwrap();
    assert_eq!(
        next.iter()
            .map(|entry| entry.candidate_id.as_str())
            .collect::<Vec<_>>(),
        vec!["job-w-c1", "job-w-c2"],
        "the rest follows, once each"
    );
    // several entries acknowledged in one call
    let pending = store.queue_pending_count().await.unwrap();
    let entry_ids: Vec<String> = first
        .iter()
        .chain(&next)
        .map(|entry| entry.entry_id.clone())
        .collect();
    store.queue_ack_all(&entry_ids).await.unwrap();
    assert_eq!(store.queue_pending_count().await.unwrap(), pending - 3);
    assert_eq!(
        store.candidates("job-w").await.unwrap().len(),
        4,
        "writing again adds nothing"
    );
}

/// Several records read or written in one call, a result recorded with its
/// event, and a delivery that sees the job record as last written.
async fn batches(store: Arc<dyn Store>) {
    let mut batch_job = job("job-m", 40);
    store.create_job(&batch_job, &inputs()).await.unwrap();
    let mut written: Vec<CandidateRecord> = (0..3).map(|index| candidate("job-m", index)).collect();
    written[1].parent_id = "job-m-c0".into();
    store.put_candidates(&written).await.unwrap();
    let ids = |names: &[&str]| {
        names
            .iter()
            .map(|name| name.to_string())
            .collect::<Vec<_>>()
    };
    let read = store
        .get_candidates("job-m", &ids(&["job-m-c2", "job-m-none", "job-m-c1"]))
        .await
        .unwrap();
    assert_eq!(
        read,
        vec![Some(written[2].clone()), None, Some(written[1].clone())],
        "in the order asked, plans kept"
    );
    assert!(store.get_candidates("job-m", &[]).await.unwrap().is_empty());

    // a result with its event: both when first, neither for a late duplicate
    let finished = event(EventKind::CandidateFinished, false);
    assert!(
        store
            .record_result_reported("job-m", &result("job-m-c0", "w1"), &finished)
            .await
            .unwrap()
    );
    assert!(
        !store
            .record_result_reported("job-m", &result("job-m-c0", "w2"), &finished)
            .await
            .unwrap(),
        "a late duplicate is ignored"
    );
    let events = store.events_after("job-m", None, 100).await.unwrap();
    assert_eq!(
        events
            .iter()
            .map(|(_, event)| event.kind)
            .collect::<Vec<_>>(),
        vec![EventKind::CandidateFinished],
        "one event, for the first recording"
    );
    // several events in one call, in order
    store
        .append_events(
            "job-m",
            &[
                event(EventKind::Evaluation, false),
                event(EventKind::Iteration, false),
            ],
        )
        .await
        .unwrap();
    store.append_events("job-m", &[]).await.unwrap();
    let kinds: Vec<EventKind> = store
        .events_after("job-m", Some(&events[0].0), 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, event)| event.kind)
        .collect();
    assert_eq!(kinds, vec![EventKind::Evaluation, EventKind::Iteration]);
    let results = store
        .get_results("job-m", &ids(&["job-m-c1", "job-m-c0"]))
        .await
        .unwrap();
    assert_eq!(results, vec![None, Some(result("job-m-c0", "w1"))]);

    // a delivery reads the job record as last written, each time
    let before = store.deliver("job-m", "job-m-c1").await.unwrap();
    assert!(!before.job.as_ref().unwrap().cancel_requested);
    let again = store.deliver("job-m", "job-m-c2").await.unwrap();
    assert_eq!(again.job, before.job, "the same record");
    batch_job.cancel_requested = true;
    store.put_job(&batch_job).await.unwrap();
    let after = store.deliver("job-m", "job-m-c1").await.unwrap();
    assert!(after.job.unwrap().cancel_requested, "the new record");
    assert_eq!(after.deliveries, 2);
}

#[tokio::test]
async fn in_process_store_suite() {
    suite(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn in_process_store_batches() {
    batches(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn redis_store_batches() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    let settings = RedisStoreSettings {
        url: redis.url(),
        prefix: "batches".into(),
        job_ttl: Duration::from_secs(3600),
        ..RedisStoreSettings::default()
    };
    let store = RedisStore::connect(settings, Duration::from_secs(10))
        .await
        .unwrap();
    batches(Arc::new(store)).await;
}

#[tokio::test]
async fn redis_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    let settings = RedisStoreSettings {
        url: redis.url(),
        prefix: "suite".into(),
        job_ttl: Duration::from_secs(3600),
        ..RedisStoreSettings::default()
    };
    let store = RedisStore::connect(settings, Duration::from_secs(10))
        .await
        .unwrap();
    suite(Arc::new(store)).await;
    // every key is under the prefix and carries a TTL, streams are trimmed by MAXLEN
    let keys = redis.cli(&["--scan", "--pattern", "*"]);
    for key in keys.lines() {
        assert!(key.starts_with("suite:"), "key outside the prefix: {key}");
        if key.starts_with("suite:job:") {
            let ttl: i64 = redis.cli(&["PTTL", key]).parse().unwrap();
            assert!(ttl > 0, "{key} has no TTL");
        }
    }
}
