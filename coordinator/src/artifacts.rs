//! Artifacts (GDS, PNG, DRC reports) of the best candidates: the dispatcher keeps
//! those of every candidate that ran to the end (each file up to
//! `artifact_max_bytes`); after each evaluation only the `artifacts_keep` best
//! candidates of the job keep theirs. FetchArtifact streams them in chunks.

use std::collections::HashSet;

use centroid_proto::v1::Artifact;

use crate::context::Context;
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
            .store
            .put_artifact(job_id, &meta, &artifact.content)
            .await
        {
            Ok(()) => kept.push(meta),
            Err(error) => {
                tracing::warn!(session_id = job_id, candidate_id, %error, "cannot store artifact")
            }
        }
    }
    kept
}

/// Drops the artifacts of every candidate outside the job's best `artifacts_keep`.
pub(crate) async fn keep_best(context: &Context, job_id: &str, candidates: &[CandidateRecord]) {
    let mut ranked: Vec<&CandidateRecord> = candidates
        .iter()
        .filter(|candidate| candidate.evaluation.is_some())
        .collect();
    ranked.sort_by(|left, right| {
        let key = |candidate: &CandidateRecord| {
            let evaluation = candidate.evaluation.as_ref().expect("filtered");
            (evaluation.passed, evaluation.score)
        };
        let (left_passed, left_score) = key(left);
        let (right_passed, right_score) = key(right);
        right_passed
            .cmp(&left_passed)
            .then(right_score.total_cmp(&left_score))
            .then(left.candidate_id.cmp(&right.candidate_id))
    });
    let keep: HashSet<&str> = ranked
        .iter()
        .take(context.config.artifacts_keep as usize)
        .map(|candidate| candidate.candidate_id.as_str())
        .collect();
    let Ok(stored) = context.store.artifacts(job_id).await else {
        return;
    };
    let owners: HashSet<String> = stored.into_iter().map(|meta| meta.candidate_id).collect();
    for owner in owners {
        if !keep.contains(owner.as_str())
            && let Err(error) = context
                .store
                .delete_candidate_artifacts(job_id, &owner)
                .await
        {
            tracing::warn!(session_id = job_id, candidate_id = %owner, %error, "cannot drop artifacts");
        }
    }
}
