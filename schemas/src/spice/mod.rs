//! SPICE/CDL netlists (`.sp`, `.spice`, `.cir`, `.cdl`) read into the netlist 1.1.0
//! document that `netlist.json` would hold, then loaded by the same pipeline (every JSON
//! check, flattening, module recognition), its problems reported at `line:column`.
//!
//! Reading goes bytes → logical lines (`lines.rs`: comments, `+` continuations) → tokens
//! (`lexer.rs`) → a deck of subcircuits, elements and parameters (`parser.rs`, values as
//! expressions, `expr.rs`) → JSON cells, evaluated per instance (`build.rs`, `scope.rs`),
//! model names mapped to device types (`models.rs`). Every problem of the file is
//! collected (`error.rs`) and reported together; nothing panics on any input.
//!
//! What is accepted is documented in `docs/contracts.md` ("SPICE/CDL netlists").

mod build;
mod bulk_default;
mod devices;
mod directives;
mod element_items;
mod error;
mod expr;
mod expr_functions;
mod finger_capacitors;
mod foreign;
mod instances;
mod lexer;
mod lines;
mod model_widths;
mod models;
mod parser;
mod scope;
mod sizes;
mod spectre;
mod wide_devices;

use std::path::Path;

use serde_json::Value;

use crate::circuit::Circuit;
use crate::drc_rules::DrcRuleSet;
use crate::issue::{InputErrors, InputIssue, TextLocation};
use crate::json_inputs::{InputFile, Loaded, load_netlist};

pub use error::SpiceError;
pub use models::{ModelMap, device_type_named};

use build::{BuildOptions, SourceMap};
use error::{Problems, sort_and_dedup};

/// File extensions read as SPICE/CDL (case-insensitive); `.scs` is Spectre, read by the same
/// reader (a Spectre statement switches it to that dialect).
pub const SPICE_EXTENSIONS: [&str; 5] = ["sp", "spice", "cir", "cdl", "scs"];

/// True when the path (or label) ends in a SPICE extension.
pub fn is_spice_path(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| {
            SPICE_EXTENSIONS
                .iter()
                .any(|known| extension.eq_ignore_ascii_case(known))
        })
}

/// How a SPICE netlist is read: the top subcircuit, where model names are mapped, and
/// the rule set that sizes resistors and capacitors given by their value.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpiceOptions<'a> {
    /// The subcircuit to lay out (default: the last one that no subcircuit instantiates).
    pub top: Option<&'a str>,
    /// The rule set, when it loaded (R and C lines given by value only are sized from it).
    pub rules: Option<&'a DrcRuleSet>,
    /// The rule set's `models` table (first in the mapping order).
    pub rule_set_models: Option<&'a ModelMap>,
    /// `--model-map FILE` (second).
    pub model_map: Option<&'a ModelMap>,
}

/// A SPICE netlist as netlist 1.1.0 JSON.
#[derive(Debug, Clone)]
pub struct Conversion {
    pub document: Value,
    /// Things worth knowing that do not stop the job (ignored lines and parameters).
    pub warnings: Vec<InputIssue>,
    locations: SourceMap,
}

/// Converts a SPICE netlist to a netlist 1.1.0 document without the JSON checks; every
/// problem of the file at `line:column`.
pub fn convert(file: &InputFile, options: &SpiceOptions<'_>) -> Result<Conversion, InputErrors> {
    let (conversion, problems) = convert_collecting(file, options);
    let (errors, warnings) = problems.into_issues(&file.label);
    if errors.is_empty() {
        Ok(Conversion {
            warnings,
            ..conversion
        })
    } else {
        Err(InputErrors { issues: errors })
    }
}

fn convert_collecting(file: &InputFile, options: &SpiceOptions<'_>) -> (Conversion, Problems) {
    let mut problems = Problems::default();
    let limit = crate::source::MAX_INPUT_BYTES;
    if file.bytes.len() as u64 > limit {
        // The file reader refuses larger files before this; bytes from elsewhere stop here.
        problems.file_error(SpiceError::TooLarge {
            size_mib: file.bytes.len() as f64 / (1024.0 * 1024.0),
            limit_mib: limit / (1024 * 1024),
        });
        let empty = Conversion {
            document: serde_json::json!({"schema_version": "1.1.0", "top": "", "cells": []}),
            warnings: Vec::new(),
            locations: SourceMap::new(),
        };
        return (empty, problems);
    }
    let text = lines::decode(&file.bytes, &mut problems);
    let logical = lines::logical_lines(&text, &mut problems);
    let deck = parser::parse_deck(&logical, &mut problems);
    let cards = models::ModelMap::new(
        deck.model_cards
            .iter()
            .map(|(name, device_type)| (name.text.as_str(), *device_type)),
    );
    let resolver = models::ModelResolver {
        rule_set: options.rule_set_models,
        user: options.model_map,
        cards,
    };
    let default_name = Path::new(&file.label)
        .file_stem()
        .and_then(|stem| stem.to_str())
        .filter(|stem| !stem.is_empty())
        .unwrap_or("top");
    let mut build_options = BuildOptions {
        rules: options.rules,
        top: options.top,
        default_name,
        scale: 1.0,
    };
    let mut build_problems = Problems::after(&problems);
    let mut built = build::build(&deck, &resolver, &build_options, &mut build_problems);
    if deck.scale.is_none()
        && let Some(warning) = lengths_in_micrometres(&built.lengths)
    {
        // Read again with lengths in µm; the first reading's problems are not the file's.
        build_options.scale = MICROMETRE;
        build_problems = Problems::after(&problems);
        built = build::build(&deck, &resolver, &build_options, &mut build_problems);
        build_problems.warning(warning.0, warning.1);
    }
    problems.absorb(build_problems);
    let conversion = Conversion {
        document: built.document,
        warnings: Vec::new(),
        locations: built.locations,
    };
    (conversion, problems)
}

const MICROMETRE: f64 = 1e-6;

/// A netlist whose every w and l, read in metres, would be a millimetre or more writes
/// them in micrometres: the SKY130 models set `.option scale=1e-6` in the model library
/// the netlist includes (and Centroid skips), so `W=5 L=0.15` means 5 µm by 0.15 µm.
/// The warning (where the first length is) says it is read so.
fn lengths_in_micrometres(lengths: &[(f64, TextLocation)]) -> Option<(TextLocation, SpiceError)> {
    let (first, _) = lengths.split_first()?;
    if !lengths.iter().all(|(value, _)| *value >= 1e-3) {
        return None;
    }
    let bound =
        |pick: fn(f64, f64) -> f64| lengths.iter().map(|(value, _)| *value).fold(first.0, pick);
    let (smallest, largest) = (bound(f64::min), bound(f64::max));
    let range = if smallest == largest {
        format!("all {smallest}")
    } else {
        format!("from {smallest} to {largest}")
    };
    let warning = SpiceError::LengthsInMicrometres { range };
    Some((first.1, warning))
}

/// Reads a SPICE netlist into the checked circuit, and the netlist.json text it was read
/// as (what a coordinator is sent). Problems of the JSON checks are reported at the
/// SPICE line they came from, together with the SPICE problems.
pub fn load_spice_netlist(
    file: &InputFile,
    options: &SpiceOptions<'_>,
) -> Result<(Loaded<Circuit>, InputFile), InputErrors> {
    load_spice_netlist_located(file, options).map(|(loaded, json, _)| (loaded, json))
}

/// Where the netlist.json of a SPICE netlist came from, to give later issues about it
/// (e.g. a device the rule set cannot draw) their SPICE line and column.
#[derive(Debug, Clone)]
pub struct SpiceLocations {
    label: String,
    map: SourceMap,
}

impl SpiceLocations {
    /// The issues of this netlist with the line and column their pointer came from.
    pub fn locate(&self, issues: Vec<InputIssue>) -> Vec<InputIssue> {
        relocate(issues, &self.label, &self.map)
    }
}

/// [`load_spice_netlist`], with where every pointer of the JSON came from.
pub(crate) fn load_spice_netlist_located(
    file: &InputFile,
    options: &SpiceOptions<'_>,
) -> Result<(Loaded<Circuit>, InputFile, SpiceLocations), InputErrors> {
    let (conversion, problems) = convert_collecting(file, options);
    let had_errors = problems.has_errors();
    let (mut errors, spice_warnings) = problems.into_issues(&file.label);
    let json_file = InputFile {
        label: file.label.clone(),
        bytes: serde_json::to_vec_pretty(&conversion.document).unwrap_or_default(),
    };
    match load_netlist(&json_file) {
        Ok(mut loaded) if !had_errors => {
            loaded.warnings = relocate(loaded.warnings, &file.label, &conversion.locations);
            loaded.warnings.extend(spice_warnings);
            sort_and_dedup(&mut loaded.warnings);
            let locations = SpiceLocations {
                label: file.label.clone(),
                map: conversion.locations,
            };
            Ok((loaded, json_file, locations))
        }
        Ok(_) => Err(InputErrors { issues: errors }),
        Err(json_errors) => {
            let relocated = relocate(json_errors.issues, &file.label, &conversion.locations);
            // After SPICE errors, the document lacks what could not be read: a JSON
            // problem of the whole document or the top (an empty top cell) is a consequence.
            errors.extend(relocated.into_iter().filter(|issue| {
                !had_errors || (issue.location.is_some() && issue.pointer != "/top")
            }));
            sort_and_dedup(&mut errors);
            Err(InputErrors { issues: errors })
        }
    }
}

/// Gives issues about the converted JSON the line and column of the SPICE text the
/// pointer (or its nearest ancestor) came from.
fn relocate(issues: Vec<InputIssue>, label: &str, locations: &SourceMap) -> Vec<InputIssue> {
    issues
        .into_iter()
        .map(|mut issue| {
            if issue.file == label && issue.location.is_none() {
                let mut pointer = issue.pointer.as_str();
                issue.location = loop {
                    if let Some(location) = locations.get(pointer) {
                        break Some(*location);
                    }
                    match pointer.rfind('/') {
                        Some(cut) if !pointer.is_empty() => pointer = &pointer[..cut],
                        _ => break None,
                    }
                };
            }
            issue
        })
        .collect()
}
