//! The request and response bodies of the two APIs.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::llm::client::{ChatMessage, Role};
use crate::llm::settings::LlmSettings;

/// The OpenAI `chat/completions` request body.
pub fn openai_request(settings: &LlmSettings, messages: &[ChatMessage]) -> Value {
    let mut body = json!({
        "model": settings.model,
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    });
    if settings.json_mode {
        body["response_format"] = json!({"type": "json_object"});
    }
    body
}

/// The Anthropic `messages` request body: system messages joined into `system`.
pub fn anthropic_request(settings: &LlmSettings, messages: &[ChatMessage]) -> Value {
    let system: Vec<&str> = messages
        .iter()
        .filter(|message| message.role == Role::System)
        .map(|message| message.content.as_str())
        .collect();
    let turns: Vec<&ChatMessage> = messages
        .iter()
        .filter(|message| message.role != Role::System)
        .collect();
    json!({
        "model": settings.model,
        "max_tokens": settings.max_tokens,
        "temperature": settings.temperature,
        "system": system.join("\n\n"),
        "messages": turns,
    })
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
pub fn openai_answer(body: &str) -> Result<Answer, String> {
    let response: OpenaiResponse =
        serde_json::from_str(body).map_err(|error| format!("not a chat completion: {error}"))?;
    let content = response
        .choices
        .into_iter()
        .next()
        .and_then(|choice| choice.message.content)
        .ok_or("the completion has no choice with content")?;
    Ok(Answer {
        content,
        usage: response
            .usage
            .map(|usage| (usage.prompt_tokens, usage.completion_tokens)),
    })
}

/// The text blocks of an Anthropic answer, joined.
pub fn anthropic_answer(body: &str) -> Result<Answer, String> {
    let response: AnthropicResponse =
        serde_json::from_str(body).map_err(|error| format!("not a Messages answer: {error}"))?;
    let content: String = response
        .content
        .into_iter()
        .filter(|block| block.kind == "text")
        .map(|block| block.text)
        .collect();
    if content.is_empty() {
        return Err("the answer has no text block".into());
    }
    Ok(Answer {
        content,
        usage: response
            .usage
            .map(|usage| (usage.input_tokens, usage.output_tokens)),
    })
}
