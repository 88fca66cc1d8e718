//! The lexer: a logical line → tokens. Words are runs of anything but white space, `=`,
//! quotes and braces (SPICE names may hold `<>[]!+-./:` and more); `'expr'` and `{expr}` are
//! one expression token each (HSPICE/ngspice quoting); CDL's `$[model]` is a model token.

use crate::spice::error::{Problems, SpiceError};
use crate::spice::lines::LogicalLine;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenKind {
    Word,
    Equals,
    /// `'…'` or `{…}`: `text` is what is inside.
    Expression,
    /// CDL `$[model]`: `text` is the model name.
    ModelTag,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub kind: TokenKind,
    pub text: String,
    /// Byte range in the logical line, quotes and brackets included.
    pub start: usize,
    pub end: usize,
    /// Byte offset of `text` in the logical line.
    pub text_start: usize,
}

impl Token {
    /// The token as the user wrote it, for messages.
    pub fn written<'a>(&self, line: &'a LogicalLine) -> &'a str {
        line.text.get(self.start..self.end).unwrap_or("")
    }

    pub fn is_word(&self) -> bool {
        self.kind == TokenKind::Word
    }
}

fn is_word_char(character: char) -> bool {
    !(character.is_whitespace() || matches!(character, '=' | '\'' | '{' | '}'))
}

/// Splits a logical line into tokens; None after an unterminated quote or brace (reported).
pub(crate) fn tokenize(line: &LogicalLine, problems: &mut Problems) -> Option<Vec<Token>> {
    let text = line.text.as_str();
    let mut tokens = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, character)) = chars.peek() {
        if character.is_whitespace() {
            chars.next();
            continue;
        }
        let closing = match character {
            '\'' => Some(('\'', "quote \"'\"", "\"'\"")),
            '{' => Some(('}', "brace '{'", "'}'")),
            _ => None,
        };
        if let Some((close, open_name, close_name)) = closing {
            chars.next();
            let inner_start = start + 1;
            let Some(inner_end) = find_close(text, inner_start, character, close) else {
                problems.error(
                    line.location(start),
                    SpiceError::Unterminated {
                        open: open_name,
                        close: close_name,
                    },
                );
                return None;
            };
            tokens.push(Token {
                kind: TokenKind::Expression,
                text: text[inner_start..inner_end].to_owned(),
                start,
                end: inner_end + 1,
                text_start: inner_start,
            });
            while chars.peek().is_some_and(|&(offset, _)| offset <= inner_end) {
                chars.next();
            }
            continue;
        }
        if character == '}' {
            problems.error(line.location(start), SpiceError::UnmatchedBrace);
            chars.next();
            continue;
        }
        if character == '=' {
            chars.next();
            tokens.push(Token {
                kind: TokenKind::Equals,
                text: "=".to_owned(),
                start,
                end: start + 1,
                text_start: start,
            });
            continue;
        }
        if text[start..].starts_with("$[") {
            let inner_start = start + 2;
            let Some(relative) = text[inner_start..].find(']') else {
                problems.error(
                    line.location(start),
                    SpiceError::Unterminated {
                        open: "'$['",
                        close: "']'",
                    },
                );
                return None;
            };
            let inner_end = inner_start + relative;
            tokens.push(Token {
                kind: TokenKind::ModelTag,
                text: text[inner_start..inner_end].trim().to_owned(),
                start,
                end: inner_end + 1,
                text_start: inner_start,
            });
            while chars.peek().is_some_and(|&(offset, _)| offset <= inner_end) {
                chars.next();
            }
            continue;
        }
        let mut end = start;
        while let Some(&(offset, character)) = chars.peek() {
            if !is_word_char(character) {
                break;
            }
            end = offset + character.len_utf8();
            chars.next();
        }
        tokens.push(Token {
            kind: TokenKind::Word,
            text: text[start..end].to_owned(),
            start,
            end,
            text_start: start,
        });
    }
    Some(tokens)
}

/// The offset of the character closing an expression opened just before `from`
/// (braces nest; a quote closes at the next quote).
fn find_close(text: &str, from: usize, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (offset, character) in text[from..].char_indices() {
        if character == close && depth == 0 {
            return Some(from + offset);
        }
        if open == '{' {
            match character {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spice::lines::logical_lines;

    fn lex(text: &str) -> (Vec<(TokenKind, String)>, Vec<String>) {
        let mut problems = Problems::default();
        let lines = logical_lines(text, &mut problems);
        let tokens = tokenize(&lines[0], &mut problems).unwrap_or_default();
        let errors = problems
            .errors
            .iter()
            .map(|(at, error)| format!("{}: {error}", at.unwrap()))
            .collect();
        (
            tokens
                .into_iter()
                .map(|token| (token.kind, token.text))
                .collect(),
            errors,
        )
    }

    #[test]
    fn words_equals_and_expressions() {
        use TokenKind::*;
        let (tokens, errors) = lex("M1 out<3> g s b nmos w = 4u l={2*lmin} nf='n+1'");
        assert!(errors.is_empty());
        let words: Vec<(TokenKind, &str)> = tokens
            .iter()
            .map(|(kind, text)| (*kind, text.as_str()))
            .collect();
        assert_eq!(
            words,
            vec![
                (Word, "M1"),
                (Word, "out<3>"),
                (Word, "g"),
                (Word, "s"),
                (Word, "b"),
                (Word, "nmos"),
                (Word, "w"),
                (Equals, "="),
                (Word, "4u"),
                (Word, "l"),
                (Equals, "="),
                (Expression, "2*lmin"),
                (Word, "nf"),
                (Equals, "="),
                (Expression, "n+1"),
            ]
        );
    }

    #[test]
    fn cdl_model_tag_and_nested_braces() {
        let (tokens, _) = lex("R1 a b 1k $[rppd] w={max({a},1)}");
        assert_eq!(tokens[4], (TokenKind::ModelTag, "rppd".to_owned()));
        assert_eq!(tokens[7], (TokenKind::Expression, "max({a},1)".to_owned()));
    }

    #[test]
    fn unterminated_expression_is_reported_where_it_opens() {
        let (_, errors) = lex("M1 d g s b nmos w={2*wn\n+ l=1u");
        assert_eq!(
            errors,
            vec![
                "1:19: unterminated brace '{': expected a closing '}' on this line or its '+' continuation lines"
            ]
        );
    }
}
