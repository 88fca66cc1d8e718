//! One chat completion, with retries (429, 5xx, timeouts, lost connections; back-off
//! from 250 ms doubling, or the server's `Retry-After`) inside one deadline
//! (`timeout_ms`) that covers every attempt.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::llm::settings::{LlmSettings, Provider};
use crate::llm::tokens::count_tokens;
use crate::llm::wire;

/// First pause before a retry (doubled per retry).
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
}

impl ChatMessage {
    pub fn system(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::System,
            content: text.into(),
        }
    }
    pub fn user(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: text.into(),
        }
    }
    pub fn assistant(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: text.into(),
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// the server sent no usage; the figures were counted here
    pub usage_estimated: bool,
    pub duration_ms: u64,
    pub attempts: u32,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("{0}")]
    NotConfigured(String),
    #[error("no answer within {after_ms} ms")]
    Timeout { after_ms: u64 },
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("cannot reach the model: {0}")]
    Transport(String),
    #[error("unusable answer: {0}")]
    BadResponse(String),
}

impl LlmError {
    /// A short machine reason: `timeout`, `http_429`, `transport`, ….
    pub fn reason(&self) -> String {
        match self {
            LlmError::NotConfigured(_) => "not_configured".into(),
            LlmError::Timeout { .. } => "timeout".into(),
            LlmError::Http { status, .. } => format!("http_{status}"),
            LlmError::Transport(_) => "transport".into(),
            LlmError::BadResponse(_) => "bad_response".into(),
        }
    }

    fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => *status == 429 || *status >= 500,
            LlmError::Timeout { .. } | LlmError::Transport(_) => true,
            LlmError::NotConfigured(_) | LlmError::BadResponse(_) => false,
        }
    }
}

/// A client of one configured model.
#[derive(Clone)]
pub struct LlmClient {
    settings: LlmSettings,
    http: reqwest::Client,
}

impl LlmClient {
    pub fn new(settings: LlmSettings) -> Result<LlmClient, LlmError> {
        if let Some(missing) = settings.missing() {
            return Err(LlmError::NotConfigured(missing));
        }
        // reqwest's rustls needs a process-wide crypto provider (ring here)
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|error| LlmError::Transport(error.to_string()))?;
        Ok(LlmClient { settings, http })
    }

    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    pub fn model(&self) -> &str {
        &self.settings.model
    }

    /// One completion of `messages`, retried within `timeout_ms`; `trace_id` goes
    /// out as a W3C `traceparent` so the model server's logs can be matched.
    pub async fn complete_traced(
        &self,
        messages: &[ChatMessage],
        trace_id: &str,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let deadline = Duration::from_millis(self.settings.timeout_ms);
        let mut attempts = 0u32;
        let mut backoff = FIRST_BACKOFF;
        loop {
            attempts += 1;
            let remaining = deadline.saturating_sub(started.elapsed());
            let timeout = LlmError::Timeout {
                after_ms: self.settings.timeout_ms,
            };
            if remaining.is_zero() {
                return Err(timeout);
            }
            let attempt = tokio::time::timeout(remaining, self.attempt(messages, trace_id)).await;
            let (error, retry_after) = match attempt {
                Ok(Ok(answer)) => return Ok(self.completion(messages, answer, started, attempts)),
                Ok(Err(failure)) => failure,
                Err(_) => (timeout, None),
            };
            tracing::debug!(model = %self.settings.model, attempt = attempts, error = %error, duration_ms = started.elapsed().as_millis() as u64, "llm attempt failed");
            if !error.is_retryable() || attempts > self.settings.retries {
                return Err(error);
            }
            let pause = retry_after.unwrap_or(backoff);
            if started.elapsed() + pause >= deadline {
                return Err(error);
            }
            tokio::time::sleep(pause).await;
            backoff *= 2;
        }
    }

    /// As [`LlmClient::complete_traced`] with a fresh trace id.
    pub async fn complete(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let trace_id = uuid::Uuid::new_v4().simple().to_string();
        self.complete_traced(messages, &trace_id).await
    }

    /// One HTTP exchange; a failure comes with the server's `Retry-After`.
    async fn attempt(
        &self,
        messages: &[ChatMessage],
        trace_id: &str,
    ) -> Result<wire::Answer, (LlmError, Option<Duration>)> {
        let base = self.settings.base_url.trim_end_matches('/');
        let span_id = &uuid::Uuid::new_v4().simple().to_string()[..16];
        let request = match self.settings.provider {
            Provider::Openai => {
                let mut request = self
                    .http
                    .post(format!("{base}/chat/completions"))
                    .json(&wire::openai_request(&self.settings, messages));
                if !self.settings.api_key.is_empty() {
                    request = request.bearer_auth(&self.settings.api_key);
                }
                request
            }
            Provider::Anthropic => self
                .http
                .post(format!("{base}/messages"))
                .header("x-api-key", &self.settings.api_key)
                .header("anthropic-version", "2023-06-01")
                .json(&wire::anthropic_request(&self.settings, messages)),
        }
        .header("traceparent", format!("00-{trace_id}-{span_id}-01"));
        let response = request
            .send()
            .await
            .map_err(|error| (LlmError::Transport(error.to_string()), None))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response
            .text()
            .await
            .map_err(|error| (LlmError::Transport(error.to_string()), None))?;
        if !(200..300).contains(&status) {
            let body: String = body.chars().take(500).collect();
            return Err((LlmError::Http { status, body }, retry_after));
        }
        match self.settings.provider {
            Provider::Openai => wire::openai_answer(&body),
            Provider::Anthropic => wire::anthropic_answer(&body),
        }
        .map_err(|error| (LlmError::BadResponse(error), None))
    }

    fn completion(
        &self,
        messages: &[ChatMessage],
        answer: wire::Answer,
        started: Instant,
        attempts: u32,
    ) -> Completion {
        let (prompt_tokens, completion_tokens, usage_estimated) = match answer.usage {
            Some((prompt, completion)) => (prompt, completion, false),
            None => {
                let prompt: usize = messages
                    .iter()
                    .map(|message| count_tokens(&message.content) + 4)
                    .sum();
                (prompt as u32, count_tokens(&answer.content) as u32, true)
            }
        };
        Completion {
            content: answer.content,
            prompt_tokens,
            completion_tokens,
            usage_estimated,
            duration_ms: started.elapsed().as_millis() as u64,
            attempts,
        }
    }
}
