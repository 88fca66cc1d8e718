//! A candidate's post-layout performance judged: every measure against its spec and
//! against the schematic (degradation %), the `performance_max` objective's value, and
//! the parasitics of its sensitive nets.
//!
//! Degradation is signed, in percent of the schematic's value, positive when the
//! layout made the measure worse. Which way is worse: a spec with only `min` (higher
//! is better) or only `max` (lower is better); else the built-in measures' own sense
//! (gain, UGBW, phase margin: higher; delay: lower; offset, ratio error: closer to
//! zero); else any change is worse (|Δ|).
//!
//! Normalisation: each measure with a degradation `d` (%) scores
//! `1 / (1 + d/10 %)` — ALIGN's warning threshold, [`WARN_DEGRADATION_PCT`], as the
//! scale: as good as the schematic or better, 1; 5 % worse, 0.67; 10 % worse, 0.5;
//! 30 % worse, 0.25. `performance_max`'s value is their mean. Against the tolerance
//! rather than 100 %: layouts of one circuit differ by a few percent, which a
//! `1 − d/100` scale would leave a hundredth of the score; and without a floor, so
//! that layouts all past the tolerance (a small load) still rank. `phase_ugbw_rad` (the phase
//! the phase margin is computed from) is reported but not scored twice. Without a
//! schematic reference the value is the fraction of the specs met.

use std::collections::BTreeMap;

use centroid_schemas::PerformanceSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::reference::{AcSweep, Simulated};

/// ALIGN's habit: a measure more than this much worse than the schematic is warned of.
pub const WARN_DEGRADATION_PCT: f64 = 10.0;

/// Measures reported but not scored (they restate another measure).
pub(super) const NOT_SCORED: &[&str] = &["phase_ugbw_rad"];

/// A spec's bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecBounds {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// One measure of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasureVerdict {
    pub spec: Option<SpecBounds>,
    pub schematic: Option<f64>,
    pub post_layout: f64,
    pub degradation_pct: Option<f64>,
}

/// A candidate's performance.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerformanceVerdict {
    pub measures: BTreeMap<String, MeasureVerdict>,
    /// `performance_max`'s value in [0, 1] on the candidate's own (its measures against
    /// the schematic's)
    pub value: Option<f64>,
    /// `performance_max`'s value among the job's candidates (what the score uses once
    /// the job ranked them, [`super::relative`])
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_value: Option<f64>,
    /// the specs the layout misses, one line each
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
    /// measures degraded past [`WARN_DEGRADATION_PCT`], one line each
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// the post-layout AC response of the output (the Bode plot), when simulated
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<AcSweep>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Better {
    Higher,
    Lower,
    NearZero,
    Unchanged,
}

fn better(measure: &str, spec: Option<&PerformanceSpec>) -> Better {
    match spec.map(|spec| (spec.min.is_some(), spec.max.is_some())) {
        Some((true, false)) => return Better::Higher,
        Some((false, true)) => return Better::Lower,
        _ => {}
    }
    match measure {
        "gain_db" | "ugbw_hz" | "phase_margin_deg" => Better::Higher,
        "delay_s" => Better::Lower,
        "offset_v" => Better::NearZero,
        _ if measure.starts_with("ratio_error_") => Better::NearZero,
        _ => Better::Unchanged,
    }
}

/// How much worse `post` is than `schematic`, in % of the schematic's magnitude.
fn degradation_pct(sense: Better, schematic: f64, post: f64) -> Option<f64> {
    let scale = schematic.abs();
    if scale.is_nan() || scale <= 1e-300 || !post.is_finite() {
        return None;
    }
    let worse = match sense {
        Better::Higher => schematic - post,
        Better::Lower => post - schematic,
        Better::NearZero => post.abs() - schematic.abs(),
        Better::Unchanged => (post - schematic).abs(),
    };
    Some(100.0 * worse / scale)
}

/// Judges the post-layout `post` against `specs` and the schematic's `reference`.
pub fn judge(
    specs: &[PerformanceSpec],
    post: &Simulated,
    reference: Option<&Simulated>,
) -> PerformanceVerdict {
    let mut verdict = PerformanceVerdict {
        sweep: post.sweep.clone(),
        ..PerformanceVerdict::default()
    };
    let mut scored = Vec::new();
    for (name, &value) in &post.measures {
        let spec = specs.iter().find(|spec| &spec.measure == name);
        let schematic = reference
            .and_then(|reference| reference.measures.get(name))
            .copied();
        let degradation =
            schematic.and_then(|schematic| degradation_pct(better(name, spec), schematic, value));
        if let Some(spec) = spec {
            if let Some(min) = spec.min
                && (value.is_nan() || value < min)
            {
                verdict
                    .violations
                    .push(format!("{name} = {value:.4e} below min {min:e}"));
            }
            if let Some(max) = spec.max
                && (value.is_nan() || value > max)
            {
                verdict
                    .violations
                    .push(format!("{name} = {value:.4e} above max {max:e}"));
            }
        }
        if let Some(degradation) = degradation
            && !NOT_SCORED.contains(&name.as_str())
        {
            scored.push(1.0 / (1.0 + degradation.max(0.0) / WARN_DEGRADATION_PCT));
            if degradation > WARN_DEGRADATION_PCT {
                verdict.warnings.push(format!(
                    "{name} {degradation:.1} % worse than the schematic (warned above {WARN_DEGRADATION_PCT} %)"
                ));
            }
        }
        verdict.measures.insert(
            name.clone(),
            MeasureVerdict {
                spec: spec.map(|spec| SpecBounds {
                    min: spec.min,
                    max: spec.max,
                }),
                schematic,
                post_layout: value,
                degradation_pct: degradation,
            },
        );
    }
    for spec in specs {
        if !post.measures.contains_key(&spec.measure) {
            verdict
                .violations
                .push(format!("{} was not measured", spec.measure));
        }
    }
    verdict.value = if !scored.is_empty() {
        Some(scored.iter().sum::<f64>() / scored.len() as f64)
    } else if !specs.is_empty() {
        Some(1.0 - verdict.violations.len().min(specs.len()) as f64 / specs.len() as f64)
    } else {
        None
    };
    verdict
}

/// The capacitance of one net of the extracted layout (fF).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetCapacitance {
    pub ground_ff: f64,
    pub coupling_ff: f64,
    /// the lumped resistance the extraction gave the net (Ω)
    #[serde(default)]
    pub resistance_ohm: f64,
}

/// Two nets that should see the same capacitance, and how far apart they are (fF).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairMismatch {
    pub nets: [String; 2],
    pub cap_ff: [f64; 2],
    pub mismatch_ff: f64,
}

/// What the extraction found on the nets that matter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParasiticFigures {
    /// the sensitive nets (those the extraction gave a resistor)
    pub nets: BTreeMap<String, NetCapacitance>,
    /// the symmetric net pairs
    pub pairs: Vec<PairMismatch>,
    /// every net's ground and coupling capacitance together
    pub total_ff: f64,
}

impl ParasiticFigures {
    /// Reads `extract.netlist`'s data.
    pub fn from_data(data: &Value) -> Option<ParasiticFigures> {
        let nets = data.get("nets")?.as_object()?;
        // the sensitive nets are those the extraction gave a lumped resistor (every
        // sensitive net has one; so has a long wire)
        let sensitive: Vec<&str> = data
            .get("resistors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|resistor| resistor.get("net").and_then(Value::as_str))
            .collect();
        let number = |value: Option<&Value>| value.and_then(Value::as_f64).unwrap_or(0.0);
        let mut figures = ParasiticFigures::default();
        for (name, net) in nets {
            if !sensitive.contains(&name.as_str()) {
                continue;
            }
            let coupling = net
                .get("coupling_fF")
                .and_then(Value::as_object)
                .map(|others| others.values().filter_map(Value::as_f64).sum())
                .unwrap_or(0.0);
            figures.nets.insert(
                name.clone(),
                NetCapacitance {
                    ground_ff: number(net.get("cap_fF")),
                    coupling_ff: coupling,
                    resistance_ohm: number(net.get("resistance_ohm")),
                },
            );
        }
        for pair in data
            .get("symmetric_pairs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Ok(pair) = serde_json::from_value::<ExtractedPair>(pair.clone()) {
                figures.pairs.push(PairMismatch {
                    nets: pair.nets,
                    cap_ff: pair.cap_ff,
                    mismatch_ff: pair.mismatch_ff,
                });
            }
        }
        let totals = data.get("totals");
        figures.total_ff = number(totals.and_then(|totals| totals.get("cap_fF")))
            + number(totals.and_then(|totals| totals.get("coupling_fF")));
        Some(figures)
    }
}

/// A symmetric pair as `extract.netlist` writes it.
#[derive(Deserialize)]
struct ExtractedPair {
    nets: [String; 2],
    #[serde(rename = "cap_fF")]
    cap_ff: [f64; 2],
    #[serde(rename = "mismatch_fF")]
    mismatch_ff: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn simulated(measures: &[(&str, f64)]) -> Simulated {
        Simulated {
            measures: measures
                .iter()
                .map(|(name, value)| ((*name).to_owned(), *value))
                .collect(),
            sweep: None,
        }
    }

    fn spec(measure: &str, min: Option<f64>, max: Option<f64>) -> PerformanceSpec {
        PerformanceSpec {
            measure: measure.into(),
            min,
            max,
        }
    }

    #[test]
    fn measures_are_scored_by_their_degradation_and_specs_are_checked() {
        let schematic = simulated(&[("gain_db", 40.0), ("ugbw_hz", 1e8), ("delay_s", 1e-9)]);
        let post = simulated(&[("gain_db", 40.0), ("ugbw_hz", 8e7), ("delay_s", 1.05e-9)]);
        let specs = [
            spec("ugbw_hz", Some(9e7), None),
            spec("phase_margin_deg", Some(60.0), None),
        ];
        let verdict = judge(&specs, &post, Some(&schematic));
        let ugbw = &verdict.measures["ugbw_hz"];
        assert!((ugbw.degradation_pct.unwrap() - 20.0).abs() < 1e-9);
        assert!((verdict.measures["delay_s"].degradation_pct.unwrap() - 5.0).abs() < 1e-9);
        // (1 + 1/3 + 2/3) / 3: UGBW 20 % worse scores 1/3, the delay 5 % worse 2/3
        assert!((verdict.value.unwrap() - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(verdict.violations.len(), 2, "{:?}", verdict.violations);
        assert!(verdict.violations[0].starts_with("ugbw_hz = "));
        assert_eq!(verdict.violations[1], "phase_margin_deg was not measured");
        assert_eq!(verdict.warnings.len(), 1, "only UGBW is past 10 %");
    }

    #[test]
    fn without_a_schematic_the_value_is_the_share_of_specs_met() {
        let post = simulated(&[("gain_db", 30.0), ("ugbw_hz", 2e8)]);
        let specs = [
            spec("gain_db", Some(35.0), None),
            spec("ugbw_hz", None, Some(5e8)),
        ];
        let verdict = judge(&specs, &post, None);
        assert_eq!(verdict.value, Some(0.5));
        assert!(verdict.measures["gain_db"].degradation_pct.is_none());
    }
}
