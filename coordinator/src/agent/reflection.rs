//! Reflection after an iteration (seed 000 §4.5.1–4.5.2, seed 004): the critic
//! explains the iteration's evaluation; when the same failure repeats across
//! iterations, the meta-prompt agent rewrites the planner's guidance.

use std::collections::BTreeMap;

use centroid_planner::advice::JournalEntry;
use centroid_planner::evaluator::failure_family;

/// The latest iteration whose candidates are all evaluated and that came before
/// `iteration`; `None` when there is none yet.
pub fn reviewable_iteration(journal: &[JournalEntry], iteration: u32) -> Option<u32> {
    let mut complete: BTreeMap<u32, bool> = BTreeMap::new();
    for entry in journal.iter().filter(|entry| entry.iteration < iteration) {
        let all = complete.entry(entry.iteration).or_insert(true);
        *all &= entry.passed.is_some();
    }
    complete
        .into_iter()
        .rev()
        .find(|(_, all_evaluated)| *all_evaluated)
        .map(|(iteration, _)| iteration)
}

/// The failure that dominates an iteration (the cause of at least half of its
/// candidates' failures and of at least half of its candidates), e.g. `drc`,
/// `lvs`, `matching`, `area`, `did_not_run`; empty when none dominates.
pub fn failure_signature(journal: &[JournalEntry], iteration: u32) -> String {
    let entries: Vec<&JournalEntry> = journal
        .iter()
        .filter(|entry| entry.iteration == iteration)
        .collect();
    let mut causes: BTreeMap<&'static str, usize> = BTreeMap::new();
    for entry in entries.iter().filter(|entry| entry.passed == Some(false)) {
        let cause = entry
            .reasons
            .iter()
            .find(|reason| !reason.starts_with("performance_max"))
            .map_or("unknown", |reason| failure_family(reason));
        *causes.entry(cause).or_default() += 1;
    }
    let failed: usize = causes.values().sum();
    causes
        .into_iter()
        .max_by_key(|(_, count)| *count)
        .filter(|(_, count)| 2 * count >= failed && 2 * failed >= entries.len() && failed > 0)
        .map(|(cause, _)| cause.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use centroid_planner::candidate::Origin;
    use centroid_planner::design_point::DesignPoint;

    fn entry(iteration: u32, passed: Option<bool>, reason: &str) -> JournalEntry {
        JournalEntry {
            candidate_id: format!("c{iteration}"),
            iteration,
            origin: Origin::Draft,
            point: DesignPoint {
                arrangement: "ABBA".into(),
                finger_split: 1,
                dummies: 1,
                guard_ring: false,
                row_order: 0,
                spacing_nm: 0,
                aspect_ratio_pct: 100,
                order: Vec::new(),
                rows: Default::default(),
                module_arrangements: Default::default(),
                module_dummies: Default::default(),
                module_rings: Default::default(),
                hierarchy: String::new(),
                blocks: Default::default(),
                pack_rank: 0,
            },
            passed,
            score: 0.0,
            area_um2: 0.0,
            drc_violations: 0,
            lvs: String::new(),
            reasons: if reason.is_empty() {
                vec![]
            } else {
                vec![reason.into()]
            },
            matching_score: 0.0,
            centroid_error_um: None,
        }
    }

    #[test]
    fn the_reviewed_iteration_is_the_last_complete_one_before() {
        let journal = vec![
            entry(0, Some(true), ""),
            entry(1, Some(false), "DRC violations: 3"),
            entry(1, None, ""),
        ];
        assert_eq!(reviewable_iteration(&journal, 2), Some(0));
        assert_eq!(reviewable_iteration(&journal, 1), Some(0));
        assert_eq!(reviewable_iteration(&journal, 0), None);
    }

    #[test]
    fn a_dominant_failure_has_a_signature() {
        let journal = vec![
            entry(0, Some(false), "DRC violations: 3"),
            entry(0, Some(false), "DRC violations: 1"),
            entry(0, Some(true), ""),
            entry(1, Some(true), ""),
            entry(1, Some(true), ""),
            entry(1, Some(false), "LVS mismatch"),
        ];
        assert_eq!(failure_signature(&journal, 0), "drc");
        assert_eq!(failure_signature(&journal, 1), "", "one failure in three");
    }
}
