//! One skill-server child (`python -m centroid_skills`): spawn it in its own
//! process group with a memory cap, speak JSON-RPC 2.0 over its stdio (one JSON
//! object per line, docs/contracts.md §2), bound every call by a deadline, and
//! kill the whole group when it must go.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

use crate::error::SkillProcessError;
use crate::skill_reply::{MAX_REPLY_LINE_BYTES, ReadFailure, read_reply};

/// The variable naming the foundry decks to the skill server (`signoff.run`).
pub const SIGNOFF_DECKS_VARIABLE: &str = "CENTROID_SIGNOFF_DECKS";

/// How to start a skill server.
#[derive(Debug, Clone)]
pub struct SkillServerCommand {
    /// the Python interpreter with the `klayout` module (`$CENTROID_PYTHON`)
    pub python: PathBuf,
    /// the directory holding the `centroid_skills` package (`$CENTROID_SKILLS_DIR`)
    pub skills_dir: PathBuf,
    /// RLIMIT_AS of the child in bytes; 0 = no cap
    pub memory_limit_bytes: u64,
    /// the foundry decks `signoff.run` may run (`:`-separated files, handed to the
    /// child as `CENTROID_SIGNOFF_DECKS`); empty = whatever the environment says
    pub signoff_decks: String,
}

/// Who the child is working for, or last worked for: stamped on its stderr lines.
#[derive(Debug, Default, Clone)]
pub struct LogContext {
    pub candidate_id: String,
    pub session_id: String,
}

/// `initialize` result.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerInfo {
    #[serde(rename = "protocolVersion", default)]
    pub protocol_version: String,
    #[serde(rename = "klayoutVersion", default)]
    pub klayout_version: String,
    #[serde(rename = "serverInfo", default)]
    pub server: ServerName,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ServerName {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
}

/// One entry of `tools/list`.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolDescription {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
}

fn empty_object_schema() -> Value {
    json!({"type": "object"})
}

#[derive(Debug, Deserialize)]
struct ToolList {
    tools: Vec<ToolDescription>,
}

/// `tools/call` result: a skill failure is a result with `ok: false`.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolCallResult {
    pub ok: bool,
    #[serde(default)]
    pub error: Option<ToolError>,
    #[serde(default)]
    pub data: Value,
    #[serde(default)]
    pub duration_ms: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToolError {
    #[serde(default)]
    pub code: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub details: Value,
}

/// A running skill server.
pub struct SkillProcess {
    child: Child,
    pid: u32,
    /// `None` once closed (end of input asks the child to exit)
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_request_id: u64,
    log_context: Arc<Mutex<LogContext>>,
    line_buffer: Vec<u8>,
}

impl std::fmt::Debug for SkillProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkillProcess")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl SkillProcess {
    /// Starts a child in a new process group, with its memory capped and its
    /// stderr lines forwarded to `tracing`.
    pub fn spawn(
        command: &SkillServerCommand,
        slot_index: usize,
    ) -> Result<SkillProcess, SkillProcessError> {
        let mut process_command = Command::new(&command.python);
        process_command
            .args(["-u", "-m", "centroid_skills"])
            .env("PYTHONPATH", &command.skills_dir)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if !command.signoff_decks.is_empty() {
            process_command.env(SIGNOFF_DECKS_VARIABLE, &command.signoff_decks);
        }
        let memory_limit_bytes = command.memory_limit_bytes;
        // SAFETY: the closure runs in the forked child before exec and only calls
        // async-signal-safe libc functions (setrlimit, prctl); it allocates nothing.
        unsafe {
            process_command.pre_exec(move || limit_child_resources(memory_limit_bytes));
        }
        let mut child = process_command
            .spawn()
            .map_err(|source| SkillProcessError::Spawn {
                program: command.python.display().to_string(),
                source,
            })?;
        let pid = child.id().unwrap_or_default();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let log_context = Arc::new(Mutex::new(LogContext::default()));
        tokio::spawn(forward_stderr_to_tracing(
            stderr,
            pid,
            slot_index,
            log_context.clone(),
        ));
        tracing::debug!(pid, slot = slot_index, "skill server started");
        Ok(SkillProcess {
            child,
            pid,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            next_request_id: 1,
            log_context,
            line_buffer: Vec::new(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Stamps the candidate and session on the child's stderr lines from now on.
    pub fn set_log_context(&self, candidate_id: &str, session_id: &str) {
        let mut context = self.log_context.lock().expect("log context lock");
        context.candidate_id = candidate_id.to_string();
        context.session_id = session_id.to_string();
    }

    /// Sends one JSON-RPC request and waits for its response until `deadline`.
    /// After an error other than `JsonRpc` the child must be thrown away.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, SkillProcessError> {
        match tokio::time::timeout_at(deadline, self.exchange(method, params)).await {
            Ok(result) => result,
            Err(_elapsed) => Err(SkillProcessError::Timeout {
                method: method.to_string(),
            }),
        }
    }

    async fn exchange(&mut self, method: &str, params: Value) -> Result<Value, SkillProcessError> {
        let request_id = self.next_request_id;
        self.next_request_id += 1;
        let mut line = serde_json::to_vec(&json!({
            "jsonrpc": "2.0",
            "id": request_id,
            "method": method,
            "params": params,
        }))
        .map_err(|error| SkillProcessError::Protocol(format!("cannot encode request: {error}")))?;
        line.push(b'\n');
        if let Err(error) = self.write_line(&line).await {
            return Err(self.exit_error_or(error).await);
        }
        let reply = read_reply(
            &mut self.stdout,
            &mut self.line_buffer,
            request_id,
            method,
            self.pid,
            MAX_REPLY_LINE_BYTES,
        )
        .await;
        match reply {
            Ok(result) => Ok(result),
            Err(ReadFailure::Reply(error)) => Err(error),
            Err(ReadFailure::Closed) => Err(self.exited_error().await),
            Err(ReadFailure::Io(error)) => Err(self.exit_error_or(error).await),
        }
    }

    async fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin already closed",
            ));
        };
        stdin.write_all(line).await?;
        stdin.flush().await
    }

    async fn exit_error_or(&mut self, error: std::io::Error) -> SkillProcessError {
        match self.child.try_wait() {
            Ok(Some(_)) => self.exited_error().await,
            _ if error.kind() == std::io::ErrorKind::BrokenPipe => self.exited_error().await,
            _ => SkillProcessError::Io(error),
        }
    }

    /// stdout closed: the child is gone (or going). Reap it briefly for its status.
    async fn exited_error(&mut self) -> SkillProcessError {
        let status = match tokio::time::timeout(Duration::from_millis(500), self.child.wait()).await
        {
            Ok(Ok(status)) => describe_exit_status(status),
            Ok(Err(error)) => format!("unknown ({error})"),
            Err(_) => "closed its stdout".to_string(),
        };
        SkillProcessError::Exited { status }
    }

    /// `initialize`.
    pub async fn initialize(&mut self, deadline: Instant) -> Result<ServerInfo, SkillProcessError> {
        let result = self
            .request("initialize", json!({"protocolVersion": "2024-11-05", "clientInfo": {"name": "centroid-worker", "version": env!("CARGO_PKG_VERSION")}}), deadline)
            .await?;
        serde_json::from_value(result)
            .map_err(|error| SkillProcessError::Protocol(format!("bad initialize result: {error}")))
    }

    /// `tools/list`.
    pub async fn list_tools(
        &mut self,
        deadline: Instant,
    ) -> Result<Vec<ToolDescription>, SkillProcessError> {
        let result = self.request("tools/list", json!({}), deadline).await?;
        let list: ToolList = serde_json::from_value(result).map_err(|error| {
            SkillProcessError::Protocol(format!("bad tools/list result: {error}"))
        })?;
        Ok(list.tools)
    }

    /// `tools/call`.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        deadline: Instant,
    ) -> Result<ToolCallResult, SkillProcessError> {
        let result = self
            .request(
                "tools/call",
                json!({"name": name, "arguments": arguments}),
                deadline,
            )
            .await?;
        serde_json::from_value(result)
            .map_err(|error| SkillProcessError::Protocol(format!("bad tools/call result: {error}")))
    }

    /// `session/reset`: drops the layout and the loaded technology; with a scratch
    /// directory, the skill server confines every file argument to it; the trace id
    /// (when not empty) marks the server's log lines until the next reset.
    pub async fn reset_session(
        &mut self,
        deadline: Instant,
        scratch_dir: Option<&std::path::Path>,
        trace_id: &str,
    ) -> Result<(), SkillProcessError> {
        let mut params = json!({});
        if let Some(dir) = scratch_dir {
            params["scratch_dir"] = json!(dir.display().to_string());
        }
        if !trace_id.is_empty() {
            params["trace_id"] = json!(trace_id);
        }
        self.request("session/reset", params, deadline)
            .await
            .map(|_| ())
    }

    /// Whether the child has exited (without blocking).
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGKILLs the child's whole process group and reaps the child.
    pub async fn kill(mut self) {
        self.kill_process_group();
        match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
            Ok(Ok(status)) => {
                tracing::debug!(pid = self.pid, status = %describe_exit_status(status), "skill server killed")
            }
            _ => tracing::warn!(
                pid = self.pid,
                "skill server did not die within 5 s of SIGKILL"
            ),
        }
    }

    /// Closes stdin (the child exits 0 at end of input), waits up to `grace`, then kills.
    pub async fn shut_down(mut self, grace: Duration) {
        drop(self.stdin.take());
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => {
                tracing::debug!(pid = self.pid, status = %describe_exit_status(status), "skill server stopped")
            }
            _ => self.kill().await,
        }
    }

    fn kill_process_group(&self) {
        if self.pid == 0 {
            return;
        }
        // SAFETY: plain syscall; the child leads its own process group (process_group(0)).
        let result = unsafe { libc::killpg(self.pid as libc::pid_t, libc::SIGKILL) };
        if result != 0 {
            // the group may be gone already; make sure the child itself goes
            unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) };
        }
    }
}

impl Drop for SkillProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill_process_group();
        }
    }
}

/// Runs in the forked child before exec: memory cap, and die with the worker.
fn limit_child_resources(memory_limit_bytes: u64) -> std::io::Result<()> {
    if memory_limit_bytes > 0 {
        let limit = libc::rlimit {
            rlim_cur: memory_limit_bytes as libc::rlim_t,
            rlim_max: memory_limit_bytes as libc::rlim_t,
        };
        // SAFETY: setrlimit is async-signal-safe; `limit` lives on this stack frame.
        if unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl is async-signal-safe.
        unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) };
    }
    Ok(())
}

fn describe_exit_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

async fn forward_stderr_to_tracing(
    stderr: tokio::process::ChildStderr,
    pid: u32,
    slot_index: usize,
    log_context: Arc<Mutex<LogContext>>,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let context = log_context.lock().expect("log context lock").clone();
        macro_rules! forward {
            ($level:ident) => {
                tracing::$level!(
                    target: "centroid_worker::klayout",
                    pid,
                    slot = slot_index,
                    candidate_id = %context.candidate_id,
                    session_id = %context.session_id,
                    "{line}"
                )
            };
        }
        // the skill server logs "<time> LEVEL <logger>: <message>"
        if line.contains(" ERROR ") || line.contains(" CRITICAL ") {
            forward!(error);
        } else if line.contains(" WARNING ") {
            forward!(warn);
        } else {
            forward!(info);
        }
    }
}
