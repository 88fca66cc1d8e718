//! Which candidates of an iteration to dispatch first. An iteration's slots idle
//! at its end while the last candidates run alone; sending the longer candidates
//! first (longest processing time first) leaves the short ones for the tail.
//!
//! A candidate's duration is not known before it runs, but what makes one
//! candidate of a job longer than another is known from its plan: every candidate
//! draws the same devices, and the structures a plan adds on top — dummy devices
//! and guard rings — are shapes that every later step (routing, DRC, LVS)
//! walks. Measured on five circuits (64 candidates each, BENCHMARKS.md), the
//! dummies alone correlate with a candidate's duration at 0.74–0.84; placement
//! order, aspect and spacing rearrange the same shapes. The estimate only ranks
//! candidates within a job; it never predicts seconds. A blocks plan (issue 26)
//! draws and routes each block once, its instances only referencing it: its
//! dummies and rings are counted once too, as the steps that draw them run once.

use crate::candidate::CandidateRecord;
use crate::plan::Plan;

/// The structures a plan draws beyond the circuit's devices, heaviest first: guard
/// rings (each surrounds a whole cell), then dummy devices (`count` at both ends of
/// a row). Compared as a tuple.
pub fn added_structures(plan: &Plan) -> (u64, u64) {
    let mut rings = 0;
    let mut dummies = 0;
    for step in &plan.steps {
        match step.skill.as_str() {
            "layout.add_guard_ring" => rings += 1,
            "layout.add_dummies" => {
                let count = step.arguments["count"].as_u64().unwrap_or(1);
                dummies += 2 * count;
            }
            _ => {}
        }
    }
    (rings, dummies)
}

/// Orders `candidates` for dispatch: the most added structures first; candidates
/// alike keep their drafted order (a stable sort), so the order is deterministic.
pub fn longest_first(candidates: &mut [CandidateRecord]) {
    candidates.sort_by_key(|candidate| std::cmp::Reverse(added_structures(&candidate.plan)));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::candidate::Origin;
    use crate::plan::PlanStep;

    fn step(skill: &str, arguments: serde_json::Value) -> PlanStep {
        PlanStep {
            step_id: skill.into(),
            skill: skill.into(),
            arguments,
            optional: false,
            output_cell: String::new(),
        }
    }

    fn candidate(id: &str, steps: Vec<PlanStep>) -> CandidateRecord {
        CandidateRecord {
            candidate_id: id.into(),
            job_id: "j".into(),
            iteration: 0,
            parent_id: String::new(),
            origin: Origin::Draft,
            // the design point plays no part: the plan is what is estimated
            design_point: serde_json::from_value(json!({
                "arrangement": "ABBA", "finger_split": 1, "dummies": 0, "guard_ring": false,
                "row_order": 0, "spacing_nm": 0, "aspect_ratio_pct": 100,
            }))
            .unwrap(),
            required_skills: Vec::new(),
            plan: Plan {
                summary: String::new(),
                steps,
            },
            evaluation: None,
        }
    }

    #[test]
    fn rings_then_dummies_go_first_and_alike_candidates_keep_their_order() {
        let device = step("layout.create_device", json!({"nf": 4}));
        let dummies = |count: u64| step("layout.add_dummies", json!({"cell": "m", "count": count}));
        let ring = step("layout.add_guard_ring", json!({"cell": "m"}));
        let mut candidates = vec![
            candidate("c0", vec![device.clone()]),
            candidate("c1", vec![device.clone(), dummies(1)]),
            candidate("c2", vec![device.clone()]),
            candidate("c3", vec![device.clone(), dummies(1), dummies(1)]),
            candidate("c4", vec![device.clone(), ring.clone()]),
            candidate("c5", vec![device.clone(), dummies(2)]),
        ];
        assert_eq!(added_structures(&candidates[3].plan), (0, 4));
        assert_eq!(added_structures(&candidates[4].plan), (1, 0));
        longest_first(&mut candidates);
        let order: Vec<&str> = candidates
            .iter()
            .map(|candidate| candidate.candidate_id.as_str())
            .collect();
        assert_eq!(order, ["c4", "c3", "c5", "c1", "c0", "c2"]);
    }
}
