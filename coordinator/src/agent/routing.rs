//! Which model serves a call (seed 004 §6): the `[llm]` model plans and
//! rewrites the guidance (heavy work); the `[llm.light]` model, when one is
//! named, serves the critic, classification and ReAct repairs (light work) —
//! unless the prompt would not fit its context with room for the answer.

use crate::llm::LlmSettings;

/// The roles the light model serves.
pub const LIGHT_ROLES: &[&str] = &["critic", "classify", "react"];

/// A model tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Heavy,
    Light,
}

/// The tier that serves `role` with a prompt of `prompt_tokens`, given the light
/// model's `light` settings.
pub fn serves(role: &str, prompt_tokens: usize, light: &LlmSettings) -> Tier {
    let room = light.max_context_tokens.saturating_sub(light.max_tokens) as usize;
    if LIGHT_ROLES.contains(&role) && prompt_tokens <= room {
        Tier::Light
    } else {
        Tier::Heavy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn light_roles_with_prompts_that_fit_go_to_the_light_model() {
        let light = LlmSettings {
            max_context_tokens: 4_096,
            max_tokens: 1_024,
            ..LlmSettings::default()
        };
        assert_eq!(serves("critic", 1_000, &light), Tier::Light);
        assert_eq!(serves("react", 3_072, &light), Tier::Light);
        assert_eq!(serves("critic", 3_073, &light), Tier::Heavy, "too long");
        assert_eq!(serves("planner", 10, &light), Tier::Heavy);
        assert_eq!(serves("meta", 10, &light), Tier::Heavy);
    }
}
