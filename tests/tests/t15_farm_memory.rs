//! The farm's long-term memory on Redis: a completed job leaves its case; the next
//! job on the same circuit retrieves it at its first planning (a `Memory` event)
//! and starts from its best point; the cases are listed, shown and forgotten over
//! gRPC (Jobs.ListCases/GetCase/ForgetCase).

use std::time::Duration;

use centroid_proto::v1::{ForgetCaseRequest, GetCaseRequest, JobEventKind, ListCasesRequest};
use centroid_tests::{Sandbox, event_data, kind, small_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_job_seeds_the_next_one_and_cases_are_served_over_grpc() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    let first = sandbox.submit_example("ota5", small_job(2, 1, 1)).await;
    let done = sandbox.wait_done(&first, Duration::from_secs(240)).await;
    let summary = done.job.clone().unwrap();
    assert!(
        summary.best_passed,
        "{summary:?}\n{}",
        sandbox.coordinator.logs()
    );
    let events = sandbox.events(&first).await;
    assert!(
        events
            .iter()
            .any(|event| kind(event) == JobEventKind::Memory
                && event_data(event)["stored_case"] == first.as_str()),
        "the case is stored at the end"
    );

    let mut client = sandbox.client().await.unwrap();
    let cases = client
        .list_cases(ListCasesRequest {})
        .await
        .unwrap()
        .into_inner()
        .cases;
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert_eq!(cases[0].job_id, first);
    assert_eq!(cases[0].circuit, "ota5");
    let case_json = client
        .get_case(GetCaseRequest {
            job_id: first.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .case_json;
    let case: serde_json::Value = serde_json::from_str(&case_json).unwrap();
    let best = done
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == summary.best_candidate_id)
        .unwrap();
    let best_point: serde_json::Value = serde_json::from_str(&best.design_point_json).unwrap();
    assert_eq!(case["best_point"], best_point);

    // the next job on the same circuit starts from that point
    let second = sandbox.submit_example("ota5", small_job(2, 1, 2)).await;
    let done = sandbox.wait_done(&second, Duration::from_secs(240)).await;
    let recalled = sandbox
        .events(&second)
        .await
        .into_iter()
        .find(|event| {
            kind(event) == JobEventKind::Memory && event_data(event)["similar_cases"].is_array()
        })
        .expect("a Memory event at the first planning");
    let similar = &event_data(&recalled)["similar_cases"];
    assert_eq!(similar[0]["job_id"], first.as_str(), "{similar}");
    assert!((similar[0]["similarity"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    let seeded = done
        .candidates
        .iter()
        .find(|candidate| candidate.origin == "memory")
        .expect("a candidate from the memory");
    let seeded_point: serde_json::Value = serde_json::from_str(&seeded.design_point_json).unwrap();
    assert_eq!(seeded_point, best_point);

    // forget, then it is gone (NOT_FOUND)
    client
        .forget_case(ForgetCaseRequest {
            job_id: first.clone(),
        })
        .await
        .unwrap();
    let gone = client
        .get_case(GetCaseRequest {
            job_id: first.clone(),
        })
        .await
        .expect_err("forgotten");
    assert_eq!(gone.code(), tonic::Code::NotFound, "{gone:?}");
    let again = client
        .forget_case(ForgetCaseRequest { job_id: first })
        .await
        .expect_err("twice");
    assert_eq!(again.code(), tonic::Code::NotFound);
}
