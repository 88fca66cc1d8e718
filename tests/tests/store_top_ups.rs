//! What a job's driver and the dispatchers read and write while a round runs, so
//! that none of it grows with the job's candidates: result ids read from where
//! the reader stopped, a top-up that queues stored candidates without rewriting
//! them, and (Redis) deliveries reading the job's delivery view — against the
//! in-process store and the Redis store on a real redis-server.

mod store_fixtures;

use std::sync::Arc;

use centroid_coordinator::error::StoreError;
use centroid_coordinator::model::{CandidateRecord, EventKind, JobPhase, Round};
use centroid_coordinator::store::{InProcessStore, ResultIdsSince, Store};
use centroid_tests::RedisProcess;
use store_fixtures::{candidate, event, inputs, job, redis_store, result};

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

/// Result ids since a reader's last read: only the new ones, in the order
/// recorded; a late duplicate adds none.
async fn result_ids_since(store: Arc<dyn Store>) {
    store
        .create_job(&job("job-r", 10), &inputs())
        .await
        .unwrap();
    assert_eq!(
        store.result_ids_since("job-r", 0).await.unwrap(),
        ResultIdsSince::New(Vec::new())
    );
    let finished = event(EventKind::CandidateFinished, false);
    store
        .record_result_reported("job-r", &result("job-r-c1", "w1"), &finished)
        .await
        .unwrap();
    store
        .record_result("job-r", &result("job-r-c0", "w1"))
        .await
        .unwrap();
    assert_eq!(
        store.result_ids_since("job-r", 0).await.unwrap(),
        ResultIdsSince::New(ids(&["job-r-c1", "job-r-c0"])),
        "both ways of recording a result, in their order"
    );
    assert!(
        !store
            .record_result("job-r", &result("job-r-c1", "w2"))
            .await
            .unwrap()
    );
    assert_eq!(
        store.result_ids_since("job-r", 2).await.unwrap(),
        ResultIdsSince::New(Vec::new()),
        "a late duplicate is no new id"
    );
    store
        .record_result_reported("job-r", &result("job-r-c2", "w1"), &finished)
        .await
        .unwrap();
    assert_eq!(
        store.result_ids_since("job-r", 2).await.unwrap(),
        ResultIdsSince::New(ids(&["job-r-c2"]))
    );
}

/// A top-up queues stored candidates and writes the job record; a candidate not
/// stored refuses the whole top-up, naming it.
async fn top_up(store: Arc<dyn Store>) {
    let mut running = job("job-t", 20);
    store.create_job(&running, &inputs()).await.unwrap();
    let drafted: Vec<CandidateRecord> = (0..3).map(|index| candidate("job-t", index)).collect();
    let all = ids(&["job-t-c0", "job-t-c1", "job-t-c2"]);
    running.phase = JobPhase::Executing(Round::queued(all.clone(), 1, 5));
    store
        .enqueue_iteration(&running, &drafted, 1)
        .await
        .unwrap();
    let first = store.queue_read("c1", 10).await.unwrap();
    assert_eq!(first.len(), 1);

    let refused = store
        .enqueue_stored(&running, &ids(&["job-t-c1", "job-t-none"]))
        .await;
    assert!(
        matches!(&refused, Err(StoreError::Missing { key }) if key.contains("job-t-none")),
        "{refused:?}"
    );
    assert!(
        store.queue_read("c1", 10).await.unwrap().is_empty(),
        "nothing queued by a refused top-up"
    );

    running.phase = JobPhase::Executing(Round::queued(all.clone(), 3, 6));
    store.enqueue_stored(&running, &all[1..]).await.unwrap();
    let queued: Vec<String> = store
        .queue_read("c1", 10)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.candidate_id)
        .collect();
    assert_eq!(queued, all[1..].to_vec(), "queued in order");
    assert_eq!(
        store.get_job("job-t").await.unwrap().unwrap(),
        running,
        "the job record written with them"
    );
    assert_eq!(
        store.get_candidates("job-t", &all).await.unwrap(),
        drafted.into_iter().map(Some).collect::<Vec<_>>(),
        "the candidates as stored"
    );
}

#[tokio::test]
async fn in_process_result_ids_since() {
    result_ids_since(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn in_process_top_up() {
    top_up(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn redis_result_ids_since_and_top_up() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    result_ids_since(Arc::new(redis_store(&redis, "since").await)).await;
    top_up(Arc::new(redis_store(&redis, "top-up").await)).await;
}

/// A delivery reads the job's delivery view: the round without its candidate ids,
/// every mark a delivery checks as last written.
#[tokio::test]
async fn redis_delivery_reads_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    let store: Arc<dyn Store> = Arc::new(redis_store(&redis, "view").await);
    let mut running = job("job-v", 30);
    store.create_job(&running, &inputs()).await.unwrap();
    let drafted: Vec<CandidateRecord> = (0..2).map(|index| candidate("job-v", index)).collect();
    let all = ids(&["job-v-c0", "job-v-c1"]);
    running.phase = JobPhase::Executing(Round::queued(all.clone(), 1, 5));
    store
        .enqueue_iteration(&running, &drafted, 1)
        .await
        .unwrap();
    store.enqueue_stored(&running, &all[1..]).await.unwrap();

    let delivered = store.deliver("job-v", "job-v-c1").await.unwrap();
    let view = delivered.job.unwrap();
    let JobPhase::Executing(round) = &view.phase else {
        panic!("{:?}", view.phase)
    };
    assert!(round.candidates.is_empty(), "no candidate ids: {round:?}");
    assert_eq!(view.job_id, running.job_id);
    assert_eq!(view.trace_id, running.trace_id);
    assert_eq!(view.options, running.options);
    assert_eq!(delivered.candidate, Some(drafted[1].clone()));

    running.cancel_requested = true;
    store.put_job(&running).await.unwrap();
    let after = store.deliver("job-v", "job-v-c1").await.unwrap();
    assert!(
        after.job.unwrap().cancel_requested,
        "the view as last written"
    );
    running.phase = JobPhase::Finished {
        outcome: centroid_coordinator::model::Outcome::Completed,
    };
    store.finish_job(&running).await.unwrap();
    let finished = store.deliver("job-v", "job-v-c1").await.unwrap();
    assert!(finished.job.unwrap().is_finished(), "a finished job");
}
