//! The MCP methods: `initialize`, `ping`, `tools/list`, `tools/call`, and the
//! notifications a client sends (`notifications/initialized`, `…/cancelled`).
//! Protocol faults are JSON-RPC errors (-32700 not JSON, -32600 not a request,
//! -32601 unknown method, -32602 bad params, unknown tool or a debug tool without
//! `--debug-tools`); a skill's failure is a tool result with `isError: true`.
//! Everything but a `tools/call` is answered at once; a checked `tools/call` joins
//! the call queue (`calls.rs`) and is answered when it ends — never, when cancelled.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use centroid_worker::confinement::check_files;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::calls::SkillCall;
use super::cancellation::{Cancellation, InFlight};
use super::protocol::{
    self, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND, RpcError, negotiate_version,
};
use super::tools::{ToolTable, anchor_files, invalid_path, tool_error};

/// The name this server gives in `initialize`.
pub const SERVER_NAME: &str = "centroid";

/// The answer to a line, once the queued calls it holds have ended (`None`: every
/// one was cancelled, or it held only notifications).
pub type PendingAnswer = Pin<Box<dyn Future<Output = Option<Value>> + Send + 'static>>;

/// What to send back for one line.
pub enum Answer {
    /// this, now
    Ready(Value),
    /// what this resolves to, when it does
    Pending(PendingAnswer),
}

impl Answer {
    /// The answer as a future (a ready one resolves at once).
    fn into_future(self) -> PendingAnswer {
        match self {
            Answer::Ready(value) => Box::pin(std::future::ready(Some(value))),
            Answer::Pending(pending) => pending,
        }
    }
}

/// What a request came to: its result or error now, or a queued call's result later.
enum Outcome {
    Done(Result<Value, RpcError>),
    Queued(oneshot::Receiver<Value>),
}

/// One MCP session: the tools, and the queue their calls run on.
pub struct McpServer {
    tools: ToolTable,
    /// the session directory every file argument must be in
    workdir: PathBuf,
    calls: mpsc::UnboundedSender<SkillCall>,
    in_flight: InFlight,
    /// the version agreed in `initialize`, once it happened
    negotiated: Option<&'static str>,
}

impl McpServer {
    /// A server offering `tools` on files in `workdir`, queueing their calls on
    /// `calls`; `in_flight` is shared with the queue's runner.
    pub fn new(
        tools: ToolTable,
        workdir: PathBuf,
        calls: mpsc::UnboundedSender<SkillCall>,
        in_flight: InFlight,
    ) -> McpServer {
        McpServer {
            tools,
            workdir,
            calls,
            in_flight,
            negotiated: None,
        }
    }

    /// Cancels every queued and running call (the session ends).
    pub fn cancel_all(&self) {
        self.in_flight.cancel_all();
    }

    /// The answer to one line from the client, if it wants one.
    pub fn handle_line(&mut self, line: &str) -> Option<Answer> {
        if line.trim().is_empty() {
            return None;
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(error) => return Some(Answer::Ready(protocol::parse_failure(&error.to_string()))),
        };
        match message {
            // a batch (allowed by 2025-03-26): one answer holding every response
            Value::Array(messages) if messages.is_empty() => {
                Some(Answer::Ready(protocol::failure(
                    Value::Null,
                    &RpcError::new(INVALID_REQUEST, "invalid request: empty batch"),
                )))
            }
            Value::Array(messages) => {
                let answers: Vec<PendingAnswer> = messages
                    .into_iter()
                    .filter_map(|message| self.handle_message(message))
                    .map(Answer::into_future)
                    .collect();
                if answers.is_empty() {
                    return None;
                }
                Some(Answer::Pending(Box::pin(async move {
                    let mut responses = Vec::new();
                    for answer in answers {
                        responses.extend(answer.await);
                    }
                    (!responses.is_empty()).then_some(Value::Array(responses))
                })))
            }
            message => self.handle_message(message),
        }
    }

    /// The answer to one decoded JSON value, if it wants one.
    pub fn handle_message(&mut self, message: Value) -> Option<Answer> {
        match protocol::decode(message) {
            Err(rejected) => Some(Answer::Ready(protocol::failure(
                rejected.id,
                &rejected.error,
            ))),
            Ok(Incoming::Response) => None,
            Ok(Incoming::Notification { method, params }) => {
                self.notification(&method, &params);
                None
            }
            Ok(Incoming::Request { id, method, params }) => {
                Some(match self.request(&id, &method, params) {
                    Outcome::Done(Ok(result)) => Answer::Ready(protocol::success(id, result)),
                    Outcome::Done(Err(error)) => Answer::Ready(protocol::failure(id, &error)),
                    // a receive error is the call's cancellation: no answer (MCP)
                    Outcome::Queued(result) => Answer::Pending(Box::pin(async move {
                        result
                            .await
                            .ok()
                            .map(|result| protocol::success(id, result))
                    })),
                })
            }
        }
    }

    fn notification(&mut self, method: &str, params: &Value) {
        match method {
            "notifications/initialized" => tracing::info!(
                version = self.negotiated.unwrap_or("none"),
                "MCP client initialized"
            ),
            "notifications/cancelled" => {
                let Some(id) = params.get("requestId") else {
                    tracing::warn!("notifications/cancelled without a requestId: ignored");
                    return;
                };
                let key = id.to_string();
                let reason = params.get("reason").and_then(Value::as_str).unwrap_or("");
                if self.in_flight.cancel(&key) {
                    tracing::info!(id = key, reason, "MCP client cancelled a call");
                } else {
                    tracing::debug!(
                        id = key,
                        "cancelled request is not in flight (answered already?)"
                    );
                }
            }
            other => tracing::debug!(method = other, "ignoring an MCP notification"),
        }
    }

    fn request(&mut self, id: &Value, method: &str, params: Value) -> Outcome {
        if !params.is_object() {
            return Outcome::Done(Err(RpcError::invalid_params(format!(
                "{method}: params must be an object"
            ))));
        }
        Outcome::Done(match method {
            "initialize" => self.initialize(&params),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.tools.list()),
            "tools/call" => return self.call(id, params),
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        })
    }

    fn initialize(&mut self, params: &Value) -> Result<Value, RpcError> {
        let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "initialize: params.protocolVersion (a string) is required",
            ));
        };
        let version = negotiate_version(requested);
        self.negotiated = Some(version);
        let client = params
            .pointer("/clientInfo/name")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        tracing::info!(client, requested, version, "MCP initialize");
        Ok(json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {
                "name": SERVER_NAME,
                "title": "Centroid analog layout skills (KLayout)",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "instructions": format!(
                "Analog layout skills on one KLayout layout session that lasts as long as this \
                 connection. Load a rule set first (tech_load with a drc_rules.json object), then \
                 create devices, modules, placements and routes, check them (drc_run, lvs_run) and \
                 export them. Files are read and written only inside the session directory {}. \
                 Calls run one at a time; cancelling a running call restarts KLayout, so its \
                 layout session starts again empty.",
                self.workdir.display()
            ),
        }))
    }

    /// Checks a `tools/call` and queues it.
    fn call(&mut self, id: &Value, params: Value) -> Outcome {
        let (tool, skill, arguments) = match self.checked_call(&params) {
            Ok(Ok(checked)) => checked,
            Ok(Err(tool_error)) => return Outcome::Done(Ok(tool_error)),
            Err(error) => return Outcome::Done(Err(error)),
        };
        let key = id.to_string();
        let cancellation = Cancellation::new();
        if !self.in_flight.insert(&key, cancellation.clone()) {
            return Outcome::Done(Err(RpcError::new(
                INVALID_REQUEST,
                format!("invalid request: request id {key} is already in flight"),
            )));
        }
        let progress_token = params
            .pointer("/_meta/progressToken")
            .filter(|token| token.is_string() || token.is_number())
            .cloned();
        let (reply, result) = oneshot::channel();
        let queued = self.calls.send(SkillCall {
            key: key.clone(),
            tool,
            skill,
            arguments,
            cancellation,
            progress_token,
            reply,
        });
        if queued.is_err() {
            self.in_flight.remove(&key);
            return Outcome::Done(Ok(tool_error(
                "SERVICE_UNAVAILABLE",
                "the skill call queue has stopped (the session is ending)",
                None,
                Value::Null,
            )));
        }
        Outcome::Queued(result)
    }

    /// The tool name, skill and arguments (file paths anchored in the session
    /// directory) of a valid `tools/call`; a tool error for a bad file argument; a
    /// JSON-RPC error for bad params.
    fn checked_call(
        &self,
        params: &Value,
    ) -> Result<Result<(String, String, Value), Value>, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "tools/call: params.name (a string) is required",
            ));
        };
        let Some(tool) = self.tools.get(name) else {
            let mut error = match self.tools.is_withheld(name) {
                true => RpcError::invalid_params(format!(
                    "{name} is a debugging tool, offered only by `centroid mcp --debug-tools`"
                )),
                false => RpcError::invalid_params(format!(
                    "unknown tool: {name:?} (tools/list names the {} tools)",
                    self.tools.len()
                )),
            };
            error.data = Some(json!({"tool": name}));
            return Err(error);
        };
        let mut arguments = match params.get("arguments") {
            None | Some(Value::Null) => json!({}),
            Some(arguments @ Value::Object(_)) => arguments.clone(),
            Some(_) => {
                return Err(RpcError::invalid_params(format!(
                    "tools/call {name}: arguments must be an object"
                )));
            }
        };
        if let Some((property, why)) = invalid_path(&arguments, &tool.file_properties) {
            return Ok(Err(tool_error(
                "INVALID_PARAM",
                &format!("{name}: {property} {why}; give a file path inside the session directory"),
                Some(false),
                json!({"reason": "invalid_path", "pointer": format!("/{property}"), "skill": tool.skill}),
            )));
        }
        let workdir = &self.workdir;
        anchor_files(&mut arguments, &tool.file_properties, workdir);
        // checked here as the worker does, and again by the skill server
        if let Err(error) = check_files(
            &tool.skill,
            &tool.file_properties,
            &arguments,
            Some(workdir),
        ) {
            let details = error.details();
            let property = details["pointer"]
                .as_str()
                .unwrap_or("/")
                .trim_start_matches('/');
            let message = format!(
                "{name}: {property} {} is outside the session directory {}; give a path inside it (a relative path is taken relative to it)",
                arguments.get(property).unwrap_or(&Value::Null),
                workdir.display()
            );
            return Ok(Err(tool_error(
                error.error_code().wire_name(),
                &message,
                Some(error.retryable),
                details,
            )));
        }
        tracing::debug!(tool = name, skill = tool.skill, "tools/call queued");
        Ok(Ok((name.to_owned(), tool.skill.clone(), arguments)))
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
