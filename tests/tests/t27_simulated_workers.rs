//! The worker's bench/test simulation mode (`--simulate-candidate-ms`) runs
//! candidates end to end: it registers over real gRPC, the coordinator dispatches
//! a noop job's candidates to it through Redis, each is answered ok after the
//! delay (not before), and the job completes with every candidate on it.

use std::collections::HashMap;
use std::time::Duration;

use centroid_proto::v1::JobEventKind;
use centroid_tests::simulated_worker::{SimulatedWorkerProcess, wait_registered};
use centroid_tests::{Sandbox, assert_all_finished, kind, sleep_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_simulated_worker_answers_candidates_after_its_delay() {
    let sandbox = Sandbox::start(&[]);
    let delay_ms = 150;
    let mut worker = SimulatedWorkerProcess::start(
        sandbox.dir.path(),
        &sandbox.coordinator.url(),
        "sim-a",
        3,
        delay_ms,
    );
    wait_registered(&sandbox.coordinator.url(), &["sim-a".to_string()]).await;
    let job_id = sandbox.submit_example("ota5", sleep_job(9, 1, 0)).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(60)).await;
    assert_eq!(
        done.job.as_ref().unwrap().outcome,
        "completed",
        "{:?}\n{}",
        done.job,
        worker.logs()
    );
    assert_eq!(done.candidates.len(), 9);
    assert_all_finished(&done);
    assert!(
        done.candidates
            .iter()
            .all(|candidate| candidate.worker_id == "sim-a"),
        "{:?}",
        done.candidates
    );
    let mut dispatched = HashMap::new();
    let mut finished = 0;
    for event in sandbox.events(&job_id).await {
        match kind(&event) {
            JobEventKind::CandidateDispatched => {
                dispatched.insert(event.candidate_id.clone(), event.timestamp_ms);
            }
            JobEventKind::CandidateFinished => {
                finished += 1;
                let took = event.timestamp_ms - dispatched[&event.candidate_id];
                assert!(
                    took >= delay_ms,
                    "{} answered after {took} ms, before the {delay_ms} ms delay",
                    event.candidate_id
                );
            }
            _ => {}
        }
    }
    assert_eq!(finished, 9);
    worker.stop();
}
