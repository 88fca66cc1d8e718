//! Token counting with a real BPE (cl100k_base, embedded in `tiktoken-rs`, so it
//! works offline) and prompts assembled within a token budget: parts by
//! priority, a part that does not fit cut at a token boundary with a marker.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

fn encoder() -> &'static CoreBPE {
    static ENCODER: OnceLock<CoreBPE> = OnceLock::new();
    ENCODER.get_or_init(|| tiktoken_rs::cl100k_base().expect("the embedded cl100k_base BPE loads"))
}

/// Tokens of `text`.
pub fn count_tokens(text: &str) -> usize {
    encoder().encode_with_special_tokens(text).len()
}

/// `text` cut to at most `max_tokens` tokens, marked `[… truncated: N more
/// tokens]` (the marker counts within the bound); unchanged when it fits.
pub fn truncate_to_tokens(text: &str, max_tokens: usize) -> String {
    let tokens = encoder().encode_with_special_tokens(text);
    if tokens.len() <= max_tokens {
        return text.to_string();
    }
    let marker = |rest: usize| format!("\n[… truncated: {rest} more tokens]");
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
    pub title: String,
    /// lower is more important
    pub priority: u32,
    pub text: String,
    /// below this many tokens the part is dropped rather than cut
    pub min_tokens: usize,
}

/// A prompt assembled within a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedPrompt {
    pub text: String,
    pub tokens: usize,
    /// titles of the parts that were cut
    pub truncated: Vec<String>,
    /// titles of the parts left out
    pub dropped: Vec<String>,
}

/// The parts as `## title\ntext\n\n`, most important first (ties in the given
/// order), within `budget` tokens of the joined text.
pub fn fit_prompt(mut parts: Vec<PromptPart>, budget: usize) -> FittedPrompt {
    parts.sort_by_key(|part| part.priority);
    let mut text = String::new();
    let mut truncated = Vec::new();
    let mut dropped = Vec::new();
    for part in parts {
        let whole = format!("{text}## {}\n{}\n\n", part.title, part.text);
        if count_tokens(&whole) <= budget {
            text = whole;
            continue;
        }
        let room = budget.saturating_sub(count_tokens(&text) + count_tokens(&part.title) + 6);
        if room < part.min_tokens.max(1) {
            dropped.push(part.title);
            continue;
        }
        // cut the part until the joined text fits (token merges at the seams may
        // cost a token or two more than the parts counted alone)
        let mut allowance = room;
        loop {
            let cut = truncate_to_tokens(&part.text, allowance);
            let joined = format!("{text}## {}\n{cut}\n\n", part.title);
            if count_tokens(&joined) <= budget {
                text = joined;
                truncated.push(part.title);
                break;
            }
            if allowance <= part.min_tokens.max(1) {
                dropped.push(part.title);
                break;
            }
            allowance -= 1;
        }
    }
    FittedPrompt {
        tokens: count_tokens(&text),
        text,
        truncated,
        dropped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_uses_the_real_tokenizer() {
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(count_tokens(""), 0);
    }

    #[test]
    fn a_cut_text_stays_within_its_bound_and_says_so() {
        let text = "matched pair ".repeat(200);
        for bound in [10, 25, 100] {
            let cut = truncate_to_tokens(&text, bound);
            assert!(count_tokens(&cut) <= bound, "{bound}");
            assert!(cut.contains("truncated"), "{bound}");
        }
        assert_eq!(truncate_to_tokens("short", 10), "short");
        let unicode = "µm² ".repeat(100);
        assert!(count_tokens(&truncate_to_tokens(&unicode, 20)) <= 20);
    }

    #[test]
    fn a_fitted_prompt_never_exceeds_its_budget_and_keeps_priorities() {
        let parts = || {
            vec![
                PromptPart {
                    title: "Skills".into(),
                    priority: 2,
                    text: "skill ".repeat(150),
                    min_tokens: 10,
                },
                PromptPart {
                    title: "Task".into(),
                    priority: 0,
                    text: "lay out the OTA".into(),
                    min_tokens: 4,
                },
                PromptPart {
                    title: "Devices".into(),
                    priority: 1,
                    text: "M1 nmos; ".repeat(80),
                    min_tokens: 10,
                },
            ]
        };
        for budget in 0..400 {
            let fitted = fit_prompt(parts(), budget);
            assert!(fitted.tokens <= budget, "{budget}: {}", fitted.tokens);
            assert_eq!(fitted.tokens, count_tokens(&fitted.text));
            if let (Some(task), Some(devices)) =
                (fitted.text.find("## Task"), fitted.text.find("## Devices"))
            {
                assert!(task < devices, "priority order");
            }
        }
        let roomy = fit_prompt(parts(), 10_000);
        assert!(roomy.truncated.is_empty() && roomy.dropped.is_empty());
        let tight = fit_prompt(parts(), 120);
        assert!(tight.text.starts_with("## Task"));
        assert!(!tight.truncated.is_empty() || !tight.dropped.is_empty());
    }
}
