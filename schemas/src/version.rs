//! Schema versions (seed 001 §5.6): supported versions load, a newer minor of a known
//! major is read as the newest known minor of that major, an unknown major is refused.

use std::fmt;

use serde_json::Value;

use crate::issue::IssueSink;

/// The three input files Centroid reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    Netlist,
    DrcRules,
    Objectives,
}

impl InputKind {
    pub const ALL: [InputKind; 3] = [
        InputKind::Netlist,
        InputKind::DrcRules,
        InputKind::Objectives,
    ];

    /// The file name inside a circuit directory.
    pub fn file_name(self) -> &'static str {
        match self {
            InputKind::Netlist => "netlist.json",
            InputKind::DrcRules => "drc_rules.json",
            InputKind::Objectives => "objectives.json",
        }
    }

    /// The schema family name used in schema file names (`<name>-<version>.schema.json`).
    pub fn schema_name(self) -> &'static str {
        match self {
            InputKind::Netlist => "netlist",
            InputKind::DrcRules => "drc_rules",
            InputKind::Objectives => "objectives",
        }
    }

    /// Versions this build reads, oldest first.
    pub fn supported_versions(self) -> &'static [SchemaVersion] {
        const V1_0: SchemaVersion = SchemaVersion::new(1, 0, 0);
        const V1_1: SchemaVersion = SchemaVersion::new(1, 1, 0);
        const V1_2: SchemaVersion = SchemaVersion::new(1, 2, 0);
        const V1_3: SchemaVersion = SchemaVersion::new(1, 3, 0);
        const V1_4: SchemaVersion = SchemaVersion::new(1, 4, 0);
        match self {
            InputKind::Netlist => &[V1_0, V1_1],
            InputKind::DrcRules => &[V1_0, V1_1, V1_2, V1_3, V1_4],
            InputKind::Objectives => &[V1_0, V1_1],
        }
    }
}

/// A semantic version `MAJOR.MINOR.PATCH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SchemaVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl SchemaVersion {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }

    /// Parses exactly three dot-separated non-negative integers.
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.split('.');
        let mut next = || -> Option<u32> {
            let part = parts.next()?;
            if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) || part.len() > 9
            {
                return None;
            }
            part.parse().ok()
        };
        let version = SchemaVersion::new(next()?, next()?, next()?);
        parts.next().is_none().then_some(version)
    }
}

impl fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The version a document declares and the version it is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedVersion {
    pub declared: SchemaVersion,
    pub read_as: SchemaVersion,
}

impl ResolvedVersion {
    /// True when the document is newer than this build knows and was read as an older minor.
    pub fn is_migrated(&self) -> bool {
        self.declared > self.read_as
            && (self.declared.major, self.declared.minor)
                != (self.read_as.major, self.read_as.minor)
    }
}

fn version_list(kind: InputKind) -> String {
    kind.supported_versions()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Resolves a document's `schema_version` (absent = 1.0.0). Problems go into `sink`.
pub(crate) fn resolve_version(
    kind: InputKind,
    document: &Value,
    sink: &mut IssueSink,
) -> Option<ResolvedVersion> {
    let supported = kind.supported_versions();
    let declared = match document.get("schema_version") {
        None => SchemaVersion::new(1, 0, 0),
        Some(Value::String(text)) => {
            match SchemaVersion::parse(text) {
                Some(version) => version,
                None => {
                    sink.push(
                    "/schema_version",
                    format!("\"{text}\" is not a version; expected MAJOR.MINOR.PATCH such as \"{}\"", supported[supported.len() - 1]),
                );
                    return None;
                }
            }
        }
        Some(other) => {
            sink.push(
                "/schema_version",
                format!(
                    "expected a string such as \"{}\", found {}",
                    supported[supported.len() - 1],
                    crate::source::json_kind(other)
                ),
            );
            return None;
        }
    };
    let read_as = supported
        .iter()
        .rev()
        .find(|known| known.major == declared.major && **known <= declared)
        .copied();
    match read_as {
        Some(read_as) => Some(ResolvedVersion { declared, read_as }),
        None => {
            sink.push(
                "/schema_version",
                format!(
                    "schema_version {declared} is not supported: this Centroid reads {} schema versions {}",
                    kind.schema_name(),
                    version_list(kind)
                ),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(kind: InputKind, document: Value) -> Result<ResolvedVersion, Vec<String>> {
        let mut sink = IssueSink::new("f.json");
        resolve_version(kind, &document, &mut sink).ok_or_else(|| {
            sink.into_issues()
                .into_iter()
                .map(|issue| issue.message)
                .collect()
        })
    }

    #[test]
    fn absent_version_is_1_0_0() {
        let resolved = resolve(InputKind::Netlist, json!({})).unwrap();
        assert_eq!(resolved.read_as, SchemaVersion::new(1, 0, 0));
        assert!(!resolved.is_migrated());
    }

    #[test]
    fn newer_minor_is_read_as_newest_known_minor() {
        let resolved = resolve(InputKind::DrcRules, json!({"schema_version": "1.7.2"})).unwrap();
        assert_eq!(resolved.read_as, SchemaVersion::new(1, 4, 0));
        assert!(resolved.is_migrated());
        let netlist = resolve(InputKind::Netlist, json!({"schema_version": "1.2.0"})).unwrap();
        assert_eq!(netlist.read_as, SchemaVersion::new(1, 1, 0));
        assert!(netlist.is_migrated());
        let patch = resolve(InputKind::DrcRules, json!({"schema_version": "1.0.3"})).unwrap();
        assert_eq!(patch.read_as, SchemaVersion::new(1, 0, 0));
        assert!(!patch.is_migrated());
    }

    #[test]
    fn unknown_major_and_garbage_are_refused() {
        let messages =
            resolve(InputKind::Objectives, json!({"schema_version": "2.0.0"})).unwrap_err();
        assert!(
            messages[0].contains("2.0.0 is not supported"),
            "{messages:?}"
        );
        assert!(resolve(InputKind::Objectives, json!({"schema_version": "0.9.0"})).is_err());
        assert!(resolve(InputKind::Objectives, json!({"schema_version": "1.0"})).is_err());
        assert!(
            resolve(
                InputKind::Objectives,
                json!({"schema_version": "1.0.0-beta"})
            )
            .is_err()
        );
        assert!(resolve(InputKind::Objectives, json!({"schema_version": 1})).is_err());
    }
}
