//! One suite, two stores: every test runs against the in-process store and
//! against the Redis store on a real redis-server (AOF on).

mod store_fixtures;

use std::sync::Arc;
use std::time::Duration;

use centroid_coordinator::model::{
    ArtifactMeta, CandidateRecord, EventKind, JobPhase, JobState, Outcome, Plan, Round,
};
use centroid_coordinator::store::{InProcessStore, Store};
use centroid_tests::RedisProcess;
use store_fixtures::{candidate, event, inputs, job, redis_store, result};

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

#[tokio::test]
async fn in_process_store_suite() {
    suite(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn redis_store_suite() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    suite(Arc::new(redis_store(&redis, "suite").await)).await;
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
