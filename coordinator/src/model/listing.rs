//! Stored candidates and results read for a listing (a job's view, the search's
//! journal): the plans and the steps' data — most of a record's JSON and, as
//! `serde_json::Value`s, several times more in memory — are skipped while
//! parsing, not built and dropped. A listed candidate has an empty plan; a listed
//! result keeps its steps (ids, skills, outcomes, durations) with `data` null and
//! no plan.

use serde::Deserialize;
use serde_json::Value;

use super::{
    ArtifactMeta, CandidateRecord, CandidateResult, CandidateStatus, DesignPoint, Evaluation,
    Origin, Plan, StepOutcome,
};

/// A stored candidate (JSON) without its plan.
pub fn candidate_listed(text: &str) -> serde_json::Result<CandidateRecord> {
    let listed: ListedCandidate = serde_json::from_str(text)?;
    Ok(listed.into())
}

/// A stored result (JSON) without the steps' data and the plan as run.
pub fn result_listed(text: &str) -> serde_json::Result<CandidateResult> {
    let listed: ListedResult = serde_json::from_str(text)?;
    Ok(listed.into())
}

/// [`CandidateRecord`]'s fields; `plan` is left to serde's skipping of unknown
/// fields. Building the record names every field, so a field added to the record
/// and not here does not compile.
#[derive(Deserialize)]
struct ListedCandidate {
    candidate_id: String,
    job_id: String,
    iteration: u32,
    #[serde(default)]
    parent_id: String,
    origin: Origin,
    design_point: DesignPoint,
    required_skills: Vec<String>,
    #[serde(default)]
    evaluation: Option<Evaluation>,
}

impl From<ListedCandidate> for CandidateRecord {
    fn from(listed: ListedCandidate) -> CandidateRecord {
        CandidateRecord {
            candidate_id: listed.candidate_id,
            job_id: listed.job_id,
            iteration: listed.iteration,
            parent_id: listed.parent_id,
            origin: listed.origin,
            design_point: listed.design_point,
            plan: Plan::default(),
            required_skills: listed.required_skills,
            evaluation: listed.evaluation,
        }
    }
}

/// [`StepOutcome`]'s fields but `data`.
#[derive(Deserialize)]
struct ListedStep {
    step_id: String,
    skill: String,
    ok: bool,
    #[serde(default)]
    error_code: String,
    #[serde(default)]
    error_message: String,
    duration_ms: u64,
}

/// [`CandidateResult`]'s fields; `plan` (and each step's `data`) is skipped as
/// unknown.
#[derive(Deserialize)]
struct ListedResult {
    candidate_id: String,
    status: CandidateStatus,
    ok: bool,
    #[serde(default)]
    worker_id: String,
    attempts: u32,
    #[serde(default)]
    error_code: String,
    #[serde(default)]
    error_message: String,
    #[serde(default)]
    steps: Vec<ListedStep>,
    #[serde(default)]
    artifacts: Vec<ArtifactMeta>,
    duration_ms: u64,
    #[serde(default)]
    slot_ms: u64,
    finished_ms: u64,
    #[serde(default)]
    adjustments: Vec<String>,
}

impl From<ListedResult> for CandidateResult {
    fn from(listed: ListedResult) -> CandidateResult {
        CandidateResult {
            candidate_id: listed.candidate_id,
            status: listed.status,
            ok: listed.ok,
            worker_id: listed.worker_id,
            attempts: listed.attempts,
            error_code: listed.error_code,
            error_message: listed.error_message,
            steps: listed
                .steps
                .into_iter()
                .map(|step| StepOutcome {
                    step_id: step.step_id,
                    skill: step.skill,
                    ok: step.ok,
                    error_code: step.error_code,
                    error_message: step.error_message,
                    data: Value::Null,
                    duration_ms: step.duration_ms,
                })
                .collect(),
            artifacts: listed.artifacts,
            duration_ms: listed.duration_ms,
            slot_ms: listed.slot_ms,
            finished_ms: listed.finished_ms,
            plan: None,
            adjustments: listed.adjustments,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::PlanStep;

    fn plan() -> Plan {
        Plan {
            summary: "two steps".into(),
            steps: vec![PlanStep {
                step_id: "s01".into(),
                skill: "tech.load".into(),
                arguments: json!({"rules": {"layers": [1, 2, 3]}}),
                optional: false,
                output_cell: String::new(),
            }],
        }
    }

    #[test]
    fn a_listed_candidate_is_the_record_without_its_plan() {
        let record = CandidateRecord {
            candidate_id: "j-i0-c1".into(),
            job_id: "j".into(),
            iteration: 2,
            parent_id: "j-i0-c0".into(),
            origin: Origin::Draft,
            design_point: DesignPoint {
                arrangement: "ABBA".into(),
                finger_split: 2,
                dummies: 1,
                guard_ring: true,
                row_order: 1,
                spacing_nm: 200,
                aspect_ratio_pct: 50,
                order: vec!["M2".into(), "M1".into()],
                rows: [("nmos".to_string(), 2)].into(),
                module_arrangements: [("dp".to_string(), "ABAB".to_string())].into(),
                module_dummies: [("dp".to_string(), 2)].into(),
                module_rings: Default::default(),
                hierarchy: String::new(),
                blocks: Default::default(),
                pack_rank: 0,
            },
            plan: plan(),
            required_skills: vec!["tech.load".into()],
            evaluation: None,
        };
        let listed = candidate_listed(&serde_json::to_string(&record).unwrap()).unwrap();
        assert_eq!(
            listed,
            CandidateRecord {
                plan: Plan::default(),
                ..record
            }
        );
    }

    #[test]
    fn a_listed_result_keeps_the_outcomes_and_durations_without_data_or_plan() {
        let result = CandidateResult {
            candidate_id: "j-i0-c1".into(),
            status: CandidateStatus::Finished,
            ok: true,
            worker_id: "w1".into(),
            attempts: 2,
            error_code: String::new(),
            error_message: String::new(),
            steps: vec![StepOutcome {
                step_id: "s01".into(),
                skill: "route.nets".into(),
                ok: true,
                error_code: String::new(),
                error_message: String::new(),
                data: json!({"wires": [[0, 0, 10, 0]], "nets": {"a": 1}}),
                duration_ms: 17,
            }],
            artifacts: vec![],
            duration_ms: 40,
            slot_ms: 45,
            finished_ms: 1_000,
            plan: Some(plan()),
            adjustments: vec!["arrangement → ABAB".into()],
        };
        let listed = result_listed(&serde_json::to_string(&result).unwrap()).unwrap();
        let mut expected = result;
        expected.plan = None;
        expected.steps[0].data = Value::Null;
        assert_eq!(listed, expected);
    }
}
