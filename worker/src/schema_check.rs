//! The compiled schemas of the skills: every skill from `tools/list` with its input
//! JSON Schema, compiled once. Arguments are checked here, in Rust, before KLayout
//! sees them.

use std::collections::BTreeMap;

use centroid_proto::{Error, ErrorCode};
use serde_json::{Value, json};

use crate::confinement;
use crate::error::WorkerError;
use crate::skill_process::{ServerInfo, ToolDescription};

struct CompiledSkill {
    description: String,
    input_schema: Value,
    validator: jsonschema::Validator,
    /// properties holding file paths (confined to the candidate's scratch directory)
    file_properties: Vec<String>,
}

/// The skills one kind of skill server offers, each with its compiled input schema.
pub struct CompiledSkillSchemas {
    skills: BTreeMap<String, CompiledSkill>,
    pub klayout_version: String,
    pub server_version: String,
}

impl std::fmt::Debug for CompiledSkillSchemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSkillSchemas")
            .field("skills", &self.skills.keys().collect::<Vec<_>>())
            .field("klayout_version", &self.klayout_version)
            .finish()
    }
}

/// Largest number of schema violations reported back for one step.
const MAX_REPORTED_VIOLATIONS: usize = 8;

impl CompiledSkillSchemas {
    /// Compiles every skill's schema; a schema that does not compile stops the worker.
    pub fn build(
        tools: Vec<ToolDescription>,
        server_info: &ServerInfo,
    ) -> Result<CompiledSkillSchemas, WorkerError> {
        let mut skills = BTreeMap::new();
        for tool in tools {
            let validator = jsonschema::validator_for(&tool.input_schema).map_err(|error| {
                WorkerError::SkillSchema {
                    skill: tool.name.clone(),
                    message: error.to_string(),
                }
            })?;
            skills.insert(
                tool.name,
                CompiledSkill {
                    description: tool.description,
                    file_properties: confinement::file_properties(&tool.input_schema),
                    input_schema: tool.input_schema,
                    validator,
                },
            );
        }
        Ok(CompiledSkillSchemas {
            skills,
            klayout_version: server_info.klayout_version.clone(),
            server_version: server_info.server.version.clone(),
        })
    }

    pub fn skill_names(&self) -> Vec<String> {
        self.skills.keys().cloned().collect()
    }

    pub fn contains(&self, skill: &str) -> bool {
        self.skills.contains_key(skill)
    }

    /// (name, description, input schema) of every skill, sorted by name.
    pub fn describe(&self) -> Vec<(String, String, Value)> {
        self.skills
            .iter()
            .map(|(name, entry)| {
                (
                    name.clone(),
                    entry.description.clone(),
                    entry.input_schema.clone(),
                )
            })
            .collect()
    }

    /// INVALID_PARAM when a file argument of `skill` is outside `scratch_dir`.
    pub fn check_files(
        &self,
        skill: &str,
        arguments: &Value,
        scratch_dir: Option<&std::path::Path>,
    ) -> Result<(), Error> {
        match self.skills.get(skill) {
            Some(entry) => {
                confinement::check_files(skill, &entry.file_properties, arguments, scratch_dir)
            }
            None => Ok(()),
        }
    }

    /// NOT_FOUND for an unknown skill; INVALID_PARAM with the JSON pointer of
    /// each violation for arguments the schema refuses.
    pub fn check_arguments(&self, skill: &str, arguments: &Value) -> Result<(), Error> {
        let Some(entry) = self.skills.get(skill) else {
            return Err(
                Error::new(ErrorCode::NotFound, format!("unknown skill `{skill}`"))
                    .with_details(json!({"skill": skill, "known_skills": self.skill_names()})),
            );
        };
        let violations: Vec<(String, String)> = entry
            .validator
            .iter_errors(arguments)
            .take(MAX_REPORTED_VIOLATIONS)
            .map(|violation| {
                (
                    violation.instance_path().as_str().to_string(),
                    violation.to_string(),
                )
            })
            .collect();
        let Some((first_pointer, first_message)) = violations.first().cloned() else {
            return Ok(());
        };
        let shown_pointer = if first_pointer.is_empty() {
            "/".to_string()
        } else {
            first_pointer.clone()
        };
        Err(Error::new(
            ErrorCode::InvalidParam,
            format!("invalid arguments for `{skill}` at {shown_pointer}: {first_message}"),
        )
        .with_details(json!({
            "reason": "schema",
            "skill": skill,
            "pointer": first_pointer,
            "violations": violations
                .iter()
                .map(|(pointer, message)| json!({"pointer": pointer, "message": message}))
                .collect::<Vec<_>>(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill_process::ServerName;

    fn catalog() -> CompiledSkillSchemas {
        let tools = vec![ToolDescription {
            name: "debug.sleep".into(),
            description: "sleeps".into(),
            input_schema: json!({
                "type": "object",
                "properties": {"seconds": {"type": "number", "minimum": 0}},
                "required": ["seconds"],
                "additionalProperties": false
            }),
        }];
        let info = ServerInfo {
            protocol_version: "2024-11-05".into(),
            klayout_version: "0.30".into(),
            server: ServerName::default(),
        };
        CompiledSkillSchemas::build(tools, &info).unwrap()
    }

    #[test]
    fn bad_type_is_invalid_param_with_pointer() {
        let error = catalog()
            .check_arguments("debug.sleep", &json!({"seconds": "ten"}))
            .unwrap_err();
        assert_eq!(error.error_code(), ErrorCode::InvalidParam);
        assert!(!error.retryable);
        assert_eq!(error.details()["pointer"], "/seconds");
        assert_eq!(
            error.details()["reason"],
            "schema",
            "the reason the planner keys on"
        );
    }

    #[test]
    fn unknown_skill_is_not_found() {
        let error = catalog()
            .check_arguments("device.teleport", &json!({}))
            .unwrap_err();
        assert_eq!(error.error_code(), ErrorCode::NotFound);
    }

    #[test]
    fn good_arguments_pass() {
        assert!(
            catalog()
                .check_arguments("debug.sleep", &json!({"seconds": 0.5}))
                .is_ok()
        );
    }
}
