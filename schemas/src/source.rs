//! Reading an input file into a JSON document: size limit, UTF-8, JSON syntax with line and column.

use std::path::Path;

use serde_json::Value;

use crate::issue::InputErrors;

/// The largest input file Centroid reads. A netlist of tens of thousands of devices fits easily.
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a file's bytes, refusing files over [`MAX_INPUT_BYTES`] before reading them.
pub fn read_input_file(path: &Path) -> Result<Vec<u8>, InputErrors> {
    let label = path.display().to_string();
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(InputErrors::single(&label, "", "file not found"));
        }
        Err(error) => {
            return Err(InputErrors::single(
                &label,
                "",
                format!("cannot read the file: {error}"),
            ));
        }
    };
    if metadata.is_dir() {
        return Err(InputErrors::single(
            &label,
            "",
            "is a directory, expected a JSON file",
        ));
    }
    if metadata.len() > MAX_INPUT_BYTES {
        return Err(too_large(&label, metadata.len()));
    }
    std::fs::read(path)
        .map_err(|error| InputErrors::single(&label, "", format!("cannot read the file: {error}")))
}

fn too_large(label: &str, size: u64) -> InputErrors {
    InputErrors::single(
        label,
        "",
        format!(
            "file is {:.1} MiB; an input file may be at most {} MiB",
            size as f64 / (1024.0 * 1024.0),
            MAX_INPUT_BYTES / (1024 * 1024)
        ),
    )
}

/// Decodes bytes into a JSON object, with the line and column of any syntax error.
pub fn parse_json_document(label: &str, bytes: &[u8]) -> Result<Value, InputErrors> {
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_large(label, bytes.len() as u64));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let (line, column) = line_and_column(&bytes[..error.valid_up_to()]);
            let bad_byte = bytes[error.valid_up_to()];
            return Err(InputErrors::single(
                label,
                "",
                format!(
                    "not UTF-8: byte 0x{bad_byte:02x} at line {line} column {column}; save the file as UTF-8 JSON"
                ),
            ));
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(InputErrors::single(
            label,
            "",
            "file is empty; expected a JSON object",
        ));
    }
    let document: Value = serde_json::from_str(text).map_err(|error| {
        let message = error.to_string();
        let reason = message.split(" at line ").next().unwrap_or(&message);
        InputErrors::single(
            label,
            "",
            format!(
                "invalid JSON at line {} column {}: {reason}",
                error.line(),
                error.column()
            ),
        )
    })?;
    if !document.is_object() {
        return Err(InputErrors::single(
            label,
            "",
            format!(
                "expected a JSON object at the top level, found {}",
                json_kind(&document)
            ),
        ));
    }
    Ok(document)
}

fn line_and_column(valid_prefix: &[u8]) -> (usize, usize) {
    let line = valid_prefix.iter().filter(|&&byte| byte == b'\n').count() + 1;
    let line_start = valid_prefix
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |index| index + 1);
    let column = String::from_utf8_lossy(&valid_prefix[line_start..])
        .chars()
        .count()
        + 1;
    (line, column)
}

/// "an array", "a string", … for messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
