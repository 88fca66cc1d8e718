//! Skills as MCP tools, and skill results as MCP tool results.
//!
//! **Names.** MCP tool names must match `^[a-zA-Z0-9_-]{1,64}$`; skill names have
//! dots (`layout.create_device`). A tool's name is its skill's name with every
//! character outside `[A-Za-z0-9_-]` replaced by `_`, cut to 64 characters
//! (`layout.create_device` → `layout_create_device`); should two skills land on the
//! same name, the later one in the skill server's order gets `-2`, `-3`, … (within
//! the 64). The way back is a lookup in the table built from the skill server's
//! `tools/list` at start, never a string rewrite, so it is exact even for skills
//! with `_` in their names. The tool's `title` is the skill's own name.
//!
//! **Debug skills** (`debug.*`: sleeps and deliberate failures for the worker's
//! tests) are tools only with `centroid mcp --debug-tools`; without it they are
//! not listed and calling one is an invalid-params error naming the flag.
//!
//! **Results.** A skill's `{ok: true, data}` becomes `{content: [text of data as
//! JSON], structuredContent: data, isError: false}` (data that is not a JSON object
//! is wrapped as `{"value": data}`); `{ok: false, error}` becomes a tool error:
//! `{content: ["CODE: message"], structuredContent: {error: {code, message,
//! retryable, details}}, isError: true}` — without the skill server's Python
//! `traceback` detail of an unexpected exception (it is in the server's log).

use std::collections::HashMap;
use std::path::Path;

use centroid_proto::ErrorCode;
use centroid_worker::confinement::file_properties;
use centroid_worker::skill_process::ToolDescription;
use serde_json::{Value, json};

/// Longest tool name MCP allows.
const MAX_TOOL_NAME: usize = 64;
/// Skills offered only with `--debug-tools`.
const DEBUG_SKILL_PREFIX: &str = "debug.";
/// Longest file argument accepted, in bytes (Linux `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;
/// Longest component of a file argument, in bytes (Linux `NAME_MAX`).
const MAX_PATH_COMPONENT_BYTES: usize = 255;

/// One skill offered as a tool.
#[derive(Debug, Clone)]
pub struct Tool {
    /// the skill server's name, e.g. `layout.create_device`
    pub skill: String,
    /// the `tools/list` entry (`name`, `title`, `description`, `inputSchema`)
    pub entry: Value,
    /// top-level properties holding file paths (schema keyword `x-centroid-file`)
    pub file_properties: Vec<String>,
}

/// Every tool, in the skill server's order, findable by tool name.
#[derive(Debug, Clone, Default)]
pub struct ToolTable {
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    /// tool names of the debug skills left out (no `--debug-tools`)
    withheld: Vec<String>,
}

/// The tool name of a skill name before collisions are resolved.
pub fn tool_name(skill: &str) -> String {
    skill
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                true => c,
                false => '_',
            },
        )
        .take(MAX_TOOL_NAME)
        .collect()
}

/// `base` with `-n` appended, cut so the whole stays within 64 characters.
fn with_suffix(base: &str, n: usize) -> String {
    let suffix = format!("-{n}");
    let kept: String = base.chars().take(MAX_TOOL_NAME - suffix.len()).collect();
    format!("{kept}{suffix}")
}

impl ToolTable {
    /// The table of the skill server's catalog (its `debug.*` skills only when
    /// `offer_debug`); file paths are explained relative to `workdir` in each
    /// description that takes one.
    pub fn new(skills: Vec<ToolDescription>, workdir: &Path, offer_debug: bool) -> ToolTable {
        let mut table = ToolTable::default();
        for skill in skills {
            if !offer_debug && skill.name.starts_with(DEBUG_SKILL_PREFIX) {
                table.withheld.push(tool_name(&skill.name));
                continue;
            }
            let base = tool_name(&skill.name);
            let base = if base.is_empty() {
                "_".to_owned()
            } else {
                base
            };
            let mut name = base.clone();
            let mut n = 2;
            while table.by_name.contains_key(&name) {
                name = with_suffix(&base, n);
                n += 1;
            }
            let mut schema = skill.input_schema;
            if let Some(object) = schema.as_object_mut() {
                object
                    .entry("type")
                    .or_insert_with(|| Value::String("object".into()));
            } else {
                schema = json!({"type": "object"});
            }
            let files = file_properties(&schema);
            let mut description = skill.description;
            if !files.is_empty() {
                description.push_str(&format!(
                    " File arguments ({}) are paths inside the session directory {}; a relative path is taken relative to it.",
                    files.join(", "),
                    workdir.display()
                ));
            }
            let entry = json!({
                "name": name,
                "title": skill.name,
                "description": description,
                "inputSchema": schema,
            });
            table.by_name.insert(name, table.tools.len());
            table.tools.push(Tool {
                skill: skill.name,
                entry,
                file_properties: files,
            });
        }
        table
    }

    /// The tool called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).map(|index| &self.tools[*index])
    }

    /// The `tools/list` result.
    pub fn list(&self) -> Value {
        let tools: Vec<&Value> = self.tools.iter().map(|tool| &tool.entry).collect();
        json!({"tools": tools})
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether `name` is a debug tool left out for want of `--debug-tools`.
    pub fn is_withheld(&self, name: &str) -> bool {
        self.withheld.iter().any(|withheld| withheld == name)
    }
}

/// The first file argument that cannot be a path (a NUL byte, empty, longer than
/// `PATH_MAX` or with a component longer than `NAME_MAX`): its property and why.
pub fn invalid_path(arguments: &Value, file_properties: &[String]) -> Option<(String, String)> {
    file_properties.iter().find_map(|name| {
        let path = arguments.get(name)?.as_str()?;
        let why = if path.contains('\0') {
            "contains a NUL byte".to_owned()
        } else if path.is_empty() {
            "is empty".to_owned()
        } else if path.len() > MAX_PATH_BYTES {
            format!("is longer than {MAX_PATH_BYTES} bytes")
        } else if path
            .split('/')
            .any(|component| component.len() > MAX_PATH_COMPONENT_BYTES)
        {
            format!("has a name longer than {MAX_PATH_COMPONENT_BYTES} bytes")
        } else {
            return None;
        };
        Some((name.clone(), why))
    })
}

/// Makes relative file arguments absolute inside `workdir` (absolute ones are
/// left alone: the confinement check decides about them).
pub fn anchor_files(arguments: &mut Value, file_properties: &[String], workdir: &Path) {
    for name in file_properties {
        if let Some(Value::String(path)) = arguments.get_mut(name)
            && Path::new(path.as_str()).is_relative()
        {
            *path = workdir.join(path.as_str()).display().to_string();
        }
    }
}

/// The tool result of a skill's `tools/call` result (`{ok, error, data}`).
pub fn call_result(skill_result: &Value) -> Value {
    if skill_result.get("ok").and_then(Value::as_bool) == Some(true) {
        let data = match skill_result.get("data") {
            Some(Value::Object(data)) => Value::Object(data.clone()),
            None | Some(Value::Null) => json!({}),
            Some(other) => json!({"value": other}),
        };
        let text = serde_json::to_string(&data).unwrap_or_else(|_| "{}".into());
        return json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": data,
            "isError": false,
        });
    }
    let error = skill_result.get("error").cloned().unwrap_or(Value::Null);
    let code = error
        .get("code")
        .and_then(Value::as_str)
        .unwrap_or("INTERNAL_ERROR");
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the skill failed without a message");
    let retryable = error.get("retryable").and_then(Value::as_bool);
    let mut details = error.get("details").cloned().unwrap_or(Value::Null);
    if let Some(details) = details.as_object_mut() {
        details.remove("traceback");
    }
    tool_error(code, message, retryable, details)
}

/// A tool error: `CODE: message` as text, the error as structured content.
pub fn tool_error(code: &str, message: &str, retryable: Option<bool>, details: Value) -> Value {
    let retryable =
        retryable.unwrap_or_else(|| ErrorCode::from_wire_name(code).is_retryable_by_default());
    json!({
        "content": [{"type": "text", "text": format!("{code}: {message}")}],
        "structuredContent": {"error": {
            "code": code,
            "message": message,
            "retryable": retryable,
            "details": details,
        }},
        "isError": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, schema: Value) -> ToolDescription {
        ToolDescription {
            name: name.into(),
            description: format!("does {name}"),
            input_schema: schema,
        }
    }

    fn valid(name: &str) -> bool {
        (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_map_both_ways_and_collisions_get_a_suffix() {
        let long = format!("a.{}", "b".repeat(80));
        let skills = vec![
            skill("layout.create_device", json!({"type": "object"})),
            skill("layout_create.device", json!({})),
            skill(&long, json!({"type": "object"})),
            skill("weird name/ü", json!(true)),
        ];
        let table = ToolTable::new(skills, Path::new("/tmp/s"), false);
        assert_eq!(table.len(), 4);
        assert_eq!(
            table.get("layout_create_device").unwrap().skill,
            "layout.create_device"
        );
        assert_eq!(
            table.get("layout_create_device-2").unwrap().skill,
            "layout_create.device"
        );
        let listed = table.list();
        for entry in listed["tools"].as_array().unwrap() {
            assert!(valid(entry["name"].as_str().unwrap()), "{entry}");
            assert_eq!(entry["inputSchema"]["type"], "object");
            let tool = table.get(entry["name"].as_str().unwrap()).unwrap();
            assert_eq!(entry["title"], tool.skill.as_str());
        }
        assert!(table.get("layout.create_device").is_none());
    }

    #[test]
    fn file_arguments_are_described_and_anchored_in_the_workdir() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string", "x-centroid-file": true}, "cell": {"type": "string"}}});
        let table = ToolTable::new(vec![skill("layout.export", schema)], Path::new("/w"), false);
        let tool = table.get("layout_export").unwrap();
        assert_eq!(tool.file_properties, vec!["path".to_string()]);
        assert!(tool.entry["description"].as_str().unwrap().contains("/w"));
        let mut arguments = json!({"path": "out/a.gds", "cell": "c"});
        anchor_files(&mut arguments, &tool.file_properties, Path::new("/w"));
        assert_eq!(arguments["path"], "/w/out/a.gds");
        let mut absolute = json!({"path": "/etc/passwd"});
        anchor_files(&mut absolute, &tool.file_properties, Path::new("/w"));
        assert_eq!(absolute["path"], "/etc/passwd");
    }

    #[test]
    fn debug_skills_are_tools_only_when_offered() {
        let skills = || {
            vec![
                skill("tech.load", json!({})),
                skill("debug.sleep", json!({})),
            ]
        };
        let plain = ToolTable::new(skills(), Path::new("/w"), false);
        assert_eq!(plain.len(), 1);
        assert!(plain.get("debug_sleep").is_none());
        assert!(plain.is_withheld("debug_sleep"));
        assert!(!plain.is_withheld("tech_load"));
        assert!(!plain.list().to_string().contains("debug"));
        let debugging = ToolTable::new(skills(), Path::new("/w"), true);
        assert_eq!(debugging.get("debug_sleep").unwrap().skill, "debug.sleep");
        assert!(!debugging.is_withheld("debug_sleep"));
    }

    #[test]
    fn paths_that_cannot_be_files_are_found() {
        let files = vec!["path".to_string()];
        let check = |path: &str| invalid_path(&json!({"path": path}), &files);
        assert_eq!(check("a.gds"), None);
        assert_eq!(check("/w/a/b.gds"), None);
        let (property, why) = check("a\0.gds").unwrap();
        assert_eq!(
            (property.as_str(), why.as_str()),
            ("path", "contains a NUL byte")
        );
        assert!(check("").is_some());
        assert!(check(&"a/".repeat(2100)).is_some());
        assert!(check(&format!("{}.gds", "n".repeat(300))).is_some());
        assert_eq!(invalid_path(&json!({"cell": "a\0"}), &files), None);
    }

    #[test]
    fn results_become_tool_results() {
        let ok = call_result(&json!({"ok": true, "data": {"cell_name": "M1"}, "error": null}));
        assert_eq!(ok["isError"], false);
        assert_eq!(ok["structuredContent"]["cell_name"], "M1");
        let text: Value = serde_json::from_str(ok["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(text["cell_name"], "M1");
        let scalar = call_result(&json!({"ok": true, "data": [1]}));
        assert_eq!(scalar["structuredContent"]["value"], json!([1]));

        let failed = call_result(&json!({"ok": false, "data": null, "error": {
            "code": "INVALID_PARAM", "message": "w must be positive", "details": {"path": "$.w"}}}));
        assert_eq!(failed["isError"], true);
        assert_eq!(
            failed["content"][0]["text"],
            "INVALID_PARAM: w must be positive"
        );
        let error = &failed["structuredContent"]["error"];
        assert_eq!(error["retryable"], false);
        assert_eq!(error["details"]["path"], "$.w");
        let crashed = call_result(&json!({"ok": false, "data": null, "error": {
            "code": "INTERNAL_ERROR", "message": "DebugFailure: boom",
            "details": {"skill": "debug.fail", "traceback": "Traceback (most recent call last):"}}}));
        let error = &crashed["structuredContent"]["error"];
        assert_eq!(error["code"], "INTERNAL_ERROR");
        assert_eq!(error["message"], "DebugFailure: boom");
        assert_eq!(error["details"], json!({"skill": "debug.fail"}));
        assert!(!crashed.to_string().contains("Traceback"));
        let timeout = tool_error("TIMEOUT", "slow", None, Value::Null);
        assert_eq!(timeout["structuredContent"]["error"]["retryable"], true);
    }
}
