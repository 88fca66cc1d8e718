//! A cancelled job keeps what finished (issue 15, found by hand): the candidates
//! that ran to the end before the cancel are evaluated and reported, the best of
//! them is the job's best; only the ones that did not finish are "abandoned".

use std::time::Duration;

use centroid_proto::v1::{CancelJobRequest, JobEventKind, WatchJobRequest};
use centroid_tests::{Sandbox, kind, sleep_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_job_keeps_the_results_of_the_candidates_that_finished() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    // eight 3 s candidates on one slot: cancel after a few have finished
    let job_id = sandbox.submit_example("ota5", sleep_job(8, 1, 3_000)).await;
    // follow the job live until two candidates have finished
    let mut jobs = sandbox.client().await.unwrap();
    let mut stream = sandbox.watch(&job_id).await;
    let mut finished = 0;
    while finished < 2 {
        let event = tokio::time::timeout(Duration::from_secs(60), stream.message())
            .await
            .expect("the job progresses")
            .unwrap()
            .expect("the job ended before two candidates finished");
        if kind(&event) == JobEventKind::CandidateFinished {
            finished += 1;
        }
    }
    drop(stream);
    let answer = jobs
        .cancel_job(CancelJobRequest {
            job_id: job_id.clone(),
            reason: "test".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        (answer.state.as_str(), answer.outcome.as_str()),
        ("done", "cancelled"),
        "CancelJob answers with the state after the cancel"
    );
    let done = sandbox.wait_done(&job_id, Duration::from_secs(60)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(summary.outcome, "cancelled");

    let finished_events: Vec<String> = sandbox
        .events(&job_id)
        .await
        .iter()
        .filter(|event| kind(event) == JobEventKind::CandidateFinished)
        .filter(|event| centroid_tests::event_data(event)["ok"] == true)
        .map(|event| event.candidate_id.clone())
        .collect();
    assert!(finished_events.len() >= 2);
    for candidate_id in &finished_events {
        let candidate = done
            .candidates
            .iter()
            .find(|candidate| &candidate.candidate_id == candidate_id)
            .unwrap();
        assert!(
            !candidate.evaluation_json.is_empty(),
            "a candidate that finished before the cancel keeps its evaluation: {candidate:?}"
        );
    }
    assert!(
        finished_events.contains(&summary.best_candidate_id),
        "the best is one that finished: {summary:?}"
    );
    let abandoned = done
        .candidates
        .iter()
        .filter(|candidate| candidate.status == "abandoned")
        .count();
    assert!(abandoned >= 1, "the rest were abandoned");
    assert_eq!(
        abandoned + finished_events.len(),
        8,
        "every candidate accounted for once"
    );

    // a watch resumed after the last event of the finished job ends at once
    let last = sandbox.events(&job_id).await.last().unwrap().cursor.clone();
    let mut resumed = jobs
        .watch_job(WatchJobRequest {
            job_id: job_id.clone(),
            after_cursor: last,
        })
        .await
        .unwrap()
        .into_inner();
    let next = tokio::time::timeout(Duration::from_secs(5), resumed.message())
        .await
        .expect("the resumed watch ends instead of hanging");
    assert!(
        matches!(next, Ok(None)),
        "nothing after the last event: {next:?}"
    );
}
