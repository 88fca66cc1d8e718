//! Who calls a server: the principals file of a shared farm and the
//! [`Principal`] every authenticated call is made by.
//!
//! The file (`--principals FILE`, `CENTROID_PRINCIPALS`, or `principals` in the
//! coordinator's table of `centroid.toml`) lists each principal with a role and the
//! hex SHA-256 of its bearer token — never the token itself:
//!
//! ```toml
//! [[principal]]
//! name = "alice"
//! role = "user"            # admin | user | worker
//! token_sha256 = "9f86d0…"  # 64 hex digits
//! ```
//!
//! A presented token is hashed and compared with every principal's hash in constant
//! time. The farm's single shared token (`--token-file`) keeps working beside the
//! file and acts as an admin ([`Principal::shared_token`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use subtle::ConstantTimeEq;

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// everything: every job, the workers, the memory
    Admin,
    /// submits jobs and sees, watches, fetches and cancels its own
    User,
    /// registers, heartbeats and deregisters workers; submits nothing
    Worker,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
            Role::Worker => "worker",
        }
    }

    fn parse(name: &str) -> Option<Role> {
        match name {
            "admin" => Some(Role::Admin),
            "user" => Some(Role::User),
            "worker" => Some(Role::Worker),
            _ => None,
        }
    }
}

/// The caller of one request (the server's interceptor puts it in the request's
/// extensions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub name: Arc<str>,
    pub role: Role,
}

impl Principal {
    /// Whoever holds the farm's shared token: an admin. The name cannot be a
    /// principal's of the file (names there are `[A-Za-z0-9._@-]`).
    pub fn shared_token() -> Principal {
        Principal {
            name: "(shared token)".into(),
            role: Role::Admin,
        }
    }

    /// Every caller of a server configured without a token nor principals.
    pub fn anyone() -> Principal {
        Principal {
            name: "(anyone)".into(),
            role: Role::Admin,
        }
    }

    pub fn is_admin(&self) -> bool {
        self.role == Role::Admin
    }

    /// Whether this principal may see and act on a job owned by `owner` (`None`:
    /// a record written before jobs had owners — admins only).
    pub fn may_access_job_of(&self, owner: Option<&str>) -> bool {
        match self.role {
            Role::Admin => true,
            Role::User => owner == Some(&*self.name),
            Role::Worker => false,
        }
    }

    /// Whether this principal may submit jobs.
    pub fn may_submit(&self) -> bool {
        matches!(self.role, Role::Admin | Role::User)
    }

    /// Whether this principal may register, heartbeat and deregister workers.
    pub fn may_serve_as_worker(&self) -> bool {
        matches!(self.role, Role::Admin | Role::Worker)
    }
}

/// Why a principals file is refused.
#[derive(Debug, thiserror::Error)]
pub enum PrincipalsError {
    #[error("principals file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("principals file {path}: {source}")]
    Syntax {
        path: PathBuf,
        source: Box<config::ConfigError>,
    },
    #[error("principals file {path}: principal {index} ({name:?}): {problem}")]
    Invalid {
        path: PathBuf,
        /// 1-based position in the file
        index: usize,
        name: String,
        problem: String,
    },
    #[error("principals file {path}: no [[principal]] entries")]
    Empty { path: PathBuf },
}

/// The principals of a farm, each with the SHA-256 of its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principals {
    entries: Vec<(Principal, [u8; 32])>,
}

#[derive(Deserialize)]
struct PrincipalsFile {
    #[serde(default)]
    principal: Vec<PrincipalEntry>,
}

#[derive(Deserialize)]
struct PrincipalEntry {
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    token_sha256: String,
}

impl Principals {
    /// Reads and checks a principals file.
    pub fn read_file(path: &Path) -> Result<Principals, PrincipalsError> {
        let text = std::fs::read_to_string(path).map_err(|source| PrincipalsError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Principals::parse(&text, path)
    }

    /// Checks the principals of `text` (the contents of `path`): a known role, a
    /// name of `[A-Za-z0-9._@-]` (1–64), 64 hex digits; no name or hash twice.
    pub fn parse(text: &str, path: &Path) -> Result<Principals, PrincipalsError> {
        let syntax = |source| PrincipalsError::Syntax {
            path: path.to_path_buf(),
            source: Box::new(source),
        };
        let file: PrincipalsFile = config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .map_err(syntax)?
            .try_deserialize()
            .map_err(syntax)?;
        if file.principal.is_empty() {
            return Err(PrincipalsError::Empty {
                path: path.to_path_buf(),
            });
        }
        let mut entries: Vec<(Principal, [u8; 32])> = Vec::with_capacity(file.principal.len());
        for (position, entry) in file.principal.iter().enumerate() {
            let invalid = |problem: String| PrincipalsError::Invalid {
                path: path.to_path_buf(),
                index: position + 1,
                name: entry.name.clone(),
                problem,
            };
            let principal = check_entry(entry).map_err(invalid)?;
            if let Some(index) = entries
                .iter()
                .position(|(known, _)| known.name == principal.0.name)
            {
                return Err(invalid(format!(
                    "duplicate name: principal {} has it too",
                    index + 1
                )));
            }
            if let Some(index) = entries.iter().position(|(_, hash)| *hash == principal.1) {
                return Err(invalid(format!(
                    "duplicate token_sha256: principal {} ({:?}) has the same token",
                    index + 1,
                    &*entries[index].0.name
                )));
            }
            entries.push(principal);
        }
        Ok(Principals { entries })
    }

    /// The principal holding `token`, if any. Every principal's hash is compared
    /// (in constant time), so the time taken does not tell which one matched.
    pub fn identify(&self, token: &[u8]) -> Option<&Principal> {
        let presented = sha256(token);
        let mut found = None;
        for (principal, hash) in &self.entries {
            if bool::from(hash.ct_eq(&presented)) {
                found = Some(principal);
            }
        }
        found
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn check_entry(entry: &PrincipalEntry) -> Result<(Principal, [u8; 32]), String> {
    let name_ok = (1..=64).contains(&entry.name.len())
        && entry
            .name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"._@-".contains(&byte));
    if !name_ok {
        return Err("name must be 1 to 64 characters of A-Z a-z 0-9 . _ @ -".into());
    }
    let role = Role::parse(&entry.role)
        .ok_or_else(|| format!("unknown role {:?}: one of admin, user, worker", entry.role))?;
    let hash = parse_hex_sha256(&entry.token_sha256).ok_or_else(|| {
        format!(
            "token_sha256 must be 64 hex digits (the SHA-256 of the token), got {} characters",
            entry.token_sha256.chars().count()
        )
    })?;
    let principal = Principal {
        name: entry.name.as_str().into(),
        role,
    };
    Ok((principal, hash))
}

fn parse_hex_sha256(text: &str) -> Option<[u8; 32]> {
    let text = text.trim();
    if text.len() != 64 || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    let mut hash = [0u8; 32];
    for (index, byte) in hash.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * index..2 * index + 2], 16).ok()?;
    }
    Some(hash)
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut hash = [0u8; 32];
    hash.copy_from_slice(digest.as_ref());
    hash
}

/// SHA-256 of `bytes` as 64 lowercase hex digits (what `token_sha256` holds).
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha256(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST_HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn parse(text: &str) -> Result<Principals, PrincipalsError> {
        Principals::parse(text, Path::new("/etc/centroid/principals.toml"))
    }

    fn entry(name: &str, role: &str, hash: &str) -> String {
        format!("[[principal]]\nname = \"{name}\"\nrole = \"{role}\"\ntoken_sha256 = \"{hash}\"\n")
    }

    #[test]
    fn a_token_identifies_its_principal_by_its_hash() {
        assert_eq!(
            sha256_hex(b"test"),
            TEST_HASH,
            "the standard SHA-256 of \"test\""
        );
        let text = entry("alice", "user", TEST_HASH)
            + &entry("w1", "worker", &sha256_hex(b"worker-token"))
            + &entry("root", "admin", &sha256_hex(b"admin-token").to_uppercase());
        let principals = parse(&text).unwrap();
        assert_eq!(principals.len(), 3);
        let alice = principals.identify(b"test").unwrap();
        assert_eq!((&*alice.name, alice.role), ("alice", Role::User));
        assert_eq!(
            principals.identify(b"worker-token").unwrap().role,
            Role::Worker
        );
        assert_eq!(
            principals.identify(b"admin-token").unwrap().role,
            Role::Admin
        );
        assert!(principals.identify(b"tesT").is_none());
        assert!(principals.identify(b"").is_none());
    }

    #[test]
    fn roles_decide_who_sees_which_job() {
        let alice = Principal {
            name: "alice".into(),
            role: Role::User,
        };
        assert!(alice.may_access_job_of(Some("alice")));
        assert!(!alice.may_access_job_of(Some("bob")));
        assert!(
            !alice.may_access_job_of(None),
            "records without owner: admins only"
        );
        assert!(alice.may_submit() && !alice.may_serve_as_worker());
        let worker = Principal {
            name: "w".into(),
            role: Role::Worker,
        };
        assert!(!worker.may_submit() && worker.may_serve_as_worker());
        assert!(!worker.may_access_job_of(Some("w")));
        let admin = Principal::shared_token();
        assert!(admin.may_access_job_of(None) && admin.may_submit() && admin.may_serve_as_worker());
    }

    #[test]
    fn a_bad_file_names_the_file_the_principal_and_the_problem() {
        let cases = [
            (entry("alice", "root", TEST_HASH), "unknown role \"root\""),
            (entry("alice", "user", "9f86d0"), "64 hex digits"),
            (entry("alice", "user", &"g".repeat(64)), "64 hex digits"),
            (entry("al ice", "user", TEST_HASH), "name must be"),
            (
                entry("alice", "user", TEST_HASH) + &entry("alice", "admin", &sha256_hex(b"x")),
                "duplicate name",
            ),
            (
                entry("alice", "user", TEST_HASH) + &entry("bob", "user", TEST_HASH),
                "duplicate token_sha256",
            ),
        ];
        for (text, expected) in cases {
            let message = parse(&text).unwrap_err().to_string();
            assert!(
                message.contains("/etc/centroid/principals.toml"),
                "{message}"
            );
            assert!(message.contains("principal "), "{message}");
            assert!(message.contains(expected), "{expected}: {message}");
        }
        let message = parse("[[principal]\nname = 1").unwrap_err().to_string();
        assert!(
            message.contains("/etc/centroid/principals.toml"),
            "{message}"
        );
        let message = parse("").unwrap_err().to_string();
        assert!(message.contains("no [[principal]]"), "{message}");
        let missing = Principals::read_file(Path::new("/nonexistent/principals.toml"));
        assert!(matches!(missing, Err(PrincipalsError::Read { .. })));
    }
}
