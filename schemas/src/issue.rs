//! Problems found in input files: where they are (file + JSON pointer, or file + line and
//! column for a SPICE netlist) and what would be valid.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

/// One problem in one input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputIssue {
    /// The file's label: its path, or its name when it came over the wire.
    pub file: String,
    /// JSON pointer (RFC 6901) to the offending value; empty for the whole document.
    pub pointer: String,
    /// What is wrong and what would be valid.
    pub message: String,
    /// Line and column in a text input (a SPICE netlist); when given, it is where the
    /// problem is and `pointer` is only a hint (into the JSON the text was converted to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<TextLocation>,
}

/// A 1-based line and column (in characters) of a text file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TextLocation {
    pub line: u32,
    pub column: u32,
}

impl fmt::Display for TextLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

impl fmt::Display for InputIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = self.location {
            return write!(f, "{}:{location}: {}", self.file, self.message);
        }
        let location = if self.pointer.is_empty() {
            "(document)"
        } else {
            self.pointer.as_str()
        };
        write!(f, "{}: {}: {}", self.file, location, self.message)
    }
}

/// Every problem found in a set of input files, reported together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InputErrors {
    pub issues: Vec<InputIssue>,
}

impl fmt::Display for InputErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.issues.len();
        write!(
            f,
            "{count} problem{} in the inputs",
            if count == 1 { "" } else { "s" }
        )?;
        for issue in &self.issues {
            write!(f, "\n  {issue}")?;
        }
        Ok(())
    }
}

impl InputErrors {
    pub fn single(file: &str, pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            issues: vec![InputIssue {
                file: file.to_owned(),
                pointer: pointer.into(),
                message: message.into(),
                location: None,
            }],
        }
    }

    pub fn merge(parts: impl IntoIterator<Item = InputErrors>) -> Option<InputErrors> {
        let issues: Vec<InputIssue> = parts.into_iter().flat_map(|part| part.issues).collect();
        (!issues.is_empty()).then_some(InputErrors { issues })
    }
}

/// Collects the issues of one file while it is checked.
#[derive(Debug)]
pub(crate) struct IssueSink {
    file: String,
    issues: Vec<InputIssue>,
    /// The pointers the JSON Schema flagged: a later check does not report a second
    /// problem there (a set: a file with a problem on each of 100 000 devices is checked
    /// in linear time).
    schema_pointers: HashSet<String>,
}

impl IssueSink {
    pub(crate) fn new(file: &str) -> Self {
        Self {
            file: file.to_owned(),
            issues: Vec::new(),
            schema_pointers: HashSet::new(),
        }
    }

    pub(crate) fn push(&mut self, pointer: impl Into<String>, message: impl Into<String>) {
        let pointer = pointer.into();
        if self.schema_pointers.contains(&pointer) {
            return;
        }
        self.issues.push(InputIssue {
            file: self.file.clone(),
            pointer,
            message: message.into(),
            location: None,
        });
    }

    /// Marks the end of the JSON Schema's issues.
    pub(crate) fn end_schema_phase(&mut self) {
        self.schema_pointers = self
            .issues
            .iter()
            .map(|issue| issue.pointer.clone())
            .collect();
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.issues.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn into_issues(self) -> Vec<InputIssue> {
        self.issues
    }

    pub(crate) fn finish<T>(self, value: T) -> Result<T, InputErrors> {
        if self.issues.is_empty() {
            Ok(value)
        } else {
            Err(InputErrors {
                issues: self.issues,
            })
        }
    }
}

/// Escapes one reference token of a JSON pointer (`~` → `~0`, `/` → `~1`).
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Joins a parent pointer and one token.
pub fn pointer_join(parent: &str, token: impl fmt::Display) -> String {
    format!("{parent}/{}", pointer_token(&token.to_string()))
}

/// Lists names for a message, shortening long lists.
pub(crate) fn name_list<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 24;
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        return "(none)".to_owned();
    }
    let mut text = names
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(", … ({} more)", names.len() - SHOWN));
    }
    text
}
