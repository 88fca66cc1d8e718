//! Dot statements: `.subckt`/`.ends`, `.param`, `.global`, `.model`, `.option scale`,
//! `.include`/`.lib` (not followed), `.control`…`.endc` (skipped); any other is ignored
//! with a warning.

use crate::circuit::DeviceType;
use crate::spice::error::SpiceError;
use crate::spice::expr::parse_expression;
use crate::spice::lexer::{Token, TokenKind};
use crate::spice::lines::LogicalLine;
use crate::spice::parser::{
    Body, DeckParser, Name, Param, Subckt, Value, at, name_of, starts_param,
};

impl DeckParser<'_> {
    pub(super) fn directive(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let keyword = tokens[0].text[1..].to_ascii_lowercase();
        match keyword.as_str() {
            "subckt" => self.subckt(line, tokens),
            "ends" => self.ends(line, tokens),
            "param" | "params" => self.params(line, tokens),
            "global" => {
                if tokens.len() == 1 {
                    let error = SpiceError::EmptyStatement {
                        statement: ".global".to_owned(),
                        what: "the names of the global nets",
                    };
                    self.problems.error(at(line, &tokens[0]), error);
                }
                let names: Vec<Name> = tokens[1..]
                    .iter()
                    .filter(|token| token.is_word())
                    .map(|token| name_of(line, token))
                    .collect();
                self.deck.globals.extend(names);
            }
            "model" => self.model(line, tokens),
            "option" | "options" | "opt" => {
                for index in 1..tokens.len() {
                    if starts_param(tokens, index)
                        && tokens[index].text.eq_ignore_ascii_case("scale")
                    {
                        let mut params = Vec::new();
                        self.param(line, tokens, index, &mut params);
                        self.deck.scale = params.pop().and_then(|param| param.value);
                    }
                }
            }
            "include" | "inc" | "lib" => {
                let target = tokens
                    .get(1)
                    .map_or_else(String::new, |token| token.written(line).to_owned());
                self.problems.warning(
                    at(line, &tokens[0]),
                    SpiceError::NotFollowed {
                        name: keyword,
                        target,
                    },
                );
            }
            "control" => self.in_control = true,
            "endl" | "endc" | "end" => {}
            _ => self.problems.warning(
                at(line, &tokens[0]),
                SpiceError::IgnoredDirective { name: keyword },
            ),
        }
    }

    fn subckt(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let Some(name_token) = tokens
            .get(1)
            .filter(|token| token.is_word() && !starts_param(tokens, 1))
        else {
            self.problems
                .error(at(line, &tokens[0]), SpiceError::SubcktWithoutName);
            return;
        };
        let name = name_of(line, name_token);
        if let Some(outer) = self.open.take() {
            let error = SpiceError::NestedSubckt {
                name: name.text.clone(),
                outer: outer.name.text.clone(),
            };
            self.problems.error(at(line, &tokens[0]), error);
            self.deck.subckts.push(outer);
        }
        let mut subckt = Subckt {
            name,
            ports: Vec::new(),
            params: Vec::new(),
            body: Body::default(),
        };
        let mut index = 2;
        while index < tokens.len() {
            let token = &tokens[index];
            if starts_param(tokens, index) {
                index = self.param(line, tokens, index, &mut subckt.params);
                continue;
            }
            index += 1;
            if token.text.eq_ignore_ascii_case("params:") {
                continue;
            }
            if !token.is_word() || !subckt.params.is_empty() {
                let error = SpiceError::Unexpected {
                    found: token.written(line).to_owned(),
                    element: format!(".subckt {}", subckt.name.text),
                    why: "expected port names, then name=value parameters".to_owned(),
                };
                self.problems.error(at(line, token), error);
                continue;
            }
            let port = name_of(line, token);
            if subckt.ports.iter().any(|known| known.key() == port.key()) {
                let error = SpiceError::DuplicatePort {
                    port: port.text.clone(),
                    subckt: subckt.name.text.clone(),
                };
                self.problems.error(port.at, error);
                continue;
            }
            subckt.ports.push(port);
        }
        self.open = Some(subckt);
    }

    fn ends(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let Some(subckt) = self.open.take() else {
            self.problems
                .error(at(line, &tokens[0]), SpiceError::EndsWithoutSubckt);
            return;
        };
        if let Some(written) = tokens.get(1)
            && !written.text.eq_ignore_ascii_case(&subckt.name.text)
        {
            let error = SpiceError::EndsNameMismatch {
                expected: subckt.name.text.clone(),
                found: written.text.clone(),
            };
            // SPICE simulators end the open subcircuit whatever the name says.
            self.problems.warning(at(line, written), error);
        }
        self.deck.subckts.push(subckt);
    }

    /// `.param a=1 b = {a*2} c='a+b' d=2*a+1`: an unquoted value runs to the next `name=`.
    fn params(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let mut params = Vec::new();
        let mut index = 1;
        while index < tokens.len() {
            if !starts_param(tokens, index) {
                let error = SpiceError::EmptyParam {
                    found: format!("\"{}\"", tokens[index].written(line)),
                };
                self.problems.error(at(line, &tokens[index]), error);
                index += 1;
                continue;
            }
            let name = name_of(line, &tokens[index]);
            let value_start = index + 2;
            let mut value_end = value_start;
            while value_end < tokens.len()
                && !starts_param(tokens, value_end)
                && tokens[value_end].kind != TokenKind::Equals
            {
                value_end += 1;
            }
            if value_end == value_start {
                self.problems.error(
                    at(line, &tokens[index + 1]),
                    SpiceError::MissingValue {
                        name: name.text.clone(),
                    },
                );
                params.push(Param { name, value: None });
                index = value_end.max(index + 2);
                continue;
            }
            let value = if value_end == value_start + 1 {
                self.value(line, &tokens[value_start], &name.text)
            } else {
                let (first, last) = (&tokens[value_start], &tokens[value_end - 1]);
                let text = &line.text[first.start..last.end];
                match parse_expression(text, first.start, line, &name.text) {
                    Ok(expr) => Some(Value {
                        expr,
                        at: at(line, first),
                    }),
                    Err(problem) => {
                        let (location, error) = *problem;
                        self.problems.error(location, error);
                        None
                    }
                }
            };
            params.push(Param { name, value });
            index = value_end;
        }
        if tokens.len() == 1 {
            let error = SpiceError::EmptyParam {
                found: "nothing".to_owned(),
            };
            self.problems.error(at(line, &tokens[0]), error);
        }
        self.body().params.extend(params);
    }

    /// `.model NAME TYPE (…)`: the type names the device kind.
    fn model(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let (Some(name), Some(kind)) = (tokens.get(1), tokens.get(2)) else {
            let error = SpiceError::EmptyStatement {
                statement: ".model".to_owned(),
                what: "a model name and a type (e.g. .model mynfet nmos)",
            };
            self.problems.error(at(line, &tokens[0]), error);
            return;
        };
        let kind = kind
            .text
            .split('(')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        let device_type = match kind.as_str() {
            "nmos" => DeviceType::Nmos,
            "pmos" => DeviceType::Pmos,
            "r" | "res" => DeviceType::Resistor,
            "c" | "cap" => DeviceType::Capacitor,
            _ => return,
        };
        self.deck
            .model_cards
            .push((name_of(line, name), device_type));
    }
}
