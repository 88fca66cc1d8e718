//! The reflection calls of one advice, asked at the same time as its planning
//! call (none waits for another): the critic's review of the last completed
//! iteration and, when the same failure repeated, the meta-prompt agent's
//! rewrite of the guidance. Each starts from what the planner remembered when
//! the advice was asked; what they return is remembered for the next advice
//! (the next planning prompt carries the critique, the next system prompt the
//! guidance).

use centroid_planner::advice::{AdviceRequest, PlannerMemory, PromptVersion};

use crate::agent::answers::{self, Critique};
use crate::agent::conversation::{Asked, ask};
use crate::agent::prompts::{self, Budget};
use crate::llm::LlmClient;

/// Why and from what the meta-prompt agent rewrites the guidance.
pub(super) struct Stuck {
    /// the failure family the last two reviewed iterations share
    failure: String,
    /// the critic's last feedback when the advice was asked
    feedback: String,
    /// the guidance being rewritten
    current: PromptVersion,
}

/// The meta-prompt agent's task, when the last two reviewed iterations (the one
/// reviewed now included) failed the same way and the current guidance was not
/// written for that failure.
pub(super) fn stuck(memory: &PlannerMemory) -> Option<Stuck> {
    let last: Vec<&String> = memory
        .reviewed
        .iter()
        .rev()
        .take(2)
        .map(|(_, signature)| signature)
        .collect();
    let repeated = last.len() == 2 && !last[0].is_empty() && last[0] == last[1];
    let current = memory.guidance.last()?;
    (repeated && current.because != *last[0]).then(|| Stuck {
        failure: last[0].clone(),
        feedback: memory.feedback.clone().unwrap_or_default(),
        current: current.clone(),
    })
}

/// The critic's prompts (system, user) for `reviewed`, the last completed
/// iteration before the one `request` plans.
pub(super) fn critic_prompts(
    request: &AdviceRequest,
    reviewed: u32,
    budget: &Budget,
) -> (String, String) {
    prompts::critic(
        &request.task,
        reviewed,
        &request.journal,
        &request.space,
        budget,
    )
}

/// Asks `client` to review an iteration with `prompts` (from [`critic_prompts`]);
/// the call is recorded under the iteration being planned.
pub(super) async fn critique(
    client: &LlmClient,
    trace_id: &str,
    iteration: u32,
    (system, user): &(String, String),
) -> Asked<Critique> {
    ask(
        client,
        trace_id,
        "critic",
        iteration,
        system,
        user,
        |text| {
            let critique = answers::critique(text)?;
            let summary = critique.feedback.clone();
            Ok((critique, summary))
        },
    )
    .await
}

/// Asks `client` to rewrite the guidance `stuck` names: the new version, for
/// the next planning calls.
pub(super) async fn rewrite_guidance(
    client: &LlmClient,
    trace_id: &str,
    iteration: u32,
    stuck: &Stuck,
    budget: &Budget,
) -> Asked<PromptVersion> {
    let failure = &stuck.failure;
    let (system, user) = prompts::meta(&stuck.current.text, failure, &stuck.feedback, budget);
    let limit = budget.system / 2;
    ask(
        client,
        trace_id,
        "meta",
        iteration,
        &system,
        &user,
        |text| {
            let text = answers::guidance(text, limit)?;
            let guidance = PromptVersion {
                version: stuck.current.version + 1,
                text,
                because: failure.clone(),
            };
            Ok((
                guidance,
                format!("guidance rewritten after repeated {failure} failures"),
            ))
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(signatures: &[&str], because: &str) -> PlannerMemory {
        PlannerMemory {
            guidance: vec![PromptVersion {
                version: 0,
                text: "plan well".into(),
                because: because.into(),
            }],
            feedback: Some("spacing broke".into()),
            reviewed: signatures
                .iter()
                .enumerate()
                .map(|(iteration, signature)| (iteration as u32, signature.to_string()))
                .collect(),
            repeats: Vec::new(),
        }
    }

    #[test]
    fn the_guidance_is_rewritten_once_per_repeated_failure() {
        let stuck = stuck(&memory(&["drc", "drc"], "")).expect("two DRC failures");
        assert_eq!(stuck.failure, "drc");
        assert_eq!(stuck.feedback, "spacing broke");
        assert_eq!(stuck.current.version, 0);
        assert!(
            super::stuck(&memory(&["drc", "drc"], "drc")).is_none(),
            "written for that failure already"
        );
        assert!(super::stuck(&memory(&["lvs", "drc"], "")).is_none());
        assert!(super::stuck(&memory(&["", ""], "")).is_none(), "no failure");
        assert!(super::stuck(&memory(&["drc"], "")).is_none(), "one review");
    }
}
