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

    fn element(
        &mut self,
        line: &LogicalLine,
        tokens: &[Token],
        kind: ElementKind,
    ) -> Option<Element> {
        let name = name_of(line, &tokens[0]);
        let mut positional: Vec<&Token> = Vec::new();
        let mut params: Vec<Param> = Vec::new();
        let mut model_tag: Option<Name> = None;
        let mut index = 1;
        while index < tokens.len() {
            let token = &tokens[index];
            if token.kind == TokenKind::ModelTag {
                model_tag = Some(name_of(line, token));
                index += 1;
            } else if starts_param(tokens, index) {
                index = self.param(line, tokens, index, &mut params);
            } else if token.kind == TokenKind::Equals {
                // A stray `= value`: reported once, its value skipped.
                self.problems
                    .error(at(line, token), SpiceError::StrayEquals);
                index += 2;
            } else if token.text.eq_ignore_ascii_case("params:") {
                index += 1;
            } else if !params.is_empty() {
                let error = SpiceError::PositionalAfterParams {
                    element: name.text.clone(),
                    found: token.written(line).to_owned(),
                };
                self.problems.error(at(line, token), error);
                index += 1;
            } else {
                positional.push(token);
                index += 1;
            }
        }
        let mut seen: HashMap<String, ()> = HashMap::new();
        for param in &params {
            if seen.insert(param.name.key(), ()).is_some() {
                let error = SpiceError::RepeatedParam {
                    name: param.name.text.clone(),
                    element: name.text.clone(),
                };
                self.problems.error(param.name.at, error);
            }
        }
        let mut element = Element {
            kind,
            name,
            nodes: Vec::new(),
            target: None,
            value: None,
            params,
        };
        let complete = match kind {
            ElementKind::Mos => self.mos_items(line, &positional, model_tag, &mut element),
            ElementKind::Resistor | ElementKind::Capacitor => {
                self.passive_items(line, &positional, model_tag, &mut element)
            }
            ElementKind::Instance => self.instance_items(line, &positional, &mut element),
        };
        complete.then_some(element)
    }

    /// Every positional item must be a word (a node or a name), not an expression.
    fn words(
        &mut self,
        line: &LogicalLine,
        items: &[&Token],
        element: &Element,
    ) -> Option<Vec<Name>> {
        let mut names = Vec::new();
        for token in items {
            if !token.is_word() {
                let error = SpiceError::Unexpected {
                    found: token.written(line).to_owned(),
                    element: element.name.text.clone(),
                    why: "expected a node or model name".to_owned(),
                };
                self.problems.error(at(line, token), error);
                return None;
            }
            names.push(name_of(line, token));
        }
        Some(names)
    }

    fn expected_items(&mut self, element: &Element, what: &str, items: &[&Token]) {
        let found = if items.is_empty() {
            "nothing".to_owned()
        } else {
            let written: Vec<&str> = items.iter().map(|token| token.text.as_str()).collect();
            format!("\"{}\"", written.join(" "))
        };
        let error = SpiceError::ExpectedItems {
            what: what.to_owned(),
            element: element.name.text.clone(),
            found,
        };
        self.problems.error(element.name.at, error);
    }

    /// `M d g s b model`, or `M d g s model` (the bulk defaulted when the device is built).
    fn mos_items(
        &mut self,
        line: &LogicalLine,
        items: &[&Token],
        tag: Option<Name>,
        element: &mut Element,
    ) -> bool {
        let model = if tag.is_some() { 0 } else { 1 };
        if !(3 + model..=4 + model).contains(&items.len()) {
            self.expected_items(
                element,
                "drain, gate, source and bulk nodes and a model (or drain, gate, source and a model)",
                items,
            );
            return false;
        }
        let Some(mut names) = self.words(line, items, element) else {
            return false;
        };
        element.target = tag.or_else(|| names.pop());
        element.nodes = names;
        true
    }

    /// `R n1 n2 [value] [model]`, `C n1 n2 [value] [model]`; CDL `$[model]`.
    fn passive_items(
        &mut self,
        line: &LogicalLine,
        items: &[&Token],
        tag: Option<Name>,
        element: &mut Element,
    ) -> bool {
        if items.len() < 2 {
            self.expected_items(element, "two nodes", items);
            return false;
        }
        let Some(nodes) = self.words(line, &items[..2], element) else {
            return false;
        };
        element.nodes = nodes;
        element.target = tag;
        for token in &items[2..] {
            let is_value = token.kind == TokenKind::Expression || looks_numeric(&token.text);
            if is_value && element.value.is_none() {
                let name = if element.kind == ElementKind::Resistor {
                    "the resistance"
                } else {
                    "the capacitance"
                };
                element.value = self.value(line, token, name);
                if element.value.is_none() {
                    return false;
                }
            } else if !is_value && element.target.is_none() {
                element.target = Some(name_of(line, token));
            } else {
                let error = SpiceError::Unexpected {
                    found: token.written(line).to_owned(),
                    element: element.name.text.clone(),
                    why: "expected at most a value and a model after the two nodes".to_owned(),
                };
                self.problems.error(at(line, token), error);
                return false;
            }
        }
        true
    }

    /// `X nodes… subckt` or CDL `X nodes… / subckt`.
    fn instance_items(
        &mut self,
        line: &LogicalLine,
        items: &[&Token],
        element: &mut Element,
    ) -> bool {
        let slash = items
            .iter()
            .position(|token| token.is_word() && token.text.starts_with('/'));
        let (node_items, target) = match slash {
            Some(index) if items[index].text.len() > 1 && index + 1 == items.len() => {
                let token = items[index];
                let target = Name {
                    text: token.text[1..].to_owned(),
                    at: line.location(token.text_start + 1),
                };
                (&items[..index], Some(target))
            }
            Some(index)
                if items[index].text == "/"
                    && index + 2 == items.len()
                    && items[index + 1].is_word() =>
            {
                (&items[..index], Some(name_of(line, items[index + 1])))
            }
            Some(_) => {
                self.expected_items(element, "nodes, '/' and one subcircuit name", items);
                return false;
            }
            None if items.is_empty() => {
                self.expected_items(element, "nodes and a subcircuit name", items);
                return false;
            }
            None => (&items[..items.len() - 1], None),
        };
        let Some(mut names) = self.words(
            line,
            if target.is_some() { node_items } else { items },
            element,
        ) else {
            return false;
        };
        element.target = target.or_else(|| names.pop());
        element.nodes = names;
        true
    }
}
