//! The parser: logical lines → a [`Deck`] (subcircuits with ports, parameters and
//! elements; global nets; `.model` cards; `.option scale`). Nothing is evaluated here:
//! values stay expressions until their subcircuit is instantiated (`build.rs`). Dot
//! statements are read in `directives.rs`.

use std::collections::{HashMap, HashSet};

use crate::circuit::DeviceType;
use crate::issue::TextLocation;
use crate::spice::error::{Problems, SpiceError};
use crate::spice::expr::{Expr, looks_numeric, parse_expression};
use crate::spice::lexer::{Token, TokenKind, tokenize};
use crate::spice::lines::LogicalLine;
use crate::spice::spectre::{starts_spectre, without_parentheses};

/// A name as written, with where.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Name {
    pub text: String,
    pub at: TextLocation,
}

impl Name {
    /// SPICE names are case-insensitive.
    pub fn key(&self) -> String {
        self.text.to_lowercase()
    }
}

/// A value as written: its expression and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Value {
    pub expr: Expr,
    pub at: TextLocation,
}

/// `name=value`; `value` is None when it could not be read (that was reported).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Param {
    pub name: Name,
    pub value: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ElementKind {
    Mos,
    Resistor,
    Capacitor,
    Instance,
}

/// One M, R, C or X line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Element {
    pub kind: ElementKind,
    pub name: Name,
    pub nodes: Vec<Name>,
    /// The model (M, R, C) or the subcircuit (X).
    pub target: Option<Name>,
    /// An R or C line's value (ohm, farad).
    pub value: Option<Value>,
    pub params: Vec<Param>,
}

/// A line of an element kind Centroid does not lay out (V, I, D, Q, L, …): its name and
/// the nodes (the words before the first `name=value` or expression).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Foreign {
    pub name: Name,
    pub words: Vec<Name>,
}

/// The statements of a subcircuit, or of the top level.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Body {
    pub elements: Vec<Element>,
    pub params: Vec<Param>,
    /// Lines of element kinds Centroid does not lay out.
    pub unsupported: Vec<Foreign>,
    first_line_of_name: HashMap<String, u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Subckt {
    pub name: Name,
    pub ports: Vec<Name>,
    pub params: Vec<Param>,
    pub body: Body,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Deck {
    pub subckts: Vec<Subckt>,
    pub top_level: Body,
    pub globals: Vec<Name>,
    /// `.model NAME TYPE` cards whose type says nmos, pmos, resistor or capacitor.
    pub model_cards: Vec<(Name, DeviceType)>,
    /// `.option scale=…`: multiplies every w and l.
    pub scale: Option<Value>,
}

/// Parses every logical line; problems are collected, the deck holds what could be read.
pub(crate) fn parse_deck(lines: &[LogicalLine], problems: &mut Problems) -> Deck {
    let mut parser = DeckParser {
        deck: Deck::default(),
        open: None,
        in_control: false,
        spectre: false,
        subckt_names: subckt_names(lines),
        problems,
    };
    for line in lines {
        // A line with an unterminated quote or brace was reported and is not read further.
        let tokens = tokenize(line, parser.problems).unwrap_or_default();
        if !tokens.is_empty() {
            parser.statement(line, &tokens);
        }
    }
    if let Some(subckt) = parser.open.take() {
        let error = SpiceError::UnclosedSubckt {
            name: subckt.name.text.clone(),
        };
        parser.problems.error(subckt.name.at, error);
        parser.deck.subckts.push(subckt);
    }
    parser.deck
}

pub(super) struct DeckParser<'a> {
    pub(super) deck: Deck,
    pub(super) open: Option<Subckt>,
    pub(super) in_control: bool,
    /// The lines are Spectre (a Spectre statement was found, or `simulator lang=spectre`).
    pub(super) spectre: bool,
    /// The names (lower case) of every `.subckt` of the file, wherever it is defined: a
    /// line of another letter that calls one is an instance written without its X.
    subckt_names: HashSet<String>,
    pub(super) problems: &'a mut Problems,
}

/// The names of the file's subcircuits, read ahead of the statements.
fn subckt_names(lines: &[LogicalLine]) -> HashSet<String> {
    lines
        .iter()
        .filter_map(|line| {
            let mut words = line.text.split_whitespace();
            let mut keyword = words.next()?;
            if keyword.eq_ignore_ascii_case("inline") {
                keyword = words.next()?;
            }
            [".subckt", "subckt", "topckt"]
                .iter()
                .any(|subckt| keyword.eq_ignore_ascii_case(subckt))
                .then(|| words.next())
                .flatten()
                .map(|name| name.trim_end_matches('(').to_lowercase())
        })
        .collect()
}

/// A token's location in its line.
pub(super) fn at(line: &LogicalLine, token: &Token) -> TextLocation {
    line.location(token.start)
}

pub(super) fn name_of(line: &LogicalLine, token: &Token) -> Name {
    Name {
        text: token.text.clone(),
        at: line.location(token.text_start),
    }
}

/// The words after an element's name up to its first `name=value`, expression or
/// non-word (its nodes, and for an instance its subcircuit).
fn leading_words(line: &LogicalLine, tokens: &[Token]) -> Vec<Name> {
    (1..tokens.len())
        .take_while(|&index| tokens[index].is_word() && !starts_param(tokens, index))
        .map(|index| name_of(line, &tokens[index]))
        .filter(|name| !name.text.eq_ignore_ascii_case("params:"))
        .collect()
}

/// True when `tokens[index]` starts a `name=value`.
pub(super) fn starts_param(tokens: &[Token], index: usize) -> bool {
    tokens[index].is_word()
        && tokens
            .get(index + 1)
            .is_some_and(|next| next.kind == TokenKind::Equals)
}

impl DeckParser<'_> {
    pub(super) fn body(&mut self) -> &mut Body {
        match self.open.as_mut() {
            Some(subckt) => &mut subckt.body,
            None => &mut self.deck.top_level,
        }
    }

    fn scope_name(&self) -> String {
        self.open.as_ref().map_or_else(
            || "the top level".to_owned(),
            |subckt| format!("subcircuit {}", subckt.name.text),
        )
    }

    fn statement(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let first = &tokens[0];
        if self.in_control {
            self.in_control = !first.text.eq_ignore_ascii_case(".endc");
            return;
        }
        let Some(initial) = first.text.chars().next().filter(|_| first.is_word()) else {
            let found = first.written(line).to_owned();
            self.problems
                .error(at(line, first), SpiceError::NotAStatement { found });
            return;
        };
        if initial == '.' {
            self.directive(line, tokens);
            return;
        }
        self.spectre |= starts_spectre(first);
        if self.spectre {
            self.spectre_statement(line, &without_parentheses(tokens));
            return;
        }
        let letter = initial.to_ascii_lowercase();
        let words = leading_words(line, tokens);
        let calls_subckt = words
            .last()
            .is_some_and(|last| self.subckt_names.contains(&last.key()));
        let kind = match letter {
            'x' => ElementKind::Instance,
            // Any other line whose last node-like word names a subcircuit of the file
            // (`cap1 a b CAP1`, `I3 a b inv`) is an instance written without its X.
            _ if calls_subckt && letter.is_alphabetic() => {
                let target = words
                    .last()
                    .map_or_else(String::new, |last| last.text.clone());
                self.problems.warning(
                    at(line, first),
                    SpiceError::InstanceWithoutX {
                        name: first.text.clone(),
                        subckt: target,
                    },
                );
                ElementKind::Instance
            }
            'm' => ElementKind::Mos,
            'r' => ElementKind::Resistor,
            'c' => ElementKind::Capacitor,
            letter if letter.is_alphabetic() => {
                let name = name_of(line, first);
                self.body().unsupported.push(Foreign { name, words });
                return;
            }
            _ => {
                let found = first.text.clone();
                self.problems
                    .error(at(line, first), SpiceError::NotAStatement { found });
                return;
            }
        };
        self.add_element(line, tokens, kind);
    }

    /// The element of `tokens` into the open subcircuit (or the top level); a name used
    /// twice in one scope is an error.
    pub(super) fn add_element(&mut self, line: &LogicalLine, tokens: &[Token], kind: ElementKind) {
        if let Some(element) = self.element(line, tokens, kind) {
            let scope = self.scope_name();
            let body = self.body();
            let key = element.name.key();
            if let Some(&first_line) = body.first_line_of_name.get(&key) {
                let error = SpiceError::DuplicateName {
                    name: element.name.text.clone(),
                    scope,
                    first_line,
                };
                self.problems.error(element.name.at, error);
                return;
            }
            body.first_line_of_name.insert(key, element.name.at.line);
            body.elements.push(element);
        }
    }

    /// Reads `name=value` at `tokens[index]` (a word followed by `=`); returns the next index.
    pub(super) fn param(
        &mut self,
        line: &LogicalLine,
        tokens: &[Token],
        index: usize,
        params: &mut Vec<Param>,
    ) -> usize {
        let name_token = &tokens[index];
        let name = Name {
            text: name_token.text.trim_start_matches('$').to_owned(),
            at: at(line, name_token),
        };
        let Some(value_token) = tokens
            .get(index + 2)
            .filter(|token| token.kind != TokenKind::Equals)
        else {
            self.problems.error(
                at(line, &tokens[index + 1]),
                SpiceError::MissingValue {
                    name: name.text.clone(),
                },
            );
            params.push(Param { name, value: None });
            return index + 2;
        };
        let value = self.value(line, value_token, &name.text);
        params.push(Param { name, value });
        index + 3
    }

    /// One token as a value (a number, a parameter, an expression).
    pub(super) fn value(&mut self, line: &LogicalLine, token: &Token, name: &str) -> Option<Value> {
        match parse_expression(&token.text, token.text_start, line, name) {
            Ok(expr) => Some(Value {
                expr,
                at: at(line, token),
            }),
            Err(_) if token.is_word() && looks_numeric(&token.text) => {
                let error = SpiceError::BadValue {
                    name: name.to_owned(),
                    found: token.text.clone(),
                };
                self.problems.error(at(line, token), error);
                None
            }
            Err(problem) => {
                let (location, error) = *problem;
                self.problems.error(location, error);
                None
            }
        }
    }
}
