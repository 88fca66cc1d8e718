//! The stdio session: one JSON message per line in, one per line out. Three parts
//! run side by side — the reader (answers at once what it can, queues
//! `tools/call`), the call queue's runner (`calls.rs`) and the writer (answers and
//! progress notifications, one line each, in the order they are ready) — so a
//! `ping` is answered while a long call runs.
//!
//! End of input stops the reading; the queued calls still run and are answered
//! before the session ends. A stop signal, or stdout closing, cancels every call.

use std::future::Future;

use anyhow::Context;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::backend::SkillBackend;
use super::calls::run_calls;
use super::cancellation::{Cancellation, InFlight};
use super::protocol;
use super::server::{Answer, McpServer};
use super::tools::ToolTable;

/// The longest message accepted from the client, in bytes (a rule set is ~100 kB).
pub const MAX_MESSAGE_BYTES: u64 = 64 * 1024 * 1024;

/// Serves `tools` on `backend` over `input` and `output` until end of input (or
/// `stop`); hands the backend back (to stop it) with how the reading ended.
pub async fn serve<B, R, W>(
    tools: ToolTable,
    backend: B,
    input: R,
    output: W,
    stop: impl Future<Output = ()>,
) -> (anyhow::Result<()>, B)
where
    B: SkillBackend,
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let in_flight = InFlight::default();
    let (call_sender, call_queue) = mpsc::unbounded_channel();
    let (message_sender, message_queue) = mpsc::unbounded_channel();
    let server = McpServer::new(
        tools,
        backend.workdir().to_path_buf(),
        call_sender,
        in_flight.clone(),
    );
    let output_closed = Cancellation::new();
    let calls = run_calls(backend, call_queue, message_sender.clone(), in_flight);
    let writer = write_messages(output, message_queue, output_closed.clone());
    let reader = read_messages(server, input, message_sender, output_closed, stop);
    let (read, backend, ()) = tokio::join!(reader, calls, writer);
    (read, backend)
}

/// Reads and dispatches lines until end of input, `stop` or `output_closed`.
async fn read_messages<R: AsyncBufRead + Unpin>(
    mut server: McpServer,
    mut input: R,
    messages: mpsc::UnboundedSender<Value>,
    output_closed: Cancellation,
    stop: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::pin!(stop);
    loop {
        let message = tokio::select! {
            message = read_message(&mut input) => message,
            () = &mut stop => {
                tracing::info!("signal received; ending the MCP session");
                server.cancel_all();
                return Ok(());
            }
            () = output_closed.cancelled() => {
                tracing::info!("stdout closed; ending the MCP session");
                server.cancel_all();
                return Ok(());
            }
        };
        let message = match message {
            Ok(message) => message,
            Err(error) => {
                server.cancel_all();
                return Err(error).context("reading stdin");
            }
        };
        let answer = match message {
            Message::End => return Ok(()),
            Message::TooLong => Some(Answer::Ready(protocol::parse_failure(&format!(
                "message longer than {MAX_MESSAGE_BYTES} bytes"
            )))),
            Message::NotUtf8 => Some(Answer::Ready(protocol::parse_failure(
                "message is not UTF-8",
            ))),
            Message::Line(line) => server.handle_line(&line),
        };
        match answer {
            None => {}
            Some(Answer::Ready(answer)) => send(&messages, answer),
            Some(Answer::Pending(pending)) => {
                let messages = messages.clone();
                tokio::spawn(async move {
                    if let Some(answer) = pending.await {
                        send(&messages, answer);
                    }
                });
            }
        }
    }
}

/// Queues one message for the writer.
fn send(messages: &mpsc::UnboundedSender<Value>, message: Value) {
    if messages.send(message).is_err() {
        tracing::debug!("stdout writer gone; message dropped");
    }
}

/// Writes every queued message as one line until all senders are gone; once a
/// write fails, sets `closed` and discards the rest.
async fn write_messages<W: AsyncWrite + Unpin>(
    mut output: W,
    mut messages: mpsc::UnboundedReceiver<Value>,
    closed: Cancellation,
) {
    while let Some(message) = messages.recv().await {
        if closed.is_cancelled() {
            continue;
        }
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        let written = match output.write_all(&line).await {
            Ok(()) => output.flush().await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            tracing::info!(%error, "cannot write to stdout");
            closed.cancel();
        }
    }
}

/// One line of input.
enum Message {
    Line(String),
    TooLong,
    NotUtf8,
    End,
}

/// Reads one line of at most [`MAX_MESSAGE_BYTES`]; a longer one is skipped to its end.
async fn read_message<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<Message> {
    let mut bytes = Vec::new();
    let read = (&mut *input)
        .take(MAX_MESSAGE_BYTES + 1)
        .read_until(b'\n', &mut bytes)
        .await?;
    if read == 0 {
        return Ok(Message::End);
    }
    if bytes.last() != Some(&b'\n') && read as u64 > MAX_MESSAGE_BYTES {
        loop {
            let skipped = input.fill_buf().await?;
            if skipped.is_empty() {
                break;
            }
            match skipped.iter().position(|byte| *byte == b'\n') {
                Some(end) => {
                    input.consume(end + 1);
                    break;
                }
                None => {
                    let length = skipped.len();
                    input.consume(length);
                }
            }
        }
        return Ok(Message::TooLong);
    }
    Ok(match String::from_utf8(bytes) {
        Ok(line) => Message::Line(line),
        Err(_) => Message::NotUtf8,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;
    use tokio::io::{AsyncBufReadExt, BufReader};

    use super::*;
    use crate::mcp::test_backend::fake_session;

    #[tokio::test]
    async fn a_ping_is_answered_while_a_call_runs_and_the_call_reports_progress() {
        let (tools, backend, _calls) = fake_session(true);
        let (client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let session = tokio::spawn(async move {
            let (read, _backend) = serve(
                tools,
                backend,
                BufReader::new(server_in),
                server_out,
                std::future::pending(),
            )
            .await;
            read
        });
        let mut client_in = client_in;
        let mut lines = BufReader::new(client_out).lines();
        let sleep = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "debug_sleep", "arguments": {"seconds": 2.5}, "_meta": {"progressToken": "t"}}});
        let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
        for message in [sleep, ping] {
            client_in
                .write_all(format!("{message}\n").as_bytes())
                .await
                .unwrap();
        }
        // end of input: the running call is still answered
        drop(client_in);
        let started = tokio::time::Instant::now();
        let mut received = Vec::new();
        while let Some(line) = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the session answers")
            .unwrap()
        {
            let message: Value = serde_json::from_str(&line).unwrap();
            received.push((started.elapsed(), message));
        }
        session.await.unwrap().unwrap();
        let (pong_at, pong) = &received[0];
        assert_eq!(pong["id"], 2, "the ping comes first: {received:?}");
        assert!(*pong_at < Duration::from_millis(1000), "{pong_at:?}");
        let progress: Vec<&Value> = received
            .iter()
            .map(|(_, message)| message)
            .filter(|message| message["method"] == "notifications/progress")
            .collect();
        assert_eq!(progress.len(), 2, "{received:?}");
        assert_eq!(progress[0]["params"]["progressToken"], "t");
        assert_eq!(progress[0]["params"]["progress"], 1);
        assert_eq!(progress[1]["params"]["progress"], 2);
        let (answered_at, answer) = received.last().unwrap();
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert!(
            *answered_at >= Duration::from_millis(2500),
            "{answered_at:?}"
        );
    }

    #[tokio::test]
    async fn lines_are_read_one_by_one_and_bad_ones_are_reported() {
        let mut input: &[u8] = b"{\"a\":1}\n\xff\xfe\nlast";
        assert!(
            matches!(read_message(&mut input).await.unwrap(), Message::Line(line) if line == "{\"a\":1}\n")
        );
        assert!(matches!(
            read_message(&mut input).await.unwrap(),
            Message::NotUtf8
        ));
        assert!(
            matches!(read_message(&mut input).await.unwrap(), Message::Line(line) if line == "last")
        );
        assert!(matches!(
            read_message(&mut input).await.unwrap(),
            Message::End
        ));
    }
}
