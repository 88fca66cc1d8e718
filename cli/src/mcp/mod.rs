//! `centroid mcp`: the KLayout skills as a Model Context Protocol server on stdio
//! (protocol 2025-06-18; 2025-03-26 and 2024-11-05 are answered in kind), so an
//! MCP client (an LLM agent, Claude Desktop, …) can draw and check layouts.
//!
//! One KLayout skill server backs the whole MCP session: its layout and loaded
//! technology persist from call to call, and its scratch directory — the session
//! directory, `--workdir DIR` or a private temporary one removed at exit — is the
//! only place a skill reads or writes files. stdout carries protocol messages
//! only (one JSON message per line); logs go to stderr. End of input (or SIGINT,
//! SIGTERM) ends the session.
//!
//! - `protocol.rs` — JSON-RPC 2.0 messages, error codes, version negotiation.
//! - `tools.rs` — skill ↔ tool names (`layout.create_device` ↔
//!   `layout_create_device`) and skill results → tool results.
//! - `server.rs` — the MCP methods over a `SkillBackend`.
//! - `backend.rs` — the KLayout process, its session directory, restarts.

mod backend;
mod protocol;
mod server;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use centroid_worker::WorkerConfig;
use centroid_worker::skill_process::SkillServerCommand;
use clap::Args;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use crate::local_cluster::worker_command_line;
use backend::{KLayoutBackend, SkillBackend, Workdir};
use server::McpServer;
use tools::ToolTable;

/// The longest message accepted from the client, in bytes (a rule set is ~100 kB).
const MAX_MESSAGE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Python interpreter with the klayout module (default: $CENTROID_PYTHON, else
    /// this repository's .venv/bin/python).
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,
    /// Directory holding the centroid_skills package (default: $CENTROID_SKILLS_DIR,
    /// else this repository's worker/skills).
    #[arg(long, value_name = "DIR")]
    skills_dir: Option<PathBuf>,
    /// The session directory: every file a skill reads or writes is inside it
    /// (created when missing, kept at exit). Default: a new private temporary
    /// directory, removed at exit.
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
    /// Deadline of one tool call in seconds; a call past it loses the layout
    /// session (the KLayout process is replaced).
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    call_timeout_s: u64,
}

/// Serves MCP on stdin/stdout until the client closes stdin.
pub async fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    let command = skill_server_command(args)?;
    let workdir = match &args.workdir {
        Some(dir) => Workdir::given(dir)
            .with_context(|| format!("--workdir {}: cannot create it", dir.display()))?,
        None => Workdir::temporary().context("cannot create a temporary session directory")?,
    };
    let python = command.python.display().to_string();
    let (backend, skills) = KLayoutBackend::start(
        command,
        workdir,
        Duration::from_secs(args.call_timeout_s.max(1)),
    )
    .await
    .with_context(|| {
        format!("starting KLayout with {python}; run `make klayout` to provision the venv")
    })?;
    let tools = ToolTable::new(skills, backend.workdir());
    tracing::info!(tools = tools.len(), dir = %backend.workdir().display(), "MCP server on stdio");
    let mut server = McpServer::new(tools, backend);
    let served = serve(&mut server).await;
    server.into_backend().stop().await;
    served?;
    Ok(ExitCode::SUCCESS)
}

/// How to start the skill server: the flags, else what `centroid run`'s worker uses.
fn skill_server_command(args: &McpArgs) -> anyhow::Result<SkillServerCommand> {
    let environment: HashMap<String, String> = std::env::vars().collect();
    let mut command_line = worker_command_line(&environment, None);
    if let Some(python) = &args.python {
        command_line.python = Some(python.clone());
    }
    if let Some(skills_dir) = &args.skills_dir {
        command_line.skills_dir = Some(skills_dir.clone());
    }
    let config = WorkerConfig::load_with_environment(&command_line, environment)
        .context("worker configuration")?;
    Ok(SkillServerCommand {
        python: config.python.clone(),
        skills_dir: config.skills_dir.clone(),
        memory_limit_bytes: config.memory_limit_bytes(),
        signoff_decks: config.signoff_decks.clone(),
    })
}

/// The stdio loop: one message per line in, one answer per line out.
async fn serve<B: SkillBackend>(server: &mut McpServer<B>) -> anyhow::Result<()> {
    let mut input = BufReader::new(tokio::io::stdin());
    let mut output = tokio::io::stdout();
    let mut stop = Box::pin(stop_signal());
    loop {
        let line = tokio::select! {
            line = read_message(&mut input) => line.context("reading stdin")?,
            () = &mut stop => {
                tracing::info!("signal received; ending the MCP session");
                return Ok(());
            }
        };
        let answer = match line {
            Message::End => return Ok(()),
            Message::TooLong => Some(protocol::parse_failure(&format!(
                "message longer than {MAX_MESSAGE_BYTES} bytes"
            ))),
            Message::NotUtf8 => Some(protocol::parse_failure("message is not UTF-8")),
            Message::Line(line) => server.handle_line(&line).await,
        };
        if let Some(answer) = answer
            && !write_message(&mut output, &answer).await
        {
            tracing::info!("stdout closed; ending the MCP session");
            return Ok(());
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

/// Writes one answer line; false when stdout is gone.
async fn write_message(output: &mut tokio::io::Stdout, answer: &Value) -> bool {
    let mut line = answer.to_string().into_bytes();
    line.push(b'\n');
    output.write_all(&line).await.is_ok() && output.flush().await.is_ok()
}

/// Resolves on SIGINT or SIGTERM (never, when they cannot be watched).
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut interrupt), Ok(mut terminate)) => {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
