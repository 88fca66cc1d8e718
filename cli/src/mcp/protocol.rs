//! JSON-RPC 2.0 as the Model Context Protocol frames it on stdio: one JSON message
//! per line, requests carry a string or number `id`, notifications carry none, and
//! the server answers every request exactly once (a result or an error object).
//! This file only decodes and encodes messages; `server.rs` decides what they mean.

use serde_json::{Map, Value, json};

/// The protocol revision this server implements, answered to clients that ask
/// for one it does not know (MCP: "the latest version the server supports").
pub const LATEST_PROTOCOL_VERSION: &str = "2025-06-18";
/// Every revision a client may ask for and get back unchanged, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];

/// Invalid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON, but not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The method exists but its params are wrong (also: unknown tool).
pub const INVALID_PARAMS: i64 = -32602;

/// The version answered to a client asking for `requested`: the same one when
/// supported, else the latest one (the client decides whether it can go on).
pub fn negotiate_version(requested: &str) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS
        .iter()
        .find(|supported| **supported == requested)
        .copied()
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// A JSON-RPC error object, answered instead of a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("json-rpc error {code}: {message}")]
pub struct RpcError {
    /// one of the codes above
    pub code: i64,
    /// what went wrong, for a human
    pub message: String,
    /// optional structured detail
    pub data: Option<Value>,
}

impl RpcError {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// -32602 with `message`.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    /// The error object as it goes on the wire.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// One decoded message from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// Wants an answer carrying `id`. `params` is `{}` when absent or null.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// Wants no answer.
    Notification { method: String, params: Value },
    /// An answer to a request of ours; this server sends none, so it is ignored.
    Response,
}

/// A message that is JSON but not a valid JSON-RPC message: answered with
/// `error` and `id` (null when the id itself could not be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// the id to answer with
    pub id: Value,
    /// why
    pub error: RpcError,
}

/// Reads one JSON value as a JSON-RPC 2.0 message.
pub fn decode(message: Value) -> Result<Incoming, Box<Rejected>> {
    let reject = |id: Value, message: &str| {
        Box::new(Rejected {
            id,
            error: RpcError::new(INVALID_REQUEST, format!("invalid request: {message}")),
        })
    };
    let Value::Object(mut object) = message else {
        return Err(reject(Value::Null, "expected a JSON object"));
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => return Err(reject(Value::Null, "`id` must be a string or a number")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(reject(
            id.unwrap_or(Value::Null),
            "`jsonrpc` must be \"2.0\"",
        ));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Err(reject(
                id.unwrap_or(Value::Null),
                "`method` must be a string",
            ));
        }
        None if object.contains_key("result") || object.contains_key("error") => {
            return Ok(Incoming::Response);
        }
        None => return Err(reject(id.unwrap_or(Value::Null), "missing `method`")),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(params) => params,
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

/// A successful response.
pub fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn failure(id: Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}

/// The answer to a line that is not JSON.
pub fn parse_failure(detail: &str) -> Value {
    failure(
        Value::Null,
        &RpcError::new(PARSE_ERROR, format!("parse error: {detail}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_echoed_when_known_else_the_latest_is_offered() {
        assert_eq!(negotiate_version("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate_version("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate_version("2024-11-05"), "2024-11-05");
        assert_eq!(negotiate_version("2025-11-25"), LATEST_PROTOCOL_VERSION);
        assert_eq!(negotiate_version(""), LATEST_PROTOCOL_VERSION);
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        let request = decode(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})).unwrap();
        assert_eq!(
            request,
            Incoming::Request {
                id: json!(7),
                method: "ping".into(),
                params: json!({})
            }
        );
        let notification =
            decode(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        assert!(matches!(notification, Incoming::Notification { .. }));
        let response = decode(json!({"jsonrpc": "2.0", "id": "a", "result": {}})).unwrap();
        assert_eq!(response, Incoming::Response);
    }

    #[test]
    fn malformed_messages_are_invalid_requests_with_the_id_when_readable() {
        let not_object = decode(json!([1, 2])).unwrap_err();
        assert_eq!(not_object.error.code, INVALID_REQUEST);
        assert_eq!(not_object.id, Value::Null);
        let bad_version = decode(json!({"jsonrpc": "1.0", "id": 3, "method": "ping"})).unwrap_err();
        assert_eq!(bad_version.id, json!(3));
        let bad_id = decode(json!({"jsonrpc": "2.0", "id": {}, "method": "ping"})).unwrap_err();
        assert_eq!(bad_id.id, Value::Null);
        let no_method = decode(json!({"jsonrpc": "2.0", "id": "x"})).unwrap_err();
        assert_eq!(no_method.id, json!("x"));
        assert!(no_method.error.message.contains("method"));
    }

    #[test]
    fn errors_carry_their_data() {
        let mut error = RpcError::invalid_params("no");
        error.data = Some(json!({"tool": "x"}));
        let wire = failure(json!(1), &error);
        assert_eq!(wire["error"]["code"], INVALID_PARAMS);
        assert_eq!(wire["error"]["data"]["tool"], "x");
        assert_eq!(parse_failure("eof")["error"]["code"], PARSE_ERROR);
    }
}
