//! One chat completion, with retries (429, 5xx, timeouts, lost connections; back-off
//! from 250 ms doubling, or the server's `Retry-After`) inside one deadline
//! (`timeout_ms`) that covers every attempt.

use std::time::{Duration, Instant};

use crate::llm::messages::ChatMessage;
use crate::llm::tokens::count_tokens;
use crate::llm::wire;
use centroid_runtime::LlmSettings;

/// First pause before a retry (doubled per retry).
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// A model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// the answer's text
    pub content: String,
    /// tokens of the prompt, as the server reported them (or counted here)
    pub prompt_tokens: u32,
    /// tokens of the answer, as the server reported them (or counted here)
    pub completion_tokens: u32,
    /// the server sent no usage; the figures were counted with cl100k_base
    pub usage_estimated: bool,
    /// the whole call, retries and back-off included
    pub duration_ms: u64,
    /// HTTP attempts made (1 when the first one answered)
    pub attempts: u32,
}

/// Why a completion failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// no model configured: what is missing
    #[error("{0}")]
    NotConfigured(String),
    /// no answer within `timeout_ms`, retries included
    #[error("no answer within {after_ms} ms")]
    Timeout {
        /// the deadline that passed
        after_ms: u64,
    },
    /// the last attempt's HTTP error
    #[error("HTTP {status}: {body}")]
    Http {
        /// the HTTP status
        status: u16,
        /// the start of the error body (at most 500 characters)
        body: String,
    },
    /// the server could not be reached or the connection broke
    #[error("cannot reach the model: {0}")]
    Transport(String),
    /// a success status without the API's answer shape, or an empty answer
    #[error("unusable answer: {0}")]
    BadResponse(String),
}

impl LlmError {
    /// A short machine reason for events and the report: `not_configured`,
    /// `timeout`, `http_429`, `http_500`, `transport`, `bad_response`.
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

/// What one HTTP exchange gave.
struct Exchange {
    /// the HTTP status, when the server answered
    status: Option<u16>,
    result: Result<wire::Answer, LlmError>,
    /// the server's `Retry-After` (seconds), when it sent one
    retry_after: Option<Duration>,
}

impl Exchange {
    fn failed(status: Option<u16>, error: LlmError) -> Exchange {
        Exchange {
            status,
            result: Err(error),
            retry_after: None,
        }
    }
}

/// A client of one configured model (cheap to clone: the connection pool is shared).
#[derive(Clone)]
pub struct LlmClient {
    settings: LlmSettings,
    http: reqwest::Client,
}

impl LlmClient {
    /// A client of the configured model; `NotConfigured` when `settings` name none.
    pub fn new(settings: LlmSettings) -> Result<LlmClient, LlmError> {
        if let Some(missing) = settings.missing() {
            return Err(LlmError::NotConfigured(missing));
        }
        // reqwest's rustls needs a process-wide crypto provider (ring here); a
        // provider installed before (by us or anyone) is kept
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .build()
            .map_err(|error| LlmError::Transport(error.to_string()))?;
        Ok(LlmClient { settings, http })
    }

    /// The settings the client was made with.
    pub fn settings(&self) -> &LlmSettings {
        &self.settings
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        &self.settings.model
    }

    /// One completion of `messages`. Retries a 429, a 5xx, a timeout or a lost
    /// connection (`retries` times at most, back-off from 250 ms doubling, or the
    /// server's `Retry-After`), all within `timeout_ms`; other errors fail at once.
    pub async fn complete(&self, messages: &[ChatMessage]) -> Result<Completion, LlmError> {
        let trace_id = uuid::Uuid::new_v4().simple().to_string();
        self.complete_traced(messages, &trace_id).await
    }

    /// As [`LlmClient::complete`], with `trace_id` (32 hex digits) sent as a W3C
    /// `traceparent` so the model server's logs can be matched with ours.
    pub async fn complete_traced(
        &self,
        messages: &[ChatMessage],
        trace_id: &str,
    ) -> Result<Completion, LlmError> {
        let started = Instant::now();
        let deadline = Duration::from_millis(self.settings.timeout_ms);
        let timeout = LlmError::Timeout {
            after_ms: self.settings.timeout_ms,
        };
        let mut attempts = 0u32;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let remaining = deadline.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                return Err(timeout);
            }
            attempts += 1;
            let attempt_started = Instant::now();
            let exchange = tokio::time::timeout(remaining, self.attempt(messages, trace_id))
                .await
                .unwrap_or_else(|_| Exchange::failed(None, timeout.clone()));
            tracing::debug!(
                model = %self.settings.model,
                attempt = attempts,
                status = exchange.status,
                outcome = %exchange.result.as_ref().err().map_or("ok".into(), LlmError::reason),
                duration_ms = attempt_started.elapsed().as_millis() as u64,
                "llm attempt"
            );
            let error = match exchange.result {
                Ok(answer) => return Ok(self.completion(messages, answer, started, attempts)),
                Err(error) => error,
            };
            if !error.is_retryable() || attempts > self.settings.retries {
                return Err(error);
            }
            let pause = exchange.retry_after.unwrap_or(backoff);
            if started.elapsed() + pause >= deadline {
                return Err(error);
            }
            tokio::time::sleep(pause).await;
            backoff = backoff.saturating_mul(2);
        }
    }

    /// One HTTP exchange.
    async fn attempt(&self, messages: &[ChatMessage], trace_id: &str) -> Exchange {
        let request = wire::request(&self.http, &self.settings, messages);
        let span_id = uuid::Uuid::new_v4().simple().to_string();
        let response = match request
            .header(
                "traceparent",
                format!("00-{trace_id}-{}-01", &span_id[..16]),
            )
            .send()
            .await
        {
            Ok(response) => response,
            Err(error) => return Exchange::failed(None, LlmError::Transport(error.to_string())),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = match response.text().await {
            Ok(body) => body,
            Err(error) => {
                return Exchange::failed(Some(status), LlmError::Transport(error.to_string()));
            }
        };
        let result = if (200..300).contains(&status) {
            wire::answer(self.settings.provider, &body).map_err(LlmError::BadResponse)
        } else {
            let body = body.chars().take(500).collect();
            Err(LlmError::Http { status, body })
        };
        Exchange {
            status: Some(status),
            result,
            retry_after,
        }
    }

    /// The completion of an answer, its usage counted here when the server sent none.
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
                // ~4 tokens of chat framing per message, as OpenAI counts them
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
