//! The post-layout performance of the best candidate (issue 27): the measures against
//! their specs and the schematic (report.html's table), and the schematic vs
//! post-layout Bode plot of the output node (inline SVG, no script), from the AC
//! sweeps `sim.run` returned — the schematic's in the job's `SchematicSimulated`
//! event, the layout's in the candidate's evaluation.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use centroid_planner::job_events::EventData;
use centroid_planner::performance::{AcSweep, MeasureVerdict, SchematicSimulation};
use centroid_proto::v1::JobEvent;
use serde::{Deserialize, Serialize};

use crate::markup::escape;

/// The AC response of the output before and after layout (report.json `best.ac_sweep`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BodeCurves {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schematic: Option<AcSweep>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub post_layout: Option<AcSweep>,
}

impl BodeCurves {
    pub fn is_empty(&self) -> bool {
        self.schematic.is_none() && self.post_layout.is_none()
    }
}

/// The schematic's AC response, from the job's events.
pub fn schematic_sweep(events: &[JobEvent]) -> Option<AcSweep> {
    events
        .iter()
        .rev()
        .find_map(|event| match EventData::parse(&event.data_json) {
            Some(EventData::SchematicSimulated(simulation)) => match *simulation {
                SchematicSimulation::Measured(simulated) => simulated.sweep,
                _ => None,
            },
            _ => None,
        })
}

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "—".to_owned(), |value| format!("{value:.4e}"))
}

/// The table of measures and the Bode plot; empty without measures.
pub(crate) fn performance_section(
    measures: Option<&BTreeMap<String, MeasureVerdict>>,
    curves: Option<&BodeCurves>,
) -> String {
    let Some(measures) = measures.filter(|measures| !measures.is_empty()) else {
        return String::new();
    };
    let mut section = String::from(
        "<h2>Post-layout performance</h2><table><tr><th>measure</th><th>spec</th>\
<th>schematic</th><th>post-layout</th><th>degradation</th></tr>",
    );
    for (name, verdict) in measures {
        let spec = verdict.spec.as_ref().map_or_else(
            || "—".to_owned(),
            |spec| match (spec.min, spec.max) {
                (Some(min), Some(max)) => format!("{min:e} … {max:e}"),
                (Some(min), None) => format!("≥ {min:e}"),
                (None, Some(max)) => format!("≤ {max:e}"),
                (None, None) => "—".to_owned(),
            },
        );
        let met = verdict.spec.as_ref().is_none_or(|spec| {
            spec.min.is_none_or(|min| verdict.post_layout >= min)
                && spec.max.is_none_or(|max| verdict.post_layout <= max)
        });
        let _ = write!(
            section,
            "<tr><td>{name}</td><td>{spec}</td><td>{schematic}</td><td class=\"{class}\">{post}</td><td>{degradation}</td></tr>",
            name = escape(name),
            spec = escape(&spec),
            schematic = number(verdict.schematic),
            class = if met { "ok" } else { "bad" },
            post = number(Some(verdict.post_layout)),
            degradation = verdict
                .degradation_pct
                .map_or_else(|| "—".to_owned(), |pct| format!("{pct:.2} %")),
        );
    }
    section.push_str("</table>");
    if let Some(curves) = curves.filter(|curves| !curves.is_empty()) {
        section.push_str(&bode_plot(curves));
    }
    section
}

const WIDTH: f64 = 560.0;
const PANEL: f64 = 150.0;
const MARGIN: f64 = 48.0;
const SCHEMATIC_COLOUR: &str = "#8a93a3";
const LAYOUT_COLOUR: &str = "#2563eb";

/// Gain (dB) and phase (°) against log frequency, the schematic dashed, the layout solid.
fn bode_plot(curves: &BodeCurves) -> String {
    let sweeps: Vec<(&AcSweep, &str, &str)> = [
        (curves.schematic.as_ref(), SCHEMATIC_COLOUR, "6 4"),
        (curves.post_layout.as_ref(), LAYOUT_COLOUR, "none"),
    ]
    .into_iter()
    .filter_map(|(sweep, colour, dash)| Some((sweep?, colour, dash)))
    .filter(|(sweep, _, _)| sweep.frequency_hz.iter().any(|f| *f > 0.0))
    .collect();
    if sweeps.is_empty() {
        return String::new();
    }
    let all = |pick: fn(&AcSweep) -> &Vec<f64>| {
        sweeps
            .iter()
            .flat_map(move |(sweep, _, _)| pick(sweep).iter().copied())
            .filter(|value| value.is_finite())
    };
    let span = |values: Vec<f64>| {
        let low = values.iter().copied().fold(f64::INFINITY, f64::min);
        let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (low, if high > low { high } else { low + 1.0 })
    };
    let (f_low, f_high) = span(
        all(|sweep| &sweep.frequency_hz)
            .filter(|f| *f > 0.0)
            .map(f64::log10)
            .collect(),
    );
    let (g_low, g_high) = span(all(|sweep| &sweep.gain_db).collect());
    let (p_low, p_high) = span(all(|sweep| &sweep.phase_deg).collect());
    let height = 2.0 * PANEL + 3.0 * MARGIN;
    let x = |f: f64| MARGIN + (f.log10() - f_low) / (f_high - f_low) * (WIDTH - 2.0 * MARGIN);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" \
aria-label=\"Bode plot, schematic and post-layout\"><text x=\"{MARGIN}\" y=\"16\" font-size=\"12\" fill=\"{SCHEMATIC_COLOUR}\">- - schematic</text>\
<text x=\"{legend_x}\" y=\"16\" font-size=\"12\" fill=\"{LAYOUT_COLOUR}\">— post-layout</text>",
        legend_x = MARGIN + 120.0,
    );
    let panels = [
        (
            MARGIN,
            g_low,
            g_high,
            "gain (dB)",
            (|s| &s.gain_db) as fn(&AcSweep) -> &Vec<f64>,
        ),
        (2.0 * MARGIN + PANEL, p_low, p_high, "phase (°)", |s| {
            &s.phase_deg
        }),
    ];
    for (top, low, high, label, pick) in panels {
        let y = |value: f64| top + PANEL - (value - low) / (high - low) * PANEL;
        let bottom = top + PANEL;
        let _ = write!(
            svg,
            "<rect x=\"{MARGIN}\" y=\"{top}\" width=\"{w}\" height=\"{PANEL}\" fill=\"none\" stroke=\"#d0d5dd\"/>\
<text x=\"4\" y=\"{label_y}\" font-size=\"11\" fill=\"#5a6475\">{label}</text>\
<text x=\"4\" y=\"{top_y}\" font-size=\"10\" fill=\"#5a6475\">{high:.0}</text><text x=\"4\" y=\"{bottom}\" font-size=\"10\" fill=\"#5a6475\">{low:.0}</text>",
            w = WIDTH - 2.0 * MARGIN,
            label_y = top - 4.0,
            top_y = top + 10.0,
        );
        for (sweep, colour, dash) in &sweeps {
            let points: Vec<String> = sweep
                .frequency_hz
                .iter()
                .zip(pick(sweep))
                .filter(|(f, value)| **f > 0.0 && value.is_finite())
                .map(|(f, value)| format!("{:.1},{:.1}", x(*f), y(*value)))
                .collect();
            let _ = write!(
                svg,
                "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"{dash}\" points=\"{}\"/>",
                points.join(" ")
            );
        }
    }
    let axis_y = 2.0 * MARGIN + 2.0 * PANEL + 14.0;
    let mut decade = f_low.ceil() as i32;
    while f64::from(decade) <= f_high {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{axis_y}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#5a6475\">1e{decade}</text>",
            x(10f64.powi(decade))
        );
        decade += 1;
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#5a6475\">frequency (Hz)</text></svg>",
        WIDTH / 2.0 - 40.0,
        axis_y + 16.0
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(shift: f64) -> AcSweep {
        let frequency_hz: Vec<f64> = (0..=40).map(|i| 10f64.powf(f64::from(i) / 4.0)).collect();
        AcSweep {
            node: "out".into(),
            gain_db: frequency_hz
                .iter()
                .map(|f| 40.0 - 20.0 * (f / (1e4 * shift)).log10().max(0.0))
                .collect(),
            phase_deg: frequency_hz
                .iter()
                .map(|f| -(f / (1e4 * shift)).atan().to_degrees())
                .collect(),
            frequency_hz,
        }
    }

    #[test]
    fn the_table_names_every_measure_and_the_plot_draws_both_curves() {
        let measures = BTreeMap::from([(
            "ugbw_hz".to_owned(),
            MeasureVerdict {
                spec: Some(centroid_planner::performance::verdict::SpecBounds {
                    min: Some(2e6),
                    max: None,
                }),
                schematic: Some(1e6),
                post_layout: 9e5,
                degradation_pct: Some(10.0),
            },
        )]);
        let curves = BodeCurves {
            schematic: Some(sweep(1.0)),
            post_layout: Some(sweep(0.9)),
        };
        let html = performance_section(Some(&measures), Some(&curves));
        assert!(html.contains("<td>ugbw_hz</td><td>≥ 2e6</td>"), "{html}");
        assert!(
            html.contains("class=\"bad\">9.0000e5</td><td>10.00 %</td>"),
            "{html}"
        );
        assert_eq!(
            html.matches("<polyline").count(),
            4,
            "gain and phase, two curves each"
        );
        assert!(
            html.contains("1e10") && html.contains("1e0"),
            "decade ticks"
        );
        assert!(!html.contains("NaN"));
        assert_eq!(performance_section(None, Some(&curves)), "");
    }
}
