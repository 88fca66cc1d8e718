//! `[coordinator.llm]` (and `[cli.llm]` for `centroid run`): which model the LLM
//! planner asks, layered like every setting (`CENTROID_LLM_BASE_URL`,
//! `CENTROID_LLM_MODEL`, `CENTROID_LLM_API_KEY`, `CENTROID_LLM_MAX_CONTEXT_TOKENS`,
//! `CENTROID_LLM_TEMPERATURE`, `CENTROID_LLM_MAX_TOKENS`, `CENTROID_LLM_TIMEOUT_MS`,
//! `CENTROID_LLM_MODEL_SHARE`),
//! and the light model of `[llm.light]` (`CENTROID_LLM_LIGHT_MODEL`, …) that
//! serves the critic, classification and ReAct repairs (seed 004 §6).
//! The CLI reads them as well as the coordinator, and hands its own to a child
//! coordinator process as those variables ([`LlmSettings::to_environment`]).

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::config_layers::environment_variable;

/// The key of these settings in a binary's table (`[coordinator.llm]`, `[cli.llm]`).
pub const LLM_TABLE: &str = "llm";

/// The API the model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// `POST {base_url}/chat/completions` (OpenAI, vLLM, Ollama, llama.cpp)
    #[default]
    Openai,
    /// `POST {base_url}/messages` (Anthropic Messages API)
    Anthropic,
}

/// What an iteration does when its rule-based share is in and the model has
/// not answered yet (`[llm] model_share`, `CENTROID_LLM_MODEL_SHARE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelSharePolicy {
    /// the iteration waits for the model's share (up to the model's timeout):
    /// an iteration holds the same candidates whatever the model's latency
    Wait,
    /// the iteration closes without it and the next one starts; the late
    /// answer's points join the iteration running when it arrives, and no new
    /// advice is asked while it is outstanding: the slots stay busy
    #[default]
    WhenReady,
}

/// Which model the LLM planner asks and how (every field has a default, so a
/// partial `[llm]` table is fine). `Debug` never prints the key.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmSettings {
    /// the API the model speaks
    pub provider: Provider,
    /// with the API version, e.g. `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`, `https://api.anthropic.com/v1`; empty = no model
    pub base_url: String,
    /// the model's name as the server knows it
    pub model: String,
    /// may stay empty for local servers (Ollama, llama.cpp, vLLM)
    pub api_key: String,
    /// sampling temperature
    pub temperature: f64,
    /// completion tokens asked for
    pub max_tokens: u32,
    /// the whole call, retries included, never takes longer
    pub timeout_ms: u64,
    /// the model's context window; prompts are built within it
    pub max_context_tokens: u32,
    /// ask for a JSON object (`response_format`) where the API has it
    pub json_mode: bool,
    /// extra attempts after a 429, a 5xx, a timeout or a lost connection
    pub retries: u32,
    /// the share of an iteration's candidates evaluated (in %) before the model
    /// is asked for the next iteration's advice: 100 = all of them
    pub results_before_advice_pct: u32,
    /// what an iteration does when the model's answer is late
    pub model_share: ModelSharePolicy,
    /// the light model (`[llm.light]`) for the critic, classification and ReAct
    /// repairs; none named = this model serves every role
    pub light: LightModel,
}

/// The light model of `[llm.light]`: what differs from the `[llm]` model (every
/// other setting is the same). `Debug` never prints the key.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LightModel {
    /// empty = the `[llm]` model's server
    pub base_url: String,
    /// the light model's name; empty = no light model
    pub model: String,
    /// empty = the `[llm]` model's key
    pub api_key: String,
    /// its context window; 0 = the `[llm]` model's
    pub max_context_tokens: u32,
}

/// Never prints the key.
impl std::fmt::Debug for LightModel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LightModel")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &key_shown(&self.api_key))
            .field("max_context_tokens", &self.max_context_tokens)
            .finish()
    }
}

fn key_shown(key: &str) -> &'static str {
    if key.is_empty() { "<empty>" } else { "<set>" }
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            provider: Provider::Openai,
            base_url: String::new(),
            model: String::new(),
            api_key: String::new(),
            temperature: 0.2,
            max_tokens: 2048,
            timeout_ms: 60_000,
            max_context_tokens: 8192,
            json_mode: true,
            retries: 2,
            results_before_advice_pct: 100,
            model_share: ModelSharePolicy::WhenReady,
            light: LightModel::default(),
        }
    }
}

impl LlmSettings {
    /// A model is configured when both its URL and its name are.
    pub fn is_configured(&self) -> bool {
        self.missing().is_none()
    }

    /// Why no model is configured, for the one log line that says so (`None`
    /// when one is).
    pub fn missing(&self) -> Option<String> {
        match (
            self.base_url.trim().is_empty(),
            self.model.trim().is_empty(),
        ) {
            (true, _) => Some("no [llm] base_url (CENTROID_LLM_BASE_URL)".into()),
            (false, true) => Some("no [llm] model (CENTROID_LLM_MODEL)".into()),
            (false, false) => None,
        }
    }

    /// The light model's settings (the `[llm]` ones with `[llm.light]`'s
    /// differences); `None` when no light model is named.
    pub fn light_settings(&self) -> Option<LlmSettings> {
        let light = &self.light;
        if light.model.trim().is_empty() {
            return None;
        }
        let or = |own: &str, heavy: &str| {
            if own.trim().is_empty() {
                heavy.to_string()
            } else {
                own.to_string()
            }
        };
        Some(LlmSettings {
            base_url: or(&light.base_url, &self.base_url),
            model: light.model.clone(),
            api_key: or(&light.api_key, &self.api_key),
            max_context_tokens: match light.max_context_tokens {
                0 => self.max_context_tokens,
                own => own,
            },
            light: LightModel::default(),
            ..self.clone()
        })
    }

    /// The settings as the `CENTROID_LLM_<KEY>` variables that layer back into the
    /// same settings: one per field, derived from the serialized settings (a new
    /// field is written without a list to keep in step). The list holds the API
    /// key in clear, for a child process's environment only: never log it.
    pub fn to_environment(&self) -> Vec<(String, String)> {
        let fields = match serde_json::to_value(self) {
            Ok(Json::Object(fields)) => fields,
            _ => unreachable!("LlmSettings serializes to a table of plain values"),
        };
        let mut variables = Vec::new();
        environment_of(LLM_TABLE, fields, &mut variables);
        variables
    }
}

/// The leaves of `fields` under `prefix` as `CENTROID_…` variables (a nested
/// table's keys joined with dots, as the layering reads them back).
fn environment_of(
    prefix: &str,
    fields: serde_json::Map<String, Json>,
    variables: &mut Vec<(String, String)>,
) {
    for (key, value) in fields {
        let key = format!("{prefix}.{key}");
        let text = match value {
            Json::Object(table) => {
                environment_of(&key, table, variables);
                continue;
            }
            Json::String(text) => text,
            other => other.to_string(),
        };
        variables.push((environment_variable(&key), text));
    }
}

/// Never prints the key.
impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LlmSettings")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &key_shown(&self.api_key))
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("timeout_ms", &self.timeout_ms)
            .field("max_context_tokens", &self.max_context_tokens)
            .field("json_mode", &self.json_mode)
            .field("retries", &self.retries)
            .field("results_before_advice_pct", &self.results_before_advice_pct)
            .field("model_share", &self.model_share)
            .field("light", &self.light)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::config_layers::{CONFIG_FILE_VARIABLE, layered};

    /// A binary's table holding the `llm` table, as the coordinator's does.
    #[derive(Debug, Default, Serialize, Deserialize)]
    #[serde(default)]
    struct Holder {
        llm: LlmSettings,
    }

    fn unusual_settings() -> LlmSettings {
        LlmSettings {
            provider: Provider::Anthropic,
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "claude-test".into(),
            api_key: "sk-secret".into(),
            temperature: 0.7,
            max_tokens: 333,
            timeout_ms: 4_321,
            max_context_tokens: 16_384,
            json_mode: false,
            retries: 5,
            results_before_advice_pct: 60,
            model_share: ModelSharePolicy::Wait,
            light: LightModel {
                base_url: "http://127.0.0.1:10/v1".into(),
                model: "claude-light".into(),
                api_key: "sk-light-secret".into(),
                max_context_tokens: 4_096,
            },
        }
    }

    #[test]
    fn the_environment_written_layers_back_into_the_same_settings() {
        let settings = unusual_settings();
        let mut environment: HashMap<String, String> =
            settings.to_environment().into_iter().collect();
        assert_eq!(
            environment.get("CENTROID_LLM_BASE_URL").map(String::as_str),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            environment.get("CENTROID_LLM_PROVIDER").map(String::as_str),
            Some("anthropic")
        );
        assert_eq!(
            environment
                .get("CENTROID_LLM_LIGHT_MODEL")
                .map(String::as_str),
            Some("claude-light")
        );
        assert_eq!(
            environment
                .get("CENTROID_LLM_MODEL_SHARE")
                .map(String::as_str),
            Some("wait")
        );
        assert_eq!(
            environment.len(),
            16,
            "one variable per field: {:?}",
            environment.keys()
        );
        for (variable, default) in LlmSettings::default().to_environment() {
            assert_ne!(
                environment[&variable], default,
                "{variable}: every field differs from its default, so each one makes the trip"
            );
        }
        environment.insert(CONFIG_FILE_VARIABLE.into(), String::new());
        let no_flags = serde_json::Map::new();
        let layered_back: Holder = layered(
            "coordinator",
            &Holder::default(),
            None,
            &environment,
            &no_flags,
        )
        .unwrap();
        assert_eq!(layered_back.llm, settings);
    }

    #[test]
    fn the_key_is_in_the_environment_but_never_in_debug() {
        let settings = unusual_settings();
        assert!(
            settings
                .to_environment()
                .contains(&("CENTROID_LLM_API_KEY".into(), "sk-secret".into()))
        );
        let printed = format!("{settings:?}");
        assert!(!printed.contains("sk-secret"), "{printed}");
        assert!(!printed.contains("sk-light-secret"), "{printed}");
        assert!(printed.contains("<set>"), "{printed}");
    }
}

#[cfg(test)]
mod light_tests {
    use super::*;

    #[test]
    fn a_light_model_takes_the_heavy_models_settings_it_does_not_name() {
        let heavy = LlmSettings {
            base_url: "http://heavy/v1".into(),
            model: "big".into(),
            api_key: "k".into(),
            ..LlmSettings::default()
        };
        assert_eq!(heavy.light_settings(), None, "no light model named");
        let both = LlmSettings {
            light: LightModel {
                model: "small".into(),
                ..LightModel::default()
            },
            ..heavy.clone()
        };
        let light = both.light_settings().unwrap();
        assert_eq!(light.model, "small");
        assert_eq!(light.base_url, "http://heavy/v1");
        assert_eq!(light.api_key, "k");
        assert_eq!(light.max_context_tokens, heavy.max_context_tokens);
        assert_eq!(light.light, LightModel::default());
    }
}
