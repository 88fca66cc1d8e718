//! Layered configuration, the same for every binary. Later layers win:
//!
//! 1. the defaults (the settings type's `Default`, which does no I/O);
//! 2. the TOML file: `--config FILE`, else `$CENTROID_CONFIG`, else `./centroid.toml`
//!    when it exists; the binary's own table (`[coordinator]`, `[worker]`, `[cli]`);
//! 3. the environment: `CENTROID_<KEY>` for every key of the settings, nested
//!    tables joined with `_` (`llm.base_url` ← `CENTROID_LLM_BASE_URL`); a value
//!    whose default is a boolean or a number is read as one (so it also reaches a
//!    field of a `#[serde(flatten)]`ed table, which is not converted from text);
//! 4. command-line flags (the fields of a flags struct that are set).
//!
//! The keys come from the settings type itself (its serialized defaults), so a
//! new setting is configurable in every layer without a list to keep in step.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::auth::TokenError;
use crate::principals::PrincipalsError;
use crate::tls::TlsError;

/// The environment variable naming the configuration file.
pub const CONFIG_FILE_VARIABLE: &str = "CENTROID_CONFIG";
/// The file read when neither `--config` nor [`CONFIG_FILE_VARIABLE`] names one.
pub const DEFAULT_CONFIG_FILE: &str = "centroid.toml";
/// Prefix of every environment variable.
pub const ENVIRONMENT_PREFIX: &str = "CENTROID_";

/// Why a binary's settings could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// the file cannot be read or parsed, or a layer cannot be set
    #[error("{0}")]
    Layering(#[from] config::ConfigError),
    #[error("settings must serialize to a table, got {0}")]
    NotATable(&'static str),
    /// a key's value does not fit its setting (`key` is `None` where it is not
    /// known: within a `#[serde(flatten)]`ed table; the message names the value)
    #[error("[{table}]{}: {source}", key_and_variable(.key.as_deref()))]
    Invalid {
        table: String,
        key: Option<String>,
        #[source]
        source: Box<config::ConfigError>,
    },
    /// the token file (or `CENTROID_TOKEN`) is unusable
    #[error("{0}")]
    Token(#[from] TokenError),
    /// the principals file is unusable
    #[error("{0}")]
    Principals(#[from] PrincipalsError),
    /// the TLS files are unusable or do not go together
    #[error("{0}")]
    Tls(#[from] TlsError),
    /// values that are each valid but break a rule of the binary together
    #[error("{0}")]
    Inconsistent(String),
}

/// Layers `defaults`, the file, `environment` and `flags` into the settings of
/// `section`. `flags` serializes to a table whose unset (`null`) fields are skipped.
pub fn layered<Settings, Flags>(
    section: &str,
    defaults: &Settings,
    config_file: Option<&Path>,
    environment: &HashMap<String, String>,
    flags: &Flags,
) -> Result<Settings, ConfigError>
where
    Settings: Serialize + DeserializeOwned,
    Flags: Serialize,
{
    let defaults =
        serde_json::to_value(defaults).map_err(|_| ConfigError::NotATable("defaults"))?;
    let Json::Object(default_table) = &defaults else {
        return Err(ConfigError::NotATable("defaults"));
    };
    let mut builder = config::Config::builder();
    let mut keys = Vec::new();
    collect_keys(default_table, &mut Vec::new(), &mut keys);
    for (key, value) in &keys {
        if !value.is_null() {
            builder = builder.set_default(format!("{section}.{key}"), to_config_value(value))?;
        }
    }

    let (file, required) = match config_file {
        Some(path) => (path.to_path_buf(), true),
        None => match environment
            .get(CONFIG_FILE_VARIABLE)
            .filter(|path| !path.is_empty())
        {
            Some(path) => (PathBuf::from(path), true),
            None => (PathBuf::from(DEFAULT_CONFIG_FILE), false),
        },
    };
    builder = builder.add_source(
        config::File::from(file)
            .format(config::FileFormat::Toml)
            .required(required),
    );

    for (key, default) in &keys {
        let variable = environment_variable(key);
        if let Some(value) = environment.get(&variable).filter(|value| !value.is_empty()) {
            builder =
                builder.set_override(format!("{section}.{key}"), typed_like(value, default))?;
        }
    }

    let flags = serde_json::to_value(flags).map_err(|_| ConfigError::NotATable("flags"))?;
    let Json::Object(flag_table) = &flags else {
        return Err(ConfigError::NotATable("flags"));
    };
    let mut flag_keys = Vec::new();
    collect_keys(flag_table, &mut Vec::new(), &mut flag_keys);
    for (key, value) in flag_keys {
        if !value.is_null() {
            builder = builder.set_override(format!("{section}.{key}"), to_config_value(value))?;
        }
    }

    let table: config::Value = builder.build()?.get(section)?;
    serde_path_to_error::deserialize(table).map_err(|error| {
        let key = error.path().to_string();
        ConfigError::Invalid {
            table: section.to_string(),
            key: (key != ".").then_some(key),
            source: Box::new(error.into_inner()),
        }
    })
}

fn key_and_variable(key: Option<&str>) -> String {
    match key {
        Some(key) => format!(" {key} (variable {})", environment_variable(key)),
        None => String::new(),
    }
}

/// The text of an environment variable as the type of the key's default when that
/// is a boolean or a number and the text reads as one; as text otherwise (a value
/// that does not read is then refused by the settings type, naming the key).
fn typed_like(text: &str, default: &Json) -> config::Value {
    let kind = match default {
        Json::Bool(_) => match text.to_lowercase().as_str() {
            // what the `config` crate reads as a boolean from text
            "true" | "on" | "yes" | "1" => Some(config::ValueKind::Boolean(true)),
            "false" | "off" | "no" | "0" => Some(config::ValueKind::Boolean(false)),
            _ => None,
        },
        Json::Number(number) if number.is_f64() => text.parse().ok().map(config::ValueKind::Float),
        Json::Number(_) => text
            .parse()
            .ok()
            .map(config::ValueKind::I64)
            .or_else(|| text.parse().ok().map(config::ValueKind::U64)),
        _ => None,
    };
    config::Value::new(
        None,
        kind.unwrap_or_else(|| config::ValueKind::String(text.to_string())),
    )
}

/// `CENTROID_` + the key in capitals, dots as underscores.
pub fn environment_variable(key: &str) -> String {
    format!(
        "{ENVIRONMENT_PREFIX}{}",
        key.replace('.', "_").to_ascii_uppercase()
    )
}

/// Every leaf of a table as (dotted key, value); empty tables and arrays are leaves.
fn collect_keys<'a>(
    table: &'a serde_json::Map<String, Json>,
    path: &mut Vec<&'a str>,
    keys: &mut Vec<(String, &'a Json)>,
) {
    for (name, value) in table {
        path.push(name);
        match value {
            Json::Object(inner) if !inner.is_empty() => collect_keys(inner, path, keys),
            _ => keys.push((path.join("."), value)),
        }
        path.pop();
    }
}

fn to_config_value(value: &Json) -> config::Value {
    let kind = match value {
        Json::Null => config::ValueKind::Nil,
        Json::Bool(flag) => config::ValueKind::Boolean(*flag),
        Json::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(signed), _) => config::ValueKind::I64(signed),
            (None, Some(unsigned)) => config::ValueKind::U64(unsigned),
            _ => config::ValueKind::Float(number.as_f64().unwrap_or_default()),
        },
        Json::String(text) => config::ValueKind::String(text.clone()),
        Json::Array(items) => config::ValueKind::Array(items.iter().map(to_config_value).collect()),
        Json::Object(fields) => config::ValueKind::Table(
            fields
                .iter()
                .map(|(name, field)| (name.clone(), to_config_value(field)))
                .collect(),
        ),
    };
    config::Value::new(None, kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Nested {
        base_url: String,
        tokens: u64,
    }

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Settings {
        listen: String,
        slots: u32,
        ratio: f64,
        json: bool,
        ready_file: Option<PathBuf>,
        llm: Nested,
    }

    impl Default for Settings {
        fn default() -> Self {
            Settings {
                listen: "127.0.0.1:1".into(),
                slots: 2,
                ratio: 0.5,
                json: false,
                ready_file: None,
                llm: Nested {
                    base_url: String::new(),
                    tokens: 100,
                },
            }
        }
    }

    #[derive(Default, Serialize)]
    struct Flags {
        #[serde(skip_serializing_if = "Option::is_none")]
        slots: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        ready_file: Option<PathBuf>,
    }

    fn environment(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn defaults_alone_come_back_unchanged() {
        let settings: Settings = layered(
            "part",
            &Settings::default(),
            None,
            &environment(&[(CONFIG_FILE_VARIABLE, "")]),
            &Flags::default(),
        )
        .unwrap();
        assert_eq!(settings, Settings::default());
    }

    #[test]
    fn file_then_environment_then_flags_win_in_that_order() {
        let directory = tempfile::tempdir().unwrap();
        let file = directory.path().join("centroid.toml");
        std::fs::write(
            &file,
            "[part]\nslots = 7\nlisten = \"file\"\nratio = 0.25\n[part.llm]\ntokens = 5\n[other]\nslots = 99\n",
        )
        .unwrap();
        let flags = Flags {
            slots: Some(3),
            ready_file: Some(PathBuf::from("/tmp/ready")),
        };
        let settings: Settings = layered(
            "part",
            &Settings::default(),
            Some(&file),
            &environment(&[
                ("CENTROID_SLOTS", "5"),
                ("CENTROID_LISTEN", "env"),
                ("CENTROID_JSON", "true"),
                ("CENTROID_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ]),
            &flags,
        )
        .unwrap();
        assert_eq!(
            settings.slots, 3,
            "a flag beats the environment and the file"
        );
        assert_eq!(settings.listen, "env", "the environment beats the file");
        assert_eq!(settings.ratio, 0.25, "the file beats the default");
        assert!(settings.json);
        assert_eq!(
            settings.llm.base_url, "http://127.0.0.1:9/v1",
            "nested keys from the environment"
        );
        assert_eq!(settings.llm.tokens, 5, "nested keys from the file");
        assert_eq!(settings.ready_file, Some(PathBuf::from("/tmp/ready")));
    }

    #[test]
    fn a_named_file_that_is_missing_or_a_bad_value_is_an_error() {
        let directory = tempfile::tempdir().unwrap();
        let missing = directory.path().join("missing.toml");
        let result: Result<Settings, _> = layered(
            "part",
            &Settings::default(),
            Some(&missing),
            &HashMap::new(),
            &Flags::default(),
        );
        assert!(result.is_err(), "--config names a file that must exist");
        let result: Result<Settings, _> = layered(
            "part",
            &Settings::default(),
            None,
            &environment(&[("CENTROID_SLOTS", "many")]),
            &Flags::default(),
        );
        let message = result.unwrap_err().to_string();
        assert!(message.contains("slots"), "{message}");
    }

    #[test]
    fn environment_names_are_derived_from_the_keys() {
        assert_eq!(
            environment_variable("llm.base_url"),
            "CENTROID_LLM_BASE_URL"
        );
        assert_eq!(
            environment_variable("heartbeat_timeout_ms"),
            "CENTROID_HEARTBEAT_TIMEOUT_MS"
        );
    }
}
