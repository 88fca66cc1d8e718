//! Why candidates failed, grouped by cause: the report's `failures` and the lines a
//! job without a passing layout prints. A cause is the error's code and its message
//! with the particulars blanked — numbers (`ROW3`, `s05`) and bracketed lists (the
//! nets named) — so the same refusal on different rows or nets is one cause.

use std::collections::BTreeMap;

use crate::report::{CandidateRecord, FailureCause};

/// How many candidate ids a cause lists.
const LISTED: usize = 5;

/// The message with its particulars blanked: digit runs become `#`, a bracketed or
/// braced list `[…]`.
fn blanked(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut depth = 0usize;
    let mut previous_digit = false;
    for character in message.chars() {
        match character {
            '[' | '{' => {
                if depth == 0 {
                    out.push_str(if character == '[' { "[…]" } else { "{…}" });
                }
                depth += 1;
            }
            ']' | '}' if depth > 0 => depth -= 1,
            _ if depth > 0 => {}
            digit if digit.is_ascii_digit() => {
                if !previous_digit {
                    out.push('#');
                }
            }
            other => out.push(other),
        }
        previous_digit = depth == 0 && character.is_ascii_digit();
    }
    out
}

/// The failed candidates (those with an error) grouped by cause, the most frequent
/// first (then by cause).
pub fn failures_by_cause(candidates: &[CandidateRecord]) -> Vec<FailureCause> {
    let mut causes: BTreeMap<String, FailureCause> = BTreeMap::new();
    for candidate in candidates {
        let Some(error) = &candidate.error else {
            continue;
        };
        let cause = format!("{}: {}", error.code, blanked(&error.message));
        let entry = causes.entry(cause.clone()).or_insert_with(|| FailureCause {
            cause,
            count: 0,
            candidates: Vec::new(),
            example: error.message.clone(),
        });
        entry.count += 1;
        if entry.candidates.len() < LISTED {
            entry.candidates.push(candidate.id.clone());
        }
    }
    let mut grouped: Vec<FailureCause> = causes.into_values().collect();
    grouped.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.cause.cmp(&b.cause)));
    grouped
}

/// Whether every candidate of the job ran and failed (at least one ran).
pub fn every_candidate_failed(candidates: &[CandidateRecord]) -> bool {
    !candidates.is_empty() && candidates.iter().all(|candidate| candidate.error.is_some())
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::report::CandidateError;

    fn failed(id: &str, code: &str, message: &str) -> CandidateRecord {
        CandidateRecord {
            id: id.into(),
            parent: None,
            origin: "draft".into(),
            iteration: 1,
            score: None,
            passed: false,
            metrics: None,
            error: Some(CandidateError {
                code: code.into(),
                message: message.into(),
            }),
            seconds: None,
            slot_seconds: None,
            design: Value::Null,
        }
    }

    #[test]
    fn the_same_refusal_on_other_rows_and_nets_is_one_cause() {
        let candidates = vec![
            failed(
                "c0",
                "ERROR",
                "row ROW1 holds devices with different bulk nets ['buf', 'vdd1']",
            ),
            failed(
                "c1",
                "ERROR",
                "row ROW0 holds devices with different bulk nets ['vdd2', 'x']",
            ),
            failed(
                "c2",
                "TIMEOUT",
                "step s05_route_nets ran past its deadline of 30000 ms",
            ),
        ];
        let grouped = failures_by_cause(&candidates);
        assert_eq!(grouped.len(), 2, "{grouped:?}");
        assert_eq!(
            grouped[0].cause,
            "ERROR: row ROW# holds devices with different bulk nets […]"
        );
        assert_eq!(grouped[0].count, 2);
        assert_eq!(grouped[0].candidates, vec!["c0", "c1"]);
        assert!(grouped[0].example.contains("ROW1"));
        assert_eq!(
            grouped[1].cause,
            "TIMEOUT: step s#_route_nets ran past its deadline of # ms"
        );
        assert!(every_candidate_failed(&candidates));
        let mut one_ran = candidates.clone();
        one_ran[2].error = None;
        assert!(!every_candidate_failed(&one_ran));
        assert!(!every_candidate_failed(&[]));
    }
}
