//! Spectre netlists (MAGICAL's examples, Virtuoso exports): the statements a layout reads,
//! mapped onto the SPICE reader's. `subckt NAME (ports)` … `ends NAME`, `parameters`,
//! `global`, `include`, `model NAME TYPE type=n|p` are the SPICE directives; an instance is
//! `NAME (nodes) MASTER params`, whatever its first letter: its master is a subcircuit of
//! the file, a source (left out with a warning, as in SPICE) or a device model (resolved as
//! an X line calling one); analyses, options and `save`/`ic`/`nodeset` are a testbench's and
//! are skipped. `simulator lang=spice|spectre` switches dialect; nodes in
//! parentheses lose them (the locations stay those of the file).

use crate::circuit::DeviceType;
use crate::spice::error::SpiceError;
use crate::spice::lexer::{Token, TokenKind};
use crate::spice::lines::LogicalLine;
use crate::spice::parser::{DeckParser, ElementKind, at, name_of, starts_param};

/// The first word of a Spectre statement that is not an instance.
pub(super) const SPECTRE_KEYWORDS: [&str; 5] = ["subckt", "topckt", "simulator", "ends", "inline"];

/// Spectre's source primitives: stimuli of a testbench, not parts of a layout.
fn source_kind(master: &str) -> Option<&'static str> {
    match master.to_ascii_lowercase().as_str() {
        "vsource" => Some("a voltage source"),
        "isource" => Some("a current source"),
        "vcvs" | "vccs" | "ccvs" | "cccs" | "pvcvs" | "pvccs" | "pccvs" | "pcccs" => {
            Some("a controlled source")
        }
        "bsource" => Some("a behavioural source"),
        "port" => Some("a port source"),
        _ => None,
    }
}

/// Spectre's analyses and control statements (`dcOp dc write="spectre.dc"`,
/// `simulatorOptions options …`, `noise (out 0) noise …`): a testbench's, not a layout's.
const ANALYSES: [&str; 24] = [
    "ac",
    "dc",
    "tran",
    "noise",
    "pz",
    "stb",
    "xf",
    "sp",
    "pss",
    "pac",
    "pnoise",
    "pxf",
    "hb",
    "hbac",
    "info",
    "options",
    "set",
    "shell",
    "sweep",
    "montecarlo",
    "alter",
    "altergroup",
    "check",
    "checklimit",
];

/// Statements that start with their keyword and name nodes or values, never a part.
const NODE_STATEMENTS: [&str; 3] = ["save", "ic", "nodeset"];

/// The tokens with each word's enclosing parentheses removed (`(d` → `d`, `b)` → `b`,
/// `(` alone dropped), except a value's after `=` (Virtuoso writes
/// `ad=((1-int(1/2)*2)*8.5e-08)*w`); locations point into the file as written.
pub(super) fn without_parentheses(tokens: &[Token]) -> Vec<Token> {
    tokens
        .iter()
        .enumerate()
        .filter_map(|(index, token)| {
            let a_value = index > 0 && tokens[index - 1].kind == TokenKind::Equals;
            if token.kind != TokenKind::Word || a_value {
                return Some(token.clone());
            }
            let leading = token.text.len() - token.text.trim_start_matches('(').len();
            let text = token.text[leading..].trim_end_matches(')');
            (!text.is_empty()).then(|| Token {
                text: text.to_owned(),
                text_start: token.text_start + leading,
                ..token.clone()
            })
        })
        .collect()
}

/// The SPICE directive a Spectre statement keyword stands for.
fn directive_of(keyword: &str) -> Option<&'static str> {
    match keyword.to_ascii_lowercase().as_str() {
        "subckt" | "topckt" => Some(".subckt"),
        "ends" => Some(".ends"),
        "parameters" => Some(".param"),
        "global" => Some(".global"),
        "include" | "ahdl_include" => Some(".include"),
        _ => None,
    }
}

/// True when the first word starts a Spectre statement (the file is then read as Spectre).
pub(super) fn starts_spectre(first: &Token) -> bool {
    SPECTRE_KEYWORDS
        .iter()
        .any(|keyword| first.text.eq_ignore_ascii_case(keyword))
}

impl DeckParser<'_> {
    /// One Spectre statement. `tokens` come without parentheses.
    pub(super) fn spectre_statement(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let first = &tokens[0];
        let keyword = first.text.to_ascii_lowercase();
        if keyword == "simulator" {
            self.simulator(tokens);
            return;
        }
        if keyword == "inline" && tokens.len() > 1 {
            return self.spectre_statement(line, &tokens[1..]);
        }
        if keyword == "model" {
            self.spectre_model(line, tokens);
            return;
        }
        if NODE_STATEMENTS.contains(&keyword.as_str()) {
            return;
        }
        if let Some(directive) = directive_of(&keyword) {
            let mut as_spice = tokens.to_vec();
            as_spice[0].text = directive.to_owned();
            self.directive(line, &as_spice);
            return;
        }
        self.spectre_instance(line, tokens);
    }

    /// `simulator lang=spice|spectre`: the dialect of the lines that follow.
    fn simulator(&mut self, tokens: &[Token]) {
        for index in 1..tokens.len() {
            if starts_param(tokens, index)
                && tokens[index].text.eq_ignore_ascii_case("lang")
                && let Some(value) = tokens.get(index + 2)
            {
                self.spectre = !value.text.eq_ignore_ascii_case("spice");
            }
        }
    }

    /// `model NAME TYPE … type=n|p`: a MOS model's polarity, or a resistor or capacitor.
    fn spectre_model(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let Some(name) = tokens.get(1).filter(|token| token.is_word()) else {
            let error = SpiceError::EmptyStatement {
                statement: "model".to_owned(),
                what: "a model name and a type (e.g. model mynfet bsim4 type=n)",
            };
            self.problems.error(at(line, &tokens[0]), error);
            return;
        };
        let polarity = (2..tokens.len())
            .find(|&index| {
                starts_param(tokens, index) && tokens[index].text.eq_ignore_ascii_case("type")
            })
            .and_then(|index| tokens.get(index + 2))
            .map(|value| value.text.to_ascii_lowercase());
        let kind = tokens
            .get(2)
            .map(|token| token.text.to_ascii_lowercase())
            .unwrap_or_default();
        let device_type = match (polarity.as_deref(), kind.as_str()) {
            (Some("n"), _) => DeviceType::Nmos,
            (Some("p"), _) => DeviceType::Pmos,
            (_, "resistor") => DeviceType::Resistor,
            (_, "capacitor") => DeviceType::Capacitor,
            _ => return,
        };
        self.deck
            .model_cards
            .push((name_of(line, name), device_type));
    }

    /// `NAME (nodes) MASTER params`: an instance of a subcircuit or of a device model, or a
    /// source left out.
    fn spectre_instance(&mut self, line: &LogicalLine, tokens: &[Token]) {
        let words: Vec<&Token> = (1..tokens.len())
            .take_while(|&index| tokens[index].is_word() && !starts_param(tokens, index))
            .map(|index| &tokens[index])
            .collect();
        let Some(master) = words.last() else {
            let error = SpiceError::NotAStatement {
                found: tokens[0].written(line).to_owned(),
            };
            self.problems.error(at(line, &tokens[0]), error);
            return;
        };
        if ANALYSES.contains(&master.text.to_ascii_lowercase().as_str()) {
            let warning = SpiceError::AnalysisIgnored {
                name: tokens[0].text.clone(),
                kind: master.text.clone(),
            };
            self.problems.warning(at(line, &tokens[0]), warning);
            return;
        }
        if let Some(what) = source_kind(&master.text) {
            let nodes = &words[..words.len() - 1];
            let between = match nodes {
                [] => String::new(),
                [node] => format!(" at {}", node.text),
                [first, second, ..] => format!(" between {} and {}", first.text, second.text),
            };
            let warning = SpiceError::SourceIgnored {
                name: tokens[0].text.clone(),
                what,
                between,
            };
            self.problems.warning(at(line, &tokens[0]), warning);
            return;
        }
        self.add_element(line, tokens, ElementKind::Instance);
    }
}
