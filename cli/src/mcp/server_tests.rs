//! The MCP methods over a stand-in skill process (`test_backend.rs`; the real one
//! is driven by `cli/tests/mcp_stdio.rs` and `worker/skills/tests/test_mcp_session.py`).

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{Answer, McpServer};
use crate::mcp::calls::run_calls;
use crate::mcp::cancellation::InFlight;
use crate::mcp::protocol::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::mcp::test_backend::{CallLog, fake_session};

/// A server whose calls run on a fake backend (debug tools offered), its call log
/// and its session directory.
fn server() -> (McpServer, CallLog, std::path::PathBuf) {
    serve(true)
}

fn serve(offer_debug: bool) -> (McpServer, CallLog, std::path::PathBuf) {
    let (tools, backend, calls) = fake_session(offer_debug);
    let workdir = backend.workdir.path().to_path_buf();
    let in_flight = InFlight::default();
    let (call_sender, call_queue) = mpsc::unbounded_channel();
    let (notifications, _) = mpsc::unbounded_channel();
    tokio::spawn(run_calls(
        backend,
        call_queue,
        notifications,
        in_flight.clone(),
    ));
    let server = McpServer::new(tools, workdir.clone(), call_sender, in_flight);
    (server, calls, workdir)
}

/// The answer to `line`, waiting for a queued call.
async fn answer_line(server: &mut McpServer, line: &str) -> Option<Value> {
    match server.handle_line(line)? {
        Answer::Ready(answer) => Some(answer),
        Answer::Pending(pending) => pending.await,
    }
}

async fn ask(server: &mut McpServer, message: Value) -> Value {
    answer_line(server, &message.to_string())
        .await
        .expect("an answer")
}

fn skills_called(calls: &CallLog) -> Vec<String> {
    calls
        .lock()
        .unwrap()
        .iter()
        .map(|(skill, _)| skill.clone())
        .collect()
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn initialize_negotiates_and_lists_tools() {
    let (mut server, _calls, _workdir) = server();
    let answer = ask(&mut server, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(answer["result"]["serverInfo"]["name"], "centroid");
    assert_eq!(
        answer["result"]["capabilities"]["tools"]["listChanged"],
        false
    );
    let newer = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
        "params": {"protocolVersion": "2099-01-01"}}),
    )
    .await;
    assert_eq!(newer["result"]["protocolVersion"], "2025-06-18");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(server.handle_line(&initialized.to_string()).is_none());
    let pong = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
    )
    .await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    let list = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tech_load",
            "layout_create_device",
            "layout_export",
            "debug_sleep",
            "debug_lost"
        ]
    );
}

#[tokio::test]
async fn calls_reach_the_skill_and_failures_are_tool_errors() {
    let (mut server, calls, _workdir) = server();
    let ok = ask(&mut server, call("tech_load", json!({"rules": {}}))).await;
    assert_eq!(ok["result"]["isError"], false);
    assert_eq!(ok["result"]["structuredContent"]["skill"], "tech.load");
    let failed = ask(
        &mut server,
        call("layout_create_device", json!({"type": "nmos", "w": -1})),
    )
    .await;
    assert_eq!(failed["result"]["isError"], true);
    assert!(
        failed["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("INVALID_PARAM: ")
    );
    let lost = ask(&mut server, call("debug_lost", json!({}))).await;
    assert_eq!(
        lost["result"]["structuredContent"]["error"]["code"],
        "TIMEOUT"
    );
    assert_eq!(
        lost["result"]["structuredContent"]["error"]["retryable"],
        true
    );
    assert_eq!(
        skills_called(&calls),
        ["tech.load", "layout.create_device", "debug.lost"]
    );
}

#[tokio::test]
async fn file_arguments_stay_in_the_workdir() {
    let (mut server, calls, workdir) = server();
    let inside = ask(&mut server, call("layout_export", json!({"path": "a.gds"}))).await;
    assert_eq!(inside["result"]["isError"], false);
    let expected = workdir.join("a.gds");
    assert_eq!(
        calls.lock().unwrap()[0].1["path"],
        expected.display().to_string()
    );
    for outside in ["/etc/a.gds", "../a.gds"] {
        let refused = ask(&mut server, call("layout_export", json!({"path": outside}))).await;
        assert_eq!(refused["result"]["isError"], true, "{outside}");
        let error = &refused["result"]["structuredContent"]["error"];
        assert_eq!(error["code"], "INVALID_PARAM");
        assert_eq!(error["details"]["reason"], "path_outside_scratch");
    }
    assert_eq!(calls.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn protocol_faults_are_json_rpc_errors_and_the_server_goes_on() {
    let (mut server, calls, _workdir) = server();
    let unknown_tool = ask(&mut server, call("no_such_tool", json!({}))).await;
    assert_eq!(unknown_tool["error"]["code"], INVALID_PARAMS);
    assert!(
        unknown_tool["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no_such_tool")
    );
    let dotted = ask(&mut server, call("tech.load", json!({}))).await;
    assert_eq!(dotted["error"]["code"], INVALID_PARAMS);
    let bad_arguments = ask(&mut server, call("tech_load", json!([1]))).await;
    assert_eq!(bad_arguments["error"]["code"], INVALID_PARAMS);
    let no_name = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}}),
    )
    .await;
    assert_eq!(no_name["error"]["code"], INVALID_PARAMS);
    let no_version = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 9, "method": "initialize"}),
    )
    .await;
    assert_eq!(no_version["error"]["code"], INVALID_PARAMS);
    let unknown_method = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 10, "method": "resources/list"}),
    )
    .await;
    assert_eq!(unknown_method["error"]["code"], METHOD_NOT_FOUND);
    assert_eq!(unknown_method["id"], 10);

    let garbage = answer_line(&mut server, "{not json").await.unwrap();
    assert_eq!(garbage["error"]["code"], PARSE_ERROR);
    assert_eq!(garbage["id"], Value::Null);
    let not_request = answer_line(&mut server, "42").await.unwrap();
    assert_eq!(not_request["error"]["code"], INVALID_REQUEST);
    assert!(server.handle_line("   ").is_none());
    let unknown_notification = json!({"jsonrpc": "2.0", "method": "notifications/whatever"});
    assert!(
        server
            .handle_line(&unknown_notification.to_string())
            .is_none()
    );
    let pong = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}),
    )
    .await;
    assert_eq!(pong["result"], json!({}));
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_batch_gets_one_answer_per_request() {
    let (mut server, _calls, _workdir) = server();
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
    ]);
    let answer = ask(&mut server, batch).await;
    let answers = answer.as_array().unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1]["error"]["code"], METHOD_NOT_FOUND);
    let empty = answer_line(&mut server, "[]").await.unwrap();
    assert_eq!(empty["error"]["code"], INVALID_REQUEST);
}

#[tokio::test]
async fn debug_tools_need_the_flag_and_bad_paths_are_invalid_params() {
    let (mut server, calls, _workdir) = serve(false);
    let list = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert!(!list.to_string().contains("debug"), "{list}");
    let refused = ask(&mut server, call("debug_sleep", json!({"seconds": 0}))).await;
    assert_eq!(refused["error"]["code"], INVALID_PARAMS);
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("--debug-tools"), "{message}");
    for path in ["a\0.gds", "/tmp/a\0b/c.gds", ""] {
        let bad = ask(&mut server, call("layout_export", json!({"path": path}))).await;
        assert_eq!(bad["result"]["isError"], true, "{path:?}: {bad}");
        let error = &bad["result"]["structuredContent"]["error"];
        assert_eq!(error["code"], "INVALID_PARAM", "{path:?}: {bad}");
        assert_eq!(error["details"]["reason"], "invalid_path");
        assert_eq!(error["details"]["pointer"], "/path");
    }
    assert!(calls.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_reused_id_in_flight_is_refused_and_a_cancelled_queued_call_never_runs() {
    let (mut server, calls, _workdir) = server();
    let sleep = |id: u64, seconds: f64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "debug_sleep", "arguments": {"seconds": seconds}}})
    };
    let Some(Answer::Pending(running)) = server.handle_line(&sleep(1, 30.0).to_string()) else {
        panic!("a call is answered later");
    };
    let Some(Answer::Pending(queued)) = server.handle_line(&sleep(2, 0.0).to_string()) else {
        panic!("a call is answered later");
    };
    // the first call is running (the second waits behind it)
    while calls.lock().unwrap().is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let reused = ask(&mut server, sleep(1, 0.0)).await;
    assert_eq!(reused["error"]["code"], INVALID_REQUEST, "{reused}");
    for id in [2, 1] {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": id, "reason": "test"}});
        assert!(server.handle_line(&cancel.to_string()).is_none());
    }
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        (running.await, queued.await)
    })
    .await
    .expect("cancelled calls end at once");
    assert_eq!(ended, (None, None), "cancelled calls get no answer");
    let after = ask(&mut server, sleep(3, 0.0)).await;
    assert_eq!(after["result"]["isError"], false, "{after}");
    let seconds: Vec<Value> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(_, arguments)| arguments["seconds"].clone())
        .collect();
    assert_eq!(
        seconds,
        [json!(30.0), json!(0.0)],
        "the queued call never ran"
    );
}
