//! `drc_rules.json` as written, and the rule set built from it once every semantic check
//! passed.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::circuit::DeviceType;
use crate::issue::IssueSink;
use crate::parasitics::{Parasitics, V1_4, check_parasitics};
use crate::version::SchemaVersion;

use super::layer_checks::{build_derived_layers, build_layers};
use super::model::{DEFAULT_GRID_M, DrcRuleSet};
use super::required_roles::{check_required_roles, role_missing_message};
use super::rule_checks::{RuleSpec, build_rules, check_models};

/// The coarsest manufacturing grid a rule set may give: 1 µm.
const MAX_GRID_M: f64 = 1e-6;

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct DrcDocument {
    tech: String,
    #[serde(default)]
    pub(crate) grid: Option<f64>,
    layers: Map<String, Value>,
    #[serde(default)]
    derived_layers: Map<String, Value>,
    rules: Vec<RuleSpec>,
    #[serde(default)]
    models: BTreeMap<String, DeviceType>,
    #[serde(default)]
    parasitics: Option<Parasitics>,
}

/// Semantic checks of a schema-valid rule set and the model built from it.
pub(crate) fn build_rule_set(
    document: DrcDocument,
    version: SchemaVersion,
    sink: &mut IssueSink,
) -> Option<DrcRuleSet> {
    if document.tech.trim().is_empty() {
        sink.push(
            "/tech",
            "tech is empty; name the process, e.g. \"ihp_sg13g2\"",
        );
    }
    let grid = document.grid.unwrap_or(DEFAULT_GRID_M);
    if !(grid > 0.0 && grid <= MAX_GRID_M) {
        sink.push("/grid", format!("grid = {grid} m is out of range; the manufacturing grid is in metres, e.g. 5e-9, at most {MAX_GRID_M:e}"));
    }
    let layers = build_layers(&document.layers, sink);
    let layer_names: HashSet<&str> = layers.iter().map(|layer| layer.name.as_str()).collect();
    let derived_layers = build_derived_layers(&document.derived_layers, &layer_names, sink);
    let mut known_names: Vec<&str> = layers.iter().map(|layer| layer.name.as_str()).collect();
    known_names.extend(derived_layers.iter().map(|derived| derived.name.as_str()));
    let rules = build_rules(document.rules, &known_names, version, sink);
    check_models(&document.models, version, sink);
    if let Some(parasitics) = &document.parasitics {
        check_parasitics(parasitics, version, &layer_names, sink);
    }
    if version < V1_4 {
        for layer in layers
            .iter()
            .filter(|layer| layer.max_current_density.is_some())
        {
            sink.push(
                crate::issue::pointer_join(&crate::issue::pointer_join("/layers", &layer.name), "max_current_density"),
                format!("\"max_current_density\" is a schema_version 1.4.0 field but the file declares {version}; declare \"schema_version\": \"1.4.0\""),
            );
        }
    }
    let rule_set = DrcRuleSet {
        tech: document.tech,
        grid,
        layers,
        derived_layers,
        rules,
        models: document.models,
        parasitics: document.parasitics,
    };
    check_required_roles(
        &rule_set,
        &["active", "poly", "contact", "metal1", "via1", "metal2"],
        sink,
    );
    if rule_set.layer_for_role("nplus").is_none() && rule_set.layer_for_role("pplus").is_none() {
        sink.push(
            "/layers",
            role_missing_message(
                "pplus",
                " (or nplus): the generator needs an implant layer to tell n and p diffusion apart",
            ),
        );
    }
    sink.is_empty().then_some(rule_set)
}
