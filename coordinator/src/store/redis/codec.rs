//! Turning records into Redis values and Redis replies back into records (and the one
//! read of several JSON records of a hash).

use std::collections::HashMap;

use redis::Value;
use redis::aio::ConnectionManager;

use crate::error::{StoreError, StoreResult};
use crate::model::QueueEntry;

pub(super) fn corrupt(key: &str, message: impl ToString) -> StoreError {
    StoreError::Corrupt {
        key: key.to_string(),
        message: message.to_string(),
    }
}

pub(super) fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("records serialize")
}

pub(super) fn from_json<T: serde::de::DeserializeOwned>(key: &str, text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|error| corrupt(key, error))
}

/// The JSON records under `fields` of hash `key` (one HMGET), `None` where a field is
/// missing; a record that does not parse is corrupt.
pub(super) async fn hash_records<T: serde::de::DeserializeOwned>(
    mut conn: ConnectionManager,
    key: &str,
    fields: &[String],
) -> StoreResult<Vec<Option<T>>> {
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let texts: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(key)
        .arg(fields)
        .query_async(&mut conn)
        .await?;
    records_of(key, texts)
}

/// The JSON records of an HMGET reply of hash `key`, `None` where a field is missing;
/// a record that does not parse is corrupt.
pub(super) fn records_of<T: serde::de::DeserializeOwned>(
    key: &str,
    texts: Vec<Option<String>>,
) -> StoreResult<Vec<Option<T>>> {
    texts
        .into_iter()
        .map(|text| text.map(|text| from_json(key, &text)).transpose())
        .collect()
}

pub(super) fn value_text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Some(text.clone()),
        Value::Int(number) => Some(number.to_string()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        _ => None,
    }
}

pub(super) fn value_items(value: &Value) -> &[Value] {
    match value {
        Value::Array(items) | Value::Set(items) => items,
        _ => &[],
    }
}

/// `[id, [field, value, ...]]` entries of a stream reply, as (id, fields).
pub(super) fn stream_entries(value: &Value) -> Vec<(String, HashMap<String, String>)> {
    let mut entries = Vec::new();
    for entry in value_items(value) {
        let parts = value_items(entry);
        let Some(id) = parts.first().and_then(value_text) else {
            continue;
        };
        let mut fields = HashMap::new();
        match parts.get(1) {
            Some(Value::Map(pairs)) => {
                for (field, field_value) in pairs {
                    if let (Some(field), Some(field_value)) =
                        (value_text(field), value_text(field_value))
                    {
                        fields.insert(field, field_value);
                    }
                }
            }
            Some(list) => {
                for pair in value_items(list).chunks(2) {
                    if let [field, field_value] = pair
                        && let (Some(field), Some(field_value)) =
                            (value_text(field), value_text(field_value))
                    {
                        fields.insert(field, field_value);
                    }
                }
            }
            None => {}
        }
        entries.push((id, fields));
    }
    entries
}

pub(super) fn queue_entry(id: String, fields: &HashMap<String, String>) -> Option<QueueEntry> {
    Some(QueueEntry {
        entry_id: id,
        job_id: fields.get("job")?.clone(),
        candidate_id: fields.get("candidate")?.clone(),
        weight: fields
            .get("weight")
            .and_then(|weight| weight.parse::<u32>().ok())
            .unwrap_or(1)
            .max(1),
    })
}
