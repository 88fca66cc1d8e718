//! The MCP methods over a fake backend (the real one is driven by
//! `worker/skills/tests/test_mcp_session.py` with the official MCP client).

use std::path::Path;

use centroid_worker::SkillProcessError;
use centroid_worker::skill_process::ToolDescription;
use serde_json::{Value, json};

use super::McpServer;
use crate::mcp::backend::{BackendError, SkillBackend};
use crate::mcp::protocol::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::mcp::tools::ToolTable;

/// Answers `tech.load` with `{ok}`, fails `layout.create_device` with a negative
/// width, loses its process on `debug.sleep`; records every call.
struct FakeBackend {
    workdir: tempfile::TempDir,
    calls: Vec<(String, Value)>,
}

impl SkillBackend for FakeBackend {
    async fn call(&mut self, skill: &str, arguments: Value) -> Result<Value, BackendError> {
        self.calls.push((skill.to_owned(), arguments.clone()));
        match skill {
            "debug.sleep" => Err(BackendError::ProcessLost(SkillProcessError::Timeout {
                method: "tools/call".into(),
            })),
            "layout.create_device" if arguments["w"].as_f64().unwrap_or(0.0) < 0.0 => Ok(json!({
                "ok": false, "data": null,
                "error": {"code": "INVALID_PARAM", "message": "w must be > 0", "details": {"path": "$.w"}}})),
            _ => Ok(json!({"ok": true, "error": null, "data": {"skill": skill}})),
        }
    }

    fn workdir(&self) -> &Path {
        self.workdir.path()
    }
}

fn server() -> McpServer<FakeBackend> {
    let skills = [
        "tech.load",
        "layout.create_device",
        "layout.export",
        "debug.sleep",
    ]
    .into_iter()
    .map(|name| ToolDescription {
        name: name.into(),
        description: name.into(),
        input_schema: match name {
            "layout.export" => json!({"type": "object", "properties": {
                    "path": {"type": "string", "x-centroid-file": true}}}),
            _ => json!({"type": "object"}),
        },
    })
    .collect();
    let workdir = tempfile::tempdir().expect("a temporary directory");
    let tools = ToolTable::new(skills, workdir.path());
    McpServer::new(
        tools,
        FakeBackend {
            workdir,
            calls: Vec::new(),
        },
    )
}

async fn ask(server: &mut McpServer<FakeBackend>, message: Value) -> Value {
    server
        .handle_line(&message.to_string())
        .await
        .expect("an answer")
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn initialize_negotiates_and_lists_tools() {
    let mut server = server();
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
    assert!(server.handle_line(&initialized.to_string()).await.is_none());
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
            "debug_sleep"
        ]
    );
}

#[tokio::test]
async fn calls_reach_the_skill_and_failures_are_tool_errors() {
    let mut server = server();
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
    let lost = ask(&mut server, call("debug_sleep", json!({}))).await;
    assert_eq!(
        lost["result"]["structuredContent"]["error"]["code"],
        "TIMEOUT"
    );
    assert_eq!(
        lost["result"]["structuredContent"]["error"]["retryable"],
        true
    );
    let skills: Vec<&str> = server
        .backend
        .calls
        .iter()
        .map(|(skill, _)| skill.as_str())
        .collect();
    assert_eq!(skills, ["tech.load", "layout.create_device", "debug.sleep"]);
}

#[tokio::test]
async fn file_arguments_stay_in_the_workdir() {
    let mut server = server();
    let inside = ask(&mut server, call("layout_export", json!({"path": "a.gds"}))).await;
    assert_eq!(inside["result"]["isError"], false);
    let expected = server.backend.workdir.path().join("a.gds");
    assert_eq!(
        server.backend.calls[0].1["path"],
        expected.display().to_string()
    );
    for outside in ["/etc/a.gds", "../a.gds"] {
        let refused = ask(&mut server, call("layout_export", json!({"path": outside}))).await;
        assert_eq!(refused["result"]["isError"], true, "{outside}");
        let error = &refused["result"]["structuredContent"]["error"];
        assert_eq!(error["code"], "INVALID_PARAM");
        assert_eq!(error["details"]["reason"], "path_outside_scratch");
    }
    assert_eq!(server.backend.calls.len(), 1);
}

#[tokio::test]
async fn protocol_faults_are_json_rpc_errors_and_the_server_goes_on() {
    let mut server = server();
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

    let garbage = server.handle_line("{not json").await.unwrap();
    assert_eq!(garbage["error"]["code"], PARSE_ERROR);
    assert_eq!(garbage["id"], Value::Null);
    let not_request = server.handle_line("42").await.unwrap();
    assert_eq!(not_request["error"]["code"], INVALID_REQUEST);
    assert!(server.handle_line("   ").await.is_none());
    let unknown_notification = json!({"jsonrpc": "2.0", "method": "notifications/whatever"});
    assert!(
        server
            .handle_line(&unknown_notification.to_string())
            .await
            .is_none()
    );
    let pong = ask(
        &mut server,
        json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}),
    )
    .await;
    assert_eq!(pong["result"], json!({}));
    assert!(server.backend.calls.is_empty());
}

#[tokio::test]
async fn a_batch_gets_one_answer_per_request() {
    let mut server = server();
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "nope"},
    ]);
    let answer = ask(&mut server, batch).await;
    let answers = answer.as_array().unwrap();
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1]["error"]["code"], METHOD_NOT_FOUND);
    let empty = server.handle_line("[]").await.unwrap();
    assert_eq!(empty["error"]["code"], INVALID_REQUEST);
}
