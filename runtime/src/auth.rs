//! Authentication of every gRPC call: a shared bearer token sent as the metadata
//! `authorization: Bearer <token>`, checked in constant time by a tonic
//! interceptor on the coordinator's and the worker's services.
//!
//! The token comes from `--token-file FILE` (setting `token_file`), else
//! `CENTROID_TOKEN_FILE`, else `CENTROID_TOKEN`; without one a service accepts
//! every call (a laptop, `centroid run` uses a random token per run anyway). The
//! token never appears in logs: its `Debug` is redacted.
//!
//! Beside the shared token, a server may know the farm's principals
//! ([`crate::principals`]): each caller is then identified by its own token. Every
//! call that passes carries its [`Principal`] in the request's extensions (the
//! shared token's holder is an admin; without any credentials configured every
//! caller is [`Principal::anyone`]). A refused call is UNAUTHENTICATED with the
//! structured `google.rpc.Status` details of every Centroid error.

use std::path::Path;
use std::sync::Arc;

use centroid_proto::{Error, ErrorCode};
use subtle::ConstantTimeEq;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::principals::{Principal, Principals};

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

/// Server side: refuses a call without the expected token or a principal's
/// (UNAUTHENTICATED), and puts the caller's [`Principal`] in the request's extensions.
#[derive(Clone, Debug, Default)]
pub struct RequireToken {
    expected: Option<BearerToken>,
    principals: Option<Arc<Principals>>,
}

impl RequireToken {
    pub fn new(expected: Option<BearerToken>) -> RequireToken {
        RequireToken {
            expected,
            principals: None,
        }
    }

    /// Also accepts the tokens of `principals`, each call as its principal.
    pub fn with_principals(mut self, principals: Option<Arc<Principals>>) -> RequireToken {
        self.principals = principals;
        self
    }

    /// The caller holding `token`, if any.
    fn identify(&self, token: &[u8]) -> Option<Principal> {
        if let Some(expected) = &self.expected
            && expected.matches(token)
        {
            return Some(Principal::shared_token());
        }
        self.principals
            .as_ref()
            .and_then(|principals| principals.identify(token))
            .cloned()
    }
}

/// The UNAUTHENTICATED status of a refused call (structured like every error).
fn unauthenticated(message: String) -> Status {
    Error::new(ErrorCode::Unauthenticated, message)
        .with_retryable(false)
        .to_status()
}

impl Interceptor for RequireToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if self.expected.is_none() && self.principals.is_none() {
            request.extensions_mut().insert(Principal::anyone());
            return Ok(request);
        }
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        let caller = match presented {
            Some(token) => self.identify(token.trim().as_bytes()).ok_or_else(|| {
                unauthenticated(format!("the bearer token is wrong; {HOW_TO_AUTHENTICATE}"))
            })?,
            None => {
                return Err(unauthenticated(format!(
                    "this service needs a bearer token; {HOW_TO_AUTHENTICATE}"
                )));
            }
        };
        request.extensions_mut().insert(caller);
        Ok(request)
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
    use crate::principals::Role;

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
            let error = Error::from_status(&status);
            assert_eq!(
                error.error_code(),
                ErrorCode::Unauthenticated,
                "structured details"
            );
            assert!(!error.retryable);
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
        let anyone = RequireToken::new(None).call(with_header(None));
        assert_eq!(
            anyone.unwrap().extensions().get::<Principal>(),
            Some(&Principal::anyone()),
            "no token configured"
        );
    }

    #[test]
    fn principals_are_identified_by_their_own_tokens_beside_the_shared_one() {
        let hash = crate::principals::sha256_hex(b"alice-token");
        let principals = Principals::parse(
            &format!(
                "[[principal]]\nname = \"alice\"\nrole = \"user\"\ntoken_sha256 = \"{hash}\"\n"
            ),
            std::path::Path::new("principals.toml"),
        )
        .unwrap();
        let mut require = RequireToken::new(Some(BearerToken::new("shared").unwrap()))
            .with_principals(Some(Arc::new(principals.clone())));
        let caller = |request: Result<Request<()>, Status>| {
            request.unwrap().extensions().get::<Principal>().cloned()
        };
        let alice = caller(require.call(with_header(Some("Bearer alice-token")))).unwrap();
        assert_eq!((&*alice.name, alice.role), ("alice", Role::User));
        assert_eq!(
            caller(require.call(with_header(Some("Bearer shared")))),
            Some(Principal::shared_token())
        );
        let refused = require
            .call(with_header(Some("Bearer bob-token")))
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        // principals alone, without a shared token
        let mut require = RequireToken::new(None).with_principals(Some(Arc::new(principals)));
        assert!(
            require
                .call(with_header(Some("Bearer alice-token")))
                .is_ok()
        );
        assert!(require.call(with_header(None)).is_err());
        assert!(require.call(with_header(Some("Bearer shared"))).is_err());
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
