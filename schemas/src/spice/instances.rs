//! Instances of the netlist's subcircuits: an X line (or a line of another letter calling
//! a subcircuit) → subcell instances of the cell built for its parameter values.
//! Parameters on the line override the subcircuit's, those of its `.subckt` line and those
//! of its own `.param` lines. `m=k` (or `mult`, `multi` when no `m` is written:
//! [`Multipliers`]) makes k parallel
//! copies `X1.m1` … `X1.mk` of the one cell: what SPICE means by it — k instances, each
//! with its own internal nets. Multiplying the devices inside instead would join the
//! copies' internal nets (k stacks of series transistors would become one stack of wide
//! ones: another circuit for LVS) and would turn k identical blocks, drawn once and placed
//! k times, into a cell variant of their own.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value, json};

use crate::issue::{TextLocation, name_list, pointer_join};
use crate::netlist::MAX_MULTIPLICITY;
use crate::spice::build::Builder;
use crate::spice::error::SpiceError;
use crate::spice::parser::{Element, Name};
use crate::spice::scope::Scope;

/// Parameter names that multiply an instance (SPICE `m`, HSPICE `mult`, Spectre `multi`).
pub(super) const MULTIPLIERS: [&str; 3] = ["m", "mult", "multi"];

/// The multipliers written on one line. The count is `m` when it is written, else `mult`,
/// else `multi` — not their product: xschem writes `mult=N m=N` on every SKY130 device,
/// where `mult` is the model's mismatch factor and `m` the copies, so a product would
/// count N² devices. A `mult`/`multi` beside `m` with another value is not counted (a
/// warning says so).
#[derive(Default)]
pub(super) struct Multipliers {
    /// (name, value, where), as written
    written: Vec<(String, f64, TextLocation)>,
}

impl Multipliers {
    pub(super) fn note(&mut self, key: &str, number: f64, at: TextLocation) {
        self.written.push((key.to_owned(), number, at));
    }

    /// The count and where it was written (`None`: no multiplier written).
    pub(super) fn count(&self) -> Option<(f64, TextLocation)> {
        MULTIPLIERS.iter().find_map(|name| {
            self.written
                .iter()
                .find(|(key, _, _)| key == name)
                .map(|(_, number, at)| (*number, *at))
        })
    }

    /// The warnings of multipliers written beside the counted `m` with another value.
    pub(super) fn not_counted(&self, element: &str) -> Vec<(TextLocation, SpiceError)> {
        let Some((m, _)) = self
            .written
            .iter()
            .find(|(key, _, _)| key == "m")
            .map(|(_, m, at)| (*m, at))
        else {
            return Vec::new();
        };
        self.written
            .iter()
            .filter(|(key, number, _)| key != "m" && *number != m)
            .map(|(key, number, at)| {
                let warning = SpiceError::MultiplierBesideM {
                    element: element.to_owned(),
                    name: key.clone(),
                    value: number.to_string(),
                    m: m.to_string(),
                };
                (*at, warning)
            })
            .collect()
    }
}

impl<'d> Builder<'d, '_> {
    /// The subcell instances of an X line calling subcircuit `index`: one, or k copies.
    /// `place` is the parent cell's pointer and the index of the first copy among its
    /// subcells (for locations).
    pub(super) fn subcell(
        &mut self,
        element: &Element,
        index: usize,
        (scope, global_scope): (&Scope<'_>, &Scope<'d>),
        (cell_pointer, first): (&str, usize),
        globals: &mut BTreeSet<String>,
    ) -> Vec<Value> {
        let deck = self.deck;
        let subckt = &deck.subckts[index];
        let Some(target) = element.target.as_ref() else {
            return Vec::new();
        };
        let (fixed, copies, mut sound) = self.instance_params(element, index, scope);
        if element.nodes.len() != subckt.ports.len() {
            let ports: Vec<&str> = subckt.ports.iter().map(|port| port.text.as_str()).collect();
            let error = SpiceError::PortCount {
                element: element.name.text.clone(),
                found: element.nodes.len(),
                plural: if element.nodes.len() == 1 { "" } else { "s" },
                subckt: subckt.name.text.clone(),
                expected: ports.len(),
                ports_plural: if ports.len() == 1 { "" } else { "s" },
                ports: if ports.is_empty() {
                    "none".to_owned()
                } else {
                    ports.join(", ")
                },
            };
            self.problems.error(element.name.at, error);
            sound = false;
        }
        let Some(child) = self.instantiate(index, fixed, global_scope, &element.name) else {
            return Vec::new();
        };
        if !sound {
            return Vec::new();
        }
        let mut connections = Map::new();
        let mut connection_locations = Vec::new();
        for (port_index, node) in element.nodes.iter().enumerate() {
            let port_name = self.port_spelling(&subckt.ports[port_index]);
            connection_locations.push((port_name.clone(), node.at));
            connections.insert(port_name, json!(self.net(node, globals)));
        }
        for global in child.port_keys.iter().skip(subckt.ports.len()) {
            let spelled = self
                .spelling
                .get(global)
                .cloned()
                .unwrap_or_else(|| global.clone());
            globals.insert(global.clone());
            connections.insert(spelled.clone(), json!(spelled));
        }
        (0..copies)
            .map(|copy| {
                let pointer = format!("{cell_pointer}/subcells/{}", first + copy);
                for (port_name, at) in &connection_locations {
                    self.locations.insert(
                        pointer_join(&format!("{pointer}/connections"), port_name),
                        *at,
                    );
                }
                self.locations.insert(pointer.clone(), element.name.at);
                self.locations
                    .insert(format!("{pointer}/name"), element.name.at);
                self.locations.insert(format!("{pointer}/cell"), target.at);
                let name = if copies == 1 {
                    element.name.text.clone()
                } else {
                    format!("{}.m{}", element.name.text, copy + 1)
                };
                json!({"name": name, "cell": child.name, "connections": connections})
            })
            .collect()
    }

    /// The parameter values an instance fixes, its number of copies, and whether every
    /// parameter could be read.
    fn instance_params(
        &mut self,
        element: &Element,
        index: usize,
        scope: &Scope<'_>,
    ) -> (HashMap<String, f64>, usize, bool) {
        let subckt = &self.deck.subckts[index];
        let declared = || subckt.params.iter().chain(&subckt.body.params);
        let mut fixed = HashMap::new();
        let mut sound = true;
        let mut multipliers = Multipliers::default();
        for param in &element.params {
            let key = param.name.key();
            let Some(value) = &param.value else {
                sound = false;
                continue;
            };
            let number = self.number(scope, value, &param.name.text);
            if MULTIPLIERS.contains(&key.as_str()) {
                match number {
                    Some(number) => multipliers.note(&key, number, param.name.at),
                    None => sound = false,
                }
            } else if declared().any(|declared| declared.name.key() == key) {
                match number {
                    Some(number) => {
                        fixed.insert(key, number);
                    }
                    None => sound = false,
                }
            } else {
                let known = name_list(declared().map(|declared| declared.name.text.as_str()));
                let error = SpiceError::UnknownInstanceParam {
                    subckt: subckt.name.text.clone(),
                    param: param.name.text.clone(),
                    known,
                };
                self.problems.error(param.name.at, error);
                sound = false;
            }
        }
        for (at, warning) in multipliers.not_counted(&element.name.text) {
            self.problems.warning(at, warning);
        }
        let (multiplicity, multiplier_at) = match multipliers.count() {
            Some((multiplicity, at)) => (multiplicity, Some(at)),
            None => (1.0, None),
        };
        let whole = multiplicity.fract() == 0.0 && (1.0..=MAX_MULTIPLICITY).contains(&multiplicity);
        if let Some(at) = multiplier_at
            && sound
            && !whole
        {
            self.problems.error(
                at,
                SpiceError::SubcktMultiplicity {
                    element: element.name.text.clone(),
                    m: multiplicity.to_string(),
                    max: MAX_MULTIPLICITY as u32,
                },
            );
            sound = false;
        }
        let copies = if whole { multiplicity as usize } else { 1 };
        (fixed, copies, sound)
    }

    fn port_spelling(&mut self, port: &Name) -> String {
        self.spelling
            .entry(port.key())
            .or_insert_with(|| port.text.clone())
            .clone()
    }
}
