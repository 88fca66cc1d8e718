//! Artifacts (GDS, PNG, DRC reports) of the best candidates: the dispatcher keeps
//! those of every candidate that ran to the end (each file up to
//! `artifact_max_bytes`); after each evaluation only the `artifacts_keep` best
//! candidates of the job keep theirs. FetchArtifact streams them in chunks.

use std::collections::HashSet;

use centroid_proto::v1::Artifact;

use crate::context::{Context, Interrupted};
use crate::model::{ArtifactMeta, CandidateRecord};

pub const CHUNK_BYTES: usize = 256 * 1024;

/// Stores a finished candidate's artifacts (bounded per file).
pub(crate) async fn store_artifacts(
    context: &Context,
    job_id: &str,
    candidate_id: &str,
    artifacts: &[Artifact],
) -> Vec<ArtifactMeta> {
    let mut kept = Vec::new();
    for artifact in artifacts {
        if artifact.content.len() as u64 > context.config.artifact_max_bytes {
            tracing::warn!(session_id = job_id, candidate_id, name = %artifact.name, size = artifact.content.len(), "artifact too large; not kept");
            continue;
        }
        let meta = ArtifactMeta {
            candidate_id: candidate_id.to_string(),
            name: artifact.name.clone(),
            media_type: artifact.media_type.clone(),
            size: artifact.content.len() as u64,
        };
        match context
            .with_store_retry("store artifact", || {
                context.store.put_artifact(job_id, &meta, &artifact.content)
            })
            .await
        {
            Ok(()) => kept.push(meta),
            Err(Interrupted::Shutdown) => break,
            // an artifact the store refuses for good is left out, not the result
            Err(Interrupted::Store(error)) => {
                tracing::error!(session_id = job_id, candidate_id, name = %artifact.name, %error, "artifact not kept")
            }
        }
    }
    kept
}

/// Drops the artifacts of every evaluated candidate outside the job's best
/// `artifacts_keep`; a candidate not evaluated yet (one of an iteration drafted
/// ahead, finished while the iteration before is evaluated) keeps its artifacts
/// until its own evaluation ranks it.
pub(crate) async fn keep_best(
    context: &Context,
    job_id: &str,
    candidates: &[CandidateRecord],
) -> Result<(), Interrupted> {
    let stored = context
        .with_store_retry("read artifacts", || context.store.artifacts(job_id))
        .await?;
    let owners: HashSet<String> = stored.into_iter().map(|meta| meta.candidate_id).collect();
    let evaluated = candidates
        .iter()
        .filter_map(|candidate| {
            let evaluation = candidate.evaluation.as_ref()?;
            Some((
                candidate.candidate_id.as_str(),
                evaluation.passed,
                evaluation.score,
            ))
        })
        .collect();
    let keep = context.config.artifacts_keep as usize;
    for owner in outside_the_best(evaluated, keep, &owners) {
        context
            .with_store_retry("drop artifacts", || {
                context.store.delete_candidate_artifacts(job_id, owner)
            })
            .await?;
    }
    Ok(())
}

/// The `owners` among the `evaluated` (id, passed, score) outside the `keep` best
/// (passed first, then score, then id); an owner not evaluated is never among them.
fn outside_the_best<'a>(
    mut evaluated: Vec<(&str, bool, f64)>,
    keep: usize,
    owners: &'a HashSet<String>,
) -> Vec<&'a str> {
    evaluated.sort_by(|left, right| {
        right
            .1
            .cmp(&left.1)
            .then(right.2.total_cmp(&left.2))
            .then(left.0.cmp(right.0))
    });
    let dropped: HashSet<&str> = evaluated.iter().skip(keep).map(|entry| entry.0).collect();
    let mut drop: Vec<&str> = owners
        .iter()
        .map(String::as_str)
        .filter(|owner| dropped.contains(owner))
        .collect();
    drop.sort_unstable();
    drop
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_evaluated_candidates_outside_the_best_lose_their_artifacts() {
        // "e" finished but is not evaluated yet (an iteration drafted ahead)
        let evaluated = vec![
            ("a", false, 0.9),
            ("b", true, 0.5),
            ("c", true, 0.7),
            ("d", false, 0.1),
        ];
        let owners: HashSet<String> = ["a", "b", "c", "d", "e"].map(String::from).into();
        // passed first: c, b; then a, d
        let drop = |keep| outside_the_best(evaluated.clone(), keep, &owners);
        assert_eq!(drop(2), vec!["a", "d"]);
        assert_eq!(drop(3), vec!["d"]);
        assert!(drop(10).is_empty());
        assert_eq!(
            drop(0),
            vec!["a", "b", "c", "d"],
            "the unevaluated candidate keeps its artifacts"
        );
    }
}
