//! SIGNOFF: when the job names a foundry deck, the best candidates of the search
//! are run again with `signoff.run` after their export (a deterministic plan
//! gives the same layout), and the job's best becomes the best of those the deck
//! finds clean. A deck that fails to run fails its candidate: never "0 violations".

use serde_json::{Value, json};

use super::Driver;
use super::transitions::{Best, PhaseEvent};
use crate::artifacts;
use crate::context::Interrupted;
use crate::model::{
    CandidateRecord, CandidateResult, JobRecord, Origin, Plan, PlanStep, Round, now_ms,
};
use centroid_planner::plan_builder::CANDIDATE_DIR;

/// The skill that runs a foundry deck on a GDS.
const SIGNOFF_SKILL: &str = "signoff.run";

impl Driver {
    /// The best candidates of the search again, each with a `signoff.run` after
    /// its export (kept in `self.drafted` for the transition's `EnqueueDrafted`).
    pub(super) async fn choose_signoff(
        &mut self,
        job: &JobRecord,
    ) -> Result<PhaseEvent, Interrupted> {
        let context = self.context.clone();
        let job_id = job.job_id.clone();
        let store = &context.store;
        let candidates = context
            .with_store_retry("read candidates", || store.candidates(&job_id))
            .await?;
        let results = context
            .with_store_retry("read results", || store.results(&job_id))
            .await?;
        let kept = context.config.signoff_candidates.max(1) as usize;
        let chosen = choose_for_signoff(&candidates, kept);
        let signoff_candidates: Vec<CandidateRecord> = chosen
            .iter()
            .enumerate()
            .filter_map(|(index, candidate)| {
                let plan = results
                    .get(&candidate.candidate_id)
                    .and_then(|result: &CandidateResult| result.plan.clone())
                    .unwrap_or_else(|| candidate.plan.clone());
                let plan = with_signoff_step(&plan, &job.options.signoff_deck)?;
                Some(CandidateRecord {
                    candidate_id: format!("{job_id}-signoff-c{index}"),
                    job_id: job_id.clone(),
                    iteration: job.iteration,
                    parent_id: candidate.candidate_id.clone(),
                    origin: Origin::Signoff,
                    design_point: candidate.design_point.clone(),
                    required_skills: candidate
                        .required_skills
                        .iter()
                        .cloned()
                        .chain([SIGNOFF_SKILL.to_string()])
                        .collect(),
                    plan,
                    evaluation: None,
                })
            })
            .collect();
        let event = PhaseEvent::SignoffChosen {
            candidates: signoff_candidates
                .iter()
                .map(|candidate| candidate.candidate_id.clone())
                .collect(),
            parents: signoff_candidates
                .iter()
                .map(|candidate| candidate.parent_id.clone())
                .collect(),
            now_ms: now_ms(),
        };
        self.drafted = signoff_candidates;
        Ok(event)
    }

    /// Evaluates the signoff candidates; the best clean one is the job's best.
    pub(super) async fn judge_signoff(
        &self,
        job: &JobRecord,
        task: &centroid_schemas::TaskContext,
        round: &Round,
    ) -> Result<PhaseEvent, Interrupted> {
        let signoff_ids = &round.candidates;
        let (candidates, results) = self
            .evaluate_candidates(job, task, |candidate| {
                signoff_ids.contains(&candidate.candidate_id)
            })
            .await?;
        let judged: Vec<CandidateRecord> = candidates
            .into_iter()
            .filter(|candidate| signoff_ids.contains(&candidate.candidate_id))
            .collect();
        // only a candidate whose deck run finished carries the deck's verdict (and a layout)
        let ran: Vec<CandidateRecord> = judged
            .iter()
            .filter(|candidate| {
                results
                    .get(&candidate.candidate_id)
                    .is_some_and(|result| result.ok)
            })
            .cloned()
            .collect();
        if ran.is_empty() {
            let error = judged
                .iter()
                .filter_map(|candidate| results.get(&candidate.candidate_id))
                .map(|result| format!("{}: {}", result.error_code, result.error_message))
                .next()
                .unwrap_or_default();
            return Ok(PhaseEvent::SignoffJudged {
                ran: false,
                best: None,
                error,
            });
        }
        let best = ran
            .iter()
            .filter_map(|candidate| {
                candidate
                    .evaluation
                    .as_ref()
                    .map(|evaluation| (candidate, evaluation))
            })
            .max_by(|(left_candidate, left), (right_candidate, right)| {
                (left.passed, left.score)
                    .partial_cmp(&(right.passed, right.score))
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(
                        right_candidate
                            .candidate_id
                            .cmp(&left_candidate.candidate_id),
                    )
            })
            .map(|(candidate, evaluation)| Best {
                candidate_id: candidate.candidate_id.clone(),
                score: evaluation.score,
                passed: evaluation.passed,
            });
        artifacts::keep_best(&self.context, &job.job_id, &ran).await?;
        Ok(PhaseEvent::SignoffJudged {
            ran: true,
            best,
            error: String::new(),
        })
    }
}

/// The candidates worth a deck run: those that passed our own checks, best first;
/// when none passed, the best that produced a layout.
fn choose_for_signoff(candidates: &[CandidateRecord], count: usize) -> Vec<&CandidateRecord> {
    let mut ranked: Vec<&CandidateRecord> = candidates
        .iter()
        .filter(|candidate| candidate.origin != Origin::Signoff)
        .filter(|candidate| {
            candidate
                .evaluation
                .as_ref()
                .is_some_and(|evaluation| evaluation.score > 0.0)
        })
        .collect();
    ranked.sort_by(|left, right| {
        let key = |candidate: &CandidateRecord| {
            let evaluation = candidate.evaluation.as_ref().expect("filtered");
            (evaluation.passed, evaluation.score)
        };
        key(right)
            .partial_cmp(&key(left))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(left.candidate_id.cmp(&right.candidate_id))
    });
    ranked.truncate(count);
    ranked
}

/// `plan` with a `signoff.run` of its exported GDS appended; `None` when the plan
/// exports no layout.
fn with_signoff_step(plan: &Plan, deck: &str) -> Option<Plan> {
    let export = plan
        .steps
        .iter()
        .find(|step| step.skill == "layout.export")?;
    let gds_path = export.arguments.get("path").and_then(Value::as_str)?;
    let top_cell = export
        .arguments
        .get("cell")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut signed = plan.clone();
    signed.steps.push(PlanStep {
        step_id: format!("s{:02}_signoff_run", plan.steps.len() + 1),
        skill: SIGNOFF_SKILL.into(),
        arguments: json!({
            "deck": deck,
            "gds_path": gds_path,
            "top_cell": top_cell,
            "report_path": format!("{CANDIDATE_DIR}/signoff.lyrdb"),
        }),
        optional: false,
        output_cell: String::new(),
    });
    signed.summary = format!("{}; foundry deck {deck}", plan.summary);
    Some(signed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deck_runs_on_the_exported_gds_after_the_plan() {
        let step = |skill: &str, arguments: Value| PlanStep {
            step_id: skill.replace('.', "_"),
            skill: skill.into(),
            arguments,
            optional: false,
            output_cell: String::new(),
        };
        let plan = Plan {
            summary: "p".into(),
            steps: vec![
                step("drc.run", json!({"cell": "TOP"})),
                step(
                    "layout.export",
                    json!({"cell": "TOP", "path": "${CANDIDATE_DIR}/layout.gds"}),
                ),
            ],
        };
        let signed = with_signoff_step(&plan, "deck.drc").expect("an exported layout");
        let last = signed.steps.last().unwrap();
        assert_eq!(last.skill, "signoff.run");
        assert_eq!(last.arguments["gds_path"], "${CANDIDATE_DIR}/layout.gds");
        assert_eq!(last.arguments["top_cell"], "TOP");
        assert_eq!(last.arguments["deck"], "deck.drc");
        let unexported = Plan {
            summary: "p".into(),
            steps: vec![step("drc.run", json!({}))],
        };
        assert!(with_signoff_step(&unexported, "deck.drc").is_none());
    }
}
