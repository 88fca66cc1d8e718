//! `objectives.json`: design objectives and constraints (seed 001 §5.4).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::issue::IssueSink;
use crate::performance::{PerformanceDocument, PerformanceObjectives, build_performance};
use crate::version::SchemaVersion;

/// The largest `max_area` accepted: 1 cm² in µm². Larger values mean a unit mistake.
pub const MAX_AREA_UM2: f64 = 1e8;
pub const MAX_ITERATIONS_LIMIT: u32 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectiveName {
    AreaMin,
    MatchingMax,
    PerformanceMax,
    CostMin,
}

impl ObjectiveName {
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectiveName::AreaMin => "area_min",
            ObjectiveName::MatchingMax => "matching_max",
            ObjectiveName::PerformanceMax => "performance_max",
            ObjectiveName::CostMin => "cost_min",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Objective {
    pub name: ObjectiveName,
    pub weight: f64,
    pub target: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignConstraints {
    pub max_iterations: u32,
    /// µm².
    pub max_area: Option<f64>,
    pub min_matching_score: Option<f64>,
    /// DC amperes per net: the most the net carries through any one wire. Any net may
    /// carry one (a supply, or a signal driving a load); its wires are drawn at least
    /// `current / max_current_density` of their layer wide.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub net_currents: BTreeMap<String, f64>,
}

impl Default for DesignConstraints {
    fn default() -> Self {
        Self {
            max_iterations: 5,
            max_area: None,
            min_matching_score: None,
            net_currents: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignObjectives {
    pub objectives: Vec<Objective>,
    pub constraints: DesignConstraints,
    /// specs, port roles and the built-in testbench (1.1.0)
    #[serde(default)]
    pub performance: PerformanceObjectives,
}

impl DesignObjectives {
    /// The weight of `performance_max` (0 when it is not an objective).
    pub fn performance_weight(&self) -> f64 {
        self.objectives
            .iter()
            .find(|objective| objective.name == ObjectiveName::PerformanceMax)
            .map_or(0.0, |objective| objective.weight)
    }

    /// Whether the job measures post-layout performance: `performance_max` with a
    /// weight, or a spec on a measure.
    pub fn wants_performance(&self) -> bool {
        self.performance_weight() > 0.0 || !self.performance.specs.is_empty()
    }

    /// A text for planner prompts and `centroid validate`.
    pub fn summarize(&self) -> String {
        let mut text = String::from("objectives:\n");
        for objective in &self.objectives {
            let _ = write!(
                text,
                "  - {}: weight={}",
                objective.name.as_str(),
                objective.weight
            );
            if let Some(target) = objective.target {
                let _ = write!(text, ", target={target}");
            }
            text.push('\n');
        }
        text.push_str("constraints:\n");
        let _ = writeln!(
            text,
            "  - max_iterations: {}",
            self.constraints.max_iterations
        );
        if let Some(max_area) = self.constraints.max_area {
            let _ = writeln!(text, "  - max_area: {max_area} um^2");
        }
        if let Some(score) = self.constraints.min_matching_score {
            let _ = writeln!(text, "  - min_matching_score: {score}");
        }
        for (net, amperes) in &self.constraints.net_currents {
            let _ = writeln!(text, "  - net_current {net}: {amperes} A");
        }
        if !self.performance.specs.is_empty() {
            text.push_str("performance specs:\n");
            for spec in &self.performance.specs {
                let _ = write!(text, "  - {}", spec.measure);
                if let Some(min) = spec.min {
                    let _ = write!(text, " >= {min}");
                }
                if let Some(max) = spec.max {
                    let _ = write!(text, " <= {max}");
                }
                text.push('\n');
            }
        }
        text
    }
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ObjectivesDocument {
    objectives: Vec<ObjectiveSpec>,
    #[serde(default)]
    constraints: Option<ConstraintsSpec>,
    #[serde(flatten)]
    performance: PerformanceDocument,
}

#[derive(Debug, Clone, Deserialize)]
struct ObjectiveSpec {
    name: ObjectiveName,
    #[serde(default)]
    weight: Option<f64>,
    #[serde(default)]
    target: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct ConstraintsSpec {
    #[serde(default)]
    max_iterations: Option<f64>,
    #[serde(default)]
    max_area: Option<f64>,
    #[serde(default)]
    min_matching_score: Option<f64>,
    #[serde(default)]
    net_currents: Option<serde_json::Map<String, serde_json::Value>>,
}

pub(crate) fn build_objectives(
    document: ObjectivesDocument,
    read_as: SchemaVersion,
    sink: &mut IssueSink,
) -> Option<DesignObjectives> {
    let performance = build_performance(
        document.performance,
        read_as >= SchemaVersion::new(1, 1, 0),
        sink,
    );
    if document.objectives.is_empty() {
        sink.push(
            "/objectives",
            "no objectives; give at least one, e.g. {\"name\": \"area_min\", \"weight\": 0.5}",
        );
    }
    let mut first_index: HashMap<ObjectiveName, usize> = HashMap::new();
    let mut objectives = Vec::new();
    for (index, spec) in document.objectives.into_iter().enumerate() {
        if let Some(first) = first_index.insert(spec.name, index) {
            first_index.insert(spec.name, first);
            sink.push(
                format!("/objectives/{index}/name"),
                format!(
                    "objective \"{}\" is listed twice (first at /objectives/{first})",
                    spec.name.as_str()
                ),
            );
        }
        if let Some(target) = spec.target
            && (!target.is_finite() || target < 0.0)
        {
            sink.push(
                format!("/objectives/{index}/target"),
                format!("target = {target} must be a non-negative number"),
            );
        }
        objectives.push(Objective {
            name: spec.name,
            weight: spec.weight.unwrap_or(1.0),
            target: spec.target,
        });
    }
    if !objectives.is_empty() && objectives.iter().all(|objective| objective.weight == 0.0) {
        sink.push(
            "/objectives",
            "every objective has weight 0; give at least one a weight above 0",
        );
    }
    let spec = document.constraints.unwrap_or_default();
    let mut constraints = DesignConstraints::default();
    if let Some(iterations) = spec.max_iterations {
        if iterations.fract() != 0.0
            || !(1.0..=f64::from(MAX_ITERATIONS_LIMIT)).contains(&iterations)
        {
            sink.push("/constraints/max_iterations", format!("max_iterations = {iterations} must be a whole number from 1 to {MAX_ITERATIONS_LIMIT}"));
        } else {
            constraints.max_iterations = iterations as u32;
        }
    }
    if let Some(area) = spec.max_area {
        if !area.is_finite() || area <= 0.0 {
            sink.push(
                "/constraints/max_area",
                format!("max_area = {area} must be greater than 0 (µm²)"),
            );
        } else if area > MAX_AREA_UM2 {
            sink.push("/constraints/max_area", format!("max_area = {area} µm² is absurdly large (1 cm² is 1e8 µm²); max_area is in µm², not m² or nm²"));
        }
        constraints.max_area = Some(area);
    }
    constraints.min_matching_score = spec.min_matching_score;
    if spec.net_currents.is_some() && read_as < SchemaVersion::new(1, 1, 0) {
        sink.push(
            "/constraints/net_currents",
            format!("\"net_currents\" is a schema_version 1.1.0 field but the file is read as {read_as}; declare \"schema_version\": \"1.1.0\""),
        );
    }
    constraints.net_currents = net_currents(spec.net_currents.unwrap_or_default(), sink);
    sink.is_empty().then_some(DesignObjectives {
        objectives,
        constraints,
        performance,
    })
}

/// `constraints.net_currents`: every value a positive, finite number of amperes.
fn net_currents(
    written: serde_json::Map<String, serde_json::Value>,
    sink: &mut IssueSink,
) -> BTreeMap<String, f64> {
    let mut currents = BTreeMap::new();
    for (net, value) in written {
        let pointer = crate::issue::pointer_join("/constraints/net_currents", &net);
        match value.as_f64() {
            Some(amperes) if amperes.is_finite() && amperes > 0.0 => {
                currents.insert(net, amperes);
            }
            _ => sink.push(
                pointer,
                format!(
                    "the current of net \"{net}\" is {value}: give a DC current in amperes \
                     greater than 0 (e.g. 0.02 for 20 mA)"
                ),
            ),
        }
    }
    currents
}
