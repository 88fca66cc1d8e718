//! The line assembler: physical lines → logical lines. `*` and `//` comment lines and blank
//! lines are dropped, `$` and `;` inline comments cut (but not CDL's `$[model]` and
//! `$NAME=value`), `+` continuation lines joined to the statement they continue (comment
//! lines may stand between), as is the line after one ending in `\` (HSPICE and Spectre
//! netlisters break long lines so), and everything after `.end` ignored. Every byte of a
//! logical line keeps the line and column it came from.

use crate::issue::TextLocation;
use crate::spice::error::{Problems, SpiceError};

/// One statement, possibly spread over continuation lines.
#[derive(Debug, Clone)]
pub(crate) struct LogicalLine {
    pub text: String,
    /// (byte offset in `text`, where that byte came from), ascending by offset.
    segments: Vec<(usize, TextLocation)>,
}

impl LogicalLine {
    /// Where the byte at `offset` of `text` came from.
    pub fn location(&self, offset: usize) -> TextLocation {
        let offset = offset.min(self.text.len());
        let index = self
            .segments
            .partition_point(|(start, _)| *start <= offset)
            .saturating_sub(1);
        let Some(&(start, origin)) = self.segments.get(index) else {
            return TextLocation { line: 1, column: 1 };
        };
        let chars = self
            .text
            .get(start..offset)
            .map_or(0, |part| part.chars().count());
        TextLocation {
            line: origin.line,
            column: origin.column.saturating_add(chars as u32),
        }
    }

    fn append(&mut self, piece: &str, origin: TextLocation) {
        self.text.push(' ');
        self.segments.push((self.text.len(), origin));
        self.text.push_str(piece);
    }
}

/// Decodes the bytes (reporting a non-UTF-8 byte and going on with a replacement character).
pub(crate) fn decode(bytes: &[u8], problems: &mut Problems) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.strip_prefix('\u{feff}').unwrap_or(text).to_owned(),
        Err(error) => {
            let valid = &bytes[..error.valid_up_to()];
            let line = valid.iter().filter(|&&byte| byte == b'\n').count() + 1;
            let line_start = valid
                .iter()
                .rposition(|&byte| byte == b'\n')
                .map_or(0, |index| index + 1);
            let column = String::from_utf8_lossy(&valid[line_start..])
                .chars()
                .count()
                + 1;
            problems.error(
                TextLocation {
                    line: line as u32,
                    column: column as u32,
                },
                SpiceError::NotUtf8 {
                    byte: bytes[error.valid_up_to()],
                },
            );
            String::from_utf8_lossy(bytes).into_owned()
        }
    }
}

/// Assembles the logical lines of a whole file.
pub(crate) fn logical_lines(text: &str, problems: &mut Problems) -> Vec<LogicalLine> {
    let mut lines: Vec<LogicalLine> = Vec::new();
    let mut current: Option<LogicalLine> = None;
    // The line before ended in `\`: this one continues it.
    let mut continued = false;
    for (index, raw) in text.split('\n').enumerate() {
        let line_number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let content = &raw[..comment_start(raw)];
        let Some((first_byte, first_char)) = content
            .char_indices()
            .find(|(_, character)| !character.is_whitespace())
        else {
            continue; // blank, or only an inline comment
        };
        if first_char == '*' || content[first_byte..].starts_with("//") {
            continue; // a comment line; a '+' line after it still continues the statement
        }
        let column = |byte: usize| TextLocation {
            line: line_number,
            column: raw[..byte].chars().count() as u32 + 1,
        };
        let mut piece = content[first_byte..].trim_end();
        let continues_after = piece.ends_with('\\');
        if continues_after {
            piece = piece[..piece.len() - 1].trim_end();
        }
        let continues_before = std::mem::replace(&mut continued, continues_after);
        if continues_before && let Some(line) = current.as_mut() {
            if !piece.is_empty() {
                line.append(piece, column(first_byte));
            }
            continue;
        }
        if first_char == '+' {
            let rest = &piece[1..];
            let skipped = rest.len() - rest.trim_start().len();
            match current.as_mut() {
                Some(line) => line.append(rest.trim_start(), column(first_byte + 1 + skipped)),
                None => {
                    problems.error(column(first_byte), SpiceError::ContinuationWithoutStatement)
                }
            }
            continue;
        }
        lines.extend(current.take());
        if is_end(piece) {
            return lines;
        }
        if piece.is_empty() {
            continue; // a lone `\`
        }
        current = Some(LogicalLine {
            text: piece.to_owned(),
            segments: vec![(0, column(first_byte))],
        });
    }
    lines.extend(current);
    lines
}

/// `.end` alone (not `.ends`, `.endc`, `.endl`).
fn is_end(piece: &str) -> bool {
    let word = piece.split_whitespace().next().unwrap_or("");
    word.eq_ignore_ascii_case(".end")
}

/// Byte offset where an inline comment starts (the line's length when there is none):
/// `$` or `;` at the start or after white space, outside quotes and braces, except CDL's
/// `$[model]` and `$NAME=value`.
fn comment_start(raw: &str) -> usize {
    let mut in_quote = false;
    let mut brace_depth = 0usize;
    let mut previous_is_space = true;
    for (offset, character) in raw.char_indices() {
        match character {
            '\'' if brace_depth == 0 => in_quote = !in_quote,
            '{' if !in_quote => brace_depth += 1,
            '}' if !in_quote => brace_depth = brace_depth.saturating_sub(1),
            ';' | '$'
                if !in_quote
                    && brace_depth == 0
                    && previous_is_space
                    && (character == ';' || !is_cdl_annotation(&raw[offset + 1..])) =>
            {
                return offset;
            }
            _ => {}
        }
        previous_is_space = character.is_whitespace();
    }
    raw.len()
}

/// After a `$`: `[model]`, or a name followed by `=` (`$W=1u`, `$.MODEL=rp`, `$SUB=vss`).
fn is_cdl_annotation(after: &str) -> bool {
    if after.starts_with('[') {
        return true;
    }
    let name_length = after
        .find(|character: char| {
            !(character.is_ascii_alphanumeric() || character == '_' || character == '.')
        })
        .unwrap_or(after.len());
    name_length > 0 && after[name_length..].trim_start().starts_with('=')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(text: &str) -> (Vec<String>, Vec<String>) {
        let mut problems = Problems::default();
        let lines = logical_lines(text, &mut problems);
        let errors = problems
            .errors
            .iter()
            .map(|(at, error)| format!("{}: {error}", at.unwrap()))
            .collect();
        (lines.into_iter().map(|line| line.text).collect(), errors)
    }

    #[test]
    fn comments_continuations_and_end() {
        let (lines, errors) = assemble(
            "* title\nM1 d g s b nmos $ the input\n* note\n+ w=1u ; width\n\n  .END\nM9 junk\n",
        );
        assert_eq!(lines, vec!["M1 d g s b nmos w=1u"]);
        assert!(errors.is_empty());
    }

    #[test]
    fn cdl_annotations_are_not_comments() {
        let (lines, _) = assemble("R1 a b 1k $[rpoly] $W=1u $SUB=vss $ comment\nX1 a$b c / inv\n");
        assert_eq!(
            lines,
            vec!["R1 a b 1k $[rpoly] $W=1u $SUB=vss", "X1 a$b c / inv"]
        );
    }

    #[test]
    fn locations_follow_continuations() {
        let mut problems = Problems::default();
        let lines = logical_lines("M1 d g\n*c\n  +  s b nmos\n", &mut problems);
        let line = &lines[0];
        let offset = line.text.find("nmos").unwrap();
        assert_eq!(
            line.location(offset),
            TextLocation {
                line: 3,
                column: 10
            }
        );
        assert_eq!(line.location(0), TextLocation { line: 1, column: 1 });
    }

    #[test]
    fn a_leading_plus_is_reported() {
        let (_, errors) = assemble("\n  + w=1u\n");
        assert_eq!(
            errors,
            vec!["2:3: a '+' continuation line must follow the statement it continues"]
        );
    }
}
