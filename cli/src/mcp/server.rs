//! The MCP methods: `initialize`, `ping`, `tools/list`, `tools/call`, and the
//! notifications a client sends (`notifications/initialized`, `…/cancelled`), over
//! a [`SkillBackend`]. Protocol faults are JSON-RPC errors (-32700 not JSON, -32600
//! not a request, -32601 unknown method, -32602 bad params or unknown tool); a
//! skill's failure is a tool result with `isError: true`.

use centroid_worker::confinement::check_files;
use serde_json::{Value, json};

use super::backend::SkillBackend;
use super::protocol::{
    self, INVALID_REQUEST, Incoming, METHOD_NOT_FOUND, RpcError, negotiate_version,
};
use super::tools::{ToolTable, anchor_files, call_result, tool_error};

/// The name this server gives in `initialize`.
pub const SERVER_NAME: &str = "centroid";

/// One MCP session: the tools and the backend they run on.
pub struct McpServer<B> {
    tools: ToolTable,
    backend: B,
    /// the version agreed in `initialize`, once it happened
    negotiated: Option<&'static str>,
}

impl<B: SkillBackend> McpServer<B> {
    /// A server offering `tools`, run on `backend`.
    pub fn new(tools: ToolTable, backend: B) -> McpServer<B> {
        McpServer {
            tools,
            backend,
            negotiated: None,
        }
    }

    /// The backend, back (to stop it).
    pub fn into_backend(self) -> B {
        self.backend
    }

    /// The answer to one line from the client, if it wants one.
    pub async fn handle_line(&mut self, line: &str) -> Option<Value> {
        if line.trim().is_empty() {
            return None;
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(error) => return Some(protocol::parse_failure(&error.to_string())),
        };
        match message {
            // a batch (allowed by 2025-03-26): one answer holding every response
            Value::Array(messages) if messages.is_empty() => Some(protocol::failure(
                Value::Null,
                &RpcError::new(INVALID_REQUEST, "invalid request: empty batch"),
            )),
            Value::Array(messages) => {
                let mut answers = Vec::new();
                for message in messages {
                    answers.extend(self.handle_message(message).await);
                }
                (!answers.is_empty()).then_some(Value::Array(answers))
            }
            message => self.handle_message(message).await,
        }
    }

    /// The answer to one decoded JSON value, if it wants one.
    pub async fn handle_message(&mut self, message: Value) -> Option<Value> {
        match protocol::decode(message) {
            Err(rejected) => Some(protocol::failure(rejected.id, &rejected.error)),
            Ok(Incoming::Response) => None,
            Ok(Incoming::Notification { method, .. }) => {
                self.notification(&method);
                None
            }
            Ok(Incoming::Request { id, method, params }) => {
                Some(match self.request(&method, params).await {
                    Ok(result) => protocol::success(id, result),
                    Err(error) => protocol::failure(id, &error),
                })
            }
        }
    }

    fn notification(&mut self, method: &str) {
        match method {
            "notifications/initialized" => tracing::info!(
                version = self.negotiated.unwrap_or("none"),
                "MCP client initialized"
            ),
            // calls run one at a time, to the end: a cancelled one's answer is ignored by the client
            "notifications/cancelled" => tracing::debug!("MCP client cancelled a request"),
            other => tracing::debug!(method = other, "ignoring an MCP notification"),
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, RpcError> {
        if !params.is_object() {
            return Err(RpcError::invalid_params(format!(
                "{method}: params must be an object"
            )));
        }
        match method {
            "initialize" => self.initialize(&params),
            "ping" => Ok(json!({})),
            "tools/list" => Ok(self.tools.list()),
            "tools/call" => self.call(params).await,
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
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
                 export them. Files are read and written only inside the session directory {}.",
                self.backend.workdir().display()
            ),
        }))
    }

    async fn call(&mut self, params: Value) -> Result<Value, RpcError> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params(
                "tools/call: params.name (a string) is required",
            ));
        };
        let Some(tool) = self.tools.get(name) else {
            let mut error = RpcError::invalid_params(format!(
                "unknown tool: {name:?} (tools/list names the {} tools)",
                self.tools.len()
            ));
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
        let skill = tool.skill.clone();
        let workdir = self.backend.workdir().to_path_buf();
        anchor_files(&mut arguments, &tool.file_properties, &workdir);
        // checked here as the worker does, and again by the skill server
        if let Err(error) = check_files(&skill, &tool.file_properties, &arguments, Some(&workdir)) {
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
            return Ok(tool_error(
                error.error_code().wire_name(),
                &message,
                Some(error.retryable),
                details,
            ));
        }
        tracing::debug!(tool = name, skill, "tools/call");
        Ok(match self.backend.call(&skill, arguments).await {
            Ok(result) => call_result(&result),
            Err(error) => tool_error(error.code(), &error.to_string(), None, Value::Null),
        })
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
