//! Devices: an M, R or C line, or an X line calling a device model, → one JSON device
//! (type by the model mapping, terminals — a three-node MOS line's bulk defaulted,
//! `bulk_default.rs` —, then its sizes, `sizes.rs`), each field's SPICE location recorded.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::issue::name_list;
use crate::spice::build::Builder;
use crate::spice::bulk_default::BulkDefaults;
use crate::spice::error::SpiceError;
use crate::spice::expr::Expr;
use crate::spice::models::Usage;
use crate::spice::parser::{Element, ElementKind, Name, Value as SpiceValue};
use crate::spice::scope::Scope;

impl Builder<'_, '_> {
    /// An M, R or C line, or an X line calling a device model.
    pub(super) fn device(
        &mut self,
        element: &Element,
        (scope, bulks): (&Scope<'_>, &BulkDefaults),
        pointer: &str,
        globals: &mut BTreeSet<String>,
    ) -> Option<Value> {
        let by_parameter = self.value_by_parameter(element, scope);
        let element = by_parameter.as_ref().unwrap_or(element);
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
            (ElementKind::Instance, true) => (3..=4).contains(&element.nodes.len()),
            (ElementKind::Instance, false) => (2..=3).contains(&element.nodes.len()),
            _ => true,
        };
        if !node_count_fits {
            let what = if device_type.is_mos() {
                "drain, gate, source and bulk nodes (4, or 3 without the bulk)"
            } else {
                "two nodes (and an optional body node)"
            };
            let found = format!(
                "{} node{}",
                element.nodes.len(),
                if element.nodes.len() == 1 { "" } else { "s" }
            );
            let error = match &element.target {
                Some(subckt) if element.kind == ElementKind::Instance => {
                    SpiceError::NotThatDevice {
                        element: element.name.text.clone(),
                        subckt: subckt.text.clone(),
                        device: device_type.as_str(),
                        expected: what,
                        found,
                    }
                }
                _ => SpiceError::ExpectedItems {
                    what: what.to_owned(),
                    element: element.name.text.clone(),
                    found,
                },
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
        let mut nodes: Vec<Name> = element.nodes.clone();
        if device_type.is_mos() && nodes.len() == 3 {
            let (bulk, why) = match bulks.for_type(device_type) {
                Some((net, why)) => (net.clone(), *why),
                None => (
                    nodes[2].clone(),
                    "its own source (no other net is in reach)",
                ),
            };
            let warning = SpiceError::BulkDefaulted {
                element: element.name.text.clone(),
                net: bulk.text.clone(),
                why,
            };
            self.problems.warning(element.name.at, warning);
            nodes.push(Name {
                text: bulk.text,
                at: element.name.at,
            });
        }
        let mut terminals = Map::new();
        for (terminal, node) in terminal_names.iter().zip(&nodes) {
            terminals.insert((*terminal).to_owned(), json!(self.net(node, globals)));
            self.locations
                .insert(format!("{pointer}/terminals/{terminal}"), node.at);
        }
        device.insert("terminals".to_owned(), Value::Object(terminals));
        let sound = self.sizes(element, device_type, scope, pointer, &mut device);
        sound.then_some(Value::Object(device))
    }

    /// `R1 a b rload` with `rload` a parameter (HSPICE): the value, not a model.
    fn value_by_parameter(&self, element: &Element, scope: &Scope<'_>) -> Option<Element> {
        let passive = matches!(element.kind, ElementKind::Resistor | ElementKind::Capacitor);
        let name = element.target.as_ref()?;
        if !passive || element.value.is_some() || !scope.defines(&name.key()) {
            return None;
        }
        let value = SpiceValue {
            expr: Expr::Param {
                name: name.key(),
                at: name.at,
            },
            at: name.at,
        };
        Some(Element {
            target: None,
            value: Some(value),
            ..element.clone()
        })
    }
}
