//! The optional sections of report.html: the layout figures of the best
//! candidate, how the job was planned, what the memory gave it.

use std::fmt::Write as _;

use crate::markup::escape;
use crate::memory_report::MemoryReport;
use crate::planner_report::{PlannerReport, TranscriptLine};
use crate::report::CandidateMetrics;

/// The figures a layout engineer compares (the ones ALIGN reports): wire length,
/// vias, partner-net mismatch and the centroid error of every matched group,
/// measured from the geometry.
pub(crate) fn figures_section(metrics: &CandidateMetrics) -> String {
    let Some(figures) = metrics.other.get("layout") else {
        return String::new();
    };
    let number = |key: &str, decimals: usize| {
        figures
            .get(key)
            .and_then(serde_json::Value::as_f64)
            .map_or_else(|| "—".to_string(), |value| format!("{value:.decimals$}"))
    };
    let mut section = String::from("<h2>Layout figures</h2>");
    let _ = write!(
        section,
        "<dl><dt>wire length</dt><dd>{wire} µm over {nets} nets</dd><dt>vias</dt><dd>{vias}</dd>\
<dt>partner-net length mismatch</dt><dd>{mismatch} µm</dd><dt>largest centroid error</dt><dd>{error} µm</dd></dl>",
        wire = number("wirelength_um", 1),
        nets = number("nets", 0),
        vias = number("via_count", 0),
        mismatch = number("partner_mismatch_um", 3),
        error = number("max_centroid_error_um", 3),
    );
    let groups = figures
        .get("groups")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !groups.is_empty() {
        section.push_str("<table><tr><th class=\"l\">matched group</th><th class=\"l\">devices</th><th class=\"l\">drawn as</th><th>centroid error µm</th></tr>");
        for group in &groups {
            let text = |key: &str| {
                group
                    .get(key)
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
            };
            let devices: Vec<&str> = group
                .get("devices")
                .and_then(serde_json::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(serde_json::Value::as_str)
                .collect();
            let _ = write!(
                section,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.3}</td></tr>",
                escape(text("module")),
                escape(&devices.join(", ")),
                escape(&text("structure").replace('_', " ")),
                group
                    .get("centroid_error_um")
                    .and_then(serde_json::Value::as_f64)
                    .unwrap_or(0.0)
            );
        }
        section.push_str("</table>");
    }
    section.push_str(&blocks_table(figures));
    section.push_str(&current_widths_table(figures));
    section
}

/// The entries of the list `key` of a candidate's layout figures (none when absent).
fn listed<'a>(figures: &'a serde_json::Value, key: &str) -> &'a [serde_json::Value] {
    figures
        .get(key)
        .and_then(serde_json::Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// The wires of the nets given a current (objectives `constraints.net_currents`): per
/// routed cell, net and layer the width the current needs and the narrowest drawn.
fn current_widths_table(figures: &serde_json::Value) -> String {
    let widths = listed(figures, "current_widths");
    if widths.is_empty() {
        return String::new();
    }
    let mut table = String::from(
        "<h3>Wires sized for their current</h3><table><tr><th class=\"l\">cell</th><th class=\"l\">net</th><th>current mA</th><th class=\"l\">layer</th><th class=\"l\">wires</th><th>needed µm</th><th>drawn µm</th></tr>",
    );
    for entry in widths {
        let text = |key: &str| {
            entry
                .get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
        };
        let number = |key: &str| entry.get(key).and_then(serde_json::Value::as_f64);
        let _ = write!(
            table,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.3}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.3}</td><td>{}</td></tr>",
            escape(text("cell")),
            escape(text("net")),
            1e3 * number("current_a").unwrap_or(0.0),
            escape(text("layer")),
            escape(text("wires")),
            number("needed_um").unwrap_or(0.0),
            number("drawn_um").map_or("– (none in this cell)".to_owned(), |um| format!(
                "{um:.3}"
            )),
        );
    }
    table.push_str("</table>");
    table
}

/// The blocks of a hierarchical layout: each subcircuit drawn once, how often it is
/// placed, its area and utilisation, how many layouts of it the search measured and
/// the smallest that passed.
fn blocks_table(figures: &serde_json::Value) -> String {
    let blocks = listed(figures, "blocks");
    if blocks.is_empty() {
        return String::new();
    }
    let mut table = String::from(
        "<h3>Blocks</h3><table><tr><th class=\"l\">block</th><th>placed</th><th>devices</th><th>area µm²</th><th>device area µm²</th><th>utilisation</th><th>layouts tried</th><th>smallest passing µm²</th></tr>",
    );
    for block in blocks {
        let number = |key: &str| {
            block
                .get(key)
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        let _ = write!(
            table,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1} %</td><td>{}</td><td>{}</td></tr>",
            escape(
                block
                    .get("cell")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
            ),
            number("instances"),
            number("devices"),
            number("bbox_area_um2"),
            number("device_area_um2"),
            100.0 * number("utilisation"),
            number("variants_tried"),
            block
                .get("best_variant_area_um2")
                .and_then(serde_json::Value::as_f64)
                .map_or("–".to_owned(), |area| format!("{area:.1}")),
        );
    }
    table.push_str("</table>");
    table
}

/// How the job was planned: the planner, the model's use, its thoughts and
/// decisions per iteration, the guidance versions.
pub(crate) fn planner_section(planner: &PlannerReport) -> String {
    let mut section = String::from("<h2>Planner</h2>");
    let model = if planner.model.is_empty() {
        String::new()
    } else {
        format!(" ({})", escape(&planner.model))
    };
    let _ = write!(
        section,
        "<p>{kind}{model}: {calls} model calls, {prompt} prompt and {completion} completion tokens, {fallbacks} fallbacks to the heuristic planner.{requested}</p>",
        kind = escape(&planner.kind),
        calls = planner.calls,
        prompt = planner.prompt_tokens,
        completion = planner.completion_tokens,
        fallbacks = planner.fallbacks,
        requested = planner
            .requested
            .as_ref()
            .map_or_else(String::new, |requested| format!(
                " Requested {}.",
                escape(requested)
            )),
    );
    // one collapsed block per iteration: its calls and notes
    let mut iterations: Vec<u32> = planner
        .transcript
        .iter()
        .map(|line| line.iteration)
        .collect();
    iterations.dedup();
    iterations.sort_unstable();
    iterations.dedup();
    for iteration in iterations {
        let lines: Vec<&TranscriptLine> = planner
            .transcript
            .iter()
            .filter(|line| line.iteration == iteration)
            .collect();
        let calls = lines.iter().filter(|line| !line.outcome.is_empty()).count();
        let _ = write!(
            section,
            "<details><summary>iteration {iteration}: {calls} model calls</summary>\
             <table><tr><th class=\"l\">role</th><th class=\"l\">model</th><th class=\"l\">outcome</th>\
             <th>tokens in/out</th><th>ms</th><th class=\"l\">thought or decision</th></tr>"
        );
        for line in lines {
            let _ = write!(
                section,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}/{}</td><td>{}</td><td class=\"l design\">{}</td></tr>",
                escape(&line.role),
                escape(&line.model),
                escape(&line.outcome),
                line.prompt_tokens,
                line.completion_tokens,
                line.duration_ms,
                escape(&line.summary)
            );
        }
        section.push_str("</table></details>");
    }
    if planner.calls > 0 {
        section.push_str(
            "<p>Every call with its whole prompt and raw answer: <code>planner_transcript.jsonl</code>.</p>",
        );
    }
    for prompt in &planner.system_prompts {
        let _ = write!(
            section,
            "<h3>Guidance version {} (after repeated {} failures)</h3><pre>{}</pre>",
            prompt.version,
            escape(&prompt.because),
            escape(&prompt.text)
        );
    }
    section
}

/// What the long-term memory gave the job and what it kept.
pub(crate) fn memory_section(memory: &MemoryReport, first_pass: Option<u32>) -> String {
    let mut section = String::from("<h2>Memory</h2>");
    let _ = write!(
        section,
        "<p>Long-term memory {}: {} similar cases reused, {} failure patterns shown; first passing layout after {} candidates.{}{}</p>",
        escape(&memory.memory),
        memory.similar_cases.len(),
        memory.failure_patterns.len(),
        first_pass.map_or_else(|| "no".to_string(), |count| count.to_string()),
        memory
            .stored_case
            .as_ref()
            .map_or_else(String::new, |case| format!(
                " Stored as case {}.",
                escape(case)
            )),
        memory
            .error
            .as_ref()
            .map_or_else(String::new, |error| format!(
                " Memory unavailable: {}.",
                escape(error)
            )),
    );
    if !memory.knowledge.is_empty() {
        section.push_str("<p>Layout knowledge in the planner's prompt:</p><ul>");
        for used in &memory.knowledge {
            let _ = write!(
                section,
                "<li>{} (BM25 {:.2})</li>",
                escape(&used.source),
                used.score
            );
        }
        section.push_str("</ul>");
    }
    if !memory.similar_cases.is_empty() {
        section.push_str("<table><tr><th class=\"l\">earlier job</th><th class=\"l\">circuit</th><th>similarity</th></tr>");
        for case in &memory.similar_cases {
            let _ = write!(
                section,
                "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.3}</td></tr>",
                escape(&case.job_id),
                escape(&case.circuit),
                case.similarity
            );
        }
        section.push_str("</table>");
    }
    section
}
