//! The JSON log line of seed 000 §4.6.2, one per event:
//!
//! ```json
//! {"timestamp": "2026-11-25T10:30:45.123456Z", "level": "INFO",
//!  "session_id": "job-…", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
//!  "candidate_id": "c-…", "event_type": "TOOL_CALL",
//!  "message": "skill call", "data": {"skill": "drc.run", …}, "duration_ms": 12,
//!  "target": "centroid_worker::candidate"}
//! ```
//!
//! `session_id`, `trace_id` and `candidate_id` come from the event or from any span
//! around it (the coordinator's `session` and `candidate` spans, the worker's
//! `candidate` span); `event_type` from the event's `event_type` field (the classes
//! of seed 000 §4.6.1: [`event_types`]), else `ERROR` for an error and `LOG`
//! otherwise; `duration_ms` from the event's field of that name; every other field
//! of the event and its spans goes into `data` (a string field `x_json` holding
//! JSON as `x`, parsed). Absent values are `null`.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{JsonFields, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// The event classes of seed 000 §4.6.1, as `event_type = …` fields of log events.
pub mod event_types {
    /// a session starts, changes state or ends
    pub const SESSION: &str = "SESSION";
    /// an iteration's plans are made (or a plan is adjusted)
    pub const PLAN: &str = "PLAN";
    /// a skill call on a worker, with its duration
    pub const TOOL_CALL: &str = "TOOL_CALL";
    /// a candidate is evaluated
    pub const EVALUATION: &str = "EVALUATION";
    /// a new iteration starts
    pub const ITERATION: &str = "ITERATION";
    /// the long-term memory or the knowledge base is searched
    pub const RETRIEVAL: &str = "RETRIEVAL";
    /// a model call, with its tokens
    pub const TOKEN_USAGE: &str = "TOKEN_USAGE";
    /// a failure (also every event logged at error level)
    pub const ERROR: &str = "ERROR";
}

/// Fields lifted out of `data` to the top level of the entry.
const TOP_LEVEL: [&str; 4] = ["session_id", "trace_id", "candidate_id", "duration_ms"];

/// The `FormatEvent` writing seed-shaped JSON lines; use with [`JsonFields`] so span
/// fields are recorded as JSON.
pub struct SeedJsonFormat;

impl<S, N> FormatEvent<S, N> for SeedJsonFormat
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
    N: for<'writer> FormatFields<'writer> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Map::new();
        if let Some(scope) = context.event_scope() {
            for span in scope.from_root() {
                let extensions = span.extensions();
                if let Some(formatted) = extensions.get::<FormattedFields<N>>()
                    && let Ok(Value::Object(span_fields)) =
                        serde_json::from_str::<Value>(&formatted.fields)
                {
                    fields.extend(span_fields);
                }
            }
        }
        event.record(&mut JsonVisitor(&mut fields));
        let mut timestamp = String::new();
        SystemTime.format_time(&mut Writer::new(&mut timestamp))?;
        let entry = entry(
            timestamp,
            *event.metadata().level(),
            event.metadata().target(),
            fields,
        );
        writeln!(writer, "{entry}")
    }
}

/// The entry for an event at `level` with the merged `fields` of its spans and itself.
fn entry(timestamp: String, level: Level, target: &str, mut fields: Map<String, Value>) -> Value {
    let message = fields
        .remove("message")
        .unwrap_or(Value::String(String::new()));
    let event_type = match fields.remove("event_type") {
        Some(Value::String(kind)) => kind,
        _ if level == Level::ERROR => event_types::ERROR.to_string(),
        _ => "LOG".to_string(),
    };
    // `x_json = "{…}"` fields carry JSON: they read as `x: {…}`
    let json_fields: Vec<String> = fields
        .keys()
        .filter(|key| key.ends_with("_json"))
        .cloned()
        .collect();
    for key in json_fields {
        if let Some(Value::String(text)) = fields.get(&key)
            && let Ok(parsed) = serde_json::from_str::<Value>(text)
        {
            fields.remove(&key);
            fields.insert(key.trim_end_matches("_json").to_string(), parsed);
        }
    }
    let mut entry = Map::new();
    entry.insert("timestamp".into(), Value::String(timestamp));
    entry.insert("level".into(), Value::String(level.to_string()));
    for key in TOP_LEVEL {
        entry.insert(key.into(), fields.remove(key).unwrap_or(Value::Null));
    }
    entry.insert("event_type".into(), Value::String(event_type));
    entry.insert("message".into(), message);
    entry.insert("data".into(), Value::Object(fields));
    entry.insert("target".into(), Value::String(target.to_string()));
    Value::Object(entry)
}

/// The field formatter to pair with [`SeedJsonFormat`].
pub fn span_fields() -> JsonFields {
    JsonFields::new()
}

struct JsonVisitor<'a>(&'a mut Map<String, Value>);

impl Visit for JsonVisitor<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0
            .insert(field.name().into(), Value::from(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::from(format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(emit: impl FnOnce()) -> Vec<Value> {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(span_fields())
            .event_format(SeedJsonFormat)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, emit);
        let bytes = captured.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect()
    }

    #[test]
    fn an_entry_has_the_seed_shape_with_the_span_ids_lifted() {
        let entries = lines(|| {
            let session = tracing::info_span!("session", session_id = "job-1", trace_id = "ab12");
            let _session = session.enter();
            let candidate = tracing::info_span!("candidate", candidate_id = "c-7", slot = 2);
            let _candidate = candidate.enter();
            tracing::info!(
                event_type = event_types::TOOL_CALL,
                skill = "drc.run",
                duration_ms = 12u64,
                ok = true,
                result_json = r#"{"violations": 0}"#,
                "skill call"
            );
        });
        let entry = &entries[0];
        let keys: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "timestamp",
                "level",
                "session_id",
                "trace_id",
                "candidate_id",
                "duration_ms",
                "event_type",
                "message",
                "data",
                "target"
            ]
        );
        assert_eq!(entry["level"], "INFO");
        assert_eq!(entry["session_id"], "job-1");
        assert_eq!(entry["trace_id"], "ab12");
        assert_eq!(entry["candidate_id"], "c-7");
        assert_eq!(entry["event_type"], "TOOL_CALL");
        assert_eq!(entry["message"], "skill call");
        assert_eq!(entry["duration_ms"], 12);
        assert_eq!(entry["data"]["skill"], "drc.run");
        assert_eq!(entry["data"]["ok"], true);
        assert_eq!(entry["data"]["slot"], 2);
        assert_eq!(entry["data"]["result"]["violations"], 0);
        assert!(
            entry["timestamp"].as_str().unwrap().ends_with('Z'),
            "{entry}"
        );
    }

    #[test]
    fn without_spans_the_ids_are_null_and_an_error_is_of_type_error() {
        let entries = lines(|| {
            tracing::error!(code = "TIMEOUT", "step ran past the deadline");
            tracing::warn!("plain");
        });
        assert_eq!(entries[0]["session_id"], Value::Null);
        assert_eq!(entries[0]["trace_id"], Value::Null);
        assert_eq!(entries[0]["event_type"], "ERROR");
        assert_eq!(entries[0]["data"]["code"], "TIMEOUT");
        assert_eq!(entries[1]["event_type"], "LOG");
        assert_eq!(entries[1]["level"], "WARN");
    }
}
