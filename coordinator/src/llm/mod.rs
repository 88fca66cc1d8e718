//! A chat client for the LLM planner: OpenAI-compatible `chat/completions`
//! (OpenAI, vLLM, Ollama, llama.cpp's server) or the Anthropic Messages API,
//! with a deadline over all retries; and the token counting that keeps prompts
//! within the model's context window.

pub mod client;
pub mod messages;
pub mod tokens;
/// The request and response bodies of the two APIs.
mod wire;

pub use client::{Completion, LlmClient, LlmError};
pub use messages::{ChatMessage, Role};
// the model's settings are configuration the CLI reads too: they live in the runtime crate
pub use centroid_runtime::{LlmSettings, Provider};
