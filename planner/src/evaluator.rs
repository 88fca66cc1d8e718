//! Objectives → score (seed 001 §5.4.3), and the pass/fail verdict.
//!
//! Normalisation (each objective's value in [0, 1], higher is better):
//! * `area_min` (and `cost_min`, for which area is the only cost we measure):
//!   **utilisation** = sum of the device-cell areas / bounding-box area of the
//!   layout (`layout.metrics` `device_area_um2 / bbox_area_um2`). The seed's
//!   `1 / (1 + area)` saturates at ~0 for any real layout in µm²; dividing by the
//!   devices' own area makes the value comparable across circuits: 1 means no
//!   space beyond the devices themselves.
//! * `matching_max`: `layout.metrics` `matching_score` (the lowest matched-group
//!   score: centroid error, orientation uniformity, dummy coverage).
//!   When `layout.metrics` measured the recognised matched groups from the
//!   geometry, the objective's value is the mean of that score and
//!   [`LayoutFigures::geometric_matching`]; `min_matching_score` keeps judging the
//!   drawn structures' score alone.
//! * `performance_max`: the candidate's post-layout measures (`sim.run` on its
//!   `extract.netlist` netlist) against the schematic's, as normalised in
//!   [`crate::performance::verdict`] (each measure `1 / (1 + degradation/10 %)`,
//!   their mean). The score keeps how it is made of that value
//!   ([`PerformanceShare`]) so that the job can re-score its candidates with their
//!   performance relative to each other's ([`crate::performance::relative`]).
//!   Without a post-layout simulation it is left out of the weighting (said in
//!   `reasons`, which does not fail the candidate).
//!
//! A spec the post-layout value misses fails the candidate (`performance spec: …`),
//! and so does an extraction or simulation that failed once the layout was done
//! (`simulation failed: …`, the testbench's file and line when ngspice named one: the
//! layout and its checks are kept, `performance_max` counts 0);
//! a measure more than 10 % worse than the schematic is only warned of
//! (`performance_max: …`).
//! `check.electrical`'s issues (a floating gate or dummy, a net shorted to a supply)
//! fail the candidate (`electrical: …`).
//!
//! score = Σ wᵢ·sᵢ / Σ wᵢ over the measurable objectives, times the layout
//! refinement in [0.9, 1] (wire length and partner-net balance,
//! [`LayoutFigures::refinement`]), then divided by
//! (1 + DRC violations) and by 2 on an LVS mismatch, so that a broken layout
//! ranks below a clean one with the same geometry. A candidate that did not run
//! to the end scores 0.
//!
//! passed = the candidate ran to the end, DRC ran with 0 violations, LVS ran and
//! matched, the foundry deck (when the plan ran one, `signoff.run`) found nothing,
//! area ≤ `max_area` and matching ≥ `min_matching_score` (when given). A check
//! that did not run is never taken for a clean one.

use centroid_schemas::{DesignObjectives, ObjectiveName};
use serde_json::Value;

use std::collections::BTreeMap;

use crate::electrical::ElectricalVerdict;
use crate::evaluation::{Evaluation, PerformanceShare, SignoffVerdict};
use crate::figures::LayoutFigures;
use crate::performance::{
    self, ParasiticFigures, PerformanceVerdict, SchematicSimulation, Simulated,
};
use crate::run_report::{RunReport, StepOutcome};

/// Measurements read from a candidate's step results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measurements {
    pub drc_ran: bool,
    pub drc_violations: i64,
    /// Some(true) = match
    pub lvs: Option<bool>,
    pub bbox_area_um2: Option<f64>,
    pub device_area_um2: Option<f64>,
    pub matching_score: Option<f64>,
    pub drc_by_rule: BTreeMap<String, i64>,
    pub lvs_mismatches: Vec<String>,
    /// the foundry deck's verdict, when `signoff.run` ran
    pub signoff: Option<SignoffVerdict>,
    /// wire length, vias, partner-net mismatch, centroid errors from the geometry
    pub figures: LayoutFigures,
    /// the post-layout simulation's measures, when `sim.run` ran
    pub simulated: Option<Simulated>,
    /// the extraction's figures, when `extract.netlist` ran
    pub parasitics: Option<ParasiticFigures>,
    /// `check.electrical`'s verdict, when it ran
    pub electrical: Option<ElectricalVerdict>,
    /// the extraction or simulation step that failed after the layout was done
    /// (`skill: message`): the candidate fails with it, its layout is kept
    pub simulation_failure: Option<String>,
}

/// Most LVS differences listed per candidate.
const MAX_LVS_LINES: usize = 20;

/// One line per difference `lvs.run` reports.
fn lvs_difference_lines(data: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    for (key, what) in [
        ("unmatched_devices_layout", "device only in the layout"),
        ("unmatched_devices_schematic", "device only in the netlist"),
        ("parameter_mismatches", "parameters differ"),
        ("unmatched_nets_layout", "net only in the layout"),
        ("unmatched_nets_schematic", "net only in the netlist"),
        ("net_mismatches", "nets differ"),
    ] {
        for item in data
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = item
                .as_str()
                .map_or_else(|| item.to_string(), str::to_owned);
            lines.push(format!("{what}: {text}"));
        }
    }
    lines.truncate(MAX_LVS_LINES);
    lines
}

fn number(value: &Value, key: &str) -> Option<f64> {
    value.get(key).and_then(Value::as_f64)
}

pub fn measure(steps: &[StepOutcome]) -> Measurements {
    let mut measured = Measurements::default();
    let mut area_sum = 0.0;
    let mut device_area_sum = 0.0;
    let mut matching: Option<f64> = None;
    let mut metrics_seen = false;
    if let Some(step) = steps
        .iter()
        .find(|step| !step.ok && performance::steps::is_simulation_skill(&step.skill))
    {
        measured.simulation_failure = Some(format!(
            "{} {}: {}",
            step.skill, step.error_code, step.error_message
        ));
    }
    for step in steps.iter().filter(|step| step.ok) {
        measured.figures.read_step(&step.skill, &step.data);
        match step.skill.as_str() {
            "drc.run" => {
                measured.drc_ran = true;
                measured.drc_violations +=
                    step.data.get("total").and_then(Value::as_i64).unwrap_or(0);
                for violation in step
                    .data
                    .get("violations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let (Some(rule), Some(count)) = (
                        violation.get("id").and_then(Value::as_str),
                        violation.get("count").and_then(Value::as_i64),
                    ) {
                        *measured.drc_by_rule.entry(rule.to_owned()).or_insert(0) += count;
                    }
                }
            }
            "lvs.run" => {
                let verdict = step
                    .data
                    .get("match")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                measured.lvs = Some(verdict && measured.lvs.unwrap_or(true));
                measured
                    .lvs_mismatches
                    .extend(lvs_difference_lines(&step.data));
            }
            "signoff.run" => {
                let by_rule: BTreeMap<String, i64> = step
                    .data
                    .get("by_rule")
                    .and_then(Value::as_object)
                    .map(|rules| {
                        rules
                            .iter()
                            .map(|(rule, count)| (rule.clone(), count.as_i64().unwrap_or(0)))
                            .collect()
                    })
                    .unwrap_or_default();
                measured.signoff = Some(SignoffVerdict {
                    deck: step
                        .data
                        .get("deck")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .into(),
                    violations: step
                        .data
                        .get("violations")
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                    by_rule,
                });
            }
            "sim.run" => measured.simulated = Simulated::from_data(&step.data),
            "extract.netlist" => measured.parasitics = ParasiticFigures::from_data(&step.data),
            "check.electrical" => measured.electrical = ElectricalVerdict::from_data(&step.data),
            "layout.metrics" => {
                metrics_seen = true;
                area_sum += number(&step.data, "bbox_area_um2").unwrap_or(0.0);
                device_area_sum += number(&step.data, "device_area_um2").unwrap_or(0.0);
                if let Some(score) = number(&step.data, "matching_score") {
                    matching = Some(matching.map_or(score, |previous: f64| previous.min(score)));
                }
            }
            _ => {}
        }
    }
    if metrics_seen {
        measured.bbox_area_um2 = Some(area_sum);
        measured.device_area_um2 = Some(device_area_sum);
        measured.matching_score = matching;
    }
    measured
}

/// The family of a failure reason (`drc`, `lvs`, `matching`, `area`, `did_not_run`, `signoff`, `other`).
pub fn failure_family(reason: &str) -> &'static str {
    let lower = reason.to_ascii_lowercase();
    if lower.contains("did not run") {
        "did_not_run"
    } else if lower.contains("signoff") || lower.contains("deck") {
        "signoff"
    } else if lower.contains("drc") {
        "drc"
    } else if lower.contains("lvs") {
        "lvs"
    } else if lower.contains("matching") {
        "matching"
    } else if lower.contains("area") {
        "area"
    } else {
        "other"
    }
}

/// `performance_max`'s value for one candidate, or why it has none (`None`: the run's
/// failure says why).
enum PerformanceValue {
    Measured(f64),
    Unmeasured(Option<String>),
}

/// `performance_max`'s value, or why there is none.
fn performance_value(
    performance: Option<&PerformanceVerdict>,
    measured: &Measurements,
    ran_to_end: bool,
    unmeasured: Option<String>,
) -> PerformanceValue {
    match performance.and_then(|verdict| verdict.value) {
        Some(value) => PerformanceValue::Measured(value),
        // the simulation failed: the objective is not met at all
        None if measured.simulation_failure.is_some() => PerformanceValue::Measured(0.0),
        // a run that did not end says why in its failure
        None if !ran_to_end => PerformanceValue::Unmeasured(None),
        None => PerformanceValue::Unmeasured(Some(
            unmeasured.unwrap_or_else(|| "no measure to compare".into()),
        )),
    }
}

/// The reasons from the extraction, simulation and electrical check: missed specs,
/// measures degraded past the warning, a failed simulation, electrical issues.
fn post_layout_reasons(
    performance: Option<&PerformanceVerdict>,
    measured: &Measurements,
    reasons: &mut Vec<String>,
) {
    if let Some(verdict) = performance {
        reasons.extend(
            verdict
                .violations
                .iter()
                .map(|violation| format!("performance spec: {violation}")),
        );
        reasons.extend(
            verdict
                .warnings
                .iter()
                .map(|warning| format!("performance_max: {warning}")),
        );
    }
    if let Some(failure) = &measured.simulation_failure {
        reasons.push(format!("simulation failed: {failure}"));
    }
    if let Some(electrical) = &measured.electrical
        && !electrical.clean
    {
        reasons.push(format!("electrical: {}", electrical.issues.join("; ")));
    }
}

/// Σ wᵢ·sᵢ and Σ wᵢ over the objectives that could be measured; an unmeasured
/// `performance_max` is left out and said in `reasons`.
fn weigh(
    objectives: &DesignObjectives,
    utilisation: f64,
    matching_objective: f64,
    performance: &PerformanceValue,
    reasons: &mut Vec<String>,
) -> (f64, f64) {
    let mut weighted = 0.0;
    let mut weights = 0.0;
    for objective in &objectives.objectives {
        let value = match (objective.name, performance) {
            (ObjectiveName::AreaMin | ObjectiveName::CostMin, _) => utilisation,
            (ObjectiveName::MatchingMax, _) => matching_objective,
            (ObjectiveName::PerformanceMax, PerformanceValue::Measured(value)) => *value,
            (ObjectiveName::PerformanceMax, PerformanceValue::Unmeasured(why)) => {
                if let Some(why) = why {
                    reasons.push(format!(
                        "performance_max is not measured ({why}); left out of the score"
                    ));
                }
                continue;
            }
        };
        weighted += objective.weight * value;
        weights += objective.weight;
    }
    (weighted, weights)
}

/// The verdict on a run without a schematic reference.
pub fn evaluate(objectives: &DesignObjectives, run: &impl RunReport) -> Evaluation {
    evaluate_against(objectives, run, None)
}

/// The verdict on a run; `reference`: the job's schematic simulation.
pub fn evaluate_against(
    objectives: &DesignObjectives,
    run: &impl RunReport,
    reference: Option<&SchematicSimulation>,
) -> Evaluation {
    let mut measured = measure(run.steps());
    measured.figures.geometric_matching_score = measured.figures.geometric_matching();
    let failure = run.failure();
    let ran_to_end = failure.is_none();
    let mut reasons = Vec::new();
    if let Some((code, message)) = failure {
        reasons.push(format!(
            "did not run to the end: {code} {}",
            message.chars().take(300).collect::<String>()
        ));
    }
    let utilisation = match (measured.device_area_um2, measured.bbox_area_um2) {
        (Some(device), Some(bbox)) if bbox > 0.0 => (device / bbox).clamp(0.0, 1.0),
        _ => 0.0,
    };
    let matching = measured
        .matching_score
        .unwrap_or(if measured.bbox_area_um2.is_some() {
            1.0
        } else {
            0.0
        });
    // the objective sees the drawn structures and the geometry alike: a matched pair
    // drawn as two loose devices far apart scores below one drawn side by side
    let matching_objective = match measured.figures.geometric_matching_score {
        Some(geometric) => 0.5 * matching + 0.5 * geometric,
        None => matching,
    };
    let (performance, unmeasured) =
        performance::assess(objectives, measured.simulated.as_ref(), reference);
    let performance_value =
        performance_value(performance.as_ref(), &measured, ran_to_end, unmeasured);
    let (weighted, weights) = weigh(
        objectives,
        utilisation,
        matching_objective,
        &performance_value,
        &mut reasons,
    );
    // what multiplies the weighted mean: the refinement, the DRC and LVS divisors
    let mut factor = measured.figures.refinement();
    if measured.drc_violations > 0 {
        factor /= 1.0 + measured.drc_violations as f64;
        reasons.push(format!("{} DRC violations", measured.drc_violations));
    }
    if !measured.drc_ran {
        reasons.push("DRC did not run".into());
    }
    match measured.lvs {
        Some(true) => {}
        Some(false) => {
            factor /= 2.0;
            reasons.push("LVS mismatch".into());
        }
        None => reasons.push("LVS did not run".into()),
    }
    if !ran_to_end {
        factor = 0.0;
    }
    let score = if weights > 0.0 {
        weighted / weights * factor
    } else {
        0.0
    };
    let performance_share =
        performance_share(objectives, performance.as_ref(), score, weights, factor);
    if let Some(signoff) = &measured.signoff
        && signoff.violations > 0
    {
        reasons.push(format!(
            "foundry deck {}: {} violations",
            signoff.deck, signoff.violations
        ));
    }
    post_layout_reasons(performance.as_ref(), &measured, &mut reasons);
    let area = measured.bbox_area_um2.unwrap_or(0.0);
    if let (Some(max_area), Some(bbox)) = (objectives.constraints.max_area, measured.bbox_area_um2)
        && bbox > max_area
    {
        reasons.push(format!("area {bbox:.1} µm² above max_area {max_area}"));
    }
    if let Some(min_matching) = objectives.constraints.min_matching_score
        && matching < min_matching
    {
        reasons.push(format!(
            "matching {matching:.3} below min_matching_score {min_matching}"
        ));
    }
    let passed = reasons
        .iter()
        .all(|reason| reason.starts_with("performance_max"));
    Evaluation {
        score,
        passed: passed
            && ran_to_end
            && measured.drc_ran
            && measured.drc_violations == 0
            && measured.lvs == Some(true),
        drc_violations: if measured.drc_ran {
            measured.drc_violations
        } else {
            -1
        },
        lvs: match measured.lvs {
            Some(true) => "match".into(),
            Some(false) => "mismatch".into(),
            None => String::new(),
        },
        area_um2: area,
        area_score: utilisation,
        matching_score: matching,
        reasons,
        drc_by_rule: measured.drc_by_rule,
        lvs_mismatches: measured.lvs_mismatches,
        signoff: measured.signoff,
        layout: (!measured.figures.is_empty()).then_some(measured.figures),
        performance,
        parasitics: measured.parasitics,
        electrical: measured.electrical,
        performance_share,
    }
}

/// How `performance_max`'s value entered `score`, when a post-layout simulation gave
/// it one (a failed simulation's 0 is not re-scored).
fn performance_share(
    objectives: &DesignObjectives,
    performance: Option<&PerformanceVerdict>,
    score: f64,
    weights: f64,
    factor: f64,
) -> Option<PerformanceShare> {
    let value = performance?.value?;
    let weight: f64 = objectives
        .objectives
        .iter()
        .filter(|objective| objective.name == ObjectiveName::PerformanceMax)
        .map(|objective| objective.weight)
        .sum();
    if weight <= 0.0 || weights <= 0.0 {
        return None;
    }
    let share = weight / weights * factor;
    Some(PerformanceShare {
        rest: score - share * value,
        share,
    })
}
