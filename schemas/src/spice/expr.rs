//! Values and expressions: numbers with SPICE scale factors (`4u`, `500n`, `1e-6`, `1meg`,
//! `10k`, `5f`; `m` is milli, `meg` is 1e6; case-insensitive; a unit such as the `m` of
//! `4um` or the `F` of `10fF` may follow), parameter names, `+ - * /`, parentheses and the
//! functions of `expr_functions.rs` (`int(…)`, `max(a, b)`).
//! An expression is parsed when the line is read (syntax errors at once) and evaluated when
//! its subcircuit is instantiated (parameters then have values).

use crate::issue::TextLocation;
use crate::spice::error::SpiceError;
use crate::spice::expr_functions::{FUNCTION_NAMES, Function};
use crate::spice::lines::LogicalLine;

/// A problem and where it is (boxed: problems are rare, results are everywhere).
pub(crate) type Located = Box<(TextLocation, SpiceError)>;

/// A parsed expression; every name keeps where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    Number(f64),
    Param {
        name: String,
        at: TextLocation,
    },
    Negate(Box<Expr>),
    /// `int(…)`, `max(a, b)`: as many arguments as the function takes.
    Call {
        function: Function,
        args: Vec<Expr>,
    },
    /// `first op rest[0].1 op rest[1].1 …`, left to right, all `+ -` or all `* /`: a chain
    /// (not a left-deep tree) so that a long sum evaluates without deep recursion.
    Chain {
        first: Box<Expr>,
        rest: Vec<(char, Expr)>,
    },
}

/// Scale factors, longest first so that `meg` and `mil` win over `m`.
const SCALES: [(&str, f64); 11] = [
    ("meg", 1e6),
    ("mil", 25.4e-6),
    ("t", 1e12),
    ("g", 1e9),
    ("k", 1e3),
    ("m", 1e-3),
    ("u", 1e-6),
    ("n", 1e-9),
    ("p", 1e-12),
    ("f", 1e-15),
    ("a", 1e-18),
];

/// Units that may follow a number or its scale factor; they do not change the value.
const UNITS: [&str; 9] = ["m", "f", "h", "s", "v", "a", "hz", "ohm", "ohms"];

/// The multiplier of a suffix such as `u`, `meg`, `um`, `fF` or `kohm`; None when it is not one.
fn suffix_multiplier(suffix: &str) -> Option<f64> {
    let suffix = suffix.to_ascii_lowercase();
    if suffix.is_empty()
        || UNITS.contains(&suffix.as_str()) && !SCALES.iter().any(|(s, _)| *s == suffix)
    {
        return Some(1.0);
    }
    for (scale, multiplier) in SCALES {
        if let Some(rest) = suffix.strip_prefix(scale)
            && (rest.is_empty() || UNITS.contains(&rest))
        {
            return Some(multiplier);
        }
    }
    // A unit alone that is also a scale letter (m, f, a) was taken as the scale above.
    None
}

/// Reads a number literal at the start of `text`: (value, bytes used) or None when `text`
/// does not start with one or its suffix is not a scale factor or unit.
pub(crate) fn number_prefix(text: &str) -> Option<(f64, usize)> {
    let bytes = text.as_bytes();
    let count_digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count()
    };
    let integer_digits = count_digits(0);
    let mut end = integer_digits;
    let mut fraction_digits = 0;
    if end < bytes.len() && bytes[end] == b'.' {
        fraction_digits = count_digits(end + 1);
        end += 1 + fraction_digits;
    }
    if integer_digits + fraction_digits == 0 {
        return None;
    }
    // An exponent only when digits follow it (`1e-6`); `1e` alone is a bad suffix.
    if end < bytes.len() && matches!(bytes[end], b'e' | b'E') {
        let mut exponent = end + 1;
        if exponent < bytes.len() && matches!(bytes[exponent], b'+' | b'-') {
            exponent += 1;
        }
        if exponent < bytes.len() && bytes[exponent].is_ascii_digit() {
            while exponent < bytes.len() && bytes[exponent].is_ascii_digit() {
                exponent += 1;
            }
            end = exponent;
        }
    }
    let mantissa: f64 = text[..end].parse().ok()?;
    let mut suffix_end = end;
    while suffix_end < bytes.len() && bytes[suffix_end].is_ascii_alphabetic() {
        suffix_end += 1;
    }
    let multiplier = suffix_multiplier(&text[end..suffix_end])?;
    Some((mantissa * multiplier, suffix_end))
}

/// A whole token as a number (`4u`, `1e-6`, `-2.5`); None when it is anything else.
#[cfg(test)]
pub(crate) fn parse_number(text: &str) -> Option<f64> {
    let (sign, digits) = match text.as_bytes().first() {
        Some(b'-') => (-1.0, &text[1..]),
        Some(b'+') => (1.0, &text[1..]),
        _ => (1.0, text),
    };
    match number_prefix(digits) {
        Some((value, used)) if used == digits.len() => Some(sign * value),
        _ => None,
    }
}

/// True when a token looks like a number (so that a bad suffix is a bad value, not a name).
pub(crate) fn looks_numeric(text: &str) -> bool {
    let text = text.strip_prefix(['-', '+']).unwrap_or(text);
    let mut chars = text.chars();
    match chars.next() {
        Some(character) if character.is_ascii_digit() => true,
        Some('.') => chars
            .next()
            .is_some_and(|character| character.is_ascii_digit()),
        _ => false,
    }
}

/// Parses the expression `text`, found at byte `offset` of `line`. `name` is what the value
/// is for (for messages). Errors point at the offending character.
pub(crate) fn parse_expression(
    text: &str,
    offset: usize,
    line: &LogicalLine,
    name: &str,
) -> Result<Expr, Located> {
    let mut parser = ExprParser {
        text,
        position: 0,
        offset,
        line,
        name,
        depth: 0,
        terms: 0,
    };
    let expression = parser.sum()?;
    parser.skip_space();
    if parser.position < text.len() {
        return Err(parser.expected("an operator (+ - * /) or the end of the value"));
    }
    Ok(expression)
}

/// Deepest nesting of parentheses and signs, and most numbers and names in one value:
/// beyond them is an error, never a stack overflow.
const MAX_DEPTH: usize = 64;
const MAX_TERMS: usize = 100;

struct ExprParser<'a> {
    text: &'a str,
    position: usize,
    offset: usize,
    line: &'a LogicalLine,
    name: &'a str,
    depth: usize,
    terms: usize,
}

impl ExprParser<'_> {
    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.position += 1;
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.position..].chars().next()
    }

    fn here(&self) -> TextLocation {
        self.line.location(self.offset + self.position)
    }

    fn expected(&self, expected: &'static str) -> Located {
        let found = match self.text[self.position..].chars().next() {
            None => "the end of the value".to_owned(),
            Some(_) => {
                let rest: String = self.text[self.position..].chars().take(12).collect();
                format!("\"{rest}\"")
            }
        };
        Box::new((
            self.here(),
            SpiceError::BadExpression {
                name: self.name.to_owned(),
                expected,
                found,
            },
        ))
    }

    fn sum(&mut self) -> Result<Expr, Located> {
        let first = self.product()?;
        let mut rest = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(op @ ('+' | '-')) => {
                    self.position += 1;
                    rest.push((op, self.product()?));
                }
                _ if rest.is_empty() => return Ok(first),
                _ => {
                    let first = Box::new(first);
                    return Ok(Expr::Chain { first, rest });
                }
            }
        }
    }

    fn product(&mut self) -> Result<Expr, Located> {
        let first = self.unary()?;
        let mut rest = Vec::new();
        loop {
            self.skip_space();
            match self.peek() {
                Some(op @ ('*' | '/')) => {
                    self.position += 1;
                    rest.push((op, self.unary()?));
                }
                _ if rest.is_empty() => return Ok(first),
                _ => {
                    let first = Box::new(first);
                    return Ok(Expr::Chain { first, rest });
                }
            }
        }
    }

    fn unary(&mut self) -> Result<Expr, Located> {
        self.skip_space();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.expected("a shallower expression (at most 64 nested levels)"));
        }
        let result = match self.peek() {
            Some('-') => {
                self.position += 1;
                self.unary().map(|inner| Expr::Negate(Box::new(inner)))
            }
            Some('+') => {
                self.position += 1;
                self.unary()
            }
            _ => self.primary(),
        };
        self.depth -= 1;
        result
    }

    fn primary(&mut self) -> Result<Expr, Located> {
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return Err(self.expected("a shorter value (at most 100 numbers and names)"));
        }
        let start = self.position;
        let rest = &self.text[start..];
        match self.peek() {
            Some('(') => {
                self.position += 1;
                let inner = self.sum()?;
                self.skip_space();
                if self.peek() != Some(')') {
                    return Err(self.expected("a closing ')'"));
                }
                self.position += 1;
                Ok(inner)
            }
            Some(character) if character.is_ascii_digit() || character == '.' => {
                match number_prefix(rest) {
                    Some((value, used)) => {
                        self.position += used;
                        Ok(Expr::Number(value))
                    }
                    None => Err(self.expected(
                        "a number with an optional scale factor (t g meg k mil m u n p f a)",
                    )),
                }
            }
            Some(character) if character.is_alphabetic() || character == '_' => {
                let length = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
                    .unwrap_or(rest.len());
                let at = self.here();
                self.position += length;
                self.skip_space();
                if self.peek() == Some('(') {
                    let Some(function) = Function::named(&rest[..length]) else {
                        self.position = start;
                        return Err(self.expected(FUNCTION_NAMES));
                    };
                    return self.call(function);
                }
                Ok(Expr::Param {
                    name: rest[..length].to_ascii_lowercase(),
                    at,
                })
            }
            _ => Err(self.expected("a number, a parameter name or '('")),
        }
    }

    /// The arguments of `function`, from its '(' to its ')': as many as it takes.
    fn call(&mut self, function: Function) -> Result<Expr, Located> {
        self.position += 1;
        let mut args = vec![self.sum()?];
        loop {
            self.skip_space();
            match self.peek() {
                Some(',') if args.len() < function.arity() => {
                    self.position += 1;
                    args.push(self.sum()?);
                }
                Some(')') if args.len() == function.arity() => {
                    self.position += 1;
                    return Ok(Expr::Call { function, args });
                }
                _ if args.len() < function.arity() => {
                    return Err(self.expected("',' and the function's next argument"));
                }
                _ => return Err(self.expected("the closing ')' of the function")),
            }
        }
    }
}

/// Why a value has none: a new problem to report, or one already reported (a parameter
/// whose own value failed is reported once, not at every use).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EvalError {
    New(Located),
    Reported,
}

/// How parameter names get their values while an expression is evaluated.
pub(crate) trait ParamValues {
    /// The value of `name` (lower case) referenced at `at` in the value of `value_name`.
    fn value_of(
        &mut self,
        name: &str,
        at: TextLocation,
        value_name: &str,
    ) -> Result<f64, EvalError>;
}

/// Evaluates `expression`; `name` is what the value is for, `at` where it was written.
pub(crate) fn evaluate(
    expression: &Expr,
    name: &str,
    at: TextLocation,
    params: &mut dyn ParamValues,
) -> Result<f64, EvalError> {
    let value = match expression {
        Expr::Number(value) => *value,
        Expr::Param {
            name: param,
            at: param_at,
        } => params.value_of(param, *param_at, name)?,
        Expr::Negate(inner) => -evaluate(inner, name, at, params)?,
        Expr::Call { function, args } => {
            let mut values = Vec::with_capacity(args.len());
            for arg in args {
                values.push(evaluate(arg, name, at, params)?);
            }
            function.apply(&values)
        }
        Expr::Chain { first, rest } => {
            let mut value = evaluate(first, name, at, params)?;
            for (op, operand) in rest {
                let operand = evaluate(operand, name, at, params)?;
                value = match op {
                    '+' => value + operand,
                    '-' => value - operand,
                    '*' => value * operand,
                    _ if operand == 0.0 => {
                        let error = SpiceError::DivisionByZero {
                            name: name.to_owned(),
                        };
                        return Err(EvalError::New(Box::new((at, error))));
                    }
                    _ => value / operand,
                };
            }
            value
        }
    };
    if value.is_finite() {
        Ok(value)
    } else {
        Err(EvalError::New(Box::new((
            at,
            SpiceError::NotFinite {
                name: name.to_owned(),
            },
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_scale_factors() {
        let cases = [
            ("4u", 4e-6),
            ("500n", 500e-9),
            ("1e-6", 1e-6),
            ("1E-6", 1e-6),
            ("2.5", 2.5),
            (".5u", 0.5e-6),
            ("1meg", 1e6),
            ("1MEG", 1e6),
            ("1m", 1e-3),
            ("1M", 1e-3),
            ("10k", 1e4),
            ("5f", 5e-15),
            ("3p", 3e-12),
            ("2g", 2e9),
            ("1t", 1e12),
            ("1mil", 25.4e-6),
            ("4um", 4e-6),
            ("10fF", 10e-15),
            ("1kohm", 1e3),
            ("2e3k", 2e6),
            ("-1u", -1e-6),
        ];
        for (text, expected) in cases {
            let value = parse_number(text).unwrap_or_else(|| panic!("{text}"));
            assert!(
                (value - expected).abs() <= expected.abs() * 1e-12,
                "{text}: {value}"
            );
        }
        for bad in ["4x", "1e", "u4", "", "4uu", "1.2.3", "4 u", "--1"] {
            assert_eq!(parse_number(bad), None, "{bad}");
        }
    }
}
