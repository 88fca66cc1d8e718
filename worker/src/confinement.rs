//! Confined files: every file path a skill receives must resolve inside the
//! candidate's scratch directory. The skills mark such properties in their input
//! schemas with the keyword [`FILE_KEYWORD`]; the worker checks them here before
//! KLayout sees the call (and the skill server checks them again).

use std::path::{Component, Path, PathBuf};

use centroid_proto::{Error, ErrorCode};
use serde_json::{Value, json};

/// The schema keyword of a file-path property (`registry.FILE_KEYWORD` in Python).
pub const FILE_KEYWORD: &str = "x-centroid-file";
/// `error.details.reason` of a path outside the scratch directory.
pub const OUTSIDE_SCRATCH_REASON: &str = "path_outside_scratch";

/// The top-level properties of a skill's input schema that carry file paths.
pub fn file_properties(input_schema: &Value) -> Vec<String> {
    input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .filter(|(_, spec)| spec.get(FILE_KEYWORD).and_then(Value::as_bool) == Some(true))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// INVALID_PARAM when a file property of `arguments` does not resolve inside
/// `scratch_dir` (or the candidate has no scratch directory at all).
pub fn check_files(
    skill: &str,
    file_properties: &[String],
    arguments: &Value,
    scratch_dir: Option<&Path>,
) -> Result<(), Error> {
    for name in file_properties {
        let Some(value) = arguments.get(name).and_then(Value::as_str) else {
            continue;
        };
        let inside = scratch_dir.is_some_and(|scratch| resolves_inside(Path::new(value), scratch));
        if !inside {
            let scratch = scratch_dir
                .map(|dir| dir.display().to_string())
                .unwrap_or_default();
            return Err(Error::new(
                ErrorCode::InvalidParam,
                format!("`{skill}`: {name} `{value}` is outside the candidate's scratch directory; use ${{CANDIDATE_DIR}}/<file>"),
            )
            .with_details(json!({
                "reason": OUTSIDE_SCRATCH_REASON,
                "pointer": format!("/{name}"),
                "skill": skill,
                "scratch_dir": scratch,
            })));
        }
    }
    Ok(())
}

/// Whether `path` — absolute, without `..`, its existing part resolved through
/// symlinks — lies inside `root`.
fn resolves_inside(path: &Path, root: &Path) -> bool {
    if !path.is_absolute() || path.components().any(|part| part == Component::ParentDir) {
        return false;
    }
    let Ok(root) = root.canonicalize() else {
        return false;
    };
    // the file itself may not exist yet: resolve its longest existing ancestor
    let mut existing = path.to_path_buf();
    let mut rest: Vec<PathBuf> = Vec::new();
    while !existing.exists() {
        let Some(name) = existing.file_name().map(PathBuf::from) else {
            return false;
        };
        rest.push(name);
        if !existing.pop() {
            return false;
        }
    }
    let Ok(mut resolved) = existing.canonicalize() else {
        return false;
    };
    for part in rest.into_iter().rev() {
        resolved.push(part);
    }
    resolved.starts_with(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({"properties": {"cell": {"type": "string"}, "path": {"type": "string", FILE_KEYWORD: true}}})
    }

    #[test]
    fn only_marked_properties_are_files() {
        assert_eq!(file_properties(&schema()), vec!["path".to_string()]);
        assert!(file_properties(&json!({"type": "object"})).is_empty());
    }

    #[test]
    fn paths_inside_pass_and_every_escape_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        let scratch = directory.path().join("scratch");
        let outside = directory.path().join("outside");
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, scratch.join("link")).unwrap();
        let files = file_properties(&schema());
        let check = |path: String, scratch_dir: Option<&Path>| {
            check_files(
                "layout.export",
                &files,
                &json!({"cell": "c", "path": path}),
                scratch_dir,
            )
        };
        let at = |path: &Path| path.display().to_string();
        assert!(check(at(&scratch.join("layout.gds")), Some(&scratch)).is_ok());
        assert!(check(at(&scratch.join("sub/new/layout.gds")), Some(&scratch)).is_ok());
        for escape in [
            at(&outside.join("layout.gds")),
            format!("{}/../outside/layout.gds", at(&scratch)),
            at(&scratch.join("link/layout.gds")),
            "layout.gds".to_string(),
            "/etc/passwd".to_string(),
        ] {
            let error = check(escape.clone(), Some(&scratch)).unwrap_err();
            assert_eq!(error.error_code(), ErrorCode::InvalidParam, "{escape}");
            assert_eq!(
                error.details()["reason"],
                OUTSIDE_SCRATCH_REASON,
                "{escape}"
            );
            assert_eq!(error.details()["pointer"], "/path");
        }
        assert!(
            check(at(&scratch.join("layout.gds")), None).is_err(),
            "no scratch directory, no files"
        );
        assert!(
            check_files("x", &files, &json!({"cell": "c"}), None).is_ok(),
            "no path given"
        );
    }
}
