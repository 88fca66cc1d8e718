//! The messages of a conversation with the model: what the planner writes and
//! what both APIs' request bodies carry.

use serde::{Deserialize, Serialize};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// instructions (Anthropic: joined into the top-level `system`)
    System,
    /// the planner's questions
    User,
    /// the model's earlier answers
    Assistant,
}

impl Role {
    /// The role as the APIs name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a conversation, serialized as `{"role", "content"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// who speaks
    pub role: Role,
    /// what is said
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::System,
            content: text.into(),
        }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: text.into(),
        }
    }

    /// An assistant message (an earlier answer of the model).
    pub fn assistant(text: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: Role::Assistant,
            content: text.into(),
        }
    }
}
