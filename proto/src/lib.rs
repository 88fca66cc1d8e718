//! gRPC contracts of Centroid: the Coordinator and Worker services.
//!
//! Architecture invariant: this is the only crate that exposes prost types. The
//! helpers here keep a structured [`v1::Error`] intact when it travels as the
//! payload of a failed RPC (`tonic::Status` details, a standard `google.rpc.Status`)
//! instead of flattening it to a string.

pub mod media_type;
pub mod reflection;
mod status_details;
mod worker_id;

pub use status_details::ERROR_DOMAIN;
pub use worker_id::{MAX_WORKER_ID_CHARS, check_worker_id};

/// Generated messages, clients and servers of package `centroid.v1`.
pub mod v1 {
    tonic::include_proto!("centroid.v1");
}

pub use v1::{Error, ErrorCode};

/// Version of the worker ↔ coordinator protocol. Registration carries it; a
/// coordinator refuses a worker with another one (and the worker refuses a
/// coordinator with another one). Bump on any incompatible change of these protos.
/// 2: registrations, heartbeats and deregistrations carry the worker process's
/// `instance_id` (a worker of version 1 sends none: it is refused as a version
/// mismatch, not as a registration with a field missing).
pub const PROTOCOL_VERSION: u32 = 2;

impl ErrorCode {
    /// The wire name used by the skill server and the brief, e.g. `"INVALID_PARAM"`.
    pub fn wire_name(self) -> &'static str {
        match self {
            ErrorCode::Unspecified => "UNSPECIFIED",
            ErrorCode::InvalidParam => "INVALID_PARAM",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::DrcViolation => "DRC_VIOLATION",
            ErrorCode::Timeout => "TIMEOUT",
            ErrorCode::ServiceUnavailable => "SERVICE_UNAVAILABLE",
            ErrorCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            ErrorCode::InternalError => "INTERNAL_ERROR",
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
        }
    }

    /// Parses a wire name; unknown names map to `INTERNAL_ERROR`.
    pub fn from_wire_name(name: &str) -> ErrorCode {
        match name {
            "INVALID_PARAM" => ErrorCode::InvalidParam,
            "NOT_FOUND" => ErrorCode::NotFound,
            "CONFLICT" => ErrorCode::Conflict,
            "DRC_VIOLATION" => ErrorCode::DrcViolation,
            "TIMEOUT" => ErrorCode::Timeout,
            "SERVICE_UNAVAILABLE" => ErrorCode::ServiceUnavailable,
            "RESOURCE_EXHAUSTED" => ErrorCode::ResourceExhausted,
            "CANCELLED" => ErrorCode::Cancelled,
            "UNAUTHENTICATED" => ErrorCode::Unauthenticated,
            "PERMISSION_DENIED" => ErrorCode::PermissionDenied,
            _ => ErrorCode::InternalError,
        }
    }

    /// Whether the brief's retry policy retries this code at all.
    pub fn is_retryable_by_default(self) -> bool {
        matches!(
            self,
            ErrorCode::Timeout
                | ErrorCode::ServiceUnavailable
                | ErrorCode::ResourceExhausted
                | ErrorCode::InternalError
        )
    }

    /// The gRPC status code that carries this error code.
    pub fn grpc_code(self) -> tonic::Code {
        match self {
            ErrorCode::Unspecified => tonic::Code::Unknown,
            ErrorCode::InvalidParam => tonic::Code::InvalidArgument,
            ErrorCode::NotFound => tonic::Code::NotFound,
            ErrorCode::Conflict => tonic::Code::FailedPrecondition,
            ErrorCode::DrcViolation => tonic::Code::FailedPrecondition,
            ErrorCode::Timeout => tonic::Code::DeadlineExceeded,
            ErrorCode::ServiceUnavailable => tonic::Code::Unavailable,
            ErrorCode::ResourceExhausted => tonic::Code::ResourceExhausted,
            ErrorCode::InternalError => tonic::Code::Internal,
            ErrorCode::Cancelled => tonic::Code::Cancelled,
            ErrorCode::Unauthenticated => tonic::Code::Unauthenticated,
            ErrorCode::PermissionDenied => tonic::Code::PermissionDenied,
        }
    }
}

impl Error {
    /// A new error with the code's default retryability and no details.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code: code as i32,
            message: message.into(),
            retryable: code.is_retryable_by_default(),
            details_json: String::new(),
        }
    }

    /// Overrides retryability.
    pub fn with_retryable(mut self, retryable: bool) -> Error {
        self.retryable = retryable;
        self
    }

    /// Attaches a JSON object of details.
    pub fn with_details(mut self, details: serde_json::Value) -> Error {
        self.details_json = if details.is_null() {
            String::new()
        } else {
            details.to_string()
        };
        self
    }

    /// The details as JSON (`Null` when there are none or they do not parse).
    pub fn details(&self) -> serde_json::Value {
        if self.details_json.is_empty() {
            return serde_json::Value::Null;
        }
        serde_json::from_str(&self.details_json).unwrap_or(serde_json::Value::Null)
    }

    /// The error code (unknown numbers read as `UNSPECIFIED`).
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode::try_from(self.code).unwrap_or(ErrorCode::Unspecified)
    }

    /// A failed-RPC status: the matching gRPC code, the message, and as details a
    /// `google.rpc.Status` carrying a `google.rpc.ErrorInfo` and this error (see
    /// [`status_details`]).
    pub fn to_status(&self) -> tonic::Status {
        let grpc_code = self.error_code().grpc_code();
        let message = format!("{}: {}", self.error_code().wire_name(), self.message);
        let details = status_details::encode(self, grpc_code, &message);
        tonic::Status::with_details(grpc_code, message, details.into())
    }

    /// Recovers the structured error from a failed RPC. A status that carries
    /// none (e.g. a transport failure) is mapped from its gRPC code.
    pub fn from_status(status: &tonic::Status) -> Error {
        if let Some(error) = status_details::decode(status.details(), status.message()) {
            return error;
        }
        let code = match status.code() {
            tonic::Code::InvalidArgument | tonic::Code::OutOfRange => ErrorCode::InvalidParam,
            tonic::Code::NotFound => ErrorCode::NotFound,
            tonic::Code::AlreadyExists | tonic::Code::Aborted | tonic::Code::FailedPrecondition => {
                ErrorCode::Conflict
            }
            tonic::Code::DeadlineExceeded => ErrorCode::Timeout,
            tonic::Code::Unavailable | tonic::Code::Cancelled => ErrorCode::ServiceUnavailable,
            tonic::Code::ResourceExhausted => ErrorCode::ResourceExhausted,
            tonic::Code::Unauthenticated => ErrorCode::Unauthenticated,
            tonic::Code::PermissionDenied => ErrorCode::PermissionDenied,
            _ => ErrorCode::InternalError,
        };
        Error::new(code, status.message().to_string())
    }
}

impl From<Error> for tonic::Status {
    fn from(error: Error) -> tonic::Status {
        error.to_status()
    }
}

/// The check a coordinator applies to a registering worker (and a worker to the
/// coordinator's answer): an `Err` carries a non-retryable CONFLICT error.
pub fn check_protocol_version(peer_version: u32) -> Result<(), Error> {
    if peer_version == PROTOCOL_VERSION {
        return Ok(());
    }
    Err(Error::new(
        ErrorCode::Conflict,
        format!(
            "protocol version mismatch: peer speaks {peer_version}, this build speaks {PROTOCOL_VERSION}"
        ),
    )
    .with_retryable(false)
    .with_details(serde_json::json!({
        "peer_protocol_version": peer_version,
        "protocol_version": PROTOCOL_VERSION,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_error_survives_a_status_round_trip() {
        let error = Error::new(ErrorCode::Timeout, "step s2 ran past the deadline")
            .with_details(serde_json::json!({"step_id": "s2"}));
        let status = error.to_status();
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded);
        let back = Error::from_status(&status);
        assert_eq!(back, error);
        assert!(back.retryable);
        assert_eq!(back.details()["step_id"], "s2");
    }

    #[test]
    fn status_without_details_maps_from_grpc_code() {
        let back = Error::from_status(&tonic::Status::unavailable("connection refused"));
        assert_eq!(back.error_code(), ErrorCode::ServiceUnavailable);
        assert!(back.retryable);
    }

    #[test]
    fn cancelled_is_not_retryable_and_travels_as_grpc_cancelled() {
        let error = Error::new(ErrorCode::Cancelled, "cancelled by request");
        assert!(!error.retryable);
        let status = error.to_status();
        assert_eq!(status.code(), tonic::Code::Cancelled);
        let back = Error::from_status(&status);
        assert_eq!(back.error_code(), ErrorCode::Cancelled);
        assert!(!back.retryable);
        assert_eq!(ErrorCode::from_wire_name("CANCELLED"), ErrorCode::Cancelled);
    }

    #[test]
    fn access_errors_travel_as_their_grpc_codes_and_are_not_retried() {
        for (code, grpc) in [
            (ErrorCode::Unauthenticated, tonic::Code::Unauthenticated),
            (ErrorCode::PermissionDenied, tonic::Code::PermissionDenied),
        ] {
            let error = Error::new(code, "no");
            assert!(!error.retryable);
            let status = error.to_status();
            assert_eq!(status.code(), grpc);
            assert_eq!(Error::from_status(&status), error);
            assert_eq!(ErrorCode::from_wire_name(code.wire_name()), code);
            let bare = Error::from_status(&tonic::Status::new(grpc, "bare"));
            assert_eq!(bare.error_code(), code);
        }
    }

    #[test]
    fn protocol_version_mismatch_is_refused() {
        assert!(check_protocol_version(PROTOCOL_VERSION).is_ok());
        let error = check_protocol_version(PROTOCOL_VERSION + 1).unwrap_err();
        assert_eq!(error.error_code(), ErrorCode::Conflict);
        assert!(!error.retryable);
        assert!(error.message.contains("protocol version mismatch"));
    }
}
