//! The details of a failed RPC as a standard `google.rpc.Status`.
//!
//! A failed RPC carries, in `grpc-status-details-bin`, a `google.rpc.Status`
//! whose `code` and `message` repeat the gRPC status and whose `details` hold:
//!  * a `google.rpc.ErrorInfo` (`reason` = the wire name of the error code, e.g.
//!    `NOT_FOUND`; `domain` = [`ERROR_DOMAIN`]; `metadata.retryable` = `"true"` or
//!    `"false"`) that any gRPC client's standard tooling can read
//!    (`grpc_status.rpc_status.from_call`, `tonic_types::StatusExt`, …);
//!  * the whole [`Error`] (`type.googleapis.com/centroid.v1.Error`) so a Centroid
//!    peer gets it back unchanged, details JSON included.
//!
//! Peers of the first protocol version put a bare, prost-encoded [`Error`] there;
//! [`decode`] still reads that.

use std::collections::HashMap;

use prost::Message;
use prost_types::Any;

use crate::v1::Error;

/// `google.rpc.ErrorInfo.domain` of every Centroid error.
pub const ERROR_DOMAIN: &str = "centroid";

const TYPE_URL_PREFIX: &str = "type.googleapis.com/";
const ERROR_INFO_TYPE: &str = "google.rpc.ErrorInfo";
const CENTROID_ERROR_TYPE: &str = "centroid.v1.Error";

/// The bytes of `grpc-status-details-bin` for `error` failing with `code` and `message`.
pub(crate) fn encode(error: &Error, code: tonic::Code, message: &str) -> Vec<u8> {
    let info = tonic_types::pb::ErrorInfo {
        reason: error.error_code().wire_name().to_string(),
        domain: ERROR_DOMAIN.to_string(),
        metadata: HashMap::from([("retryable".to_string(), error.retryable.to_string())]),
    };
    let status = tonic_types::pb::Status {
        code: code as i32,
        message: message.to_string(),
        details: vec![
            any(ERROR_INFO_TYPE, info.encode_to_vec()),
            any(CENTROID_ERROR_TYPE, error.encode_to_vec()),
        ],
    };
    status.encode_to_vec()
}

/// The structured error in `grpc-status-details-bin`, if any: the `centroid.v1.Error`
/// of a `google.rpc.Status`, else its `ErrorInfo` (from a third-party server),
/// else a bare `centroid.v1.Error` of an older peer.
pub(crate) fn decode(bytes: &[u8], message: &str) -> Option<Error> {
    if bytes.is_empty() {
        return None;
    }
    if let Ok(status) = tonic_types::pb::Status::decode(bytes) {
        let detail = |name: &str| {
            status
                .details
                .iter()
                .find(|detail| detail.type_url.strip_prefix(TYPE_URL_PREFIX) == Some(name))
        };
        if let Some(error) = detail(CENTROID_ERROR_TYPE)
            .and_then(|any| Error::decode(any.value.as_slice()).ok())
            .filter(|error| error.error_code() != crate::ErrorCode::Unspecified)
        {
            return Some(error);
        }
        if let Some(info) = detail(ERROR_INFO_TYPE)
            .and_then(|any| tonic_types::pb::ErrorInfo::decode(any.value.as_slice()).ok())
            .filter(|info| info.domain == ERROR_DOMAIN)
        {
            let code = crate::ErrorCode::from_wire_name(&info.reason);
            let mut error = Error::new(code, strip_code_prefix(message, code));
            if let Some(retryable) = info.metadata.get("retryable") {
                error.retryable = retryable == "true";
            }
            return Some(error);
        }
    }
    Error::decode(bytes)
        .ok()
        .filter(|error| error.error_code() != crate::ErrorCode::Unspecified)
}

fn any(type_name: &str, value: Vec<u8>) -> Any {
    Any {
        type_url: format!("{TYPE_URL_PREFIX}{type_name}"),
        value,
    }
}

/// `"NOT_FOUND: no job x"` → `"no job x"` (the status message repeats the code).
fn strip_code_prefix(message: &str, code: crate::ErrorCode) -> &str {
    message
        .strip_prefix(code.wire_name())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use tonic_types::StatusExt;

    #[test]
    fn the_details_are_a_google_rpc_status_that_standard_tooling_reads() {
        let error = Error::new(ErrorCode::NotFound, "no job j1")
            .with_details(serde_json::json!({"job_id": "j1"}));
        let status = error.to_status();
        let standard = tonic_types::pb::Status::decode(status.details()).unwrap();
        assert_eq!(standard.code, tonic::Code::NotFound as i32);
        assert_eq!(standard.message, status.message());
        // tonic-types' own reader finds the ErrorInfo among the details
        let info = status.get_details_error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "NOT_FOUND");
        assert_eq!(info.domain, ERROR_DOMAIN);
        assert_eq!(
            info.metadata.get("retryable").map(String::as_str),
            Some("false")
        );
    }

    #[test]
    fn a_bare_error_of_an_older_peer_still_decodes() {
        let error = Error::new(ErrorCode::Timeout, "slow");
        let back = decode(&error.encode_to_vec(), "TIMEOUT: slow").unwrap();
        assert_eq!(back, error);
    }

    #[test]
    fn an_error_info_alone_gives_the_code_retryability_and_message() {
        let info = tonic_types::pb::ErrorInfo {
            reason: "RESOURCE_EXHAUSTED".into(),
            domain: ERROR_DOMAIN.into(),
            metadata: HashMap::from([("retryable".into(), "false".into())]),
        };
        let status = tonic_types::pb::Status {
            code: tonic::Code::ResourceExhausted as i32,
            message: "RESOURCE_EXHAUSTED: queue full".into(),
            details: vec![any(ERROR_INFO_TYPE, info.encode_to_vec())],
        };
        let back = decode(&status.encode_to_vec(), &status.message).unwrap();
        assert_eq!(back.error_code(), ErrorCode::ResourceExhausted);
        assert!(!back.retryable);
        assert_eq!(back.message, "queue full");
    }

    #[test]
    fn garbage_and_foreign_details_give_nothing() {
        assert_eq!(decode(&[], "x"), None);
        assert_eq!(decode(&[0xff, 0xff, 0xff], "x"), None);
        let foreign = tonic_types::pb::Status {
            code: 5,
            message: "m".into(),
            details: vec![any(
                ERROR_INFO_TYPE,
                tonic_types::pb::ErrorInfo {
                    reason: "NOT_FOUND".into(),
                    domain: "example.com".into(),
                    metadata: HashMap::new(),
                }
                .encode_to_vec(),
            )],
        };
        assert_eq!(decode(&foreign.encode_to_vec(), "m"), None);
    }
}
