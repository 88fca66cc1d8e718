//! One JSON input file checked into its model, the same way for every kind: JSON →
//! schema version → JSON Schema → typed model → semantic checks, every problem of
//! the file reported. The SPICE reader ([`crate::spice`]) ends here too, with the
//! netlist document it read.

use serde::de::DeserializeOwned;

use crate::circuit::Circuit;
use crate::drc_rules::{DEFAULT_GRID_M, DrcDocument, DrcRuleSet, build_rule_set};
use crate::flatten::flatten;
use crate::issue::{InputErrors, InputIssue, IssueSink};
use crate::modules::recognize_modules;
use crate::netlist::{NetlistDocument, check_netlist};
use crate::objectives::{DesignObjectives, build_objectives};
use crate::schema_check::{check_against_schema, unknown_fields};
use crate::source::parse_json_document;
use crate::version::{InputKind, ResolvedVersion, resolve_version};

/// The raw contents of one input file, labelled for messages (its path, or its name).
#[derive(Debug, Clone)]
pub struct InputFile {
    pub label: String,
    pub bytes: Vec<u8>,
}

/// A checked document with its version and warnings.
#[derive(Debug, Clone)]
pub struct Loaded<T> {
    pub value: T,
    pub version: ResolvedVersion,
    pub warnings: Vec<InputIssue>,
}

/// JSON → version → schema → serde, the same for every kind.
fn decode<T: DeserializeOwned>(
    kind: InputKind,
    file: &InputFile,
) -> Result<(T, ResolvedVersion, IssueSink, Vec<InputIssue>), InputErrors> {
    let document = parse_json_document(&file.label, &file.bytes)?;
    let mut sink = IssueSink::new(&file.label);
    let Some(version) = resolve_version(kind, &document, &mut sink) else {
        return Err(sink.finish(()).unwrap_err());
    };
    let mut warnings = Vec::new();
    if version.is_migrated() {
        warnings.push(InputIssue {
            file: file.label.clone(),
            pointer: "/schema_version".to_owned(),
            message: format!(
                "schema_version {} is newer than this Centroid knows; read as {} (fields it does not know are ignored)",
                version.declared, version.read_as
            ),
            location: None,
        });
    }
    check_against_schema(kind, version.read_as, &document, &mut sink);
    warnings.extend(
        unknown_fields(kind, version.read_as, &document)
            .into_iter()
            .filter(|_| !version.is_migrated())
            .map(|(pointer, message)| InputIssue {
                file: file.label.clone(),
                pointer,
                message,
                location: None,
            }),
    );
    let schema_failed = !sink.is_empty();
    sink.end_schema_phase();
    match serde_json::from_value::<T>(document) {
        // Even after schema errors, a document that still reads goes on to the semantic
        // checks, so that one run reports every problem it can.
        Ok(value) => Ok((value, version, sink, warnings)),
        Err(_) if schema_failed => Err(sink.finish(()).unwrap_err()),
        Err(error) => {
            sink.push("", format!("cannot read the document: {error}"));
            Err(sink.finish(()).unwrap_err())
        }
    }
}

/// Ends a load: the value when no problem was found, else every problem.
fn conclude<T>(value: Option<T>, sink: IssueSink) -> Result<T, InputErrors> {
    match value {
        Some(value) if sink.is_empty() => Ok(value),
        _ => Err(sink.finish(()).unwrap_err()),
    }
}

/// Parses and checks `netlist.json`: the flattened circuit with net types and modules.
pub fn load_netlist(file: &InputFile) -> Result<Loaded<Circuit>, InputErrors> {
    let (document, version, mut sink, mut warnings) =
        decode::<NetlistDocument>(InputKind::Netlist, file)?;
    if !check_netlist(&document, &mut sink) {
        return Err(sink.finish(()).unwrap_err());
    }
    // check_netlist returned true: no problem at all, the schema's included.
    let (mut circuit, flatten_warnings) = flatten(&document);
    if circuit.devices.is_empty() {
        sink.push("/top", format!("top cell \"{}\" has no devices, not even in its subcells; there is nothing to lay out", circuit.name));
        return Err(sink.finish(()).unwrap_err());
    }
    warnings.extend(
        flatten_warnings
            .into_iter()
            .map(|(pointer, message)| InputIssue {
                file: file.label.clone(),
                pointer,
                message,
                location: None,
            }),
    );
    circuit.modules = recognize_modules(&circuit);
    Ok(Loaded {
        value: circuit,
        version,
        warnings,
    })
}

/// Parses and checks `drc_rules.json`.
pub fn load_drc_rules(file: &InputFile) -> Result<Loaded<DrcRuleSet>, InputErrors> {
    let (document, version, mut sink, mut warnings) =
        decode::<DrcDocument>(InputKind::DrcRules, file)?;
    if document.grid.is_none() {
        warnings.push(InputIssue {
            file: file.label.clone(),
            pointer: "/grid".to_owned(),
            message: format!(
                "no \"grid\": coordinates are placed on a {} nm grid; a foundry deck checks its process's manufacturing grid and flags every vertex off it — give \"grid\" in metres, e.g. 5e-9 for 5 nm",
                DEFAULT_GRID_M * 1e9
            ),
            location: None,
        });
    }
    let rule_set = build_rule_set(document, version.read_as, &mut sink);
    conclude(rule_set, sink).map(|value| Loaded {
        value,
        version,
        warnings,
    })
}

/// Parses and checks `objectives.json`.
pub fn load_objectives(file: &InputFile) -> Result<Loaded<DesignObjectives>, InputErrors> {
    let (document, version, mut sink, warnings) = decode(InputKind::Objectives, file)?;
    let objectives = build_objectives(document, version.read_as, &mut sink);
    conclude(objectives, sink).map(|value| Loaded {
        value,
        version,
        warnings,
    })
}
