//! Token counting with a real BPE (cl100k_base, embedded in `tiktoken-rs`, so it
//! works offline) and prompts assembled within a token budget: parts by
//! priority, a part that does not fit cut at a token boundary with a marker.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

fn encoder() -> &'static CoreBPE {
    static ENCODER: OnceLock<CoreBPE> = OnceLock::new();
    ENCODER.get_or_init(|| tiktoken_rs::cl100k_base().expect("the embedded cl100k_base BPE loads"))
}

/// Tokens of `text` by the cl100k_base BPE.
pub fn count_tokens(text: &str) -> usize {
    encoder().encode_with_special_tokens(text).len()
}

/// The marker that ends a cut text.
fn marker(rest: usize) -> String {
    format!("\n[… truncated: {rest} more tokens]")
}

/// `text` cut at a token boundary to at most `max_tokens` tokens, ending with
/// `\n[… truncated: N more tokens]` (the marker counts within the bound);
/// unchanged when it fits, empty when not even the marker fits.
pub fn truncate_to_tokens(text: &str, max_tokens: usize) -> String {
    let tokens = encoder().encode_with_special_tokens(text);
    if tokens.len() <= max_tokens {
        return text.to_string();
    }
    let marker_tokens = count_tokens(&marker(tokens.len()));
    let mut keep = max_tokens.saturating_sub(marker_tokens);
    loop {
        let head = decode_prefix(&tokens[..keep]);
        let cut = format!("{head}{}", marker(tokens.len() - keep));
        if count_tokens(&cut) <= max_tokens {
            return cut;
        }
        if keep == 0 {
            return String::new();
        }
        keep -= 1;
    }
}

/// The longest valid UTF-8 text of a token prefix (a multi-byte character split
/// between tokens is left out).
fn decode_prefix(tokens: &[u32]) -> String {
    let mut end = tokens.len();
    loop {
        if let Ok(text) = encoder().decode(&tokens[..end]) {
            return text;
        }
        if end == 0 {
            return String::new();
        }
        end -= 1;
    }
}

/// One titled part of a prompt.
#[derive(Debug, Clone)]
pub struct PromptPart {
    /// the part's heading (`## title`)
    pub title: String,
    /// lower is more important (placed first, cut last)
    pub priority: u32,
    /// the part's body
    pub text: String,
    /// when fewer tokens of the body would fit, the part is dropped rather than cut
    pub min_tokens: usize,
}

/// A prompt assembled within a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedPrompt {
    /// the parts joined as `## title\ntext\n\n`
    pub text: String,
    /// tokens of `text` (at most the budget)
    pub tokens: usize,
    /// titles of the parts that were cut
    pub truncated: Vec<String>,
    /// titles of the parts left out
    pub dropped: Vec<String>,
}

/// The parts as `## title\ntext\n\n`, most important first (ties in the given
/// order), within `budget` tokens of the joined text. A part that does not fit
/// whole is cut with the marker when at least `min_tokens` of its body fit,
/// and dropped otherwise.
pub fn fit_prompt(mut parts: Vec<PromptPart>, budget: usize) -> FittedPrompt {
    parts.sort_by_key(|part| part.priority);
    let mut text = String::new();
    let mut truncated = Vec::new();
    let mut dropped = Vec::new();
    for part in parts {
        let joined = |body: &str| format!("{text}## {}\n{body}\n\n", part.title);
        let whole = joined(&part.text);
        if count_tokens(&whole) <= budget {
            text = whole;
            continue;
        }
        let least = part.min_tokens.max(1) + count_tokens(&marker(count_tokens(&part.text)));
        let mut allowance = budget.saturating_sub(count_tokens(&joined("")));
        // token merges at the seams may cost a little more than the body alone:
        // shrink the body until the joined text fits
        let fitted = loop {
            if allowance < least {
                break None;
            }
            let cut = joined(&truncate_to_tokens(&part.text, allowance));
            let tokens = count_tokens(&cut);
            if tokens <= budget {
                break Some(cut);
            }
            allowance = allowance.saturating_sub(tokens - budget);
        };
        match fitted {
            Some(cut) => {
                text = cut;
                truncated.push(part.title);
            }
            None => dropped.push(part.title),
        }
    }
    FittedPrompt {
        tokens: count_tokens(&text),
        text,
        truncated,
        dropped,
    }
}
