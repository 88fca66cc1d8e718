//! SubmitJob over gRPC refuses a circuit the rule set cannot draw, with the reason
//! (issue 29): INVALID_ARGUMENT carrying the issues `centroid validate` reports,
//! before any job exists (the same load pipeline, schemas' `TaskContext`).

use centroid_proto::v1::ListJobsRequest;
use centroid_proto::{Error, ErrorCode};
use centroid_tests::{Sandbox, example_request, small_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_circuit_the_rules_cannot_draw_is_refused_with_the_reason() {
    let sandbox = Sandbox::start(&[]);
    let mut request = example_request("ota5", small_job(2, 1, 1), "undrawable");
    let mut netlist: serde_json::Value = serde_json::from_str(&request.netlist_json).unwrap();
    for device in netlist["cells"][0]["devices"].as_array_mut().unwrap() {
        device["l"] = serde_json::json!(1e-8);
    }
    request.netlist_json = netlist.to_string();

    let mut client = sandbox.client().await.unwrap();
    let status = client.submit_job(request).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    let error = Error::from_status(&status);
    assert_eq!(error.error_code(), ErrorCode::InvalidParam);
    assert!(!error.retryable);
    let issues = error.details()["issues"].clone();
    let first = &issues[0];
    assert!(
        first["message"]
            .as_str()
            .is_some_and(|message| message.contains("minimum gate length")),
        "{issues:#}"
    );
    assert_eq!(first["file"], "netlist.json", "{issues:#}");
    let jobs = client
        .list_jobs(ListJobsRequest { limit: 10 })
        .await
        .unwrap()
        .into_inner()
        .jobs;
    assert!(jobs.is_empty(), "no job was created: {jobs:?}");
}
