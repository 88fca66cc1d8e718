//! Structure-aware mutation of JSON documents for the loader property tests: walk to a
//! value chosen at random, then delete it, replace it (another JSON type, huge or
//! negative numbers, literals JSON forbids such as `NaN`, very long strings, deep
//! nesting, a copy of another value of the document), rename or add keys, duplicate
//! entries or keys. The document is written back to text, so a mutation may also make
//! the text invalid JSON (`NaN`, `1e400`, 5000 nested brackets), as a user's file can be.

#![allow(dead_code)] // each test binary uses a part

use proptest::prelude::*;
use serde_json::{Map, Value};

/// A property's configuration: `PROPTEST_CASES` cases when set (the long run on
/// demand), else `default` (what `cargo test` and CI run). A failing case is printed,
/// shrunk, not written to a regressions file.
pub fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Text that is spliced into the written document verbatim: not a JSON value (or not one
/// serde_json would write), so it cannot be built as a `Value`.
pub const RAW_LITERALS: &[&str] = &[
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "1e-400",
    "0.1e99999",
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1.7976931348623157e308",
    "5e-324",
    "-0",
    "-0.0",
    "01",
    "0x10",
    "+1",
    ".5",
    "1.",
    "undefined",
    "'single'",
    "\"\\ud800\"",
    "\"\\u0000\"",
];

/// A value put in place of another.
#[derive(Debug, Clone)]
pub enum Replacement {
    Null,
    Bool(bool),
    Integer(i64),
    Unsigned(u64),
    Float(f64),
    Text(String),
    /// `length` copies of `character`.
    LongText(usize, char),
    EmptyArray,
    EmptyObject,
    /// An array of `count` copies of a small value.
    LongArray(usize),
    /// `depth` nested arrays (or objects) as text; past serde_json's limit of 128 the
    /// document no longer reads.
    Nested {
        depth: usize,
        objects: bool,
    },
    /// A numeric literal of `digits` digits.
    LongNumber(usize),
    /// One of [`RAW_LITERALS`].
    Raw(usize),
    /// A copy of another value of the document (chosen like the target).
    CopyOf(Vec<usize>),
}

#[derive(Debug, Clone)]
pub enum Operation {
    Delete,
    Replace(Replacement),
    RenameKey(String),
    InsertKey(String, Replacement),
    /// The entry `count` more times in its array (an object: its key written twice).
    Duplicate(usize, Replacement),
}

/// One mutation: where (random choices down the tree) and what.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub path: Vec<usize>,
    pub operation: Operation,
}

fn key_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("/".to_owned()),
        Just("~".to_owned()),
        Just("a/b~0c~1".to_owned()),
        Just("X1/M3".to_owned()),
        Just("vdd".to_owned()),
        Just("schema_version".to_owned()),
        Just("NF".to_owned()),
        Just("é\u{0}\u{202e}".to_owned()),
        "[a-z_]{1,12}",
        any::<String>(),
    ]
}

pub fn replacement() -> impl Strategy<Value = Replacement> {
    prop_oneof![
        Just(Replacement::Null),
        any::<bool>().prop_map(Replacement::Bool),
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just(-1i64),
            Just(0),
            Just(1),
            Just(2),
            Just(65_536),
            any::<i64>()
        ]
        .prop_map(Replacement::Integer),
        Just(Replacement::Unsigned(u64::MAX)),
        prop_oneof![
            Just(f64::MAX),
            Just(f64::MIN),
            Just(f64::MIN_POSITIVE),
            Just(1e-300),
            Just(-1e-6),
            Just(0.5),
            Just(1e-9),
            Just(1.5e-3),
            any::<f64>().prop_filter("finite", |value| value.is_finite()),
        ]
        .prop_map(Replacement::Float),
        key_text().prop_map(Replacement::Text),
        (
            prop_oneof![Just(1_000usize), Just(100_000)],
            prop_oneof![Just('a'), Just('/'), Just('é'), Just('"')]
        )
            .prop_map(|(length, character)| Replacement::LongText(length, character)),
        Just(Replacement::EmptyArray),
        Just(Replacement::EmptyObject),
        prop_oneof![Just(1_000usize), Just(20_000)].prop_map(Replacement::LongArray),
        (
            prop_oneof![
                Just(20usize),
                Just(127),
                Just(129),
                Just(5_000),
                Just(100_000)
            ],
            any::<bool>()
        )
            .prop_map(|(depth, objects)| Replacement::Nested { depth, objects }),
        prop_oneof![Just(20usize), Just(400), Just(5_000)].prop_map(Replacement::LongNumber),
        (0..RAW_LITERALS.len()).prop_map(Replacement::Raw),
        proptest::collection::vec(any::<usize>(), 0..8).prop_map(Replacement::CopyOf),
    ]
}

pub fn mutation() -> impl Strategy<Value = Mutation> {
    let operation = prop_oneof![
        3 => Just(Operation::Delete),
        6 => replacement().prop_map(Operation::Replace),
        1 => key_text().prop_map(Operation::RenameKey),
        1 => (key_text(), replacement()).prop_map(|(key, value)| Operation::InsertKey(key, value)),
        2 => (1..40usize, replacement()).prop_map(|(count, value)| Operation::Duplicate(count, value)),
    ];
    // Mostly deep: the interesting values are in cells, devices, layers and rules.
    let path = prop_oneof![
        1 => proptest::collection::vec(any::<usize>(), 0..3),
        4 => proptest::collection::vec(any::<usize>(), 3..10),
    ];
    (path, operation).prop_map(|(path, operation)| Mutation { path, operation })
}

#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps to the value the choices lead to (stopping at a leaf).
fn walk(document: &Value, choices: &[usize]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut node = document;
    for &choice in choices {
        match node {
            Value::Object(map) if !map.is_empty() => {
                let (key, child) = map.iter().nth(choice % map.len()).expect("in range");
                steps.push(Step::Key(key.clone()));
                node = child;
            }
            Value::Array(items) if !items.is_empty() => {
                let index = choice % items.len();
                steps.push(Step::Index(index));
                node = &items[index];
            }
            _ => break,
        }
    }
    steps
}

fn node_mut<'a>(document: &'a mut Value, steps: &[Step]) -> &'a mut Value {
    steps.iter().fold(document, |node, step| match step {
        Step::Key(key) => node.get_mut(key.as_str()).expect("walked"),
        Step::Index(index) => node.get_mut(*index).expect("walked"),
    })
}

/// A document being mutated, with the text of its raw splices.
pub struct Mutant {
    document: Value,
    raws: Vec<String>,
}

fn sentinel(index: usize) -> String {
    format!("\u{1}raw{index}\u{1}")
}

impl Mutant {
    pub fn new(document: Value) -> Self {
        Self {
            document,
            raws: Vec::new(),
        }
    }

    fn raw(&mut self, text: String) -> Value {
        push_raw(&mut self.raws, text)
    }

    fn value(&mut self, replacement: &Replacement) -> Value {
        match replacement {
            Replacement::Null => Value::Null,
            Replacement::Bool(value) => Value::Bool(*value),
            Replacement::Integer(value) => Value::from(*value),
            Replacement::Unsigned(value) => Value::from(*value),
            Replacement::Float(value) => Value::from(*value),
            Replacement::Text(text) => Value::String(text.clone()),
            Replacement::LongText(length, character) => {
                Value::String(std::iter::repeat_n(*character, *length).collect())
            }
            Replacement::EmptyArray => Value::Array(Vec::new()),
            Replacement::EmptyObject => Value::Object(Map::new()),
            Replacement::LongArray(count) => Value::Array(vec![Value::from(1); *count]),
            Replacement::Nested { depth, objects } => {
                let (open, close) = if *objects {
                    ("{\"a\":", "}")
                } else {
                    ("[", "]")
                };
                self.raw(format!("{}0{}", open.repeat(*depth), close.repeat(*depth)))
            }
            Replacement::LongNumber(digits) => self.raw("7".repeat(*digits)),
            Replacement::Raw(index) => self.raw(RAW_LITERALS[*index].to_owned()),
            Replacement::CopyOf(choices) => {
                let steps = walk(&self.document, choices);
                node_mut(&mut self.document, &steps).clone()
            }
        }
    }

    pub fn apply(&mut self, mutation: &Mutation) {
        let steps = walk(&self.document, &mutation.path);
        match &mutation.operation {
            Operation::Replace(replacement) => {
                let value = self.value(replacement);
                *node_mut(&mut self.document, &steps) = value;
            }
            Operation::InsertKey(key, replacement) => {
                let value = self.value(replacement);
                if let Value::Object(map) = node_mut(&mut self.document, &steps) {
                    map.insert(key.clone(), value);
                }
            }
            Operation::Delete | Operation::RenameKey(_) | Operation::Duplicate(..) => {
                let Some((last, parent_steps)) = steps.split_last() else {
                    return;
                };
                let extra = match &mutation.operation {
                    Operation::Duplicate(_, replacement) => Some(self.value(replacement)),
                    _ => None,
                };
                let parent = node_mut(&mut self.document, parent_steps);
                edit_entry(&mut self.raws, parent, last, &mutation.operation, extra);
            }
        }
    }

    /// The document as text, raw splices in place.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut text = serde_json::to_string(&self.document).expect("serialisable");
        // A spliced object was stored as {"\u0001splice": "<sentinel>"}: unwrap it.
        for index in (0..self.raws.len()).rev() {
            let quoted = serde_json::to_string(&sentinel(index)).expect("ok");
            let wrapped = format!("{{\"\\u0001splice\":{quoted}}}");
            let raw = &self.raws[index];
            text = text.replace(&wrapped, raw).replace(&quoted, raw);
        }
        text.into_bytes()
    }
}

fn push_raw(raws: &mut Vec<String>, text: String) -> Value {
    raws.push(text);
    Value::String(sentinel(raws.len() - 1))
}

/// Deletes, renames or duplicates the entry `step` of `parent`.
fn edit_entry(
    raws: &mut Vec<String>,
    parent: &mut Value,
    step: &Step,
    operation: &Operation,
    extra: Option<Value>,
) {
    match (parent, step, operation) {
        (Value::Object(map), Step::Key(key), Operation::Delete) => {
            map.shift_remove(key);
        }
        (Value::Array(items), Step::Index(index), Operation::Delete) => {
            items.remove(*index);
        }
        (Value::Object(map), Step::Key(key), Operation::RenameKey(new_key)) => {
            if let Some(value) = map.shift_remove(key) {
                map.insert(new_key.clone(), value);
            }
        }
        (Value::Array(items), Step::Index(index), Operation::Duplicate(count, _)) => {
            let copy = items[*index].clone();
            for _ in 0..*count {
                items.insert(*index, copy.clone());
            }
        }
        (Value::Object(map), Step::Key(key), Operation::Duplicate(..)) => {
            // The key written twice: first its value, then another (JSON allows the
            // text; a reader keeps one of the two).
            let mut text = serde_json::to_string(&*map).expect("serialisable");
            let other = serde_json::to_string(&extra.unwrap_or(Value::Null)).expect("ok");
            let key = serde_json::to_string(key).expect("ok");
            text.insert_str(text.len() - 1, &format!(",{key}:{other}"));
            let spliced = push_raw(raws, text);
            map.clear();
            map.insert("\u{1}splice".to_owned(), spliced);
        }
        _ => {}
    }
}

/// `document` after `mutations`, as file bytes.
pub fn mutated(document: &Value, mutations: &[Mutation]) -> Vec<u8> {
    let mut mutant = Mutant::new(document.clone());
    for mutation in mutations {
        mutant.apply(mutation);
    }
    mutant.into_bytes()
}
