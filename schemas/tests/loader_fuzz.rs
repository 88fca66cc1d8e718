//! The three JSON loaders never panic and never hang: arbitrary bytes, arbitrary text,
//! JSON-like token soup, and every example file mutated at random (keys deleted, values of
//! another type, huge, negative or non-JSON numbers, very long strings, deep nesting,
//! duplicate entries and keys, copies of other values) all come back as a loaded model or
//! as errors that name the file and a JSON pointer into it.
//!
//! `cargo test` runs a few hundred cases per property; `PROPTEST_CASES=20000 cargo test
//! -p centroid-schemas --release --test loader_fuzz` runs them longer.

mod json_mutation;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use centroid_schemas::{
    InputErrors, InputFile, InputIssue, Loaded, TaskContext, TaskInputs, load_drc_rules,
    load_netlist, load_objectives,
};
use json_mutation::{config, mutated, mutation};
use proptest::prelude::*;
use serde_json::Value;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Netlist,
    DrcRules,
    Objectives,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::Netlist, Kind::DrcRules, Kind::Objectives];

    fn label(self) -> &'static str {
        match self {
            Kind::Netlist => "fuzz/netlist.json",
            Kind::DrcRules => "fuzz/drc_rules.json",
            Kind::Objectives => "fuzz/objectives.json",
        }
    }

    fn corpus(self) -> &'static [(PathBuf, Value)] {
        match self {
            Kind::Netlist => &CORPUS.netlists,
            Kind::DrcRules => &CORPUS.rule_sets,
            Kind::Objectives => &CORPUS.objectives,
        }
    }
}

struct Corpus {
    netlists: Vec<(PathBuf, Value)>,
    rule_sets: Vec<(PathBuf, Value)>,
    objectives: Vec<(PathBuf, Value)>,
}

/// Every example input: `examples/**/netlist.json`, `examples/pdk/*.json`,
/// `examples/**/objectives.json`.
static CORPUS: LazyLock<Corpus> = LazyLock::new(|| {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    collect_json_files(&examples, &mut files);
    let read = |path: &PathBuf| {
        let text = std::fs::read(path).expect("example readable");
        let value = serde_json::from_slice(&text).expect("example is JSON");
        (path.clone(), value)
    };
    let named = |name: &str| -> Vec<(PathBuf, Value)> {
        files
            .iter()
            .filter(|path| path.file_name().is_some_and(|file| file == name))
            .map(read)
            .collect()
    };
    let rule_sets = files
        .iter()
        .filter(|path| path.parent().is_some_and(|dir| dir.ends_with("pdk")))
        .map(read)
        .collect();
    Corpus {
        netlists: named("netlist.json"),
        rule_sets,
        objectives: named("objectives.json"),
    }
});

fn collect_json_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("examples readable")
        .map(|entry| entry.expect("entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_json_files(&path, files);
        } else if path
            .extension()
            .is_some_and(|extension| extension == "json")
        {
            files.push(path);
        }
    }
}

/// The issues of one load (errors, or the warnings of a success).
fn load(kind: Kind, bytes: &[u8]) -> Result<Vec<InputIssue>, InputErrors> {
    let file = InputFile {
        label: kind.label().to_owned(),
        bytes: bytes.to_vec(),
    };
    fn warnings<T>(loaded: Loaded<T>) -> Vec<InputIssue> {
        loaded.warnings
    }
    match kind {
        Kind::Netlist => load_netlist(&file).map(warnings),
        Kind::DrcRules => load_drc_rules(&file).map(warnings),
        Kind::Objectives => load_objectives(&file).map(warnings),
    }
}

/// True when `pointer` or its parent names a value of `document`: a problem is reported
/// at the value, or at the object that lacks a field.
fn pointer_lands(document: &Value, pointer: &str) -> bool {
    if document.pointer(pointer).is_some() {
        return true;
    }
    pointer
        .rsplit_once('/')
        .is_some_and(|(parent, _)| document.pointer(parent).is_some())
}

/// Every issue names `label` and a pointer that lands in the file's document.
fn assert_issues_locate(label: &str, bytes: &[u8], issues: &[InputIssue]) {
    let document: Option<Value> = serde_json::from_slice(bytes).ok();
    for issue in issues {
        assert_eq!(issue.file, label, "{issue}");
        assert!(!issue.message.trim().is_empty(), "{issue:?}");
        assert!(
            issue.pointer.is_empty() || issue.pointer.starts_with('/'),
            "not a JSON pointer: {issue}"
        );
        if let Some(document) = &document {
            assert!(
                pointer_lands(document, &issue.pointer),
                "the pointer of \"{issue}\" is not in the document"
            );
        } else {
            // Not JSON at all: the problem is the whole document.
            assert_eq!(issue.pointer, "", "{issue}");
        }
    }
}

/// Loading `bytes` returns (no panic, no hang) a model or errors naming the file.
fn check_load(kind: Kind, bytes: &[u8]) {
    match load(kind, bytes) {
        Ok(warnings) => assert_issues_locate(kind.label(), bytes, &warnings),
        Err(errors) => {
            assert!(!errors.issues.is_empty());
            assert!(errors.to_string().contains(kind.label()));
            assert_issues_locate(kind.label(), bytes, &errors.issues);
        }
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Netlist),
        Just(Kind::DrcRules),
        Just(Kind::Objectives)
    ]
}

/// Pieces of JSON and of the three vocabularies, to build text that is almost JSON.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    " ",
    "\n",
    "null",
    "true",
    "0",
    "-1",
    "1e-6",
    "1e400",
    "NaN",
    "\"schema_version\"",
    "\"1.0.0\"",
    "\"1.3.0\"",
    "\"cells\"",
    "\"top\"",
    "\"name\"",
    "\"devices\"",
    "\"subcells\"",
    "\"type\"",
    "\"nmos\"",
    "\"terminals\"",
    "\"w\"",
    "\"tech\"",
    "\"layers\"",
    "\"rules\"",
    "\"spacing\"",
    "\"layer\"",
    "\"min\"",
    "\"objectives\"",
    "\"area_min\"",
    "\"weight\"",
    "\"constraints\"",
    "\\u0000",
    "\u{feff}",
    "é",
    "\\",
];

fn token_soup() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(0..TOKENS.len(), 0..200).prop_map(|indices| {
        indices
            .into_iter()
            .flat_map(|i| TOKENS[i].bytes())
            .collect()
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_are_refused_with_the_file_named(
        kind in kind(),
        bytes in proptest::collection::vec(any::<u8>(), 0..2_000),
    ) {
        check_load(kind, &bytes);
    }

    #[test]
    fn arbitrary_text_is_refused_with_the_file_named(kind in kind(), text in any::<String>()) {
        check_load(kind, text.as_bytes());
    }

    #[test]
    fn almost_json_is_refused_with_the_file_named(kind in kind(), bytes in token_soup()) {
        check_load(kind, &bytes);
    }

    #[test]
    fn mutated_examples_load_or_name_file_and_pointer(
        kind in kind(),
        example in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let corpus = kind.corpus();
        let (_, document) = &corpus[example % corpus.len()];
        check_load(kind, &mutated(document, &mutations));
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// The three files together (`TaskContext::load`, as `centroid validate` and the
    /// coordinator read a job): every problem is in one of the three files, at a pointer
    /// into that file.
    #[test]
    fn mutated_jobs_report_each_problem_in_its_file(
        examples in (any::<usize>(), any::<usize>(), any::<usize>()),
        mutations in proptest::collection::vec((0..3usize, mutation()), 1..6),
    ) {
        let mut files = Vec::new();
        for (index, kind) in Kind::ALL.into_iter().enumerate() {
            let corpus = kind.corpus();
            let choice = [examples.0, examples.1, examples.2][index];
            let ours: Vec<_> = mutations
                .iter()
                .filter(|(target, _)| *target == index)
                .map(|(_, mutation)| mutation.clone())
                .collect();
            let bytes = mutated(&corpus[choice % corpus.len()].1, &ours);
            files.push(InputFile { label: kind.label().to_owned(), bytes });
        }
        let inputs = TaskInputs {
            netlist: files[0].clone(),
            drc_rules: files[1].clone(),
            objectives: files[2].clone(),
        };
        let issues = match TaskContext::load(&inputs, "fuzz") {
            Ok(context) => context.warnings,
            Err(errors) => errors.issues,
        };
        for file in &files {
            let ours: Vec<InputIssue> =
                issues.iter().filter(|issue| issue.file == file.label).cloned().collect();
            assert_issues_locate(&file.label, &file.bytes, &ours);
        }
        for issue in &issues {
            prop_assert!(files.iter().any(|file| file.label == issue.file), "{}", issue);
        }
    }
}

#[test]
fn every_example_loads_unmutated() {
    for kind in Kind::ALL {
        assert!(!kind.corpus().is_empty(), "{kind:?}: no examples found");
        for (path, document) in kind.corpus() {
            let bytes = serde_json::to_vec(document).unwrap();
            if let Err(errors) = load(kind, &bytes) {
                panic!("{}: {errors}", path.display());
            }
        }
    }
}
