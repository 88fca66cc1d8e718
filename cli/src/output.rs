//! The output folder of a job: `best.gds`, `best.png`, `report.json`, `report.html`,
//! `planner_transcript.jsonl` (every model call in full, when there was one),
//! for a job measuring performance `best_extracted.spice` (and `best_testbench.sp`, a
//! built-in testbench), and `candidates/` (the top few), built from the coordinator's view of the job.
//! Every file is written to a temporary name and renamed, so a folder never holds a
//! half-written file that looks valid.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use centroid_proto::media_type;

use crate::jobs_client::Jobs;
use crate::layer_properties::layer_properties;
use crate::memory_report::MemoryReport;
use crate::planner_report::PlannerReport;
use crate::report::{CandidateRecord, Report};
use crate::report_building::{
    artifact, build_report, is_drc_report, is_extracted_netlist, is_signoff_report, is_testbench,
    named, rules_of,
};
use crate::report_html::render_html;
use crate::report_performance::schematic_sweep;

/// How many candidates besides the best get their layouts in `candidates/`.
pub const TOP_CANDIDATES_KEPT: usize = 5;

fn write_atomically(path: &Path, content: &[u8]) -> anyhow::Result<()> {
    let temporary = path.with_extension(format!(
        "{}.partial",
        path.extension()
            .and_then(|extension| extension.to_str())
            .unwrap_or("")
    ));
    std::fs::write(&temporary, content)
        .with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, path)
        .with_context(|| format!("renaming {} to {}", temporary.display(), path.display()))
}

/// Fetches the artifacts and writes the output folder; returns the report.
pub async fn write_output(
    jobs: &Jobs,
    job_id: &str,
    out: &Path,
    mut timings: BTreeMap<String, f64>,
) -> anyhow::Result<Report> {
    let view = jobs
        .get(job_id)
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    if let Some(job) = &view.job
        && job.updated_ms >= job.created_ms
    {
        timings
            .entry("job".to_owned())
            .or_insert((job.updated_ms - job.created_ms) as f64 / 1000.0);
    }
    let mut report = build_report(&view, timings)?;
    let mut events = Vec::new();
    jobs.watch(job_id, |event| events.push(event.clone()))
        .await
        .map_err(|error| anyhow::anyhow!("{error}"))?;
    report.planner = Some(PlannerReport::from_events(&events));
    report.memory = MemoryReport::from_events(&events);
    if let Some(best) = report
        .best
        .as_mut()
        .filter(|best| best.performance.is_some())
    {
        let mut curves = best.ac_sweep.take().unwrap_or_default();
        curves.schematic = schematic_sweep(&events);
        best.ac_sweep = (!curves.is_empty()).then_some(curves);
    }
    std::fs::create_dir_all(out.join("candidates"))
        .with_context(|| format!("creating {}", out.display()))?;

    let mut best_png = None;
    if let Some(best) = &report.best {
        let gds =
            artifact(&view.artifacts, &best.candidate_id, media_type::GDS).with_context(|| {
                format!(
                    "the coordinator kept no GDS of the best candidate {}",
                    best.candidate_id
                )
            })?;
        let bytes = jobs
            .fetch(job_id, &best.candidate_id, &gds.name)
            .await
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        write_atomically(&out.join("best.gds"), &bytes)?;
        if let Some(png) = artifact(&view.artifacts, &best.candidate_id, media_type::PNG) {
            let bytes = jobs
                .fetch(job_id, &best.candidate_id, &png.name)
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            write_atomically(&out.join("best.png"), &bytes)?;
            best_png = Some(bytes);
        }
        if let Some(document) =
            rules_of(&view.best_plan_json).and_then(|rules| layer_properties(&rules))
        {
            write_atomically(&out.join("best.lyp"), document.as_bytes())?;
        }
        let reports = [
            (is_drc_report as fn(&str) -> bool, &best.lyrdb),
            (is_signoff_report, &best.signoff_lyrdb),
            (is_extracted_netlist, &best.extracted),
            (is_testbench, &best.testbench),
        ];
        for (matches, file) in reports {
            if let (Some(report), Some(file)) =
                (named(&view.artifacts, &best.candidate_id, matches), file)
            {
                let bytes = jobs
                    .fetch(job_id, &best.candidate_id, &report.name)
                    .await
                    .map_err(|error| anyhow::anyhow!("{error}"))?;
                write_atomically(&out.join(file), &bytes)?;
            }
        }
    }
    let mut ranked: Vec<&CandidateRecord> = report
        .candidates
        .iter()
        .filter(|candidate| candidate.score.is_some())
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .partial_cmp(&a.score)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut kept = 0;
    for candidate in ranked {
        if kept == TOP_CANDIDATES_KEPT {
            break;
        }
        let Some(gds) = artifact(&view.artifacts, &candidate.id, media_type::GDS) else {
            continue;
        };
        let bytes = jobs
            .fetch(job_id, &candidate.id, &gds.name)
            .await
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        write_atomically(&candidate_path(out, &candidate.id, "gds"), &bytes)?;
        if let Some(png) = artifact(&view.artifacts, &candidate.id, media_type::PNG) {
            let bytes = jobs
                .fetch(job_id, &candidate.id, &png.name)
                .await
                .map_err(|error| anyhow::anyhow!("{error}"))?;
            write_atomically(&candidate_path(out, &candidate.id, "png"), &bytes)?;
        }
        kept += 1;
    }
    if let Some(planner) = report.planner.as_ref().filter(|planner| planner.calls > 0) {
        write_atomically(
            &out.join("planner_transcript.jsonl"),
            planner.transcript_jsonl()?.as_bytes(),
        )?;
    }
    write_atomically(
        &out.join("report.html"),
        render_html(&report, best_png.as_deref()).as_bytes(),
    )?;
    write_atomically(
        &out.join("report.json"),
        &serde_json::to_vec_pretty(&report)?,
    )?;
    Ok(report)
}

fn candidate_path(out: &Path, candidate_id: &str, extension: &str) -> PathBuf {
    let safe: String = candidate_id
        .chars()
        .map(|character| {
            if character.is_ascii_alphanumeric() || character == '-' || character == '_' {
                character
            } else {
                '_'
            }
        })
        .collect();
    out.join("candidates").join(format!("{safe}.{extension}"))
}
