//! What `check.electrical` found on a candidate: floating gates, dangling nets, nets
//! shorted to a supply, dummies not tied to their well's rail.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most issues listed per candidate.
const MAX_ISSUES: usize = 10;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ElectricalVerdict {
    pub clean: bool,
    /// issues per reason (reasons without issues left out)
    pub counts: BTreeMap<String, u64>,
    /// `reason: item`, the first few
    pub issues: Vec<String>,
}

impl ElectricalVerdict {
    /// Reads `check.electrical`'s data.
    pub fn from_data(data: &Value) -> Option<ElectricalVerdict> {
        let clean = data.get("clean")?.as_bool()?;
        let counts = data
            .get("counts")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(reason, count)| Some((reason.clone(), count.as_u64()?)))
            .filter(|(_, count)| *count > 0)
            .collect();
        let issues = data
            .get("issues")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(MAX_ISSUES)
            .map(|issue| {
                let field = |key: &str| issue.get(key).and_then(Value::as_str).unwrap_or("?");
                format!("{}: {}", field("reason"), field("item"))
            })
            .collect();
        Some(ElectricalVerdict {
            clean,
            counts,
            issues,
        })
    }
}
