//! Devices: an M, R or C line, or an X line calling a device model, → one JSON device
//! (type by the model mapping, terminals, w, l, nf, m and the value), each field's SPICE
//! location recorded.

use std::collections::{BTreeSet, HashSet};

use serde_json::{Map, Value, json};

use crate::circuit::DeviceType;
use crate::issue::name_list;
use crate::spice::build::Builder;
use crate::spice::error::SpiceError;
use crate::spice::models::Usage;
use crate::spice::parser::{Element, ElementKind, Param};
use crate::spice::scope::Scope;

/// Device parameters Centroid does not use but netlists routinely carry (extraction
/// areas and perimeters, stress distances, temperature): ignored without a word.
const QUIETLY_IGNORED: [&str; 20] = [
    "ad", "as", "pd", "ps", "nrd", "nrs", "sa", "sb", "sd", "sca", "scb", "scc", "geo", "sub",
    "temp", "dtemp", "tc1", "tc2", "delvto", "mulu0",
];

impl Builder<'_, '_> {
    /// An M, R or C line, or an X line calling a device model.
    pub(super) fn device(
        &mut self,
        element: &Element,
        scope: &Scope<'_>,
        pointer: &str,
        globals: &mut BTreeSet<String>,
    ) -> Option<Value> {
        let usage = match element.kind {
            ElementKind::Mos => Usage::Mos,
            ElementKind::Resistor => Usage::Resistor,
            ElementKind::Capacitor => Usage::Capacitor,
            ElementKind::Instance => Usage::Instance,
        };
        let model_name = element.target.as_ref().map(|name| name.text.as_str());
        let device_type = match self.resolver.resolve(model_name, usage) {
            Ok(Some(device_type)) => device_type,
            Ok(None) => {
                let target = element.target.as_ref()?;
                let defined = name_list(
                    self.deck
                        .subckts
                        .iter()
                        .map(|subckt| subckt.name.text.as_str()),
                );
                let error = SpiceError::UnknownSubckt {
                    name: target.text.clone(),
                    element: element.name.text.clone(),
                    defined,
                };
                self.problems.error(target.at, error);
                return None;
            }
            Err(why) => {
                let at = element
                    .target
                    .as_ref()
                    .map_or(element.name.at, |target| target.at);
                self.problems.error(
                    at,
                    SpiceError::Model {
                        element: element.name.text.clone(),
                        why,
                    },
                );
                return None;
            }
        };
        let terminal_names: &[&str] = if device_type.is_mos() {
            &["d", "g", "s", "b"]
        } else {
            &["p", "n"]
        };
        let node_count_fits = match (element.kind, device_type.is_mos()) {
            (ElementKind::Instance, true) => element.nodes.len() == 4,
            (ElementKind::Instance, false) => (2..=3).contains(&element.nodes.len()),
            _ => true,
        };
        if !node_count_fits {
            let what = if device_type.is_mos() {
                "drain, gate, source and bulk nodes (4)"
            } else {
                "two nodes (and an optional body node)"
            };
            let found = format!(
                "{} node{}",
                element.nodes.len(),
                if element.nodes.len() == 1 { "" } else { "s" }
            );
            let error = SpiceError::ExpectedItems {
                what: what.to_owned(),
                element: element.name.text.clone(),
                found,
            };
            self.problems.error(element.name.at, error);
            return None;
        }
        let mut device = Map::new();
        device.insert("id".to_owned(), json!(element.name.text));
        device.insert("type".to_owned(), json!(device_type.as_str()));
        self.locations.insert(pointer.to_owned(), element.name.at);
        self.locations
            .insert(format!("{pointer}/id"), element.name.at);
        if let Some(target) = &element.target {
            device.insert("model".to_owned(), json!(target.text));
            self.locations.insert(format!("{pointer}/model"), target.at);
            self.locations.insert(format!("{pointer}/type"), target.at);
        }
        let mut terminals = Map::new();
        for (terminal, node) in terminal_names.iter().zip(&element.nodes) {
            terminals.insert((*terminal).to_owned(), json!(self.net(node, globals)));
            self.locations
                .insert(format!("{pointer}/terminals/{terminal}"), node.at);
        }
        device.insert("terminals".to_owned(), Value::Object(terminals));
        let sound = self.sizes(element, device_type, scope, pointer, &mut device);
        sound.then_some(Value::Object(device))
    }

    /// w, l, nf, m (× mult) and an R or C value into `device`; false when one is missing or bad.
    fn sizes(
        &mut self,
        element: &Element,
        device_type: DeviceType,
        scope: &Scope<'_>,
        pointer: &str,
        device: &mut Map<String, Value>,
    ) -> bool {
        let mut sound = true;
        let mut multiplicity = 1.0;
        let mut found: HashSet<&str> = HashSet::new();
        let value_keys: &[&str] = match device_type {
            DeviceType::Resistor => &["r", "resistance", "value"],
            DeviceType::Capacitor => &["c", "capacitance", "value"],
            _ => &[],
        };
        let mut entries: Vec<(&str, &Param)> = Vec::new();
        for param in &element.params {
            let key = param.name.key();
            let field = match key.as_str() {
                "w" => "w",
                "l" => "l",
                "nf" => "nf",
                "m" => "m",
                "mult" => "mult",
                other if value_keys.contains(&other) => "value",
                other => {
                    if !QUIETLY_IGNORED.contains(&other) {
                        let known = if device_type.is_mos() {
                            "w, l, nf and m"
                        } else {
                            "w, l, m and the value"
                        };
                        self.problems.warning(
                            param.name.at,
                            SpiceError::IgnoredParam {
                                name: param.name.text.clone(),
                                element: element.name.text.clone(),
                                known,
                            },
                        );
                    }
                    continue;
                }
            };
            found.insert(field);
            entries.push((field, param));
        }
        if let Some(value) = &element.value
            && let Some(number) = self.number(scope, value, "the value")
        {
            device.insert("value".to_owned(), json!(tidy(number)));
            self.locations.insert(format!("{pointer}/value"), value.at);
        }
        for (field, param) in entries {
            let Some(value) = &param.value else {
                sound = false;
                continue;
            };
            let Some(mut number) = self.number(scope, value, &param.name.text) else {
                sound = false;
                continue;
            };
            if field == "w" || field == "l" {
                number *= self.scale;
            }
            if field == "m" || field == "mult" {
                multiplicity *= number;
                self.locations.insert(format!("{pointer}/m"), value.at);
                continue;
            }
            device.insert(field.to_owned(), whole_or_float(number));
            self.locations
                .insert(format!("{pointer}/{field}"), value.at);
        }
        if found.contains("m") || found.contains("mult") {
            device.insert("m".to_owned(), whole_or_float(multiplicity));
        }
        for (field, meaning, example) in size_fields(device_type) {
            if !found.contains(field) {
                let error = SpiceError::MissingSize {
                    element: element.name.text.clone(),
                    field,
                    meaning,
                    example: example.to_owned(),
                };
                self.problems.error(element.name.at, error);
                sound = false;
            }
        }
        sound
    }
}

/// The sizes a device needs, what they mean, and an example.
fn size_fields(device_type: DeviceType) -> [(&'static str, &'static str, &'static str); 2] {
    match device_type {
        DeviceType::Nmos | DeviceType::Pmos => [
            (
                "w",
                "the total gate width of one instance, over its nf fingers",
                "w=4u",
            ),
            ("l", "the gate length", "l=500n"),
        ],
        DeviceType::Resistor => [
            (
                "w",
                "the drawn width of the resistor bar; the value alone does not say how to draw it",
                "w=1u",
            ),
            ("l", "the drawn length of the resistor bar", "l=10u"),
        ],
        DeviceType::Capacitor => [
            (
                "w",
                "the drawn plate width; the value alone does not say how to draw it",
                "w=10u",
            ),
            ("l", "the drawn plate length", "l=10u"),
        ],
    }
}

/// Whole numbers as JSON integers (the schema wants integers for nf and m); others
/// rounded to 12 significant digits, so that 500n is 5e-7 and not 5.000000000000001e-7.
fn whole_or_float(number: f64) -> Value {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        return json!(number as i64);
    }
    json!(tidy(number))
}

fn tidy(number: f64) -> f64 {
    format!("{number:.11e}").parse().unwrap_or(number)
}
