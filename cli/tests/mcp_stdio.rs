//! `centroid mcp` as a child process over pipes, on a real KLayout skill server:
//! a ping is answered while a 2 s call runs (with progress notifications), a
//! cancelled call stops and gets no answer (the next call works), a cancelled queued
//! call never runs, a skill's crash is a structured error without a Python
//! traceback, a NUL byte in a path is an invalid parameter, the debug tools are
//! there only with `--debug-tools`, and SIGTERM ends a session at once, its KLayout
//! process killed.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Deadline of KLayout's start (and of a call that should be quick) on a loaded machine.
const SLOW: Duration = Duration::from_secs(60);

/// One `centroid mcp` session: its stdin, and its stdout lines as they come.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<(Instant, Value)>,
    /// every message received so far, with when
    received: Vec<(Instant, Value)>,
    _workdir: tempfile::TempDir,
}

impl Session {
    /// Starts the server (with `extra` flags) and initializes it.
    fn start(extra: &[&str]) -> Session {
        let workdir = tempfile::tempdir().unwrap();
        let mut child = support::centroid()
            .arg("mcp")
            .arg("--workdir")
            .arg(workdir.path())
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("centroid mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|error| panic!("stdout line is not JSON ({error}): {line}"));
                if sender.send((Instant::now(), message)).is_err() {
                    break;
                }
            }
        });
        let mut session = Session {
            child,
            stdin,
            lines,
            received: Vec::new(),
            _workdir: workdir,
        };
        session.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcp_stdio test", "version": "1"}}}),
        );
        let initialized = session.answer(0, SLOW);
        assert_eq!(initialized["result"]["serverInfo"]["name"], "centroid");
        session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("the server reads stdin");
        self.stdin.flush().unwrap();
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": id}}}));
    }

    fn cancel(&mut self, id: u64) {
        self.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"}}),
        );
    }

    /// The response to request `id`, waiting up to `timeout` for it.
    fn answer(&mut self, id: u64, timeout: Duration) -> Value {
        self.answer_and_time(id, timeout).1
    }

    fn answer_and_time(&mut self, id: u64, timeout: Duration) -> (Instant, Value) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(found) = self
                .received
                .iter()
                .find(|(_, message)| message["id"] == id && message.get("method").is_none())
            {
                return found.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.received.push(line),
                Err(_) => panic!("no answer to {id} within {timeout:?}: {:?}", self.received),
            }
        }
    }

    /// Whether any response to request `id` was received.
    fn answered(&self, id: u64) -> bool {
        self.received
            .iter()
            .any(|(_, message)| message["id"] == id && message.get("method").is_none())
    }

    /// Ends the session (end of input) and checks it exits 0.
    fn close(mut self) -> Vec<(Instant, Value)> {
        drop(self.stdin);
        self.received.extend(self.lines.iter());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "centroid mcp exited with {status}");
        self.received
    }
}

#[test]
fn a_ping_is_answered_while_a_call_runs_and_cancelled_calls_stop() {
    let mut session = Session::start(&["--debug-tools"]);
    // KLayout warm: a first quick call
    session.call(1, "debug_noop", json!({}));
    assert_eq!(session.answer(1, SLOW)["result"]["isError"], false);

    let sent = Instant::now();
    session.call(2, "debug_sleep", json!({"seconds": 2}));
    session.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    let (ponged, pong) = session.answer_and_time(3, SLOW);
    assert_eq!(pong["result"], json!({}));
    let (slept, sleep) = session.answer_and_time(2, SLOW);
    assert_eq!(sleep["result"]["isError"], false, "{sleep}");
    assert!(ponged < slept, "the ping is answered before the call ends");
    assert!(
        ponged.duration_since(sent) < Duration::from_secs(1),
        "{:?}",
        ponged - sent
    );
    assert!(slept.duration_since(sent) >= Duration::from_secs(2));
    let progress: Vec<&Value> = session
        .received
        .iter()
        .map(|(_, message)| message)
        .filter(|message| {
            message["method"] == "notifications/progress" && message["params"]["progressToken"] == 2
        })
        .collect();
    assert!(
        !progress.is_empty(),
        "progress while the call ran: {:?}",
        session.received
    );
    assert_eq!(progress[0]["params"]["progress"], 1);

    // a running call cancelled: it stops, gets no answer, and the next call works
    session.call(10, "debug_sleep", json!({"seconds": 120}));
    std::thread::sleep(Duration::from_millis(500));
    session.cancel(10);
    let cancelled = Instant::now();
    session.call(11, "debug_noop", json!({}));
    let (after_at, after) = session.answer_and_time(11, SLOW);
    assert_eq!(after["result"]["isError"], false, "{after}");
    assert!(after_at.duration_since(cancelled) < Duration::from_secs(30));

    // a running call and one queued behind it, cancelled (the queued one first): the
    // queued one never runs (else the next call would wait its 120 s)
    session.call(20, "debug_sleep", json!({"seconds": 120}));
    session.call(21, "debug_sleep", json!({"seconds": 120}));
    std::thread::sleep(Duration::from_millis(300));
    session.cancel(21);
    session.cancel(20);
    let cancelled = Instant::now();
    session.call(22, "debug_noop", json!({}));
    let (after_at, _) = session.answer_and_time(22, SLOW);
    assert!(after_at.duration_since(cancelled) < Duration::from_secs(30));

    let received = session.close();
    for id in [10, 20, 21] {
        let answered = received
            .iter()
            .any(|(_, message)| message["id"] == id && message.get("method").is_none());
        assert!(!answered, "cancelled call {id} got an answer: {received:?}");
    }
}

#[test]
fn a_crash_is_a_structured_error_and_a_nul_in_a_path_is_an_invalid_parameter() {
    let mut session = Session::start(&["--debug-tools"]);
    session.call(1, "debug_fail", json!({"message": "boom"}));
    let failed = session.answer(1, SLOW);
    let result = &failed["result"];
    assert_eq!(result["isError"], true, "{failed}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["code"], "INTERNAL_ERROR", "{failed}");
    assert!(
        error["message"].as_str().unwrap().contains("boom"),
        "{failed}"
    );
    assert!(!failed.to_string().contains("Traceback"), "{failed}");

    session.call(
        2,
        "layout_export",
        json!({"cell": "top", "path": "a\u{0}.gds"}),
    );
    let refused = session.answer(2, SLOW);
    let error = &refused["result"]["structuredContent"]["error"];
    assert_eq!(error["code"], "INVALID_PARAM", "{refused}");
    assert_eq!(error["details"]["reason"], "invalid_path", "{refused}");
    assert!(
        !refused.to_string().contains("embedded null byte"),
        "{refused}"
    );
    assert!(session.answered(2));
    session.close();
}

#[test]
fn debug_tools_are_neither_listed_nor_callable_without_the_flag() {
    let mut session = Session::start(&[]);
    session.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let list = session.answer(1, SLOW);
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"tech_load"), "{names:?}");
    assert!(
        names.iter().all(|name| !name.starts_with("debug")),
        "{names:?}"
    );
    session.call(2, "debug_sleep", json!({"seconds": 0}));
    let refused = session.answer(2, SLOW);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("--debug-tools"), "{message}");
    session.close();
}

#[test]
fn sigterm_during_a_call_ends_the_session_at_once_and_kills_klayout() {
    let mut session = Session::start(&["--debug-tools"]);
    session.call(1, "debug_sleep", json!({"seconds": 120}));
    std::thread::sleep(Duration::from_millis(500));
    let pid = session.child.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .expect("the server's children");
    let klayout: Vec<String> = children.split_whitespace().map(str::to_owned).collect();
    assert_eq!(klayout.len(), 1, "one KLayout skill server: {children:?}");
    let signalled = Instant::now();
    // SAFETY: a plain syscall on the child this test started
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) }, 0);
    // stdin stays open: the session must not wait for the client to close it
    let status = loop {
        if let Some(status) = session.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(20),
            "centroid mcp still runs 20 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    assert!(
        !std::path::Path::new(&format!("/proc/{}", klayout[0])).exists()
            || std::fs::read_to_string(format!("/proc/{}/stat", klayout[0]))
                .is_ok_and(|stat| stat.contains(") Z ")),
        "the KLayout process {} outlived the session",
        klayout[0]
    );
    let rest: Vec<(Instant, Value)> = session.lines.iter().collect();
    session.received.extend(rest);
    assert!(!session.answered(1), "{:?}", session.received);
}
