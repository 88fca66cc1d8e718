//! The skill calls of one MCP session: one KLayout process holds one layout
//! session, so `tools/call` requests run one at a time, in the order they came,
//! on a queue beside the stdio loop — which goes on answering `ping`,
//! `tools/list`, … and reading `notifications/cancelled` meanwhile.
//!
//! A call cancelled while queued never runs; one cancelled while running has its
//! KLayout process group killed (the next call starts a fresh one, its layout
//! empty). A cancelled call gets no answer (MCP: the receiver should not respond).
//! A running call whose request carried `_meta.progressToken` sends
//! `notifications/progress` every [`PROGRESS_PERIOD`] until it ends.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::backend::{BackendError, SkillBackend};
use super::cancellation::{Cancellation, InFlight};
use super::tools::{call_result, tool_error};

/// How often a running call with a progress token reports.
pub const PROGRESS_PERIOD: Duration = Duration::from_secs(1);

/// One `tools/call`, waiting for the backend or running on it.
#[derive(Debug)]
pub struct SkillCall {
    /// the request id as JSON text (its key in [`InFlight`])
    pub key: String,
    /// the MCP tool name (logs and progress messages)
    pub tool: String,
    /// the skill server's name of the tool
    pub skill: String,
    /// the checked arguments, file paths anchored in the session directory
    pub arguments: Value,
    /// set by `notifications/cancelled` for this request
    pub cancellation: Cancellation,
    /// `params._meta.progressToken`, when the client asked for progress
    pub progress_token: Option<Value>,
    /// receives the tool result; dropped unsent when the call is cancelled
    pub reply: oneshot::Sender<Value>,
}

/// Runs the queued calls on `backend` until the queue's senders are all gone,
/// then hands the backend back (to stop it). Progress notifications go to
/// `notifications`; each call leaves `in_flight` when it ends.
pub async fn run_calls<B: SkillBackend>(
    mut backend: B,
    mut calls: mpsc::UnboundedReceiver<SkillCall>,
    notifications: mpsc::UnboundedSender<Value>,
    in_flight: InFlight,
) -> B {
    while let Some(call) = calls.recv().await {
        let SkillCall {
            key,
            tool,
            skill,
            arguments,
            cancellation,
            progress_token,
            reply,
        } = call;
        if cancellation.is_cancelled() {
            tracing::info!(tool, id = key, "tools/call cancelled while queued: not run");
            in_flight.remove(&key);
            continue;
        }
        tracing::debug!(tool, skill, id = key, "tools/call starts");
        let reporter = progress_token.map(|token| ProgressReporter {
            token,
            tool: tool.clone(),
            notifications: notifications.clone(),
        });
        let outcome = run_one(&mut backend, &skill, arguments, &cancellation, reporter).await;
        in_flight.remove(&key);
        let result = match outcome {
            Ok(result) => call_result(&result),
            Err(BackendError::Cancelled) => {
                tracing::info!(
                    tool,
                    id = key,
                    "tools/call cancelled while running: no answer"
                );
                continue;
            }
            Err(error) => tool_error(error.code(), &error.to_string(), None, Value::Null),
        };
        if reply.send(result).is_err() {
            tracing::debug!(tool, id = key, "the answer's receiver is gone");
        }
    }
    backend
}

/// Sends `notifications/progress` for one call.
struct ProgressReporter {
    token: Value,
    tool: String,
    notifications: mpsc::UnboundedSender<Value>,
}

impl ProgressReporter {
    /// Reports the call running for `seconds` (the progress value, rising each time).
    fn report(&self, seconds: u64) {
        let notification = json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {
                "progressToken": self.token,
                "progress": seconds,
                "message": format!("{} running for {seconds} s", self.tool),
            },
        });
        if self.notifications.send(notification).is_err() {
            tracing::debug!(tool = self.tool, "stdout writer gone; progress not sent");
        }
    }
}

/// One call on the backend, reporting progress while it runs.
async fn run_one<B: SkillBackend>(
    backend: &mut B,
    skill: &str,
    arguments: Value,
    cancellation: &Cancellation,
    reporter: Option<ProgressReporter>,
) -> Result<Value, BackendError> {
    let started = Instant::now();
    let mut ticks = tokio::time::interval_at(started + PROGRESS_PERIOD, PROGRESS_PERIOD);
    // a late tick is skipped, not caught up: the reported seconds only rise
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let call = backend.call(skill, arguments, cancellation);
    tokio::pin!(call);
    loop {
        tokio::select! {
            outcome = &mut call => return outcome,
            _ = ticks.tick(), if reporter.is_some() => {
                if let Some(reporter) = &reporter {
                    reporter.report(started.elapsed().as_secs());
                }
            }
        }
    }
}
