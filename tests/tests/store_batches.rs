//! Several records read or written in one store call, a result recorded with its event,
//! candidates written with their events, results read with their candidates,
//! and a delivery seeing the job record as last written — against the in-process store and
//! the Redis store on a real redis-server.

mod store_fixtures;

use std::sync::Arc;

use centroid_coordinator::model::{CandidateRecord, EventKind};
use centroid_coordinator::store::{InProcessStore, Store};
use centroid_tests::RedisProcess;
use store_fixtures::{candidate, event, inputs, job, redis_store, result};

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
    // candidates written with the events that report them, in one call
    let mut evaluated = written[2].clone();
    evaluated.parent_id = "job-m-c1".into();
    let reported = event(EventKind::Evaluation, false);
    store
        .put_candidates_reported("job-m", std::slice::from_ref(&evaluated), &[reported])
        .await
        .unwrap();
    let read = store
        .get_candidates("job-m", &ids(&["job-m-c2"]))
        .await
        .unwrap();
    assert_eq!(read, vec![Some(evaluated)], "the candidate rewritten");
    let all = store.events_after("job-m", None, 100).await.unwrap();
    assert_eq!(all.len(), 4, "the reporting event appended");
    assert_eq!(all[3].1.kind, EventKind::Evaluation);
    let results = store
        .get_results("job-m", &ids(&["job-m-c1", "job-m-c0"]))
        .await
        .unwrap();
    assert_eq!(results, vec![None, Some(result("job-m-c0", "w1"))]);
    // results and candidates read together, each in the order asked
    let (results, candidates) = store
        .results_and_candidates(
            "job-m",
            &ids(&["job-m-c1", "job-m-c0"]),
            &ids(&["job-m-c0", "job-m-none"]),
        )
        .await
        .unwrap();
    assert_eq!(results, vec![None, Some(result("job-m-c0", "w1"))]);
    assert_eq!(
        candidates,
        vec![Some(written[0].clone()), None],
        "plans kept"
    );
    let (results, candidates) = store
        .results_and_candidates("job-m", &ids(&["job-m-c0"]), &[])
        .await
        .unwrap();
    assert_eq!(
        (results.len(), candidates.len()),
        (1, 0),
        "no candidate asked"
    );
    let (results, candidates) = store
        .results_and_candidates("job-m", &[], &ids(&["job-m-c2"]))
        .await
        .unwrap();
    assert!(results.is_empty());
    assert_eq!(candidates[0].as_ref().unwrap().candidate_id, "job-m-c2");

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
async fn in_process_store_batches() {
    batches(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn redis_store_batches() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    batches(Arc::new(redis_store(&redis, "batches").await)).await;
}
