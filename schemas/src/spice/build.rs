//! The builder: a parsed [`Deck`] → a netlist 1.1.0 JSON document (cells with ports,
//! devices and subcells) and, for every JSON pointer it writes, the line and column it came
//! from (so that the JSON checks downstream report SPICE locations).
//!
//! Only what the top subcircuit reaches is built. A subcircuit instantiated with different
//! parameter values becomes one cell per set of values (`opamp`, `opamp_2`, …). Global nets
//! (`.global`, and node `0`) used inside a subcircuit become extra ports of its cell, connected
//! to the net of the same name by every instance. Names compare case-insensitively and keep
//! the spelling of their first occurrence. Devices (M, R, C, and X lines calling device
//! models) are built in `devices.rs`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{Value, json};

use crate::drc_rules::DrcRuleSet;
use crate::issue::{TextLocation, name_list};
use crate::spice::error::{Problems, SpiceError};
use crate::spice::expr::EvalError;
use crate::spice::models::ModelResolver;
use crate::spice::parser::{Body, Deck, ElementKind, Name, Subckt, Value as SpiceValue};
use crate::spice::scope::Scope;

/// JSON pointer → where in the netlist it came from.
pub(crate) type SourceMap = BTreeMap<String, TextLocation>;

/// The deepest subcircuit nesting read (no stack overflow on a pathological file).
const MAX_HIERARCHY_DEPTH: usize = 100;

pub(crate) struct Built {
    pub document: Value,
    pub locations: SourceMap,
    /// Every w and l as written (before `.option scale`), with where.
    pub lengths: Vec<(f64, TextLocation)>,
}

/// How the deck is built beyond its own text.
pub(crate) struct BuildOptions<'a> {
    pub rules: Option<&'a DrcRuleSet>,
    pub top: Option<&'a str>,
    /// The cell's name when the netlist has no subcircuit.
    pub default_name: &'a str,
    /// The scale of w and l when the netlist sets none.
    pub scale: f64,
}

/// One built cell: its JSON index and name, its ports, and the global nets it uses.
#[derive(Debug, Clone)]
pub(super) struct CellRef {
    pub(super) name: String,
    pub(super) port_keys: Vec<String>,
}

pub(crate) fn build(
    deck: &Deck,
    resolver: &ModelResolver<'_>,
    options: &BuildOptions<'_>,
    problems: &mut Problems,
) -> Built {
    let global_scope = Scope::new(deck.top_level.params.iter(), HashMap::new(), None);
    let mut builder = Builder {
        deck,
        resolver,
        rules: options.rules,
        subckt_index: HashMap::new(),
        globals: deck
            .globals
            .iter()
            .map(Name::key)
            .chain(["0".to_owned()])
            .collect(),
        scale: options.scale,
        lengths: Vec::new(),
        widths_from_names: HashSet::new(),
        cells: Vec::new(),
        taken_names: deck
            .subckts
            .iter()
            .map(|subckt| subckt.name.key())
            .collect(),
        variants: HashMap::new(),
        building: Vec::new(),
        spelling: HashMap::new(),
        locations: SourceMap::new(),
        problems,
    };
    builder.first_spellings();
    if let Some(scale) = &deck.scale {
        builder.scale = builder.number(&global_scope, scale, "scale").unwrap_or(1.0);
    }
    for (index, subckt) in deck.subckts.iter().enumerate() {
        if let Some(&first) = builder.subckt_index.get(&subckt.name.key()) {
            let error = SpiceError::DuplicateSubckt {
                name: subckt.name.text.clone(),
                first_line: deck.subckts[first].name.at.line,
            };
            builder.problems.error(subckt.name.at, error);
        } else {
            builder.subckt_index.insert(subckt.name.key(), index);
        }
    }
    let top_name = builder.top(options.top, &global_scope, options.default_name);
    let cells: Vec<Value> = builder.cells.into_iter().flatten().collect();
    Built {
        document: json!({"schema_version": "1.1.0", "top": top_name, "cells": cells}),
        locations: builder.locations,
        lengths: builder.lengths,
    }
}

pub(super) struct Builder<'d, 'p> {
    pub(super) deck: &'d Deck,
    pub(super) resolver: &'d ModelResolver<'d>,
    /// The rule set, when it loaded: R and C lines given by value are sized from it.
    pub(super) rules: Option<&'d DrcRuleSet>,
    pub(super) subckt_index: HashMap<String, usize>,
    globals: HashSet<String>,
    pub(super) scale: f64,
    /// Every w and l read, as written (before the scale), with where.
    pub(super) lengths: Vec<(f64, TextLocation)>,
    /// Model names whose width was read from the name (warned once each).
    pub(super) widths_from_names: HashSet<String>,
    /// JSON cells by index; None while a cell is being built.
    cells: Vec<Option<Value>>,
    taken_names: HashSet<String>,
    /// (subcircuit, its parameter values) → the cell built for them.
    variants: HashMap<(usize, Vec<u64>), CellRef>,
    /// Subcircuits being built, outermost first (a repeat is a cycle).
    building: Vec<usize>,
    pub(super) spelling: HashMap<String, String>,
    pub(super) locations: SourceMap,
    pub(super) problems: &'p mut Problems,
}

impl<'d> Builder<'d, '_> {
    /// Every net keeps the spelling of its first occurrence in the file.
    fn first_spellings(&mut self) {
        let deck = self.deck;
        let bodies = deck
            .subckts
            .iter()
            .map(|subckt| &subckt.body)
            .chain([&deck.top_level]);
        let mut names: Vec<&Name> = deck.globals.iter().collect();
        names.extend(deck.subckts.iter().flat_map(|subckt| &subckt.ports));
        names.extend(
            bodies
                .flat_map(|body| &body.elements)
                .flat_map(|element| &element.nodes),
        );
        names.sort_by_key(|name| name.at);
        for name in names {
            self.spelling
                .entry(name.key())
                .or_insert_with(|| name.text.clone());
        }
    }

    /// The subcircuit laid out when none is named: the last one that no subcircuit
    /// instantiates — the top of its hierarchy whether the file writes it last (as most
    /// decks) or first (as xschem does, its symbols' subcircuits after it).
    fn default_top(&self) -> usize {
        let deck = self.deck;
        let instantiated: HashSet<usize> = deck
            .subckts
            .iter()
            .flat_map(|subckt| &subckt.body.elements)
            .filter_map(|element| element.target.as_ref())
            .filter_map(|target| self.subckt_index.get(&target.key()).copied())
            .collect();
        (0..deck.subckts.len())
            .rev()
            .find(|index| !instantiated.contains(index))
            .unwrap_or(deck.subckts.len() - 1)
    }

    /// Builds the top cell and everything it reaches; returns the top cell's name.
    fn top(&mut self, top: Option<&str>, global_scope: &Scope<'d>, default_name: &str) -> String {
        let deck = self.deck;
        if deck.subckts.is_empty() {
            if let Some(name) = top {
                self.problems.file_error(SpiceError::TopWithoutSubckts {
                    name: name.to_owned(),
                });
                return String::new();
            }
            let body = &deck.top_level;
            if body.elements.is_empty() && body.unsupported.is_empty() {
                // After other errors, the lines that failed are what is missing.
                if !self.problems.has_errors() {
                    self.problems.file_error(SpiceError::NothingToLayOut);
                }
                return String::new();
            }
            self.cells.push(None);
            let (cell, _) = self.cell(0, default_name, body, global_scope, global_scope, None);
            self.cells[0] = Some(cell);
            return default_name.to_owned();
        }
        let index = match top {
            Some(name) => match self.subckt_index.get(&name.to_lowercase()) {
                Some(&index) => index,
                None => {
                    let defined =
                        name_list(deck.subckts.iter().map(|subckt| subckt.name.text.as_str()));
                    self.problems.file_error(SpiceError::UnknownTop {
                        name: name.to_owned(),
                        defined,
                    });
                    return String::new();
                }
            },
            None => self.default_top(),
        };
        let subckt = &deck.subckts[index];
        let ignored = deck
            .top_level
            .elements
            .iter()
            .map(|element| &element.name)
            .chain(
                deck.top_level
                    .unsupported
                    .iter()
                    .map(|foreign| &foreign.name),
            );
        if let Some(first) = ignored.min_by_key(|name| name.at) {
            self.problems.warning(
                first.at,
                SpiceError::TopLevelIgnored {
                    top: subckt.name.text.clone(),
                },
            );
        }
        self.locations.insert("/top".to_owned(), subckt.name.at);
        self.instantiate(index, HashMap::new(), global_scope, &subckt.name)
            .map_or_else(String::new, |cell| cell.name)
    }

    /// The cell of subcircuit `index` with the parameter values `fixed`; `via` is the
    /// instance (or the top's name) for messages.
    pub(super) fn instantiate(
        &mut self,
        index: usize,
        fixed: HashMap<String, f64>,
        global_scope: &Scope<'d>,
        via: &Name,
    ) -> Option<CellRef> {
        let deck = self.deck;
        let subckt = &deck.subckts[index];
        if let Some(start) = self.building.iter().position(|&building| building == index) {
            let mut names: Vec<&str> = self.building[start..]
                .iter()
                .map(|&building| deck.subckts[building].name.text.as_str())
                .collect();
            names.push(&subckt.name.text);
            let error = SpiceError::HierarchyCycle {
                subckt: subckt.name.text.clone(),
                cycle: names.join(" → "),
            };
            self.problems.error(via.at, error);
            return None;
        }
        if self.building.len() >= MAX_HIERARCHY_DEPTH {
            let what = "subcircuits are nested more than 100 levels deep";
            self.problems.error(via.at, SpiceError::TooDeep { what });
            return None;
        }
        let scope = Scope::new(
            subckt.params.iter().chain(&subckt.body.params),
            fixed,
            Some(global_scope),
        );
        let mut key: Vec<u64> = subckt
            .params
            .iter()
            .map(|param| {
                self.report(scope.param(&param.name.key(), param.name.at))
                    .unwrap_or(f64::NAN)
                    .to_bits()
            })
            .collect();
        // The subcircuit's own .params an instance overrides make a variant too.
        key.extend(subckt.body.params.iter().map(|param| {
            scope
                .fixed(&param.name.key())
                .map_or(u64::MAX, f64::to_bits)
        }));
        if let Some(cell) = self.variants.get(&(index, key.clone())) {
            return Some(cell.clone());
        }
        let name = self.cell_name(subckt);
        let cell_index = self.cells.len();
        self.cells.push(None);
        self.building.push(index);
        let (mut cell, globals) = self.cell(
            cell_index,
            &name,
            &subckt.body,
            &scope,
            global_scope,
            Some(subckt),
        );
        self.building.pop();
        let cell_pointer = format!("/cells/{cell_index}");
        let mut ports = Vec::new();
        let mut port_keys = Vec::new();
        for port in &subckt.ports {
            self.locations
                .insert(format!("{cell_pointer}/ports/{}", ports.len()), port.at);
            ports.push(self.net(port, &mut BTreeSet::new()));
            port_keys.push(port.key());
        }
        let implicit: Vec<&String> = globals
            .iter()
            .filter(|global| !port_keys.contains(global))
            .collect();
        for global in implicit {
            ports.push(
                self.spelling
                    .get(global)
                    .cloned()
                    .unwrap_or_else(|| global.clone()),
            );
            port_keys.push(global.clone());
        }
        cell["ports"] = json!(ports);
        self.cells[cell_index] = Some(cell);
        let cell = CellRef { name, port_keys };
        self.variants.insert((index, key), cell.clone());
        Some(cell)
    }

    fn cell_name(&mut self, subckt: &Subckt) -> String {
        let base = &subckt.name.text;
        if !self
            .variants
            .keys()
            .any(|(index, _)| self.deck.subckts[*index].name.key() == subckt.name.key())
        {
            return base.clone();
        }
        let mut number = 2;
        loop {
            let candidate = format!("{base}_{number}");
            if self.taken_names.insert(candidate.to_lowercase()) {
                return candidate;
            }
            number += 1;
        }
    }

    /// One cell's JSON (without ports) and the global nets it uses.
    fn cell(
        &mut self,
        cell_index: usize,
        name: &str,
        body: &'d Body,
        scope: &Scope<'_>,
        global_scope: &Scope<'d>,
        subckt: Option<&Subckt>,
    ) -> (Value, BTreeSet<String>) {
        let pointer = format!("/cells/{cell_index}");
        if let Some(subckt) = subckt {
            self.locations.insert(pointer.clone(), subckt.name.at);
            self.locations
                .insert(format!("{pointer}/name"), subckt.name.at);
        }
        for foreign in &body.unsupported {
            self.foreign(foreign);
        }
        let mut globals = BTreeSet::new();
        let mut devices = Vec::new();
        let mut subcells = Vec::new();
        let bulks = self.bulk_defaults(body, subckt);
        for element in &body.elements {
            if element.kind == ElementKind::Instance {
                let target = element.target.as_ref().map(Name::key).unwrap_or_default();
                if let Some(&index) = self.subckt_index.get(&target) {
                    let copies = self.subcell(
                        element,
                        index,
                        (scope, global_scope),
                        (&pointer, subcells.len()),
                        &mut globals,
                    );
                    subcells.extend(copies);
                    continue;
                }
            }
            let device_pointer = format!("{pointer}/devices/{}", devices.len());
            let device = self.device(element, (scope, &bulks), &device_pointer, &mut globals);
            devices.extend(device);
        }
        let cell = json!({"name": name, "devices": devices, "subcells": subcells});
        (cell, globals)
    }

    /// The net a node names, in its first spelling; notes a global net.
    pub(super) fn net(&mut self, node: &Name, globals: &mut BTreeSet<String>) -> String {
        let key = node.key();
        if self.globals.contains(&key) {
            globals.insert(key.clone());
        }
        self.spelling
            .entry(key)
            .or_insert_with(|| node.text.clone())
            .clone()
    }

    /// Reports a new evaluation problem; None when there is no value.
    fn report(&mut self, result: Result<f64, EvalError>) -> Option<f64> {
        match result {
            Ok(value) => Some(value),
            Err(EvalError::New(problem)) => {
                let (at, error) = *problem;
                self.problems.error(at, error);
                None
            }
            Err(EvalError::Reported) => None,
        }
    }

    pub(super) fn number(
        &mut self,
        scope: &Scope<'_>,
        value: &SpiceValue,
        name: &str,
    ) -> Option<f64> {
        let result = scope.evaluate(value, name);
        self.report(result)
    }
}
