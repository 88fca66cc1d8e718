//! What a worker id may be: 1 to [`MAX_WORKER_ID_CHARS`] characters of
//! `[A-Za-z0-9._-]`. The coordinator refuses any other id at registration, the
//! worker at start; the id then goes into logs, metrics labels and store keys
//! as it is.

use crate::{Error, ErrorCode};

/// The longest worker id taken.
pub const MAX_WORKER_ID_CHARS: usize = 128;

/// How much of a refused id the error message quotes.
const QUOTED_CHARS: usize = 40;

/// `Ok` for a well-formed worker id; else INVALID_PARAM (not retryable) with the
/// reason, the id's length and the first offending position in `details`.
pub fn check_worker_id(worker_id: &str) -> Result<(), Error> {
    let length = worker_id.chars().count();
    let offending = worker_id
        .char_indices()
        .find(|(_, character)| !is_worker_id_char(*character));
    let problem = if worker_id.is_empty() {
        "is empty".to_string()
    } else if length > MAX_WORKER_ID_CHARS {
        format!("has {length} characters, more than {MAX_WORKER_ID_CHARS}")
    } else if let Some((position, character)) = offending {
        format!("has {character:?} at byte {position}: only letters, digits, '.', '_' and '-'")
    } else {
        return Ok(());
    };
    let quoted: String = worker_id.chars().take(QUOTED_CHARS).collect();
    let ellipsis = if length > QUOTED_CHARS { "…" } else { "" };
    Err(Error::new(
        ErrorCode::InvalidParam,
        format!("worker id {quoted:?}{ellipsis} {problem}"),
    )
    .with_retryable(false)
    .with_details(serde_json::json!({
        "field": "worker_id",
        "reason": "worker_id",
        "length": length,
        "max_length": MAX_WORKER_ID_CHARS,
        "allowed": "[A-Za-z0-9._-]",
        "offending_byte": offending.map(|(position, _)| position),
    })))
}

fn is_worker_id_char(character: char) -> bool {
    character.is_ascii_alphanumeric() || matches!(character, '.' | '_' | '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_up_to_the_limit_are_taken_and_others_refused_with_the_reason() {
        for good in ["w1", "host-1.example_a", &"a".repeat(MAX_WORKER_ID_CHARS)] {
            assert!(check_worker_id(good).is_ok(), "{good}");
        }
        let long = "a".repeat(100 * 1024);
        for (bad, says) in [
            ("", "is empty"),
            (
                &"a".repeat(MAX_WORKER_ID_CHARS + 1) as &str,
                "129 characters",
            ),
            (&long, "102400 characters"),
            ("w 1", "' '"),
            ("w\n1", "'\\n'"),
            ("../w", "'/'"),
            ("wé", "'é'"),
            ("w\0x", "'\\0'"),
        ] {
            let error = check_worker_id(bad).expect_err(bad);
            assert_eq!(error.error_code(), ErrorCode::InvalidParam, "{bad:?}");
            assert!(!error.retryable);
            assert!(error.message.contains(says), "{bad:?}: {}", error.message);
            assert!(
                error.message.len() < 300,
                "the message quotes a bounded part"
            );
            assert!(!error.message.contains('\n'), "{}", error.message);
        }
    }
}
