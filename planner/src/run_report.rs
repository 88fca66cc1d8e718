//! What the evaluator reads of a candidate's run: whether it went to the end
//! ([`RunReport`], implemented by the coordinator's record of a run) and each
//! step's outcome as the worker reported it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One step's outcome as reported by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    pub step_id: String,
    pub skill: String,
    pub ok: bool,
    #[serde(default)]
    pub error_code: String,
    #[serde(default)]
    pub error_message: String,
    pub data: Value,
    pub duration_ms: u64,
}

/// A candidate's run as the evaluator judges it.
pub trait RunReport {
    /// `None` when the run went to the end; else the error's code (wire name) and
    /// message.
    fn failure(&self) -> Option<(&str, &str)>;
    /// The outcome of every step that ran, in order.
    fn steps(&self) -> &[StepOutcome];
}
