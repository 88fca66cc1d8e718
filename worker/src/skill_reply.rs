//! Reading the skill server's reply to one request from its stdout: what one line means
//! ([`parse_reply_line`], a pure function) and the loop that reads lines until the reply
//! comes ([`read_reply`]). Both are property-tested on arbitrary lines
//! (`tests/reply_fuzz.rs`): every line is classified, every ending is a structured error.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

use crate::error::SkillProcessError;

/// The longest reply line read: a child writing more without a newline is broken (the
/// line would otherwise grow in memory until the deadline).
pub const MAX_REPLY_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much of a skipped line the log quotes.
const LOGGED_CHARS: usize = 200;

/// What one line of the child's stdout is to the request waiting for its reply.
#[derive(Debug)]
pub enum ReplyLine {
    /// An empty or blank line: skipped.
    Blank,
    /// Not JSON: skipped (logged).
    NotJson,
    /// JSON, but not the reply to this request (another id, no id, not an object):
    /// skipped (logged).
    OtherReply,
    /// The reply: its `result`, or the error it carries.
    Reply(Result<Value, SkillProcessError>),
}

/// Classifies one line (without its newline) read while waiting for the reply to
/// request `request_id` of `method`. A reply is an object with that id and either a
/// `result` or an `error` object `{code: integer, message: string}` (JSON-RPC 2.0);
/// a reply with neither, or with a malformed error, broke the protocol.
pub fn parse_reply_line(line: &[u8], request_id: u64, method: &str) -> ReplyLine {
    let Ok(text) = std::str::from_utf8(line) else {
        return ReplyLine::NotJson;
    };
    let text = text.trim();
    if text.is_empty() {
        return ReplyLine::Blank;
    }
    let Ok(response) = serde_json::from_str::<Value>(text) else {
        return ReplyLine::NotJson;
    };
    if response.get("id").and_then(Value::as_u64) != Some(request_id) {
        return ReplyLine::OtherReply;
    }
    if let Some(error) = response.get("error").filter(|error| !error.is_null()) {
        let code = error.get("code").and_then(Value::as_i64);
        let message = error.get("message").and_then(Value::as_str);
        let reply = match (code, message) {
            (Some(code), Some(message)) => SkillProcessError::JsonRpc {
                method: method.to_string(),
                code,
                message: message.to_string(),
            },
            _ => SkillProcessError::Protocol(format!(
                "the reply to `{method}` has a malformed error (expected {{\"code\": integer, \"message\": string}}): {}",
                quoted(&error.to_string())
            )),
        };
        return ReplyLine::Reply(Err(reply));
    }
    ReplyLine::Reply(match response.get("result") {
        Some(result) => Ok(result.clone()),
        None => Err(SkillProcessError::Protocol(format!(
            "the reply to `{method}` has neither a result nor an error: {}",
            quoted(text)
        ))),
    })
}

/// At most [`LOGGED_CHARS`] characters of `text`, for a message or a log line.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(LOGGED_CHARS) {
        Some((end, _)) => format!("{}… ({} bytes)", &text[..end], text.len()),
        None => text.to_string(),
    }
}

/// Why [`read_reply`] ended without a reply.
#[derive(Debug)]
pub enum ReadFailure {
    /// The reply carried an error, or broke the protocol.
    Reply(SkillProcessError),
    /// End of the stream: the child closed its stdout.
    Closed,
    /// Reading failed.
    Io(std::io::Error),
}

/// Reads lines from `reader` (the child's stdout) until the reply to `request_id`;
/// skipped lines are logged. Ends at the reply, at the end of the stream, or at a line
/// longer than `max_line_bytes` (a protocol error); the caller bounds it by the request's
/// deadline.
pub async fn read_reply<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line_buffer: &mut Vec<u8>,
    request_id: u64,
    method: &str,
    pid: u32,
    max_line_bytes: usize,
) -> Result<Value, ReadFailure> {
    loop {
        line_buffer.clear();
        let limit = u64::try_from(max_line_bytes)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let bytes_read = (&mut *reader)
            .take(limit)
            .read_until(b'\n', line_buffer)
            .await
            .map_err(ReadFailure::Io)?;
        if bytes_read == 0 {
            return Err(ReadFailure::Closed);
        }
        if line_buffer.last() == Some(&b'\n') {
            line_buffer.pop();
        } else if line_buffer.len() > max_line_bytes {
            return Err(ReadFailure::Reply(SkillProcessError::Protocol(format!(
                "a line on stdout is longer than {max_line_bytes} bytes while waiting for the reply to `{method}`"
            ))));
        }
        match parse_reply_line(line_buffer, request_id, method) {
            ReplyLine::Blank => {}
            ReplyLine::NotJson => {
                let text = String::from_utf8_lossy(line_buffer);
                tracing::warn!(pid, line = %quoted(&text), "skill server wrote a non-json line on stdout");
            }
            ReplyLine::OtherReply => {
                let text = String::from_utf8_lossy(line_buffer);
                tracing::warn!(
                    pid,
                    expected = request_id,
                    response = %quoted(&text),
                    "skipping a response to another request"
                );
            }
            ReplyLine::Reply(reply) => return reply.map_err(ReadFailure::Reply),
        }
    }
}
