//! The evaluator's verdict on one candidate, and a foundry deck's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The evaluator's verdict on one candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub score: f64,
    pub passed: bool,
    /// -1 when no DRC ran
    pub drc_violations: i64,
    /// "match", "mismatch" or "" when LVS did not run
    pub lvs: String,
    pub area_um2: f64,
    pub area_score: f64,
    pub matching_score: f64,
    /// why it did not pass
    pub reasons: Vec<String>,
    /// DRC violations per rule id (rules with violations only)
    #[serde(default)]
    pub drc_by_rule: BTreeMap<String, i64>,
    /// what LVS found different, one line each (empty on a match)
    #[serde(default)]
    pub lvs_mismatches: Vec<String>,
    /// the foundry deck's verdict, when the candidate ran one
    #[serde(default)]
    pub signoff: Option<SignoffVerdict>,
    /// the figures a layout engineer compares (wire length, vias, centroid errors)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::figures::LayoutFigures>,
    /// the post-layout measures against their specs and the schematic
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance: Option<crate::performance::PerformanceVerdict>,
    /// the extracted capacitance of the sensitive nets and symmetric pairs
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parasitics: Option<crate::performance::ParasiticFigures>,
    /// what `check.electrical` found
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub electrical: Option<crate::electrical::ElectricalVerdict>,
    /// how `performance_max`'s value enters `score` (when it was measured by a
    /// post-layout simulation): the job re-scores its candidates with their relative
    /// performance ([`crate::performance::relative`])
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub performance_share: Option<PerformanceShare>,
}

/// `score = rest + share · v`, with `v` `performance_max`'s value in [0, 1]: `share` is
/// the objective's weight over the weights measured, times the layout refinement and
/// the DRC/LVS divisors; `rest` the other objectives' part of the score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerformanceShare {
    pub rest: f64,
    pub share: f64,
}

impl PerformanceShare {
    /// The score with `value` as `performance_max`'s value.
    pub fn score(&self, value: f64) -> f64 {
        self.rest + self.share * value
    }
}

/// What a foundry deck (`signoff.run`) found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignoffVerdict {
    pub deck: String,
    pub violations: i64,
    #[serde(default)]
    pub by_rule: BTreeMap<String, i64>,
}
