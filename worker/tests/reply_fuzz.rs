//! The worker's reading of a skill server's replies never panics and never hangs:
//! arbitrary lines, truncated JSON, wrong ids, huge numbers and members of the wrong
//! type are each classified by `parse_reply_line`; `read_reply` over a stream of such
//! lines ends at the reply, at the end of the stream or at an over-long line, always with
//! a structured error when there is no result.
//!
//! `cargo test` runs a few hundred cases per property; `PROPTEST_CASES=20000 cargo test
//! -p centroid-worker --test reply_fuzz` runs them longer.

use std::time::Duration;

use centroid_worker::SkillProcessError;
use centroid_worker::skill_reply::{ReadFailure, ReplyLine, parse_reply_line, read_reply};
use proptest::prelude::*;
use serde_json::{Value, json};

const REQUEST_ID: u64 = 42;
const METHOD: &str = "tools/call";

fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// A JSON value of any type, small, with the edge cases of numbers.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        Just(Value::from(u64::MAX)),
        any::<f64>()
            .prop_filter("finite", |value| value.is_finite())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,8}", inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// The `id` member as text: ours, another, or one of the wrong type or size.
fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just(REQUEST_ID.to_string()),
        1 => (0..u64::MAX).prop_filter("not ours", |id| *id != REQUEST_ID).prop_map(|id| id.to_string()),
        1 => prop_oneof![
            Just("42.0".to_owned()), Just("4.2e1".to_owned()), Just("-42".to_owned()),
            Just("\"42\"".to_owned()), Just("null".to_owned()), Just("true".to_owned()),
            Just("[42]".to_owned()), Just("1e400".to_owned()),
            Just("18446744073709551658".to_owned()), Just("NaN".to_owned()),
        ],
    ]
}

/// A reply-like line: members present or not, of the right type or not.
#[derive(Debug, Clone)]
struct ReplyParts {
    id: Option<String>,
    result: Option<Value>,
    error: Option<Value>,
}

impl ReplyParts {
    fn line(&self) -> String {
        let mut members = vec!["\"jsonrpc\":\"2.0\"".to_owned()];
        if let Some(id) = &self.id {
            members.push(format!("\"id\":{id}"));
        }
        if let Some(result) = &self.result {
            members.push(format!("\"result\":{result}"));
        }
        if let Some(error) = &self.error {
            members.push(format!("\"error\":{error}"));
        }
        format!("{{{}}}", members.join(","))
    }
}

fn error_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        (any::<i64>(), ".{0,30}")
            .prop_map(|(code, message)| json!({"code": code, "message": message})),
        (any_value(), any_value())
            .prop_map(|(code, message)| json!({"code": code, "message": message})),
        any_value(),
    ]
}

fn reply_parts() -> impl Strategy<Value = ReplyParts> {
    (
        proptest::option::weighted(0.9, id_text()),
        proptest::option::of(any_value()),
        proptest::option::of(error_value()),
    )
        .prop_map(|(id, result, error)| ReplyParts { id, result, error })
}

/// What the line must be classified as, from its parts.
fn check_classification(parts: &ReplyParts, classified: ReplyLine) {
    let line = parts.line();
    let document: Option<Value> = serde_json::from_str(&line).ok();
    let Some(document) = document else {
        assert!(
            matches!(classified, ReplyLine::NotJson),
            "{line}: {classified:?}"
        );
        return;
    };
    // 42.0 is not the id 42: the worker's ids are integers.
    if document.get("id") != Some(&json!(REQUEST_ID)) {
        assert!(
            matches!(classified, ReplyLine::OtherReply),
            "{line}: {classified:?}"
        );
        return;
    }
    let ReplyLine::Reply(reply) = classified else {
        panic!("{line}: not the reply: {classified:?}");
    };
    match (
        document.get("error").filter(|error| !error.is_null()),
        reply,
    ) {
        (
            Some(error),
            Err(SkillProcessError::JsonRpc {
                code,
                message,
                method,
            }),
        ) => {
            assert_eq!(Some(code), error["code"].as_i64(), "{line}");
            assert_eq!(Some(message.as_str()), error["message"].as_str(), "{line}");
            assert_eq!(method, METHOD);
        }
        (Some(error), Err(SkillProcessError::Protocol(message))) => {
            assert!(
                error["code"].as_i64().is_none() || error["message"].as_str().is_none(),
                "{line}: a well-formed error called malformed"
            );
            assert!(message.contains("malformed error"), "{message}");
        }
        (None, Ok(result)) => assert_eq!(Some(&result), document.get("result"), "{line}"),
        (None, Err(SkillProcessError::Protocol(message))) => {
            assert!(document.get("result").is_none(), "{line}");
            assert!(
                message.contains("neither a result nor an error"),
                "{message}"
            );
        }
        (_, other) => panic!("{line}: {other:?}"),
    }
}

/// A line that is never the reply to [`REQUEST_ID`]: garbage, truncated JSON, other ids.
fn junk_line() -> impl Strategy<Value = Vec<u8>> {
    let other_reply = (1..u64::MAX)
        .prop_filter("not ours", |id| *id != REQUEST_ID)
        .prop_map(|id| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}").into_bytes());
    let truncated = (reply_parts(), any::<prop::sample::Index>()).prop_map(|(parts, cut)| {
        let line = parts.line().into_bytes();
        line[..cut.index(line.len())].to_vec()
    });
    prop_oneof![
        proptest::collection::vec(
            any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
            0..300
        ),
        ".{0,100}".prop_map(String::into_bytes),
        other_reply,
        truncated,
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

/// Runs `read_reply` over `stream`; a hang fails the test.
fn read_all(stream: &[u8], max_line_bytes: usize) -> Result<Value, ReadFailure> {
    runtime().block_on(async {
        let mut reader = tokio::io::BufReader::with_capacity(64, stream);
        let mut buffer = Vec::new();
        let read = read_reply(
            &mut reader,
            &mut buffer,
            REQUEST_ID,
            METHOD,
            0,
            max_line_bytes,
        );
        tokio::time::timeout(Duration::from_secs(10), read)
            .await
            .expect("read_reply hung")
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_lines_are_classified(line in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let ReplyLine::Reply(Err(error)) = parse_reply_line(&line, REQUEST_ID, METHOD) {
            prop_assert!(
                matches!(error, SkillProcessError::JsonRpc { .. } | SkillProcessError::Protocol(_)),
                "{error:?}"
            );
            prop_assert!(!error.to_string().is_empty());
        }
    }

    #[test]
    fn reply_like_lines_are_classified_by_their_members(parts in reply_parts()) {
        let line = parts.line();
        check_classification(&parts, parse_reply_line(line.as_bytes(), REQUEST_ID, METHOD));
    }

    #[test]
    fn junk_then_end_of_stream_is_closed(lines in proptest::collection::vec(junk_line(), 0..12)) {
        let stream = lines.join(&b'\n');
        let outcome = read_all(&stream, 1 << 20);
        prop_assert!(matches!(outcome, Err(ReadFailure::Closed)), "{outcome:?}");
    }

    #[test]
    fn junk_then_the_reply_is_the_reply(
        lines in proptest::collection::vec(junk_line(), 0..12),
        result in any_value(),
    ) {
        let mut stream = lines.join(&b'\n');
        let reply = json!({"jsonrpc": "2.0", "id": REQUEST_ID, "result": result}).to_string();
        stream.extend_from_slice(format!("\n{reply}\n").as_bytes());
        // What the reply's result reads as (floats as serde_json parses them).
        let expected = serde_json::from_str::<Value>(&reply).unwrap()["result"].clone();
        let outcome = read_all(&stream, 1 << 20);
        prop_assert!(matches!(&outcome, Ok(value) if *value == expected), "{outcome:?}");
    }
}

#[test]
fn an_over_long_line_is_a_protocol_error_not_unbounded_memory() {
    let mut stream = vec![b'x'; 10_000];
    stream.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}\n");
    match read_all(&stream, 4_096) {
        Err(ReadFailure::Reply(SkillProcessError::Protocol(message))) => {
            assert!(message.contains("longer than 4096 bytes"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // At the limit, the line is read.
    let line = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":\"{}\"}}\n",
        "y".repeat(4_000)
    );
    assert!(read_all(line.as_bytes(), line.len() - 1).is_ok());
}

#[test]
fn a_line_that_is_not_utf8_is_skipped_like_any_non_json_line() {
    let stream = b"\xff\xfe garbage\n{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":7}\n";
    assert_eq!(read_all(stream, 1 << 20).unwrap(), json!(7));
}

#[test]
fn a_malformed_error_or_a_missing_result_is_a_protocol_error() {
    for line in [
        r#"{"jsonrpc":"2.0","id":42,"error":"boom"}"#,
        r#"{"jsonrpc":"2.0","id":42,"error":{"code":"x","message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":42,"error":{"code":1e300,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":42}"#,
    ] {
        let reply = parse_reply_line(line.as_bytes(), REQUEST_ID, METHOD);
        assert!(
            matches!(reply, ReplyLine::Reply(Err(SkillProcessError::Protocol(_)))),
            "{line}: {reply:?}"
        );
    }
    let well_formed = br#"{"jsonrpc":"2.0","id":42,"error":{"code":-32602,"message":"bad"}}"#;
    match parse_reply_line(well_formed, REQUEST_ID, METHOD) {
        ReplyLine::Reply(Err(SkillProcessError::JsonRpc { code, message, .. })) => {
            assert_eq!((code, message.as_str()), (-32602, "bad"));
        }
        other => panic!("{other:?}"),
    }
}
