//! One question to the model with one repair round: the answer is validated;
//! an invalid one is sent back with the problems found, once. Every call is
//! recorded as an [`LlmCall`] (the session turns those into job events).

use crate::agent::answers::Problems;
use crate::agent::call_ledger;
use crate::llm::{ChatMessage, Completion, LlmClient, LlmError};
use centroid_planner::advice::{CallMessage, LlmCall};

/// What asking produced: the validated value (`None` when the model failed), the
/// calls made, and why it failed.
pub struct Asked<T> {
    pub value: Option<T>,
    pub calls: Vec<LlmCall>,
    pub failure: Option<String>,
}

/// Asks `system`+`user` as `role` and validates the answer with `check`; an
/// invalid answer gets one repair round with the problems. Every call carries the
/// job's `trace_id` as its W3C `traceparent` (a fresh one when it is empty).
pub async fn ask<T>(
    client: &LlmClient,
    trace_id: &str,
    role: &str,
    iteration: u32,
    system: &str,
    user: &str,
    check: impl Fn(&str) -> Result<(T, String), Problems>,
) -> Asked<T> {
    let mut messages = vec![ChatMessage::system(system), ChatMessage::user(user)];
    let mut calls = Vec::new();
    let trace_id = match trace_id {
        "" => uuid::Uuid::new_v4().simple().to_string(),
        job_trace => job_trace.to_string(),
    };
    for round in 0..2 {
        let role_now = if round == 0 { role } else { "repair" };
        let sent = prompt_of(&messages);
        let started = std::time::Instant::now();
        let out = call_ledger::sent(&unanswered(client, role_now, iteration, &trace_id, &sent));
        let completion = client.complete_traced(&messages, &trace_id).await;
        let completion = match completion {
            Ok(completion) => completion,
            Err(error) => {
                let duration_ms = started.elapsed().as_millis() as u64;
                calls.push(LlmCall {
                    messages: sent,
                    ..failed(client, role_now, iteration, &trace_id, &error, duration_ms)
                });
                call_ledger::answered(out, &calls[calls.len() - 1]);
                return Asked {
                    value: None,
                    calls,
                    failure: Some(error.reason()),
                };
            }
        };
        match check(&completion.content) {
            Ok((value, summary)) => {
                calls.push(LlmCall {
                    messages: sent,
                    answer: completion.content.clone(),
                    ..used(client, role_now, iteration, &completion, &trace_id, summary)
                });
                call_ledger::answered(out, &calls[calls.len() - 1]);
                return Asked {
                    value: Some(value),
                    calls,
                    failure: None,
                };
            }
            Err(problems) => {
                let reason = format!("invalid answer: {}", problems.join("; "));
                calls.push(LlmCall {
                    outcome: "rejected".into(),
                    reason: shorten(&reason, 400),
                    messages: sent,
                    answer: completion.content.clone(),
                    ..used(
                        client,
                        role_now,
                        iteration,
                        &completion,
                        &trace_id,
                        String::new(),
                    )
                });
                call_ledger::answered(out, &calls[calls.len() - 1]);
                messages.push(ChatMessage::assistant(completion.content));
                messages.push(ChatMessage::user(format!(
                    "Your answer was not valid:\n- {}\nAnswer again with the JSON object only, \
                     using only the allowed values.",
                    problems.join("\n- ")
                )));
            }
        }
    }
    Asked {
        value: None,
        calls,
        failure: Some("invalid_answer".into()),
    }
}

fn used(
    client: &LlmClient,
    role: &str,
    iteration: u32,
    completion: &Completion,
    trace_id: &str,
    summary: String,
) -> LlmCall {
    LlmCall {
        role: role.to_string(),
        iteration,
        model: client.model().to_string(),
        prompt_tokens: completion.prompt_tokens,
        completion_tokens: completion.completion_tokens,
        usage_estimated: completion.usage_estimated,
        duration_ms: completion.duration_ms,
        attempts: completion.attempts,
        outcome: "used".into(),
        reason: String::new(),
        summary: shorten(&summary, 300),
        trace_id: trace_id.to_string(),
        messages: Vec::new(),
        answer: String::new(),
    }
}

/// A call sent and not answered yet (the ledger's note of it).
fn unanswered(
    client: &LlmClient,
    role: &str,
    iteration: u32,
    trace_id: &str,
    sent: &[CallMessage],
) -> LlmCall {
    LlmCall {
        role: role.to_string(),
        iteration,
        model: client.model().to_string(),
        prompt_tokens: sent
            .iter()
            .map(|message| crate::llm::tokens::count_tokens(&message.content) as u32)
            .sum(),
        completion_tokens: 0,
        usage_estimated: true,
        duration_ms: 0,
        attempts: 1,
        outcome: "failed".into(),
        reason: "no answer yet".into(),
        summary: String::new(),
        trace_id: trace_id.to_string(),
        messages: sent.to_vec(),
        answer: String::new(),
    }
}

fn failed(
    client: &LlmClient,
    role: &str,
    iteration: u32,
    trace_id: &str,
    error: &LlmError,
    duration_ms: u64,
) -> LlmCall {
    LlmCall {
        role: role.to_string(),
        iteration,
        model: client.model().to_string(),
        prompt_tokens: 0,
        completion_tokens: 0,
        usage_estimated: false,
        duration_ms,
        attempts: 0,
        outcome: "failed".into(),
        reason: error.reason(),
        summary: shorten(&error.to_string(), 300),
        trace_id: trace_id.to_string(),
        messages: Vec::new(),
        answer: String::new(),
    }
}

/// The messages of a call as its record keeps them.
fn prompt_of(messages: &[ChatMessage]) -> Vec<CallMessage> {
    messages
        .iter()
        .map(|message| CallMessage {
            role: message.role.as_str().to_string(),
            content: message.content.clone(),
        })
        .collect()
}

/// At most `limit` characters, with an ellipsis when cut.
pub fn shorten(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(limit).collect();
    cut.push('…');
    cut
}
