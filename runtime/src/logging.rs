//! One logging set-up for every binary: `tracing` to stderr, filtered by
//! `CENTROID_LOG` (an `EnvFilter` directive such as `info` or
//! `centroid_coordinator=debug,warn`), as text or as one JSON object per line.
//!
//! JSON lines have the shape of seed 000 §4.6.2 ([`log_entry`]): `timestamp`,
//! `level`, `session_id`, `trace_id`, `candidate_id`, `event_type`, `message`,
//! `data`, `duration_ms` — the ids taken from the spans around an event, so one
//! grep for a trace or candidate id follows it through every process.
//!
//! Text lines escape control characters in every field and message (`\n` as the
//! two characters `\` `n`): a candidate id or a message carrying a newline
//! arriving over gRPC cannot forge a line of the log.

use std::fmt;
use std::io::IsTerminal;

use serde::{Deserialize, Serialize};
use tracing::field::Field;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::MakeExt;
use tracing_subscriber::field::delimited::Delimited;
use tracing_subscriber::fmt::format::{FieldFn, Writer, debug_fn};

use super::log_entry;

/// The variable holding the log filter.
pub const LOG_FILTER_VARIABLE: &str = "CENTROID_LOG";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber; `default_filter` applies when `CENTROID_LOG`
/// is unset or invalid. A second call keeps the first subscriber (the in-process
/// coordinator and worker of `centroid run` log through the CLI's).
pub fn init_logging(format: LogFormat, default_filter: &str) {
    let filter = EnvFilter::try_from_env(LOG_FILTER_VARIABLE)
        .unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _already_installed = match format {
        LogFormat::Json => builder
            .fmt_fields(log_entry::span_fields())
            .event_format(log_entry::SeedJsonFormat)
            .try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .fmt_fields(text_fields())
            .try_init(),
    };
}

/// How one field of a text line is written.
type WriteField = fn(&mut Writer<'_>, &Field, &dyn fmt::Debug) -> fmt::Result;

/// The fields of a text line: `name=value` separated by spaces, the message bare,
/// every control character escaped.
pub fn text_fields() -> Delimited<&'static str, FieldFn<WriteField>> {
    let write_field: WriteField = |writer, field, value| {
        if field.name() != "message" {
            write!(writer, "{}=", field.name())?;
        }
        write_escaped(writer, &format!("{value:?}"))
    };
    debug_fn(write_field).delimited(" ")
}

/// `text` with `\n`, `\r`, `\t` and every other control character escaped.
fn write_escaped(writer: &mut impl fmt::Write, text: &str) -> fmt::Result {
    for character in text.chars() {
        match character {
            '\n' => writer.write_str("\\n")?,
            '\r' => writer.write_str("\\r")?,
            '\t' => writer.write_str("\\t")?,
            control if control.is_control() => write!(writer, "\\u{{{:x}}}", control as u32)?,
            other => writer.write_char(other)?,
        }
    }
    Ok(())
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<LogFormat, String> {
        match text {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("log format `{other}`: expected `text` or `json`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn control_characters_in_fields_and_messages_cannot_forge_a_text_line() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .fmt_fields(text_fields())
            .finish();
        let forged = "c1\n2026-01-01T00:00:00Z ERROR forged: pwned";
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("candidate", candidate_id = %forged);
            let _entered = span.enter();
            tracing::info!(
                session_id = %"s\r\x1b[2Jx",
                worker_id = forged,
                count = 3,
                "ran {}",
                forged
            );
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(!text.contains('\r') && !text.contains('\x1b'), "{text:?}");
        assert!(
            text.contains("candidate_id=c1\\n2026-01-01T00:00:00Z ERROR forged"),
            "{text}"
        );
        assert!(text.contains("session_id=s\\r\\u{1b}[2Jx"), "{text}");
        assert!(text.contains("ran c1\\n2026"), "{text}");
        assert!(text.contains("count=3"), "{text}");
    }
}
