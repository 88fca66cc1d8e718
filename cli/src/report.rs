//! The job report: `report.json` (read by other tools) and the figures the HTML page shows.

use std::collections::BTreeMap;

use centroid_planner::performance::MeasureVerdict;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::memory_report::MemoryReport;
use crate::planner_report::PlannerReport;
use crate::report_performance::BodeCurves;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Completed,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }
}

/// What a candidate measured. Known fields are named; anything else a skill reports is kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateMetrics {
    pub drc_violations: Option<u64>,
    pub lvs_match: Option<bool>,
    pub area_um2: Option<f64>,
    pub matching_score: Option<f64>,
    pub utilization: Option<f64>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateError {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    pub id: String,
    pub parent: Option<String>,
    /// How the candidate came to be: draft, improve, repair, combine (each block's
    /// smallest variant under an elite floorplan), llm (a point the LLM planner
    /// chose), llm_plan (a plan it wrote) or signoff.
    #[serde(default)]
    pub origin: String,
    /// the iteration it was drafted for, numbered from 0 as in the prompts, the
    /// job's events and the gRPC API
    pub iteration: u32,
    pub score: Option<f64>,
    pub passed: bool,
    pub metrics: Option<CandidateMetrics>,
    pub error: Option<CandidateError>,
    /// seconds the candidate's skill steps ran on its worker slot
    #[serde(default)]
    pub seconds: Option<f64>,
    /// seconds its last run held the worker slot (reset, steps, artifacts)
    #[serde(default)]
    pub slot_seconds: Option<f64>,
    /// The point of the design space (arrangement, dummies, guard ring, …).
    #[serde(default)]
    pub design: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DrcSummary {
    pub violations: u64,
    /// Rule id → number of violations (only rules with violations).
    pub by_rule: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LvsSummary {
    #[serde(rename = "match")]
    pub is_match: bool,
    /// What does not match, one line each.
    pub mismatches: Vec<String>,
}

/// What a foundry deck found on the best candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignoffSummary {
    pub deck: String,
    pub violations: u64,
    /// Rule id → number of violations (only rules with violations).
    pub by_rule: BTreeMap<String, u64>,
}

/// Which checks ran on the best candidate and what they said: `"clean"`,
/// `"violations"`, `"match"`, `"mismatch"` or `"not run"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecksRan {
    pub drc: String,
    pub lvs: String,
    /// `"not requested"` when the job named no foundry deck
    pub signoff: String,
}

/// One cause of failed candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureCause {
    /// The error code and the message with its particulars blanked.
    pub cause: String,
    /// Candidates that failed with it.
    pub count: u32,
    /// The first few of them.
    pub candidates: Vec<String>,
    /// The full message of the first one.
    pub example: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BestCandidate {
    pub candidate_id: String,
    pub score: f64,
    pub passed: bool,
    /// Path of the GDS, relative to the report.
    pub gds: String,
    pub png: Option<String>,
    pub metrics: CandidateMetrics,
    pub drc: Option<DrcSummary>,
    pub lvs: Option<LvsSummary>,
    /// The foundry deck's verdict, when the job named a deck.
    #[serde(default)]
    pub signoff: Option<SignoffSummary>,
    pub checks: ChecksRan,
    /// The DRC markers (KLayout report database), relative to the report.
    #[serde(default)]
    pub lyrdb: Option<String>,
    /// The foundry deck's markers, relative to the report.
    #[serde(default)]
    pub signoff_lyrdb: Option<String>,
    /// KLayout layer properties (names and colours from the rule set).
    #[serde(default)]
    pub lyp: Option<String>,
    /// Post-layout measures against their specs and the schematic (a job measuring
    /// performance): `{measure: {spec, schematic, post_layout, degradation_pct}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance: Option<BTreeMap<String, MeasureVerdict>>,
    /// The AC response of the output, schematic and post-layout (the Bode plot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ac_sweep: Option<BodeCurves>,
    /// The layout's extracted netlist with its parasitics, relative to the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted: Option<String>,
    /// The built-in testbench it was simulated with, relative to the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbench: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub job_id: String,
    /// the job's W3C trace id: grep every process's logs for it
    #[serde(default)]
    pub trace_id: String,
    pub circuit: String,
    pub tech: String,
    pub status: JobStatus,
    /// Why a job failed or was cancelled.
    pub message: Option<String>,
    pub iterations: u32,
    pub candidates_evaluated: u32,
    pub best: Option<BestCandidate>,
    pub candidates: Vec<CandidateRecord>,
    /// Phase → seconds (e.g. `total`, `planning`, `executing`, `evaluating`).
    pub timings: BTreeMap<String, f64>,
    /// Which planner planned the job and how the model was used.
    #[serde(default)]
    pub planner: Option<PlannerReport>,
    /// What the long-term memory gave the job and what it kept (none without one).
    #[serde(default)]
    pub memory: Option<MemoryReport>,
    /// Candidates evaluated, in the order they were drafted, up to and including
    /// the first passing one (`None` when none passed).
    #[serde(default)]
    pub candidates_to_first_pass: Option<u32>,
    /// Why candidates failed, grouped by cause, the most frequent first.
    #[serde(default)]
    pub failures: Vec<FailureCause>,
    /// The passing candidate with the smallest layout: not always the best, whose
    /// score also weighs matching, performance and the objectives' other terms.
    #[serde(default)]
    pub smallest_passing: Option<SmallestPassing>,
}

/// A passing candidate and its layout's area.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmallestPassing {
    pub candidate_id: String,
    pub area_um2: f64,
}

/// The passing candidate with the smallest area (the first drafted among equals).
pub fn smallest_passing(candidates: &[CandidateRecord]) -> Option<SmallestPassing> {
    candidates
        .iter()
        .filter(|candidate| candidate.passed)
        .filter_map(|candidate| {
            let area = candidate.metrics.as_ref()?.area_um2?;
            Some(SmallestPassing {
                candidate_id: candidate.id.clone(),
                area_um2: area,
            })
        })
        .reduce(|smallest, next| {
            if next.area_um2 < smallest.area_um2 {
                next
            } else {
                smallest
            }
        })
}

impl Report {
    /// The best score reached by the end of each iteration (the first is 0), for the plot.
    pub fn best_score_per_iteration(&self) -> Vec<(u32, f64)> {
        let mut best_by_iteration: BTreeMap<u32, f64> = BTreeMap::new();
        for candidate in &self.candidates {
            if let Some(score) = candidate.score {
                let entry = best_by_iteration
                    .entry(candidate.iteration)
                    .or_insert(f64::NEG_INFINITY);
                *entry = entry.max(score);
            }
        }
        let mut running = f64::NEG_INFINITY;
        best_by_iteration
            .into_iter()
            .map(|(iteration, score)| {
                running = running.max(score);
                (iteration, running)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: &str, passed: bool, area: Option<f64>) -> CandidateRecord {
        CandidateRecord {
            id: id.into(),
            parent: None,
            origin: "draft".into(),
            iteration: 1,
            score: Some(0.5),
            passed,
            metrics: Some(CandidateMetrics {
                area_um2: area,
                ..CandidateMetrics::default()
            }),
            error: None,
            seconds: None,
            slot_seconds: None,
            design: Value::Null,
        }
    }

    #[test]
    fn the_smallest_passing_candidate_ignores_failed_and_unmeasured_ones() {
        let candidates = vec![
            candidate("c0", true, Some(300.0)),
            candidate("c1", false, Some(100.0)),
            candidate("c2", true, None),
            candidate("c3", true, Some(200.0)),
            candidate("c4", true, Some(200.0)),
        ];
        let smallest = smallest_passing(&candidates).expect("a passing candidate");
        assert_eq!(smallest.candidate_id, "c3");
        assert_eq!(smallest.area_um2, 200.0);
        assert_eq!(smallest_passing(&candidates[1..2]), None);
    }
}
