//! `report.json` as built from the coordinator's view of a finished job (no file
//! access): the best candidate's checks, files and performance, every candidate's
//! figures, and which artifact is which.

use std::collections::BTreeMap;

use anyhow::bail;
use centroid_planner::performance::steps::EXTRACTED_FILE;
use centroid_planner::performance::{AcSweep, PerformanceVerdict};
use centroid_proto::media_type;
use centroid_proto::v1::{ArtifactRef, CandidateSummary, GetJobResponse};
use centroid_schemas::TESTBENCH_FILE;
use serde_json::Value;

use crate::failure_causes::failures_by_cause;
use crate::layer_properties::layer_properties;
use crate::report::{
    BestCandidate, CandidateError, CandidateMetrics, CandidateRecord, ChecksRan, DrcSummary,
    JobStatus, LvsSummary, Report, SignoffSummary, smallest_passing,
};
use crate::report_blocks::annotate_blocks;
use crate::report_performance::BodeCurves;

/// The artifact names of the DRC report (`drc_<cell>.lyrdb`) and the foundry
/// deck's report (`signoff.lyrdb`), as the planner names them.
pub(crate) fn is_drc_report(name: &str) -> bool {
    name.starts_with("drc_") && name.ends_with(".lyrdb")
}

pub(crate) fn is_signoff_report(name: &str) -> bool {
    name == "signoff.lyrdb"
}

/// A candidate's extracted netlist and the built-in testbench it was simulated with.
pub(crate) fn is_extracted_netlist(name: &str) -> bool {
    name == EXTRACTED_FILE
}

pub(crate) fn is_testbench(name: &str) -> bool {
    name == TESTBENCH_FILE
}

pub(crate) fn named<'a>(
    artifacts: &'a [ArtifactRef],
    candidate_id: &str,
    matches: fn(&str) -> bool,
) -> Option<&'a ArtifactRef> {
    artifacts
        .iter()
        .find(|artifact| artifact.candidate_id == candidate_id && matches(&artifact.name))
}

pub(crate) fn artifact<'a>(
    artifacts: &'a [ArtifactRef],
    candidate_id: &str,
    media_type: &str,
) -> Option<&'a ArtifactRef> {
    artifacts
        .iter()
        .find(|artifact| artifact.candidate_id == candidate_id && artifact.media_type == media_type)
}

/// `"CODE: message"` → (code, message).
fn split_error(text: &str) -> CandidateError {
    match text.split_once(": ") {
        Some((code, message))
            if !code.is_empty()
                && code
                    .chars()
                    .all(|character| character.is_ascii_uppercase() || character == '_') =>
        {
            CandidateError {
                code: code.to_owned(),
                message: message.to_owned(),
            }
        }
        _ => CandidateError {
            code: "ERROR".to_owned(),
            message: text.to_owned(),
        },
    }
}

fn metrics_of(candidate: &CandidateSummary) -> Option<CandidateMetrics> {
    if candidate.evaluation_json.is_empty() {
        return None;
    }
    let mut evaluation: Value =
        serde_json::from_str(&candidate.evaluation_json).unwrap_or(Value::Null);
    // the AC sweep goes to the best's Bode plot only (`post_layout_sweep`)
    if let Some(performance) = evaluation
        .get_mut("performance")
        .and_then(Value::as_object_mut)
    {
        performance.remove("sweep");
    }
    let mut other = serde_json::Map::new();
    for key in [
        "area_score",
        "reasons",
        "drc_by_rule",
        "lvs_mismatches",
        "signoff",
        "layout",
        "performance",
        "parasitics",
        "electrical",
    ] {
        if let Some(value) = evaluation.get(key) {
            other.insert(key.to_owned(), value.clone());
        }
    }
    Some(CandidateMetrics {
        drc_violations: u64::try_from(candidate.drc_violations).ok(),
        lvs_match: match candidate.lvs.as_str() {
            "match" => Some(true),
            "mismatch" => Some(false),
            _ => None,
        },
        area_um2: Some(candidate.area_um2),
        matching_score: Some(candidate.matching_score),
        // The evaluator's area score is the utilisation: device area / bounding box.
        utilization: evaluation.get("area_score").and_then(Value::as_f64),
        other,
    })
}

/// The post-layout AC response in a candidate's evaluation.
fn post_layout_sweep(candidate: &CandidateSummary) -> Option<AcSweep> {
    let evaluation: Value = serde_json::from_str(&candidate.evaluation_json).ok()?;
    serde_json::from_value(evaluation.get("performance")?.get("sweep")?.clone()).ok()
}

/// A value the evaluator kept in `other`, or its default.
fn listed<T: serde::de::DeserializeOwned + Default>(metrics: &CandidateMetrics, key: &str) -> T {
    metrics
        .other
        .get(key)
        .and_then(|value| serde_json::from_value(value.clone()).ok())
        .unwrap_or_default()
}

/// Whether the job named a foundry deck.
fn job_signoff_deck(view: &GetJobResponse) -> bool {
    view.job
        .as_ref()
        .is_some_and(|job| !job.signoff_deck.is_empty())
}

/// The process name from the best plan's `tech.load` step.
fn tech_of(best_plan_json: &str) -> Option<String> {
    rules_of(best_plan_json)?
        .get("tech")?
        .as_str()
        .map(str::to_owned)
}

/// The rule set the best plan loaded (its `tech.load` step).
pub(crate) fn rules_of(best_plan_json: &str) -> Option<Value> {
    let plan: Value = serde_json::from_str(best_plan_json).ok()?;
    plan.get("steps")?
        .as_array()?
        .iter()
        .find(|step| step.get("skill").and_then(Value::as_str) == Some("tech.load"))?
        .pointer("/arguments/rules")
        .cloned()
}

/// Builds the report of a finished job (no file access).
pub fn build_report(
    view: &GetJobResponse,
    timings: BTreeMap<String, f64>,
) -> anyhow::Result<Report> {
    let Some(job) = &view.job else {
        bail!("the coordinator sent no job summary")
    };
    let status = match job.outcome.as_str() {
        "completed" => JobStatus::Completed,
        "failed" => JobStatus::Failed,
        "cancelled" => JobStatus::Cancelled,
        "" => bail!(
            "job {} has not finished (state {}); watch it with `centroid watch {}`",
            job.job_id,
            job.state,
            job.job_id
        ),
        other => bail!("job {} ended with an unknown outcome {other:?}", job.job_id),
    };
    let candidates: Vec<CandidateRecord> = view
        .candidates
        .iter()
        .map(|candidate| CandidateRecord {
            id: candidate.candidate_id.clone(),
            parent: (!candidate.parent_id.is_empty()).then(|| candidate.parent_id.clone()),
            origin: candidate.origin.clone(),
            iteration: candidate.iteration,
            score: (!candidate.evaluation_json.is_empty()).then_some(candidate.score),
            passed: candidate.passed,
            metrics: metrics_of(candidate),
            error: (!candidate.error.is_empty()).then(|| split_error(&candidate.error)),
            seconds: (candidate.duration_ms > 0).then(|| candidate.duration_ms as f64 / 1000.0),
            slot_seconds: (candidate.slot_ms > 0).then(|| candidate.slot_ms as f64 / 1000.0),
            design: serde_json::from_str(&candidate.design_point_json).unwrap_or(Value::Null),
        })
        .collect();
    let mut best = view
        .candidates
        .iter()
        .find(|candidate| {
            candidate.candidate_id == job.best_candidate_id && !job.best_candidate_id.is_empty()
        })
        // a best that failed before drawing a layout (every candidate failed) is no best:
        // the report says why they failed instead
        .filter(|candidate| {
            candidate.passed
                || artifact(&view.artifacts, &candidate.candidate_id, media_type::GDS).is_some()
        })
        .map(|candidate| best_candidate(view, job, candidate));
    if let Some(best) = best.as_mut() {
        annotate_blocks(best.metrics.other.get_mut("layout"), &candidates);
    }
    Ok(Report {
        job_id: job.job_id.clone(),
        trace_id: job.trace_id.clone(),
        circuit: job.name.clone(),
        tech: tech_of(&view.best_plan_json).unwrap_or_default(),
        status,
        message: (!job.error.is_empty()).then(|| job.error.clone()),
        // iterations are numbered from 0: the count is the last one's number + 1
        iterations: candidates
            .iter()
            .map(|candidate| candidate.iteration + 1)
            .max()
            .unwrap_or(0),
        candidates_evaluated: view
            .candidates
            .iter()
            .filter(|candidate| !candidate.evaluation_json.is_empty())
            .count() as u32,
        best,
        timings,
        planner: None,
        memory: None,
        candidates_to_first_pass: candidates_to_first_pass(&view.candidates),
        failures: failures_by_cause(&candidates),
        smallest_passing: smallest_passing(&candidates),
        candidates,
    })
}

/// The best candidate as report.json shows it: checks, files, performance.
fn best_candidate(
    view: &GetJobResponse,
    job: &centroid_proto::v1::JobSummary,
    candidate: &CandidateSummary,
) -> BestCandidate {
    let metrics = metrics_of(candidate).unwrap_or_default();
    let by_rule: BTreeMap<String, u64> = listed(&metrics, "drc_by_rule");
    let lvs_mismatches: Vec<String> = listed(&metrics, "lvs_mismatches");
    let signoff: Option<SignoffSummary> = listed(&metrics, "signoff");
    let checks = ChecksRan {
        drc: match metrics.drc_violations {
            Some(0) => "clean",
            Some(_) => "violations",
            None => "not run",
        }
        .to_owned(),
        lvs: match metrics.lvs_match {
            Some(true) => "match",
            Some(false) => "mismatch",
            None => "not run",
        }
        .to_owned(),
        signoff: match (&signoff, job_signoff_deck(view)) {
            (Some(verdict), _) if verdict.violations == 0 => "clean",
            (Some(_), _) => "violations",
            (None, true) => "not run",
            (None, false) => "not requested",
        }
        .to_owned(),
    };
    let has = |matches: fn(&str) -> bool| {
        named(&view.artifacts, &candidate.candidate_id, matches).is_some()
    };
    BestCandidate {
        candidate_id: candidate.candidate_id.clone(),
        score: candidate.score,
        // the job's verdict: a foundry deck that did not run leaves a
        // candidate that passed our own checks without a pass
        passed: candidate.passed && job.best_passed,
        gds: "best.gds".to_owned(),
        png: artifact(&view.artifacts, &candidate.candidate_id, media_type::PNG)
            .map(|_| "best.png".to_owned()),
        drc: metrics.drc_violations.map(|violations| DrcSummary {
            violations,
            by_rule: by_rule.clone(),
        }),
        lvs: metrics.lvs_match.map(|is_match| LvsSummary {
            is_match,
            mismatches: lvs_mismatches.clone(),
        }),
        signoff,
        checks,
        lyrdb: has(is_drc_report).then(|| "best.lyrdb".to_owned()),
        lyp: rules_of(&view.best_plan_json)
            .and_then(|rules| layer_properties(&rules))
            .map(|_| "best.lyp".to_owned()),
        signoff_lyrdb: has(is_signoff_report).then(|| "best_signoff.lyrdb".to_owned()),
        performance: listed::<Option<PerformanceVerdict>>(&metrics, "performance")
            .map(|verdict| verdict.measures),
        ac_sweep: post_layout_sweep(candidate).map(|sweep| BodeCurves {
            schematic: None,
            post_layout: Some(sweep),
        }),
        extracted: has(is_extracted_netlist).then(|| "best_extracted.spice".to_owned()),
        testbench: has(is_testbench).then(|| "best_testbench.sp".to_owned()),
        metrics,
    }
}

/// Evaluated candidates in drafting order (iteration, then index; signoff reruns
/// left out) up to and including the first that passed.
fn candidates_to_first_pass(candidates: &[CandidateSummary]) -> Option<u32> {
    let index = |id: &str| -> u32 {
        id.rsplit_once("-c")
            .and_then(|(_, index)| index.parse().ok())
            .unwrap_or(u32::MAX)
    };
    let mut evaluated: Vec<&CandidateSummary> = candidates
        .iter()
        .filter(|candidate| candidate.origin != "signoff" && !candidate.evaluation_json.is_empty())
        .collect();
    evaluated.sort_by_key(|candidate| (candidate.iteration, index(&candidate.candidate_id)));
    evaluated
        .iter()
        .position(|candidate| candidate.passed)
        .map(|position| position as u32 + 1)
}
