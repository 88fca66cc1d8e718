//! Validation of a document against the JSON Schema of its kind and version.

use std::collections::HashMap;
use std::sync::OnceLock;

use jsonschema::Validator;
use serde_json::Value;

use crate::issue::IssueSink;
use crate::version::{InputKind, SchemaVersion};

/// The JSON Schema text of a kind at a supported version.
pub fn schema_text(kind: InputKind, version: SchemaVersion) -> Option<&'static str> {
    let text = match (kind, (version.major, version.minor, version.patch)) {
        (InputKind::Netlist, (1, 0, 0)) => include_str!("../json/netlist-1.0.0.schema.json"),
        (InputKind::Netlist, (1, 1, 0)) => include_str!("../json/netlist-1.1.0.schema.json"),
        (InputKind::DrcRules, (1, 0, 0)) => include_str!("../json/drc_rules-1.0.0.schema.json"),
        (InputKind::DrcRules, (1, 1, 0)) => include_str!("../json/drc_rules-1.1.0.schema.json"),
        (InputKind::DrcRules, (1, 2, 0)) => include_str!("../json/drc_rules-1.2.0.schema.json"),
        (InputKind::DrcRules, (1, 3, 0)) => include_str!("../json/drc_rules-1.3.0.schema.json"),
        (InputKind::DrcRules, (1, 4, 0)) => include_str!("../json/drc_rules-1.4.0.schema.json"),
        (InputKind::Objectives, (1, 0, 0)) => include_str!("../json/objectives-1.0.0.schema.json"),
        (InputKind::Objectives, (1, 1, 0)) => include_str!("../json/objectives-1.1.0.schema.json"),
        _ => return None,
    };
    Some(text)
}

/// The bundled schemas, parsed once.
fn schemas() -> &'static HashMap<(InputKind, SchemaVersion), Value> {
    static SCHEMAS: OnceLock<HashMap<(InputKind, SchemaVersion), Value>> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut schemas = HashMap::new();
        for kind in InputKind::ALL {
            for &version in kind.supported_versions() {
                let text =
                    schema_text(kind, version).expect("every supported version has a schema");
                schemas.insert(
                    (kind, version),
                    serde_json::from_str(text).expect("bundled schemas are valid JSON"),
                );
            }
        }
        schemas
    })
}

fn validators() -> &'static HashMap<(InputKind, SchemaVersion), Validator> {
    static VALIDATORS: OnceLock<HashMap<(InputKind, SchemaVersion), Validator>> = OnceLock::new();
    VALIDATORS.get_or_init(|| {
        schemas()
            .iter()
            .map(|(key, schema)| {
                (
                    *key,
                    jsonschema::draft7::new(schema)
                        .expect("bundled schemas are valid draft-07 schemas"),
                )
            })
            .collect()
    })
}

/// Longest message text kept from the schema validator (it quotes the offending value).
const MAX_MESSAGE_CHARS: usize = 300;

/// Checks `document` against the schema; every violation goes into `sink`.
pub(crate) fn check_against_schema(
    kind: InputKind,
    version: SchemaVersion,
    document: &Value,
    sink: &mut IssueSink,
) {
    let validator = &validators()[&(kind, version)];
    for error in validator.iter_errors(document) {
        let pointer = error.instance_path().as_str().to_owned();
        let message = explain(kind, version, &pointer, &error);
        sink.push(pointer, message);
    }
}

fn explain(
    kind: InputKind,
    version: SchemaVersion,
    pointer: &str,
    error: &jsonschema::ValidationError<'_>,
) -> String {
    use jsonschema::error::ValidationErrorKind;
    // A layer written as an object in a file read as 1.0.0 (often: no schema_version at
    // all) — the schema would only say that the whole object "is not of type integer".
    let segments: Vec<&str> = pointer.split('/').collect();
    if kind == InputKind::DrcRules
        && version < SchemaVersion::new(1, 1, 0)
        && matches!(segments.as_slice(), ["", "layers", _])
        && error.instance().is_object()
    {
        return format!(
            "a layer written as an object {{\"layer\", \"datatype\", \"role\", …}} needs schema_version 1.1.0 or later, and this file is read as {version}; declare \"schema_version\": \"1.4.0\" or give the GDS layer number alone"
        );
    }
    let is_one_of = matches!(
        error.kind(),
        ValidationErrorKind::OneOfNotValid { .. } | ValidationErrorKind::OneOfMultipleValid { .. }
    );
    if is_one_of {
        let expected = match (kind, segments.as_slice()) {
            (InputKind::DrcRules, ["", "layers", _]) => Some(
                "expected a GDS layer number (integer) or an object {\"layer\": integer, \"datatype\"?: integer, \"role\"?: string}",
            ),
            (InputKind::Netlist, ["", "cells", _, "nets", _]) => Some(
                "expected a net name or an object {\"name\": string, \"type\"?: \"power\" | \"ground\" | \"signal\"}",
            ),
            _ => None,
        };
        if let Some(expected) = expected {
            return expected.to_owned();
        }
    }
    if let ValidationErrorKind::Enum { options } = error.kind()
        && let Value::Array(options) = options.as_ref()
    {
        let valid: Vec<String> = options
            .iter()
            .map(|option| {
                option
                    .as_str()
                    .map_or_else(|| option.to_string(), str::to_owned)
            })
            .collect();
        return format!(
            "{} is not valid; expected one of: {}",
            error.instance(),
            valid.join(", ")
        );
    }
    let mut message = error.to_string();
    if message.chars().count() > MAX_MESSAGE_CHARS {
        message = message.chars().take(MAX_MESSAGE_CHARS).collect::<String>() + "…";
    }
    message
}

/// Fields the schema does not know, as (pointer, message): a typo such as `"NF"` for
/// `"nf"` would otherwise be silently ignored. Driven by the schema's `properties`.
pub(crate) fn unknown_fields(
    kind: InputKind,
    version: SchemaVersion,
    document: &Value,
) -> Vec<(String, String)> {
    let schema = &schemas()[&(kind, version)];
    let mut found = Vec::new();
    walk_unknown_fields(schema, schema, document, "", &mut found);
    found
}

fn resolve_reference<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix('#'))
    {
        Some(pointer) => root.pointer(pointer).unwrap_or(schema),
        None => schema,
    }
}

fn walk_unknown_fields(
    root: &Value,
    schema: &Value,
    instance: &Value,
    pointer: &str,
    found: &mut Vec<(String, String)>,
) {
    let schema = resolve_reference(root, schema);
    if let Some(Value::Array(branches)) = schema.get("oneOf") {
        // Follow the branch written for this kind of value (e.g. a layer given as an object).
        let wanted = if instance.is_object() { "object" } else { "" };
        if let Some(branch) = branches
            .iter()
            .map(|branch| resolve_reference(root, branch))
            .find(|branch| branch.get("type").and_then(Value::as_str) == Some(wanted))
        {
            walk_unknown_fields(root, branch, instance, pointer, found);
        }
        return;
    }
    match instance {
        Value::Object(map) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema
                .get("additionalProperties")
                .filter(|value| value.is_object());
            for (key, value) in map {
                let child = crate::issue::pointer_join(pointer, key);
                match (
                    properties.and_then(|properties| properties.get(key)),
                    additional,
                ) {
                    (Some(child_schema), _) | (None, Some(child_schema)) => {
                        walk_unknown_fields(root, child_schema, value, &child, found)
                    }
                    (None, None) if properties.is_some() => {
                        let known: Vec<&str> = properties
                            .into_iter()
                            .flat_map(|properties| properties.keys().map(String::as_str))
                            .collect();
                        found.push((
                            child,
                            format!(
                                "unknown field \"{key}\" is ignored; known fields here: {}",
                                known.join(", ")
                            ),
                        ));
                    }
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    walk_unknown_fields(
                        root,
                        item_schema,
                        item,
                        &format!("{pointer}/{index}"),
                        found,
                    );
                }
            }
        }
        _ => {}
    }
}
