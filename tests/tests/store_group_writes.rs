//! The dispatcher's per-candidate store work done for many candidates in one store
//! call ("group commit"): the deliveries of one queue read, and the candidates'
//! dispatched events and results — against the in-process store and the Redis
//! store on a real redis-server (one pipeline each). A record or write that fails
//! fails only its own entry.

mod store_fixtures;

use std::sync::Arc;

use centroid_coordinator::model::{CandidateRecord, EventKind, EventRecord};
use centroid_coordinator::store::{CandidateWrite, InProcessStore, ResultIdsSince, Store};
use centroid_tests::RedisProcess;
use store_fixtures::{candidate, event, inputs, job, redis_store, result};

fn key(job_id: &str, candidate_id: &str) -> (String, String) {
    (job_id.to_string(), candidate_id.to_string())
}

/// Two jobs (the second cancelled), their candidates stored, one with a result.
async fn two_jobs(store: &Arc<dyn Store>) -> Vec<CandidateRecord> {
    let a: Vec<CandidateRecord> = (0..2).map(|index| candidate("job-a", index)).collect();
    let b = vec![candidate("job-b", 0)];
    for (job_id, candidates) in [("job-a", &a), ("job-b", &b)] {
        let record = job(job_id, 10);
        store.create_job(&record, &inputs()).await.unwrap();
        store
            .enqueue_iteration(&record, candidates, candidates.len())
            .await
            .unwrap();
    }
    store.request_cancel("job-b", "enough").await.unwrap();
    store
        .record_result("job-a", &result("job-a-c1", "w1"))
        .await
        .unwrap();
    a.into_iter().chain(b).collect()
}

/// The deliveries of several entries in one call: each entry's counter bumped and
/// its reads, in order — the same as one delivery at a time.
async fn deliveries_together(store: Arc<dyn Store>) {
    let stored = two_jobs(&store).await;
    let entries = vec![
        key("job-a", "job-a-c0"),
        key("job-a", "job-a-c1"),
        key("job-b", "job-b-c0"),
        key("job-a", "job-a-c9"),
        key("job-a", "job-a-c0"),
    ];
    let reads: Vec<_> = store
        .deliver_many(&entries)
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(reads.len(), 5);
    let counts: Vec<u32> = reads.iter().map(|read| read.deliveries).collect();
    assert_eq!(counts, [1, 1, 1, 1, 2], "each counter bumped, in order");
    assert_eq!(reads[0].candidate, Some(stored[0].clone()));
    assert_eq!(reads[2].candidate, Some(stored[2].clone()));
    assert_eq!(reads[3].candidate, None, "a candidate not stored");
    let has_result: Vec<bool> = reads.iter().map(|read| read.has_result).collect();
    assert_eq!(has_result, [false, true, false, false, false]);
    let cancels: Vec<Option<&str>> = reads.iter().map(|read| read.cancel.as_deref()).collect();
    assert_eq!(cancels, [None, None, Some("enough"), None, None]);
    let jobs: Vec<&str> = reads
        .iter()
        .map(|read| read.job.as_ref().unwrap().job_id.as_str())
        .collect();
    assert_eq!(jobs, ["job-a", "job-a", "job-b", "job-a", "job-a"]);
    let alone = store.deliver("job-a", "job-a-c0").await.unwrap();
    assert_eq!(alone.deliveries, 3, "the same counter as a lone delivery");
    assert!(store.deliver_many(&[]).await.unwrap().is_empty());
}

fn candidate_event(kind: EventKind, candidate_id: &str) -> EventRecord {
    let mut event = event(kind, false);
    event.candidate_id = candidate_id.to_string();
    event
}

fn dispatched(job_id: &str, candidate_id: &str) -> CandidateWrite {
    CandidateWrite::Event {
        job_id: job_id.to_string(),
        event: candidate_event(EventKind::CandidateDispatched, candidate_id),
    }
}

fn finished(job_id: &str, candidate_id: &str, worker: &str) -> CandidateWrite {
    CandidateWrite::Result {
        job_id: job_id.to_string(),
        result: Box::new(result(candidate_id, worker)),
        event: candidate_event(EventKind::CandidateFinished, candidate_id),
    }
}

/// (kind, candidate) of the job's events, oldest first.
async fn logged(store: &Arc<dyn Store>, job_id: &str) -> Vec<(EventKind, String)> {
    store
        .events_after(job_id, None, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, event)| (event.kind, event.candidate_id))
        .collect()
}

/// Candidates' events and results written in one call, in order: a result
/// recorded once with its event (a late duplicate neither), the ids of the
/// results as the driver reads them.
async fn writes_together(store: Arc<dyn Store>) {
    two_jobs(&store).await;
    let writes = vec![
        dispatched("job-a", "job-a-c0"),
        dispatched("job-b", "job-b-c0"),
        finished("job-a", "job-a-c0", "w1"),
        finished("job-a", "job-a-c0", "w2"),
        finished("job-a", "job-a-c1", "w2"),
        finished("job-b", "job-b-c0", "w1"),
    ];
    let outcomes: Vec<bool> = store
        .write_candidates(&writes)
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        outcomes,
        [true, true, true, false, false, true],
        "events appended; each result recorded by its first write only"
    );
    assert_eq!(
        logged(&store, "job-a").await,
        [
            (EventKind::CandidateDispatched, "job-a-c0".to_string()),
            (EventKind::CandidateFinished, "job-a-c0".to_string()),
        ],
        "one finished event, after the dispatched one"
    );
    assert_eq!(logged(&store, "job-b").await.len(), 2);
    let kept = store
        .get_result("job-a", "job-a-c0")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept.worker_id, "w1", "the first result wins");
    assert_eq!(
        store.result_ids_since("job-a", 1).await.unwrap(),
        ResultIdsSince::New(vec!["job-a-c0".to_string()]),
        "the result's id after the one recorded before"
    );
    assert!(store.write_candidates(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn in_process_deliveries_together() {
    deliveries_together(Arc::new(InProcessStore::new())).await;
}

#[tokio::test]
async fn in_process_writes_together() {
    writes_together(Arc::new(InProcessStore::new())).await;
}

fn redis_cli(redis: &RedisProcess, args: &[&str]) {
    let status = std::process::Command::new("redis-cli")
        .arg("-u")
        .arg(redis.url())
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "redis-cli {args:?}");
}

/// On Redis, one pipeline each; a candidate record that does not parse fails its
/// own delivery, a write the server refuses fails only itself.
#[tokio::test]
async fn redis_deliveries_and_writes_together() {
    let dir = tempfile::tempdir().unwrap();
    let redis = RedisProcess::start(dir.path());
    deliveries_together(Arc::new(redis_store(&redis, "deliver").await)).await;
    writes_together(Arc::new(redis_store(&redis, "write").await)).await;

    let store: Arc<dyn Store> = Arc::new(redis_store(&redis, "fault").await);
    two_jobs(&store).await;
    redis_cli(
        &redis,
        &[
            "HSET",
            "fault:job:job-a:candidates",
            "job-a-c0",
            "{not json",
        ],
    );
    let reads = store
        .deliver_many(&[key("job-a", "job-a-c0"), key("job-b", "job-b-c0")])
        .await
        .unwrap();
    let error = reads[0].as_ref().unwrap_err().to_string();
    assert!(error.contains("corrupt record"), "{error}");
    assert_eq!(reads[1].as_ref().unwrap().deliveries, 1, "the other read");

    // job-b's log is not a stream: its XADD is refused, the other writes are done
    redis_cli(&redis, &["DEL", "fault:job:job-b:events"]);
    redis_cli(&redis, &["SET", "fault:job:job-b:events", "not a stream"]);
    let outcomes = store
        .write_candidates(&[
            dispatched("job-b", "job-b-c0"),
            finished("job-a", "job-a-c0", "w1"),
        ])
        .await
        .unwrap();
    let refused = outcomes[0].as_ref().unwrap_err().to_string();
    assert!(refused.contains("WRONGTYPE"), "{refused}");
    assert!(*outcomes[1].as_ref().unwrap(), "the result recorded");
    assert_eq!(
        logged(&store, "job-a").await,
        [(EventKind::CandidateFinished, "job-a-c0".to_string())]
    );
}
