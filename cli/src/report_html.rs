//! `report.html`: one self-contained page (inline CSS, the picture as a data URI, the
//! score plot as inline SVG) that opens anywhere without a server or network.

use std::fmt::Write as _;

use base64::Engine as _;

use crate::markup::escape;
use crate::report::{CandidateMetrics, Report};
use crate::report_performance::performance_section;
use crate::report_sections::{figures_section, memory_section, planner_section};

fn optional<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "–".to_owned(), |value| value.to_string())
}

fn fixed(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "–".to_owned(), |value| format!("{value:.decimals$}"))
}

fn lvs_text(metrics: Option<&CandidateMetrics>) -> &'static str {
    match metrics.and_then(|metrics| metrics.lvs_match) {
        Some(true) => "match",
        Some(false) => "mismatch",
        None => "–",
    }
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#1d2430;max-width:1100px}\
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d6dbe3;padding-bottom:.3rem}\
.sub{color:#5a6475}.badge{display:inline-block;padding:.1rem .5rem;border-radius:.4rem;font-weight:600}\
.ok{background:#dcf5e3;color:#11622b}.bad{background:#fbe1e1;color:#8a1616}.warn{background:#fff1cc;color:#6b4d00}\
table{border-collapse:collapse;font-size:.9rem}td,th{border:1px solid #d6dbe3;padding:.25rem .6rem;text-align:right}\
th{background:#f2f4f7}td.l,th.l{text-align:left}td.design{font-size:.78rem;color:#3b4556;max-width:260px}tr.best td{background:#eef6ff;font-weight:600}\
.grid{display:grid;grid-template-columns:minmax(0,1fr) 320px;gap:2rem;align-items:start}\
img.layout{max-width:100%;border:1px solid #d6dbe3;background:#000}dl{display:grid;grid-template-columns:auto auto;gap:.2rem 1rem}dt{color:#5a6475}";

/// Renders the page. `png` is the picture of the best layout, embedded as a data URI.
pub fn render_html(report: &Report, png: Option<&[u8]>) -> String {
    let mut page = String::new();
    let status_class = match report.status.as_str() {
        "completed" if report.best.as_ref().is_some_and(|best| best.passed) => "ok",
        "completed" => "warn",
        _ => "bad",
    };
    let _ = write!(
        page,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Centroid report — {circuit}</title><style>{STYLE}</style></head><body>\
<h1>{circuit} <span class=\"badge {status_class}\">{status}</span></h1>\
<div class=\"sub\">job {job} · {tech} · {iterations} iteration{s} · {evaluated} candidates evaluated</div>",
        circuit = escape(&report.circuit),
        status = report.status.as_str(),
        job = escape(&report.job_id),
        tech = escape(&report.tech),
        iterations = report.iterations,
        s = if report.iterations == 1 { "" } else { "s" },
        evaluated = report.candidates_evaluated,
    );
    if let Some(message) = &report.message {
        let _ = write!(page, "<p class=\"badge bad\">{}</p>", escape(message));
    }

    page.push_str("<h2>Best layout</h2>");
    match &report.best {
        None => {
            page.push_str("<p>No candidate produced a layout.</p>");
            if !report.failures.is_empty() {
                page.push_str("<h2>Failures by cause</h2><table><tr><th>candidates</th><th class=\"l\">cause</th><th class=\"l\">e.g.</th></tr>");
                for failure in &report.failures {
                    let _ = write!(
                        page,
                        "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
                        failure.count,
                        escape(&failure.cause),
                        escape(&failure.example)
                    );
                }
                page.push_str("</table>");
            }
        }
        Some(best) => {
            page.push_str("<div class=\"grid\"><div>");
            match png {
                Some(bytes) => {
                    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
                    let _ = write!(
                        page,
                        "<img class=\"layout\" alt=\"layout of {}\" src=\"data:image/png;base64,{encoded}\">",
                        escape(&best.candidate_id)
                    );
                }
                None => page.push_str("<p>No picture was rendered.</p>"),
            }
            let metrics = &best.metrics;
            let _ = write!(
                page,
                "</div><dl><dt>candidate</dt><dd>{id}</dd><dt>score</dt><dd>{score:.4}</dd><dt>passed</dt><dd><span class=\"badge {pass_class}\">{passed}</span></dd>\
<dt>DRC violations</dt><dd>{drc}</dd><dt>LVS</dt><dd>{lvs}</dd><dt>area</dt><dd>{area} µm²</dd><dt>matching score</dt><dd>{matching}</dd>\
<dt>utilisation</dt><dd>{utilization}</dd><dt>GDS</dt><dd><a href=\"{gds}\">{gds}</a></dd></dl></div>",
                id = escape(&best.candidate_id),
                score = best.score,
                pass_class = if best.passed { "ok" } else { "bad" },
                passed = if best.passed { "yes" } else { "no" },
                drc = optional(metrics.drc_violations),
                lvs = lvs_text(Some(metrics)),
                area = fixed(metrics.area_um2, 2),
                matching = fixed(metrics.matching_score, 3),
                utilization = fixed(metrics.utilization, 3),
                gds = escape(&best.gds),
            );
            page.push_str(&figures_section(metrics));
            page.push_str(&performance_section(
                best.performance.as_ref(),
                best.ac_sweep.as_ref(),
            ));
            page.push_str("<h2>DRC and LVS</h2>");
            match &best.drc {
                Some(drc) if drc.violations == 0 => {
                    page.push_str("<p><span class=\"badge ok\">DRC clean</span> 0 violations.</p>")
                }
                Some(drc) => {
                    let _ = write!(
                        page,
                        "<p><span class=\"badge bad\">{} DRC violations</span></p><table><tr><th class=\"l\">rule</th><th>violations</th></tr>",
                        drc.violations
                    );
                    for (rule, count) in &drc.by_rule {
                        let _ = write!(
                            page,
                            "<tr><td class=\"l\">{}</td><td>{count}</td></tr>",
                            escape(rule)
                        );
                    }
                    page.push_str("</table>");
                }
                None => page.push_str("<p>DRC did not run.</p>"),
            }
            match &best.lvs {
                Some(lvs) if lvs.is_match => page.push_str("<p><span class=\"badge ok\">LVS match</span> the extracted layout matches the netlist.</p>"),
                Some(lvs) => {
                    page.push_str("<p><span class=\"badge bad\">LVS mismatch</span></p><ul>");
                    for mismatch in &lvs.mismatches {
                        let _ = write!(page, "<li>{}</li>", escape(mismatch));
                    }
                    page.push_str("</ul>");
                }
                None => page.push_str("<p>LVS did not run.</p>"),
            }
            match &best.signoff {
                Some(signoff) if signoff.violations == 0 => {
                    let _ = write!(
                        page,
                        "<p><span class=\"badge ok\">foundry deck clean</span> {} found no violation.</p>",
                        escape(&signoff.deck)
                    );
                }
                Some(signoff) => {
                    let _ = write!(
                        page,
                        "<p><span class=\"badge bad\">foundry deck: {} violations</span> {}</p><table><tr><th class=\"l\">rule</th><th>violations</th></tr>",
                        signoff.violations,
                        escape(&signoff.deck)
                    );
                    for (rule, count) in &signoff.by_rule {
                        let _ = write!(
                            page,
                            "<tr><td class=\"l\">{}</td><td>{count}</td></tr>",
                            escape(rule)
                        );
                    }
                    page.push_str("</table>");
                }
                None if best.checks.signoff == "not run" => page
                    .push_str("<p><span class=\"badge bad\">foundry deck did not run</span></p>"),
                None => {}
            }
            let _ = write!(
                page,
                "<p>Checks on this layout: DRC {}, LVS {}, foundry deck {}.</p>",
                escape(&best.checks.drc),
                escape(&best.checks.lvs),
                escape(&best.checks.signoff)
            );
            let markers: Vec<&String> = [&best.lyrdb, &best.signoff_lyrdb]
                .into_iter()
                .flatten()
                .collect();
            if !markers.is_empty() {
                let links: Vec<String> = markers
                    .iter()
                    .map(|file| format!("<a href=\"{0}\">{0}</a>", escape(file)))
                    .collect();
                let layers = best
                    .lyp
                    .as_ref()
                    .map(|lyp| format!(" -l {}", escape(lyp)))
                    .unwrap_or_default();
                let _ = write!(
                    page,
                    "<p>Markers: {}. Open them over the layout in KLayout: <code>klayout {} -m {}{layers}</code></p>",
                    links.join(", "),
                    escape(&best.gds),
                    escape(markers[0])
                );
            }
        }
    }

    page.push_str("<h2>Best score per iteration</h2>");
    page.push_str(&score_plot(&report.best_score_per_iteration()));

    page.push_str("<h2>Candidates</h2><table><tr><th class=\"l\">candidate</th><th class=\"l\">parent</th><th>iteration</th><th>score</th><th>passed</th><th>DRC</th><th>LVS</th><th>area µm²</th><th>matching</th><th class=\"l\">design</th><th class=\"l\">error</th></tr>");
    let best_id = report.best.as_ref().map(|best| best.candidate_id.as_str());
    for candidate in &report.candidates {
        let metrics = candidate.metrics.as_ref();
        let design = match &candidate.design {
            serde_json::Value::Object(map) => map
                .iter()
                .map(|(key, value)| {
                    format!(
                        "{key}={}",
                        value
                            .as_str()
                            .map_or_else(|| value.to_string(), str::to_owned)
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        };
        let error = candidate.error.as_ref().map_or_else(String::new, |error| {
            format!("{}: {}", error.code, error.message)
        });
        let _ = write!(
            page,
            "<tr{class}><td class=\"l\" title=\"{id}\">{short_id}</td><td class=\"l\">{parent}</td><td>{iteration}</td><td>{score}</td><td>{passed}</td><td>{drc}</td><td>{lvs}</td><td>{area}</td><td>{matching}</td><td class=\"l design\">{design}</td><td class=\"l\">{error}</td></tr>",
            class = if Some(candidate.id.as_str()) == best_id {
                " class=\"best\""
            } else {
                ""
            },
            id = escape(&candidate.id),
            short_id = escape(short_id(&report.job_id, &candidate.id)),
            parent = escape(
                candidate
                    .parent
                    .as_deref()
                    .map_or("–", |parent| short_id(&report.job_id, parent))
            ),
            iteration = candidate.iteration,
            score = fixed(candidate.score, 4),
            passed = if candidate.passed { "yes" } else { "no" },
            drc = optional(metrics.and_then(|metrics| metrics.drc_violations)),
            lvs = lvs_text(metrics),
            area = fixed(metrics.and_then(|metrics| metrics.area_um2), 2),
            matching = fixed(metrics.and_then(|metrics| metrics.matching_score), 3),
            design = escape(&design),
            error = escape(&error),
        );
    }
    page.push_str("</table>");
    if let Some(planner) = &report.planner {
        page.push_str(&planner_section(planner));
    }
    if let Some(memory) = &report.memory {
        page.push_str(&memory_section(memory, report.candidates_to_first_pass));
    }
    page.push_str("<h2>Timings</h2><table><tr><th class=\"l\">phase</th><th>seconds</th></tr>");
    for (phase, seconds) in &report.timings {
        let _ = write!(
            page,
            "<tr><td class=\"l\">{}</td><td>{seconds:.3}</td></tr>",
            escape(phase)
        );
    }
    page.push_str("</table></body></html>\n");
    page
}

/// A candidate id without its job's prefix (`job-1-i0-c3` → `i0-c3`), for tables.
fn short_id<'a>(job_id: &str, candidate_id: &'a str) -> &'a str {
    candidate_id
        .strip_prefix(job_id)
        .map_or(candidate_id, |rest| {
            rest.trim_start_matches(['-', '/', ':'])
        })
}

/// An inline SVG line plot of (iteration, best score).
fn score_plot(points: &[(u32, f64)]) -> String {
    const WIDTH: f64 = 560.0;
    const HEIGHT: f64 = 220.0;
    const MARGIN: f64 = 40.0;
    if points.is_empty() {
        return "<p>No candidate was scored.</p>".to_owned();
    }
    let first_iteration = f64::from(points[0].0);
    let last_iteration = f64::from(points[points.len() - 1].0);
    let span = (last_iteration - first_iteration).max(1.0);
    let x = |iteration: u32| {
        MARGIN + (f64::from(iteration) - first_iteration) / span * (WIDTH - 2.0 * MARGIN)
    };
    let y = |score: f64| HEIGHT - MARGIN - score.clamp(0.0, 1.0) * (HEIGHT - 2.0 * MARGIN);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"best score per iteration\">\
<line x1=\"{MARGIN}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" stroke=\"#8a93a3\"/><line x1=\"{MARGIN}\" y1=\"{MARGIN}\" x2=\"{MARGIN}\" y2=\"{bottom}\" stroke=\"#8a93a3\"/>\
<text x=\"{MARGIN}\" y=\"{label_y}\" font-size=\"11\" fill=\"#5a6475\">iteration</text><text x=\"4\" y=\"{top_label}\" font-size=\"11\" fill=\"#5a6475\">1.0</text><text x=\"4\" y=\"{bottom}\" font-size=\"11\" fill=\"#5a6475\">0.0</text>",
        bottom = HEIGHT - MARGIN,
        right = WIDTH - MARGIN,
        label_y = HEIGHT - 8.0,
        top_label = MARGIN + 4.0,
    );
    let polyline: Vec<String> = points
        .iter()
        .map(|(iteration, score)| format!("{:.1},{:.1}", x(*iteration), y(*score)))
        .collect();
    let _ = write!(
        svg,
        "<polyline fill=\"none\" stroke=\"#2563eb\" stroke-width=\"2\" points=\"{}\"/>",
        polyline.join(" ")
    );
    for (iteration, score) in points {
        let _ = write!(
            svg,
            "<circle cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"#2563eb\"><title>iteration {iteration}: {score:.4}</title></circle>\
<text x=\"{cx:.1}\" y=\"{tick_y}\" font-size=\"11\" text-anchor=\"middle\" fill=\"#5a6475\">{iteration}</text>",
            cx = x(*iteration),
            cy = y(*score),
            tick_y = HEIGHT - MARGIN + 14.0,
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner_report::{PlannerReport, TranscriptLine};
    use crate::report::{
        BestCandidate, CandidateError, CandidateRecord, ChecksRan, DrcSummary, JobStatus,
        LvsSummary, SignoffSummary,
    };

    fn sample() -> Report {
        let metrics = CandidateMetrics {
            drc_violations: Some(0),
            lvs_match: Some(true),
            area_um2: Some(120.5),
            matching_score: Some(0.97),
            ..Default::default()
        };
        Report {
            job_id: "job-1".into(),
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            failures: Vec::new(),
            circuit: "ota<5>".into(),
            tech: "ihp_sg13g2".into(),
            status: JobStatus::Completed,
            message: None,
            iterations: 2,
            candidates_evaluated: 3,
            best: Some(BestCandidate {
                candidate_id: "c2".into(),
                score: 0.81,
                passed: true,
                gds: "best.gds".into(),
                png: Some("best.png".into()),
                metrics: metrics.clone(),
                drc: Some(DrcSummary::default()),
                lvs: Some(LvsSummary {
                    is_match: true,
                    mismatches: vec![],
                }),
                signoff: Some(SignoffSummary {
                    deck: "sky130A_mr.drc".into(),
                    violations: 0,
                    by_rule: Default::default(),
                }),
                checks: ChecksRan {
                    drc: "clean".into(),
                    lvs: "match".into(),
                    signoff: "clean".into(),
                },
                lyrdb: Some("best.lyrdb".into()),
                signoff_lyrdb: Some("best_signoff.lyrdb".into()),
                lyp: Some("best.lyp".into()),
                performance: None,
                ac_sweep: None,
                extracted: None,
                testbench: None,
            }),
            candidates: vec![
                CandidateRecord {
                    id: "c1".into(),
                    origin: "draft".into(),
                    parent: None,
                    iteration: 1,
                    score: Some(0.6),
                    passed: false,
                    metrics: Some(metrics.clone()),
                    error: None,
                    seconds: None,
                    slot_seconds: None,
                    design: serde_json::json!({"arrangement": "ABAB"}),
                },
                CandidateRecord {
                    id: "c2".into(),
                    origin: "draft".into(),
                    parent: Some("c1".into()),
                    iteration: 2,
                    score: Some(0.81),
                    passed: true,
                    metrics: Some(metrics),
                    error: None,
                    seconds: None,
                    slot_seconds: None,
                    design: serde_json::json!({"arrangement": "ABBA"}),
                },
                CandidateRecord {
                    id: "c3".into(),
                    origin: "draft".into(),
                    parent: None,
                    iteration: 2,
                    score: None,
                    passed: false,
                    metrics: None,
                    error: Some(CandidateError {
                        code: "TIMEOUT".into(),
                        message: "<slow>".into(),
                    }),
                    seconds: None,
                    slot_seconds: None,
                    design: serde_json::Value::Null,
                },
            ],
            timings: [("total".to_owned(), 2.5)].into(),
            memory: None,
            smallest_passing: None,
            candidates_to_first_pass: Some(2),
            planner: Some(PlannerReport {
                kind: "llm".into(),
                model: "fake-model".into(),
                calls: 2,
                fallbacks: 1,
                transcript: vec![TranscriptLine {
                    iteration: 0,
                    role: "planner".into(),
                    summary: "ABBA <first>".into(),
                    model: "fake-model".into(),
                    outcome: "used".into(),
                    ..TranscriptLine::default()
                }],
                ..PlannerReport::default()
            }),
        }
    }

    #[test]
    fn page_is_self_contained_and_shows_what_the_report_holds() {
        let page = render_html(&sample(), Some(&[0x89, b'P', b'N', b'G']));
        assert!(
            page.contains("src=\"data:image/png;base64,iVBORw==\""),
            "picture embedded"
        );
        assert!(
            !page.contains("http://") || page.matches("http://").count() == 1,
            "only the SVG namespace is a URL"
        );
        assert!(!page.contains("<script"), "no script");
        assert!(
            page.contains("ota&lt;5&gt;") && !page.contains("ota<5>"),
            "escaped"
        );
        assert!(page.contains("&lt;slow&gt;"), "errors escaped");
        assert!(page.contains("<tr class=\"best\"><td class=\"l\" title=\"c2\">c2</td>"));
        assert!(page.contains("LVS match") && page.contains("DRC clean"));
        assert!(page.contains("foundry deck clean") && page.contains("sky130A_mr.drc"));
        assert!(page.contains("DRC clean, LVS match, foundry deck clean"));
        assert!(
            page.contains("klayout best.gds -m best.lyrdb"),
            "how to open the markers"
        );
        assert!(page.contains("<polyline"), "score plot");
        assert!(
            page.contains("llm (fake-model): 2 model calls") && page.contains("ABBA &lt;first&gt;"),
            "the planner's decisions"
        );
        assert!(
            page.contains("<details><summary>iteration 0: 1 model calls</summary>"),
            "the transcript collapsed per iteration"
        );
    }

    #[test]
    fn best_score_is_a_running_maximum_per_iteration() {
        let mut report = sample();
        report.candidates[1].score = Some(0.5);
        assert_eq!(report.best_score_per_iteration(), vec![(1, 0.6), (2, 0.6)]);
    }
}
