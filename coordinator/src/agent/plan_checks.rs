//! What a model-written step may do, checked on the coordinator before anything
//! is dispatched (the worker checks files again, but a refused answer goes back
//! to the model with its reason): no debug skill, file arguments inside the
//! candidate's scratch directory, durations within the candidate's deadline.

use std::path::{Component, Path};

use centroid_planner::plan_builder::CANDIDATE_DIR;
use centroid_planner::skill_catalog::SkillCatalog;
use serde_json::Value;

use centroid_planner::point_from_json::Problems;

/// The schema keyword of a file-path property (the worker's `FILE_KEYWORD`).
pub const FILE_KEYWORD: &str = "x-centroid-file";

/// The prefix of the skills meant for tests and benchmarks only.
const DEBUG_PREFIX: &str = "debug.";

/// The coordinator's default candidate deadline (ms), for a planner made
/// without a job.
const DEFAULT_CANDIDATE_DEADLINE_MS: u64 = 300_000;

/// The bounds of one job on what its model-written steps may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanLimits {
    /// a candidate's whole run may take this long; no step may wait longer
    pub candidate_deadline_ms: u64,
}

impl Default for PlanLimits {
    fn default() -> PlanLimits {
        PlanLimits {
            candidate_deadline_ms: DEFAULT_CANDIDATE_DEADLINE_MS,
        }
    }
}

/// Whether `skill` is a debug skill (never offered, never accepted).
pub fn is_debug(skill: &str) -> bool {
    skill.starts_with(DEBUG_PREFIX)
}

/// The skills a model is offered: the catalog without the debug skills.
pub fn offered(skills: &SkillCatalog) -> SkillCatalog {
    skills
        .iter()
        .filter(|(name, _)| !is_debug(name))
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect()
}

/// The problems of `params` of a call of `skill` (whose input schema is
/// `schema`) beyond its schema: files outside the scratch directory, durations
/// over the deadline. Worded `params.<name>: …` for the repair round.
pub fn check_arguments(schema: &Value, params: &Value, limits: &PlanLimits) -> Problems {
    let mut problems = Problems::new();
    let Some(arguments) = params.as_object() else {
        return problems;
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, value) in arguments {
        let is_file = properties
            .and_then(|properties| properties.get(name))
            .and_then(|spec| spec.get(FILE_KEYWORD))
            .and_then(Value::as_bool)
            == Some(true);
        if is_file && !in_scratch_dir(value) {
            problems.push(format!(
                "params.{name}: {value} is not a file of the candidate's scratch directory; \
                 write \"{CANDIDATE_DIR}/<file>\" (relative, no \"..\", no absolute path)"
            ));
        }
        if let Some(seconds) = duration_seconds(name, value) {
            let deadline = limits.candidate_deadline_ms as f64 / 1000.0;
            if seconds > deadline {
                problems.push(format!(
                    "params.{name}: {seconds} s is longer than the candidate's deadline of \
                     {deadline} s; give at most {deadline}"
                ));
            }
        }
    }
    problems
}

/// `${CANDIDATE_DIR}/` then a relative path without `..` (or a non-string,
/// which the schema judges).
fn in_scratch_dir(value: &Value) -> bool {
    let Some(text) = value.as_str() else {
        return true;
    };
    let Some(relative) = text
        .strip_prefix(CANDIDATE_DIR)
        .and_then(|rest| rest.strip_prefix('/'))
    else {
        return false;
    };
    let path = Path::new(relative);
    !relative.is_empty()
        && !relative.contains('\0')
        && path
            .components()
            .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
}

/// A wall-clock duration argument in seconds: a number under a name that says
/// it waits (`seconds`, `*timeout*`, `*sleep*`, `*wait*`; `*_ms` in ms).
fn duration_seconds(name: &str, value: &Value) -> Option<f64> {
    let lower = name.to_ascii_lowercase();
    let waits = lower == "seconds"
        || lower.contains("timeout")
        || lower.contains("sleep")
        || lower.contains("wait");
    let number = value.as_f64().filter(|_| waits)?;
    Some(if lower.ends_with("_ms") {
        number / 1000.0
    } else {
        number
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"properties": {"path": {"type": "string", FILE_KEYWORD: true},
                              "cell": {"type": "string"}, "timeout_s": {"type": "number"}}})
    }

    #[test]
    fn files_stay_in_the_scratch_dir_and_durations_within_the_deadline() {
        let limits = PlanLimits {
            candidate_deadline_ms: 60_000,
        };
        let ok =
            json!({"path": "${CANDIDATE_DIR}/sub/layout.gds", "cell": "/etc", "timeout_s": 60});
        assert_eq!(check_arguments(&schema(), &ok, &limits), Problems::new());
        for path in [
            "/etc/hostname",
            "layout.gds",
            "${CANDIDATE_DIR}/../x.gds",
            "${CANDIDATE_DIR}/a/../../x",
            "${CANDIDATE_DIR}//etc/hostname",
            "${CANDIDATE_DIR}/",
            "${CANDIDATE_DIR}",
        ] {
            let problems = check_arguments(&schema(), &json!({"path": path}), &limits);
            assert_eq!(problems.len(), 1, "{path}: {problems:?}");
            assert!(problems[0].starts_with("params.path:"), "{problems:?}");
        }
        let slow = check_arguments(&schema(), &json!({"timeout_s": 61}), &limits);
        assert!(slow[0].contains("deadline of 60 s"), "{slow:?}");
        let sleep = check_arguments(&json!({}), &json!({"seconds": 3600}), &limits);
        assert_eq!(sleep.len(), 1, "{sleep:?}");
        let ms = check_arguments(&json!({}), &json!({"wait_ms": 60_001}), &limits);
        assert_eq!(ms.len(), 1, "{ms:?}");
        // simulated times are not waits
        assert!(check_arguments(&json!({}), &json!({"t_stop_s": 1e6}), &limits).is_empty());
    }

    #[test]
    fn debug_skills_are_not_offered() {
        let skills: SkillCatalog = ["debug.sleep", "debug.fail", "drc.run"]
            .iter()
            .map(|name| (name.to_string(), Value::Null))
            .collect();
        let offered = offered(&skills);
        assert_eq!(offered.keys().collect::<Vec<_>>(), ["drc.run"]);
    }
}
