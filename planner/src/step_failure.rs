//! A failed step as the planner sees it: the error's code (its wire name, e.g.
//! `"INVALID_PARAM"`, `docs/contracts.md` §3), message and machine-readable
//! details. The coordinator builds it from the worker's structured error; the
//! planner never depends on the wire types.

use serde_json::Value;

/// The wire names of the codes a ReAct adjustment looks at.
pub mod codes {
    pub const INVALID_PARAM: &str = "INVALID_PARAM";
    pub const CONFLICT: &str = "CONFLICT";
}

#[derive(Debug, Clone, PartialEq)]
pub struct StepFailure {
    /// the error code's wire name
    pub code: String,
    pub message: String,
    /// the error's `details` object (`Null` when it has none)
    pub details: Value,
}

impl StepFailure {
    /// The reason a skill gave for the error (`details.reason`; empty when none).
    pub fn reason(&self) -> &str {
        self.details
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}
