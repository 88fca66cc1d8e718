//! The request and response bodies of the two APIs.

use serde::{Deserialize, Serialize};

use crate::llm::messages::{ChatMessage, Role};
use centroid_runtime::{LlmSettings, Provider};

/// The POST of `messages` to the provider's endpoint, with its headers and body
/// (the key as `Authorization: Bearer` or `x-api-key`, only when there is one).
pub fn request(
    http: &reqwest::Client,
    settings: &LlmSettings,
    messages: &[ChatMessage],
) -> reqwest::RequestBuilder {
    let base = settings.base_url.trim_end_matches('/');
    let key = &settings.api_key;
    match settings.provider {
        Provider::Openai => {
            let request = http
                .post(format!("{base}/chat/completions"))
                .json(&OpenaiRequest::new(settings, messages));
            if key.is_empty() {
                request
            } else {
                request.bearer_auth(key)
            }
        }
        Provider::Anthropic => {
            let request = http
                .post(format!("{base}/messages"))
                .header("anthropic-version", "2023-06-01")
                .json(&AnthropicRequest::new(settings, messages));
            if key.is_empty() {
                request
            } else {
                request.header("x-api-key", key)
            }
        }
    }
}

/// The text and usage of a success body of `provider`'s API.
pub fn answer(provider: Provider, body: &str) -> Result<Answer, String> {
    match provider {
        Provider::Openai => openai_answer(body),
        Provider::Anthropic => anthropic_answer(body),
    }
}

/// The OpenAI `chat/completions` request body.
#[derive(Debug, Serialize)]
struct OpenaiRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat>,
}

/// `{"type": "json_object"}`: the model must answer one JSON object.
#[derive(Debug, Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl<'a> OpenaiRequest<'a> {
    /// The request for `messages` under `settings` (`response_format` only in JSON mode).
    fn new(settings: &'a LlmSettings, messages: &'a [ChatMessage]) -> Self {
        OpenaiRequest {
            model: &settings.model,
            messages,
            temperature: settings.temperature,
            max_tokens: settings.max_tokens,
            response_format: settings.json_mode.then_some(ResponseFormat {
                kind: "json_object",
            }),
        }
    }
}

/// The Anthropic `messages` request body: the system messages joined into the
/// top-level `system`, the user and assistant turns in `messages`.
#[derive(Debug, Serialize)]
struct AnthropicRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    temperature: f64,
    #[serde(skip_serializing_if = "String::is_empty")]
    system: String,
    messages: Vec<&'a ChatMessage>,
}

impl<'a> AnthropicRequest<'a> {
    /// The request for `messages` under `settings`.
    fn new(settings: &'a LlmSettings, messages: &'a [ChatMessage]) -> Self {
        let system: Vec<&str> = messages
            .iter()
            .filter(|message| message.role == Role::System)
            .map(|message| message.content.as_str())
            .collect();
        AnthropicRequest {
            model: &settings.model,
            max_tokens: settings.max_tokens,
            temperature: settings.temperature,
            system: system.join("\n\n"),
            messages: messages
                .iter()
                .filter(|message| message.role != Role::System)
                .collect(),
        }
    }
}

/// What both APIs answer, reduced to the text and the usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub content: String,
    /// (prompt, completion) tokens, when the server said
    pub usage: Option<(u32, u32)>,
}

#[derive(Deserialize)]
struct OpenaiResponse {
    choices: Vec<OpenaiChoice>,
    usage: Option<OpenaiUsage>,
}

#[derive(Deserialize)]
struct OpenaiChoice {
    message: OpenaiMessage,
}

#[derive(Deserialize)]
struct OpenaiMessage {
    content: Option<String>,
}

#[derive(Deserialize)]
struct OpenaiUsage {
    prompt_tokens: u32,
    completion_tokens: u32,
}

#[derive(Deserialize)]
struct AnthropicResponse {
    content: Vec<AnthropicBlock>,
    usage: Option<AnthropicUsage>,
}

#[derive(Deserialize)]
struct AnthropicBlock {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct AnthropicUsage {
    input_tokens: u32,
    output_tokens: u32,
}

/// The first choice's text of an OpenAI answer.
fn openai_answer(body: &str) -> Result<Answer, String> {
    let response: OpenaiResponse =
        serde_json::from_str(body).map_err(|error| format!("not a chat completion: {error}"))?;
    let content = response
        .choices
        .into_iter()
        .next()
        .and_then(|choice| choice.message.content)
        .filter(|content| !content.trim().is_empty())
        .ok_or("the completion has no choice with content")?;
    Ok(Answer {
        content,
        usage: response
            .usage
            .map(|usage| (usage.prompt_tokens, usage.completion_tokens)),
    })
}

/// The text blocks of an Anthropic answer, joined.
fn anthropic_answer(body: &str) -> Result<Answer, String> {
    let response: AnthropicResponse =
        serde_json::from_str(body).map_err(|error| format!("not a Messages answer: {error}"))?;
    let content: String = response
        .content
        .into_iter()
        .filter(|block| block.kind == "text")
        .map(|block| block.text)
        .collect();
    if content.trim().is_empty() {
        return Err("the answer has no text".into());
    }
    Ok(Answer {
        content,
        usage: response
            .usage
            .map(|usage| (usage.input_tokens, usage.output_tokens)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_blocks_of_an_anthropic_answer_are_joined() {
        let body = r#"{"content": [{"type": "text", "text": "{\"a\": "},
                                  {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
                                  {"type": "text", "text": "1}"}],
                       "usage": {"input_tokens": 7, "output_tokens": 3}}"#;
        let joined = answer(Provider::Anthropic, body).expect("an answer");
        assert_eq!(joined.content, r#"{"a": 1}"#);
        assert_eq!(joined.usage, Some((7, 3)));
        assert!(answer(Provider::Anthropic, r#"{"content": []}"#).is_err());
        assert!(answer(Provider::Openai, r#"{"choices": []}"#).is_err());
        assert!(answer(Provider::Openai, "<html>").is_err());
    }
}
