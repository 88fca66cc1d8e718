//! A candidate id carrying a newline (or another control character) cannot forge
//! a line of the worker's text log: every field is written escaped.

mod common;

use common::{WorkerProcess, run, sleep_candidate};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_id_with_a_newline_stays_on_its_log_line() {
    let worker = WorkerProcess::start(&["--slots", "1", "--log-format", "text"]);
    let mut client = worker.client().await;
    let forged = "c1\nFORGED ERROR centroid_worker: pwned\r\x1b[2J";
    let mut request = sleep_candidate(forged, 60_000, json!(0));
    request.session_id = "s\nFORGED-SESSION".into();
    let result = run(&mut client, request).await.expect("the candidate runs");
    assert!(result.ok, "{result:#?}");
    let logs = worker.logs();
    assert!(
        logs.contains("c1\\nFORGED ERROR"),
        "the candidate is logged, escaped:\n{logs}"
    );
    for line in logs.lines() {
        assert!(!line.starts_with("FORGED"), "a forged line:\n{logs}");
        assert!(!line.contains('\r') && !line.contains('\x1b'), "{line:?}");
    }
}
