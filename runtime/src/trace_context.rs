//! One trace id per job, carried between processes as a W3C `traceparent`
//! (`00-<32 hex trace id>-<16 hex span id>-01`) in gRPC metadata: the CLI sends
//! one with SubmitJob, the coordinator keeps it in the job record and sends it with
//! every RunCandidate, the worker puts it on its candidate span and hands it to
//! the skill server. Logs carry it as `trace_id` (see [`super::log_entry`]), so one
//! grep follows a job across machines.

use tonic::metadata::{MetadataMap, MetadataValue};

/// The metadata key (and HTTP header) of the W3C trace context.
pub const TRACEPARENT: &str = "traceparent";

/// A fresh trace id: 32 lowercase hex digits, never all zero.
pub fn new_trace_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A `traceparent` value for `trace_id` with a fresh span id.
pub fn traceparent(trace_id: &str) -> String {
    let span_id = uuid::Uuid::new_v4().simple().to_string();
    format!("00-{trace_id}-{}-01", &span_id[..16])
}

/// The trace id of a `traceparent` value, if it is a valid version-00 one.
pub fn parse_traceparent(value: &str) -> Option<String> {
    let mut parts = value.trim().split('-');
    let (version, trace_id, span_id, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |text: &str, length: usize| {
        text.len() == length
            && text
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    };
    let valid = parts.next().is_none()
        && version == "00"
        && hex(trace_id, 32)
        && hex(span_id, 16)
        && hex(flags, 2)
        && trace_id.bytes().any(|byte| byte != b'0')
        && span_id.bytes().any(|byte| byte != b'0');
    valid.then(|| trace_id.to_string())
}

/// The trace id a call carries in its metadata, if any (and valid).
pub fn trace_id_of(metadata: &MetadataMap) -> Option<String> {
    metadata
        .get(TRACEPARENT)
        .and_then(|value| value.to_str().ok())
        .and_then(parse_traceparent)
}

/// Adds `traceparent` for `trace_id` to a call (nothing when `trace_id` is empty
/// or not 32 hex digits).
pub fn attach(metadata: &mut MetadataMap, trace_id: &str) {
    if trace_id.is_empty() {
        return;
    }
    let value = traceparent(trace_id);
    if parse_traceparent(&value).is_none() {
        return;
    }
    if let Ok(value) = MetadataValue::try_from(value.as_str()) {
        metadata.insert(TRACEPARENT, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_id_travels_through_metadata() {
        let trace_id = new_trace_id();
        let mut metadata = MetadataMap::new();
        attach(&mut metadata, &trace_id);
        assert_eq!(trace_id_of(&metadata), Some(trace_id));
    }

    #[test]
    fn only_valid_version_00_values_are_read() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(
            parse_traceparent(good).as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        ] {
            assert_eq!(parse_traceparent(bad), None, "{bad}");
        }
        let mut metadata = MetadataMap::new();
        attach(&mut metadata, "not-hex");
        assert!(metadata.get(TRACEPARENT).is_none());
    }
}
