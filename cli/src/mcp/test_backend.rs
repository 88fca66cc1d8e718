//! A stand-in skill process for the MCP tests that need no KLayout (the real one
//! is driven by `cli/tests/mcp_stdio.rs` and `worker/skills/tests/test_mcp_session.py`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use centroid_worker::SkillProcessError;
use centroid_worker::skill_process::ToolDescription;
use serde_json::{Value, json};

use super::backend::{BackendError, SkillBackend};
use super::cancellation::Cancellation;
use super::tools::ToolTable;

/// The calls a [`FakeBackend`] received, in order: skill and arguments.
pub type CallLog = Arc<Mutex<Vec<(String, Value)>>>;

/// Answers `tech.load` with `{ok}`, fails `layout.create_device` with a negative
/// width, sleeps `seconds` on `debug.sleep` (until cancelled), loses its process
/// on `debug.lost`; records every call.
pub struct FakeBackend {
    pub workdir: tempfile::TempDir,
    pub calls: CallLog,
}

impl SkillBackend for FakeBackend {
    async fn call(
        &mut self,
        skill: &str,
        arguments: Value,
        cancellation: &Cancellation,
    ) -> Result<Value, BackendError> {
        self.calls
            .lock()
            .expect("call log lock")
            .push((skill.to_owned(), arguments.clone()));
        match skill {
            "debug.sleep" => {
                let seconds = arguments["seconds"].as_f64().unwrap_or(0.0);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs_f64(seconds)) =>
                        Ok(json!({"ok": true, "error": null, "data": {"slept_s": seconds}})),
                    () = cancellation.cancelled() => Err(BackendError::Cancelled),
                }
            }
            "debug.lost" => Err(BackendError::ProcessLost(SkillProcessError::Timeout {
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

/// The fake's skills as tools (debug ones only when `offer_debug`), the fake,
/// and its call log.
pub fn fake_session(offer_debug: bool) -> (ToolTable, FakeBackend, CallLog) {
    let skills = [
        "tech.load",
        "layout.create_device",
        "layout.export",
        "debug.sleep",
        "debug.lost",
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
    let tools = ToolTable::new(skills, workdir.path(), offer_debug);
    let calls = CallLog::default();
    let backend = FakeBackend {
        workdir,
        calls: calls.clone(),
    };
    (tools, backend, calls)
}
