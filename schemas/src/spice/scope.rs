//! Parameter scopes: the global `.param`s, and per subcircuit instance its parameters
//! (defaults from `.subckt … NAME=value`, overridden by the X line) and its own `.param`s.
//! Values are computed on first use, in any order of definition; a cycle is an error.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::issue::TextLocation;
use crate::spice::error::SpiceError;
use crate::spice::expr::{EvalError, ParamValues, evaluate};
use crate::spice::parser::{Param, Value};

/// The longest chain of parameters defined through parameters (no stack overflow).
const MAX_PARAM_DEPTH: usize = 50;

pub(crate) struct Scope<'a> {
    /// Values fixed by the instantiating X line.
    fixed: HashMap<String, f64>,
    /// Definitions by lower-case name; a later definition replaces an earlier one.
    definitions: HashMap<String, &'a Param>,
    parent: Option<&'a Scope<'a>>,
    cache: RefCell<HashMap<String, Result<f64, ()>>>,
}

impl<'a> Scope<'a> {
    pub fn new(
        definitions: impl IntoIterator<Item = &'a Param>,
        fixed: HashMap<String, f64>,
        parent: Option<&'a Scope<'a>>,
    ) -> Self {
        Self {
            fixed,
            definitions: definitions
                .into_iter()
                .map(|param| (param.name.key(), param))
                .collect(),
            parent,
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// Whether `name` (lower case) is a parameter this scope sees.
    pub fn defines(&self, name: &str) -> bool {
        let mut scope = Some(self);
        while let Some(current) = scope {
            if current.fixed.contains_key(name) || current.definitions.contains_key(name) {
                return true;
            }
            scope = current.parent;
        }
        false
    }

    /// The value the instantiating line fixed for `name` (lower case), if it did.
    pub fn fixed(&self, name: &str) -> Option<f64> {
        self.fixed.get(name).copied()
    }

    /// Evaluates a value written in this scope; `name` is what it is for.
    pub fn evaluate(&self, value: &Value, name: &str) -> Result<f64, EvalError> {
        let mut evaluation = Evaluation {
            scope: self,
            stack: Vec::new(),
        };
        evaluate(&value.expr, name, value.at, &mut evaluation)
    }

    /// The value of the parameter `name` (lower case) as this scope sees it.
    pub fn param(&self, name: &str, at: TextLocation) -> Result<f64, EvalError> {
        let mut evaluation = Evaluation {
            scope: self,
            stack: Vec::new(),
        };
        evaluation.value_of(name, at, name)
    }
}

struct Evaluation<'s, 'a> {
    scope: &'s Scope<'a>,
    /// Parameters being computed (scope address, name), to find cycles.
    stack: Vec<(usize, String)>,
}

impl ParamValues for Evaluation<'_, '_> {
    fn value_of(
        &mut self,
        name: &str,
        at: TextLocation,
        value_name: &str,
    ) -> Result<f64, EvalError> {
        let mut scope = self.scope;
        loop {
            if let Some(value) = scope.fixed.get(name) {
                return Ok(*value);
            }
            if let Some(param) = scope.definitions.get(name) {
                return self.compute(scope, param, at);
            }
            match scope.parent {
                Some(parent) => scope = parent,
                None => {
                    return Err(EvalError::New(Box::new((
                        at,
                        SpiceError::UnknownParam {
                            param: name.to_owned(),
                            name: value_name.to_owned(),
                        },
                    ))));
                }
            }
        }
    }
}

impl Evaluation<'_, '_> {
    fn compute(
        &mut self,
        scope: &Scope<'_>,
        param: &Param,
        at: TextLocation,
    ) -> Result<f64, EvalError> {
        let key = param.name.key();
        if let Some(cached) = scope.cache.borrow().get(&key) {
            return cached.map_err(|()| EvalError::Reported);
        }
        let frame = (scope as *const Scope<'_> as usize, key.clone());
        if let Some(start) = self.stack.iter().position(|entry| *entry == frame) {
            let mut names: Vec<&str> = self.stack[start..]
                .iter()
                .map(|(_, name)| name.as_str())
                .collect();
            names.push(&key);
            return Err(EvalError::New(Box::new((
                at,
                SpiceError::ParamCycle {
                    param: param.name.text.clone(),
                    cycle: names.join(" → "),
                },
            ))));
        }
        if self.stack.len() >= MAX_PARAM_DEPTH {
            let what = "parameters are defined through more than 50 others; simplify the chain";
            return Err(EvalError::New(Box::new((at, SpiceError::TooDeep { what }))));
        }
        let Some(value) = &param.value else {
            scope.cache.borrow_mut().insert(key, Err(()));
            return Err(EvalError::Reported);
        };
        self.stack.push(frame);
        let mut inner = Evaluation {
            scope,
            stack: std::mem::take(&mut self.stack),
        };
        let result = evaluate(&value.expr, &param.name.text, value.at, &mut inner);
        self.stack = inner.stack;
        self.stack.pop();
        match result {
            Ok(number) => {
                scope.cache.borrow_mut().insert(key, Ok(number));
                Ok(number)
            }
            // A cycle is reported where it closes; the parameters on it fail quietly.
            Err(error) => {
                scope.cache.borrow_mut().insert(key, Err(()));
                Err(error)
            }
        }
    }
}
