//! `centroid mcp`: the KLayout skills as a Model Context Protocol server on stdio
//! (protocol 2025-06-18; 2025-03-26 and 2024-11-05 are answered in kind), so an
//! MCP client (an LLM agent, Claude Desktop, …) can draw and check layouts.
//!
//! One KLayout skill server backs the whole MCP session: its layout and loaded
//! technology persist from call to call, and its scratch directory — the session
//! directory, `--workdir DIR` or a private temporary one removed at exit — is the
//! only place a skill reads or writes files. stdout carries protocol messages
//! only (one JSON message per line); logs go to stderr. Requests are served
//! concurrently: `tools/call`s run one at a time on the KLayout process while
//! `ping`, `tools/list` and `notifications/cancelled` are handled at once. End of
//! input ends the session once the queued calls are answered; SIGINT or SIGTERM
//! cancels them.
//!
//! - `protocol.rs` — JSON-RPC 2.0 messages, error codes, version negotiation.
//! - `tools.rs` — skill ↔ tool names (`layout.create_device` ↔
//!   `layout_create_device`), debug tools withheld, skill results → tool results.
//! - `server.rs` — the MCP methods; `tools/call` checked and queued.
//! - `calls.rs` — the call queue on the backend: cancellation, progress.
//! - `cancellation.rs` — cancellation flags and the requests in flight.
//! - `stdio.rs` — the stdio loop: reader, call runner and writer side by side.
//! - `backend.rs` — the KLayout process, its session directory, restarts.

mod backend;
mod calls;
mod cancellation;
mod protocol;
mod server;
mod stdio;
#[cfg(test)]
mod test_backend;
mod tools;

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use centroid_worker::WorkerConfig;
use centroid_worker::skill_process::SkillServerCommand;
use clap::Args;
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream};

use crate::local_cluster::worker_command_line;
use backend::{KLayoutBackend, SkillBackend, Workdir};
use tools::ToolTable;

/// How much of stdin is read (and buffered in the pipe) at once.
const STDIN_CHUNK_BYTES: usize = 64 * 1024;

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
    /// Also offer the skill server's `debug_*` tools (sleeps and deliberate
    /// failures, for testing clients); without it they are neither listed nor callable.
    #[arg(long)]
    debug_tools: bool,
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
    let tools = ToolTable::new(skills, backend.workdir(), args.debug_tools);
    tracing::info!(tools = tools.len(), dir = %backend.workdir().display(), "MCP server on stdio");
    let input = stdin_on_its_own_thread().context("cannot start the thread reading stdin")?;
    let (served, backend) = stdio::serve(
        tools,
        backend,
        BufReader::new(input),
        tokio::io::stdout(),
        stop_signal(),
    )
    .await;
    backend.stop().await;
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

/// stdin, read by a thread of its own into an in-memory pipe. (`tokio::io::stdin`
/// reads on the runtime's blocking pool, and a read blocked there holds the process
/// at exit — after SIGTERM, say — until the client writes or closes its end; a
/// thread of its own ends with the process.) A read error ends the input, logged.
fn stdin_on_its_own_thread() -> std::io::Result<DuplexStream> {
    let (mut writer, reader) = tokio::io::duplex(STDIN_CHUNK_BYTES);
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut chunk = vec![0u8; STDIN_CHUNK_BYTES];
            loop {
                let read = match stdin.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(read) => read,
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(error) => {
                        tracing::warn!(%error, "cannot read stdin; ending the input");
                        break;
                    }
                };
                if runtime.block_on(writer.write_all(&chunk[..read])).is_err() {
                    break; // the session stopped reading
                }
            }
        })?;
    Ok(reader)
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
