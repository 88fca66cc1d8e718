//! The files a RunCandidate request brings along (`inputs`): checked before the
//! candidate takes a slot, written into its scratch directory before the first
//! step, and never returned as its artifacts.

use std::collections::HashSet;
use std::path::Path;

use centroid_proto::v1::Artifact;
use centroid_proto::{Error, ErrorCode};

/// The longest file name taken, in bytes (`NAME_MAX` of Linux file systems).
pub const MAX_NAME_BYTES: usize = 255;

/// How much of a refused name the error message quotes.
const QUOTED_CHARS: usize = 60;

/// `None` when every input has a plain file name (no directory part, not `.` or
/// `..`, no control character, at most [`MAX_NAME_BYTES`]), each name once; else
/// why not (INVALID_PARAM: the request is wrong, not the worker).
pub fn refusal(inputs: &[Artifact]) -> Option<Error> {
    let mut names = HashSet::new();
    for (index, input) in inputs.iter().enumerate() {
        let name = input.name.as_str();
        let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\']);
        let problem = if !plain {
            "is not a plain file name (no directory part)".to_string()
        } else if name.chars().any(char::is_control) {
            "has a control character".to_string()
        } else if name.len() > MAX_NAME_BYTES {
            format!("is {} bytes long, more than {MAX_NAME_BYTES}", name.len())
        } else if !names.insert(name) {
            "is given twice".to_string()
        } else {
            continue;
        };
        let quoted: String = name.chars().take(QUOTED_CHARS).collect();
        let ellipsis = if quoted.len() < name.len() { "…" } else { "" };
        return Some(
            Error::new(
                ErrorCode::InvalidParam,
                format!("inputs[{index}]: {quoted:?}{ellipsis} {problem}"),
            )
            .with_retryable(false)
            .with_details(serde_json::json!({"field": format!("inputs[{index}].name")})),
        );
    }
    None
}

/// Writes `inputs` into `scratch_dir`.
pub fn write(scratch_dir: &Path, inputs: &[Artifact]) -> std::io::Result<()> {
    for input in inputs {
        std::fs::write(scratch_dir.join(&input.name), &input.content)?;
    }
    Ok(())
}

/// The names of `inputs`, to leave out of the artifacts.
pub fn names(inputs: &[Artifact]) -> HashSet<String> {
    inputs.iter().map(|input| input.name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str) -> Artifact {
        Artifact {
            name: name.into(),
            media_type: String::new(),
            content: b"x".to_vec(),
        }
    }

    #[test]
    fn only_plain_distinct_file_names_are_taken() {
        assert!(refusal(&[input("layout.gds"), input("other.gds")]).is_none());
        for bad in [
            "",
            ".",
            "..",
            "../escape.gds",
            "/etc/passwd",
            "sub/dir.gds",
            "a\\b",
            "nul\0.gds",
            "new\nline.gds",
            "tab\t.gds",
            "del\u{7f}.gds",
            "n".repeat(MAX_NAME_BYTES + 1).as_str(),
            "é".repeat(128).as_str(),
        ] {
            let error = refusal(&[input("ok.gds"), input(bad)]).expect(bad);
            assert_eq!(error.error_code(), ErrorCode::InvalidParam, "{bad}");
            assert!(error.message.starts_with("inputs[1]"), "{}", error.message);
        }
        assert!(refusal(&[input(&"n".repeat(MAX_NAME_BYTES))]).is_none());
        let long = refusal(&[input(&"n".repeat(100_000))]).expect("long");
        assert!(long.message.contains("100000 bytes"), "{}", long.message);
        assert!(
            long.message.len() < 200,
            "a bounded quote: {}",
            long.message
        );
        let twice = refusal(&[input("a.gds"), input("a.gds")]).expect("twice");
        assert!(twice.message.contains("twice"), "{}", twice.message);
    }
}
