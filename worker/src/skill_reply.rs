//! Reading the skill server's reply to one request from its stdout: what one line means
//! ([`parse_reply_line`], a pure function) and the loop that reads lines until the reply
//! comes ([`read_reply`]). Both are property-tested on arbitrary lines
//! (`tests/reply_fuzz.rs`): every line is classified, every ending is a structured error.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use crate::error::SkillProcessError;

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
/// request `request_id` of `method`.
pub fn parse_reply_line(line: &str, request_id: u64, method: &str) -> ReplyLine {
    let text = line.trim();
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
        return ReplyLine::Reply(Err(SkillProcessError::JsonRpc {
            method: method.to_string(),
            code: error
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        }));
    }
    ReplyLine::Reply(Ok(response.get("result").cloned().unwrap_or(Value::Null)))
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
/// skipped lines are logged. Ends at the reply or at the end of the stream; the caller
/// bounds it by the request's deadline.
pub async fn read_reply<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line_buffer: &mut String,
    request_id: u64,
    method: &str,
    pid: u32,
) -> Result<Value, ReadFailure> {
    loop {
        line_buffer.clear();
        let bytes_read = reader
            .read_line(line_buffer)
            .await
            .map_err(ReadFailure::Io)?;
        if bytes_read == 0 {
            return Err(ReadFailure::Closed);
        }
        let text = line_buffer.trim();
        match parse_reply_line(text, request_id, method) {
            ReplyLine::Blank => {}
            ReplyLine::NotJson => {
                tracing::warn!(
                    pid,
                    line = text,
                    "skill server wrote a non-json line on stdout"
                );
            }
            ReplyLine::OtherReply => {
                tracing::warn!(
                    pid,
                    expected = request_id,
                    response = text,
                    "skipping a response to another request"
                );
            }
            ReplyLine::Reply(reply) => return reply.map_err(ReadFailure::Reply),
        }
    }
}
