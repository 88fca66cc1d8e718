//! An element line's items after its name: the nodes, then a MOS's model, a resistor's or
//! capacitor's value or model, an instance's subcircuit; each kind's count checked, its
//! parameters read (`parser.rs` says which kind a line is).

use std::collections::HashMap;

use crate::spice::error::SpiceError;
use crate::spice::expr::looks_numeric;
use crate::spice::lexer::{Token, TokenKind};
use crate::spice::lines::LogicalLine;
use crate::spice::parser::{
    DeckParser, Element, ElementKind, Name, Param, at, name_of, starts_param,
};

impl DeckParser<'_> {
    pub(super) fn element(
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
