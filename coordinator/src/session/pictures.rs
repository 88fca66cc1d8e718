//! PICTURES: a candidate's plan draws no picture — rendering was a fifth of a
//! candidate's time, spent on layouts whose artifacts are dropped a moment later
//! (only the `artifacts_keep` best keep theirs). When a job ends, every candidate
//! that kept an exported layout but has no picture gets one: its GDS goes to a
//! worker with the request (`inputs`), which reads it into a fresh session
//! (`layout.read`) and renders it (`layout.render`); the PNG joins that
//! candidate's artifacts. A picture that cannot be drawn is logged and left out;
//! it never fails the job.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use centroid_planner::job_events::{EventData, PictureCount, Pictures};
use centroid_proto::media_type;
use centroid_proto::v1::Artifact;
use serde_json::json;

use crate::artifacts;
use crate::context::{Context, Interrupted};
use crate::model::{ArtifactMeta, EventKind, JobRecord, Plan, PlanStep};
use crate::worker_calls;
use centroid_planner::plan_builder::CANDIDATE_DIR;

/// The skills a picture needs.
const PICTURE_SKILLS: [&str; 2] = ["layout.read", "layout.render"];
/// How long one picture may take (a worker may have to start its KLayout process).
const PICTURE_DEADLINE: Duration = Duration::from_secs(60);

/// Draws the picture of every candidate of `job` that kept a GDS and has no PNG.
/// Only a shutdown interrupts it: a store that cannot list the artifacts for
/// good leaves the layouts without pictures (logged).
pub(super) async fn draw_missing(
    context: &Arc<Context>,
    job: &JobRecord,
) -> Result<(), Interrupted> {
    let job_id = job.job_id.as_str();
    let stored = match context
        .with_store_retry("read artifacts", || context.store.artifacts(job_id))
        .await
    {
        Ok(stored) => stored,
        Err(Interrupted::Store(error)) => {
            tracing::error!(session_id = job_id, %error, "cannot list the artifacts; no pictures");
            return Ok(());
        }
        Err(interrupted) => return Err(interrupted),
    };
    let wanted = without_pictures(stored);
    if wanted.is_empty() {
        return Ok(());
    }
    let skills = context.registry.skills();
    if let Some(missing) = PICTURE_SKILLS
        .iter()
        .find(|skill| !skills.contains_key(**skill))
    {
        tracing::info!(
            session_id = job_id,
            skill = missing,
            "no live worker draws pictures; the kept layouts have none"
        );
        return Ok(());
    }
    let wanted_count = wanted.len();
    let message = format!("drawing the pictures of {wanted_count} kept candidates");
    let data = EventData::Pictures(Pictures {
        pictures: PictureCount {
            wanted: wanted_count,
            drawn: None,
            seconds: None,
        },
    });
    context
        .emit(job, EventKind::StateChanged, "", message, data)
        .await?;
    let started = Instant::now();
    // one picture per free slot at once (each takes a slot like a probe)
    let mut drawing = tokio::task::JoinSet::new();
    for gds in wanted {
        let (context, job) = (context.clone(), job.clone());
        drawing.spawn(async move { draw_one(&context, &job, gds).await });
    }
    let drawn = drawing
        .join_all()
        .await
        .into_iter()
        .filter(|drawn| *drawn)
        .count();
    let seconds = started.elapsed().as_secs_f64();
    let message = format!("{drawn} of {wanted_count} pictures drawn");
    let data = EventData::Pictures(Pictures {
        pictures: PictureCount {
            wanted: wanted_count,
            drawn: Some(drawn),
            seconds: Some(seconds),
        },
    });
    context
        .emit(job, EventKind::StateChanged, "", message, data)
        .await
}

/// The GDS of each candidate that has one and no PNG, by candidate.
fn without_pictures(stored: Vec<ArtifactMeta>) -> Vec<ArtifactMeta> {
    let mut by_candidate: BTreeMap<String, (Option<ArtifactMeta>, bool)> = BTreeMap::new();
    for meta in stored {
        let entry = by_candidate.entry(meta.candidate_id.clone()).or_default();
        if meta.media_type == media_type::PNG {
            entry.1 = true;
        } else if meta.media_type == media_type::GDS && entry.0.is_none() {
            entry.0 = Some(meta);
        }
    }
    by_candidate
        .into_values()
        .filter(|(_, pictured)| !pictured)
        .filter_map(|(gds, _)| gds)
        .collect()
}

/// Draws and stores one candidate's picture; whether it did.
async fn draw_one(context: &Arc<Context>, job: &JobRecord, gds: ArtifactMeta) -> bool {
    let (job_id, candidate_id) = (job.job_id.as_str(), gds.candidate_id.as_str());
    let candidate = context
        .with_store_retry("read candidate", || {
            context.store.get_candidate(job_id, candidate_id)
        })
        .await;
    let cell = match candidate {
        Ok(Some(candidate)) => exported_cell(&candidate.plan, &gds.name),
        Ok(None) => None,
        Err(interrupted) => {
            tracing::warn!(session_id = job_id, candidate_id, %interrupted, "no picture");
            return false;
        }
    };
    let Some(cell) = cell else {
        tracing::warn!(session_id = job_id, candidate_id, gds = %gds.name, "no export step names the cell of this layout; no picture");
        return false;
    };
    let content = match context
        .with_store_retry("read artifact", || {
            context.store.get_artifact(job_id, candidate_id, &gds.name)
        })
        .await
    {
        Ok(Some(content)) => content,
        Ok(None) => return false,
        Err(interrupted) => {
            tracing::warn!(session_id = job_id, candidate_id, %interrupted, "no picture");
            return false;
        }
    };
    let plan = picture_plan(&gds.name, &cell);
    let input = Artifact {
        name: gds.name.clone(),
        media_type: gds.media_type.clone(),
        content,
    };
    let response = match worker_calls::probe(context, job, &plan, PICTURE_DEADLINE, vec![input])
        .await
    {
        Ok(response) => response,
        Err(error) => {
            tracing::warn!(session_id = job_id, candidate_id, %error, "the picture was not drawn");
            return false;
        }
    };
    let pictures: Vec<Artifact> = response
        .artifacts
        .into_iter()
        .filter(|artifact| artifact.media_type == media_type::PNG)
        .collect();
    if pictures.is_empty() {
        let failure = response
            .steps
            .iter()
            .find(|step| !step.ok)
            .and_then(|step| step.error.as_ref())
            .map(|error| error.message.clone())
            .unwrap_or_default();
        tracing::warn!(
            session_id = job_id,
            candidate_id,
            failure,
            "the picture was not drawn"
        );
        return false;
    }
    !artifacts::store_artifacts(context, job_id, candidate_id, &pictures)
        .await
        .is_empty()
}

/// The cell a plan's `layout.export` of `file` (a name in the candidate's scratch
/// directory) writes.
fn exported_cell(plan: &Plan, file: &str) -> Option<String> {
    let path = format!("{CANDIDATE_DIR}/{file}");
    plan.steps
        .iter()
        .filter(|step| step.skill == "layout.export")
        .find(|step| step.arguments["path"].as_str() == Some(path.as_str()))
        .and_then(|step| step.arguments["cell"].as_str())
        .map(str::to_string)
}

/// Reads `file` (sent with the request) and renders `cell` next to it as PNG.
fn picture_plan(file: &str, cell: &str) -> Plan {
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let step = |step_id: &str, skill: &str, arguments| PlanStep {
        step_id: step_id.into(),
        skill: skill.into(),
        arguments,
        optional: false,
        output_cell: String::new(),
    };
    Plan {
        summary: format!("the picture of {file}"),
        steps: vec![
            step(
                "s01_layout_read",
                "layout.read",
                json!({"path": format!("{CANDIDATE_DIR}/{file}")}),
            ),
            step(
                "s02_layout_render",
                "layout.render",
                json!({"cell": cell, "path": format!("{CANDIDATE_DIR}/{stem}.png")}),
            ),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(candidate: &str, name: &str, media_type: &str) -> ArtifactMeta {
        ArtifactMeta {
            candidate_id: candidate.into(),
            name: name.into(),
            media_type: media_type.into(),
            size: 1,
        }
    }

    #[test]
    fn only_kept_layouts_without_a_picture_are_drawn() {
        let stored = vec![
            meta("c1", "layout.gds", media_type::GDS),
            meta("c1", "layout.lyrdb", "application/xml"),
            meta("c2", "layout.gds", media_type::GDS),
            meta("c2", "layout.png", media_type::PNG),
            meta("c3", "drc.lyrdb", "application/xml"),
        ];
        let wanted: Vec<(String, String)> = without_pictures(stored)
            .into_iter()
            .map(|meta| (meta.candidate_id, meta.name))
            .collect();
        assert_eq!(wanted, [("c1".to_string(), "layout.gds".to_string())]);
    }

    #[test]
    fn the_picture_plan_reads_the_sent_layout_and_renders_the_exported_cell() {
        let export = PlanStep {
            step_id: "s09".into(),
            skill: "layout.export".into(),
            arguments: json!({"cell": "TOP", "path": format!("{CANDIDATE_DIR}/layout.gds")}),
            optional: false,
            output_cell: String::new(),
        };
        let plan = Plan {
            summary: String::new(),
            steps: vec![export],
        };
        assert_eq!(exported_cell(&plan, "layout.gds").as_deref(), Some("TOP"));
        assert_eq!(exported_cell(&plan, "other.gds"), None);
        let picture = picture_plan("layout.gds", "TOP");
        let skills: Vec<&str> = picture
            .steps
            .iter()
            .map(|step| step.skill.as_str())
            .collect();
        assert_eq!(skills, PICTURE_SKILLS);
        assert_eq!(
            picture.steps[1].arguments,
            json!({"cell": "TOP", "path": format!("{CANDIDATE_DIR}/layout.png")})
        );
    }
}
