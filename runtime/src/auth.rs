//! Authentication of every gRPC call: a shared bearer token sent as the metadata
//! `authorization: Bearer <token>`, checked in constant time by a tonic
//! interceptor on the coordinator's and the worker's services.
//!
//! The token comes from `--token-file FILE` (setting `token_file`), else
//! `CENTROID_TOKEN_FILE`, else `CENTROID_TOKEN`; without one a service accepts
//! every call (a laptop, `centroid run` uses a random token per run anyway). The
//! token never appears in logs: its `Debug` is redacted.

use std::path::Path;
use std::sync::Arc;

use subtle::ConstantTimeEq;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::{Request, Status};

/// The variable holding the token itself.
pub const TOKEN_VARIABLE: &str = "CENTROID_TOKEN";
/// The variable naming a file that holds the token.
pub const TOKEN_FILE_VARIABLE: &str = "CENTROID_TOKEN_FILE";
/// What a refused caller is told to do.
pub const HOW_TO_AUTHENTICATE: &str =
    "pass --token-file FILE, or set CENTROID_TOKEN_FILE or CENTROID_TOKEN, with the farm's token";

/// A shared secret. `Debug` never shows it.
#[derive(Clone)]
pub struct BearerToken(Arc<str>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl PartialEq for BearerToken {
    fn eq(&self, other: &BearerToken) -> bool {
        self.matches(other.0.as_bytes())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("token file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("token file {0} is empty")]
    Empty(String),
    #[error("the token must be printable ASCII without spaces (it travels in a header)")]
    NotAHeaderValue,
}

impl BearerToken {
    pub fn new(token: &str) -> Result<BearerToken, TokenError> {
        let token = token.trim();
        if token.is_empty() || !token.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(TokenError::NotAHeaderValue);
        }
        Ok(BearerToken(token.into()))
    }

    /// A fresh random token (for one `centroid run`).
    pub fn random() -> BearerToken {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        BearerToken(token.into())
    }

    pub fn read_file(path: &Path) -> Result<BearerToken, TokenError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenError::Read {
            path: path.display().to_string(),
            source,
        })?;
        if text.trim().is_empty() {
            return Err(TokenError::Empty(path.display().to_string()));
        }
        BearerToken::new(&text)
    }

    /// The token of a process: `token_file` (the layered setting, which a flag
    /// or `CENTROID_TOKEN_FILE` sets), else `CENTROID_TOKEN`; `None` when neither.
    pub fn configured(
        token_file: Option<&Path>,
        environment: &std::collections::HashMap<String, String>,
    ) -> Result<Option<BearerToken>, TokenError> {
        if let Some(path) = token_file {
            return BearerToken::read_file(path).map(Some);
        }
        match environment
            .get(TOKEN_VARIABLE)
            .filter(|token| !token.trim().is_empty())
        {
            Some(token) => BearerToken::new(token).map(Some),
            None => Ok(None),
        }
    }

    /// The token as the variable a child process reads it from
    /// (`CENTROID_TOKEN`, see [`BearerToken::configured`]), for that child's
    /// environment only — never an argument, never logged.
    pub fn to_environment(&self) -> (String, String) {
        (TOKEN_VARIABLE.to_string(), self.0.to_string())
    }

    fn matches(&self, presented: &[u8]) -> bool {
        self.0.as_bytes().ct_eq(presented).into()
    }

    fn header_value(&self) -> MetadataValue<tonic::metadata::Ascii> {
        format!("Bearer {}", self.0)
            .parse()
            .expect("a token is printable ASCII (checked when made)")
    }
}

/// Server side: refuses a call without the expected token (UNAUTHENTICATED).
#[derive(Clone, Debug, Default)]
pub struct RequireToken {
    expected: Option<BearerToken>,
}

impl RequireToken {
    pub fn new(expected: Option<BearerToken>) -> RequireToken {
        RequireToken { expected }
    }
}

impl Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else {
            return Ok(request);
        };
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        match presented {
            Some(token) if expected.matches(token.trim().as_bytes()) => Ok(request),
            Some(_) => Err(Status::unauthenticated(format!(
                "the bearer token is wrong; {HOW_TO_AUTHENTICATE}"
            ))),
            None => Err(Status::unauthenticated(format!(
                "this service needs a bearer token; {HOW_TO_AUTHENTICATE}"
            ))),
        }
    }
}

/// Client side: sends the token with every call (nothing when there is none).
#[derive(Clone, Debug, Default)]
pub struct AttachToken {
    token: Option<BearerToken>,
}

impl AttachToken {
    pub fn new(token: Option<BearerToken>) -> AttachToken {
        AttachToken { token }
    }
}

impl Interceptor for AttachToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(token) = &self.token {
            request
                .metadata_mut()
                .insert("authorization", token.header_value());
        }
        Ok(request)
    }
}

/// A channel whose calls carry the token.
pub type AuthChannel =
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, AttachToken>;

#[cfg(test)]
mod tests {
    use super::*;

    fn with_header(value: Option<&str>) -> Request<()> {
        let mut request = Request::new(());
        if let Some(value) = value {
            request
                .metadata_mut()
                .insert("authorization", value.parse().unwrap());
        }
        request
    }

    #[test]
    fn the_right_token_passes_and_anything_else_is_unauthenticated() {
        let token = BearerToken::new("s3cret-token").unwrap();
        let mut require = RequireToken::new(Some(token.clone()));
        assert!(
            require
                .call(with_header(Some("Bearer s3cret-token")))
                .is_ok()
        );
        for wrong in [
            None,
            Some("Bearer s3cret-tokeN"),
            Some("Bearer "),
            Some("s3cret-token"),
        ] {
            let status = require.call(with_header(wrong)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated, "{wrong:?}");
            assert!(
                status.message().contains("CENTROID_TOKEN"),
                "{}",
                status.message()
            );
            assert!(
                !status.message().contains("s3cret"),
                "the token is never echoed"
            );
        }
        let mut attach = AttachToken::new(Some(token));
        let sent = attach.call(Request::new(())).unwrap();
        assert!(
            require.call(sent).is_ok(),
            "what the client attaches, the server accepts"
        );
        assert!(
            RequireToken::new(None).call(with_header(None)).is_ok(),
            "no token configured"
        );
    }

    #[test]
    fn tokens_come_from_a_file_or_the_environment_and_never_print() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("token");
        std::fs::write(&file, "from-file\n").unwrap();
        let environment =
            std::collections::HashMap::from([(TOKEN_VARIABLE.to_string(), "from-env".to_string())]);
        let token = BearerToken::configured(Some(&file), &environment)
            .unwrap()
            .unwrap();
        assert_eq!(
            token,
            BearerToken::new("from-file").unwrap(),
            "the file wins"
        );
        let token = BearerToken::configured(None, &environment)
            .unwrap()
            .unwrap();
        assert_eq!(token, BearerToken::new("from-env").unwrap());
        let random = BearerToken::random();
        let handed_on = std::collections::HashMap::from([random.to_environment()]);
        assert_eq!(
            BearerToken::configured(None, &handed_on).unwrap(),
            Some(random),
            "a child reads back the token it is handed"
        );
        assert!(
            BearerToken::configured(None, &Default::default())
                .unwrap()
                .is_none()
        );
        assert!(!format!("{token:?}").contains("from-env"));
        std::fs::write(&file, "  \n").unwrap();
        assert!(
            BearerToken::configured(Some(&file), &environment).is_err(),
            "empty file"
        );
        assert!(BearerToken::new("has space").is_err());
        assert_ne!(BearerToken::random(), BearerToken::random());
    }
}
