//! `objectives.json` 1.1.0: post-layout performance — specs on a testbench's measures
//! (`performance`), the roles of the circuit's ports that drive a built-in testbench
//! (`ports`), the built-in testbench to use (`testbench`), and how the schematic the
//! post-layout measures are compared with carries source/drain junctions
//! (`schematic_junctions`). Checked within the file here; against the circuit and the
//! user's testbench in [`crate::testbench`].

use serde::{Deserialize, Serialize};

use crate::issue::IssueSink;

/// A spec on one measure of the testbench: the post-layout value must lie within.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerformanceSpec {
    /// a `.meas` name of the testbench, lower case (ngspice's spelling)
    pub measure: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

/// The supply port and its voltage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupplyRole {
    pub net: String,
    pub volts: f64,
}

/// The differential inputs and the common-mode voltage they sit at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputsRole {
    pub plus: String,
    pub minus: String,
    pub common_mode_v: f64,
}

/// A bias port: held at `volts`, or a current of `amps` drawn out of it to ground
/// (> 0) or pushed into it from the supply (< 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BiasRole {
    pub net: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volts: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amps: Option<f64>,
}

/// A port held at a fixed voltage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FixedRole {
    pub net: String,
    pub volts: f64,
}

/// What each port of the circuit is, for a built-in testbench.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PortRoles {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supply: Option<SupplyRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ground: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<InputsRole>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bias: Vec<BiasRole>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixed: Vec<FixedRole>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
    /// capacitance on every output (F)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_f: Option<f64>,
}

impl PortRoles {
    /// Every net a role names, with a pointer to where (relative to `/ports`).
    pub fn named_nets(&self) -> Vec<(String, &str)> {
        let mut nets = Vec::new();
        if let Some(supply) = &self.supply {
            nets.push(("/supply/net".to_owned(), supply.net.as_str()));
        }
        if let Some(ground) = &self.ground {
            nets.push(("/ground".to_owned(), ground.as_str()));
        }
        if let Some(inputs) = &self.inputs {
            nets.push(("/inputs/plus".to_owned(), inputs.plus.as_str()));
            nets.push(("/inputs/minus".to_owned(), inputs.minus.as_str()));
        }
        for (index, output) in self.outputs.iter().enumerate() {
            nets.push((format!("/outputs/{index}"), output.as_str()));
        }
        for (index, bias) in self.bias.iter().enumerate() {
            nets.push((format!("/bias/{index}/net"), bias.net.as_str()));
        }
        for (index, fixed) in self.fixed.iter().enumerate() {
            nets.push((format!("/fixed/{index}/net"), fixed.net.as_str()));
        }
        if let Some(clock) = &self.clock {
            nets.push(("/clock".to_owned(), clock.as_str()));
        }
        nets
    }
}

/// The built-in testbenches (`sim.testbench` kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestbenchKind {
    OtaAc,
    OtaOffset,
    ComparatorDelay,
    MirrorRatio,
}

impl TestbenchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TestbenchKind::OtaAc => "ota_ac",
            TestbenchKind::OtaOffset => "ota_offset",
            TestbenchKind::ComparatorDelay => "comparator_delay",
            TestbenchKind::MirrorRatio => "mirror_ratio",
        }
    }

    /// The measures the built-in testbench defines (`mirror_ratio`: one per output,
    /// `ratio_error_<k>`; its first is listed).
    pub fn measures(self) -> &'static [&'static str] {
        match self {
            TestbenchKind::OtaAc => &["gain_db", "ugbw_hz", "phase_ugbw_rad", "phase_margin_deg"],
            TestbenchKind::OtaOffset => &["offset_v"],
            TestbenchKind::ComparatorDelay => &["delay_s"],
            TestbenchKind::MirrorRatio => &["ratio_error_0"],
        }
    }
}

/// The source/drain junctions of the schematic's MOSFETs (`sim.schematic` `junctions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchematicJunctions {
    /// AD/AS/PD/PS as a schematic tool estimates them from W, nf and the rule set's
    /// contacted diffusion lengths (what a designer's schematic simulation carries)
    #[default]
    Estimated,
    /// the bare netlist: no junction capacitance at all
    None,
}

impl SchematicJunctions {
    pub fn as_str(self) -> &'static str {
        match self {
            SchematicJunctions::Estimated => "estimated",
            SchematicJunctions::None => "none",
        }
    }
}

/// The performance part of `objectives.json` (1.1.0).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerformanceObjectives {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub specs: Vec<PerformanceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<PortRoles>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub testbench: Option<TestbenchKind>,
    /// the schematic reference's junctions (default: estimated)
    #[serde(default)]
    pub schematic_junctions: SchematicJunctions,
}

/// The performance fields as written in the document.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct PerformanceDocument {
    #[serde(default)]
    pub performance: Option<Vec<PerformanceSpec>>,
    #[serde(default)]
    pub ports: Option<PortRoles>,
    #[serde(default)]
    pub testbench: Option<TestbenchKind>,
    #[serde(default)]
    pub schematic_junctions: Option<SchematicJunctions>,
}

impl PerformanceDocument {
    fn is_empty(&self) -> bool {
        self.performance.is_none()
            && self.ports.is_none()
            && self.testbench.is_none()
            && self.schematic_junctions.is_none()
    }
}

/// Checks the performance fields of a document read as `newer_than_1_0` or not.
pub(crate) fn build_performance(
    document: PerformanceDocument,
    newer_than_1_0: bool,
    sink: &mut IssueSink,
) -> PerformanceObjectives {
    if !newer_than_1_0 {
        if !document.is_empty() {
            for (field, present) in [
                ("performance", document.performance.is_some()),
                ("ports", document.ports.is_some()),
                ("testbench", document.testbench.is_some()),
                (
                    "schematic_junctions",
                    document.schematic_junctions.is_some(),
                ),
            ] {
                if present {
                    sink.push(
                        format!("/{field}"),
                        format!("\"{field}\" needs schema_version 1.1.0 or later; this file is read as 1.0.0 (declare \"schema_version\": \"1.1.0\")"),
                    );
                }
            }
        }
        return PerformanceObjectives::default();
    }
    let specs = document.performance.unwrap_or_default();
    for (index, spec) in specs.iter().enumerate() {
        check_spec(index, spec, &specs, sink);
    }
    if let Some(ports) = &document.ports {
        check_roles(ports, sink);
    }
    PerformanceObjectives {
        specs: specs
            .into_iter()
            .map(|spec| PerformanceSpec {
                measure: spec.measure.to_ascii_lowercase(),
                ..spec
            })
            .collect(),
        ports: document.ports,
        testbench: document.testbench,
        schematic_junctions: document.schematic_junctions.unwrap_or_default(),
    }
}

fn check_spec(
    index: usize,
    spec: &PerformanceSpec,
    specs: &[PerformanceSpec],
    sink: &mut IssueSink,
) {
    let pointer = format!("/performance/{index}");
    if spec.min.is_none() && spec.max.is_none() {
        sink.push(
            pointer.clone(),
            format!(
                "the spec on \"{}\" has neither min nor max; give one, e.g. {{\"measure\": \"{}\", \"min\": 5e7}}",
                spec.measure, spec.measure
            ),
        );
    }
    for (bound, value) in [("min", spec.min), ("max", spec.max)] {
        if let Some(value) = value
            && !value.is_finite()
        {
            sink.push(
                format!("{pointer}/{bound}"),
                format!("{bound} = {value} must be a finite number"),
            );
        }
    }
    if let (Some(min), Some(max)) = (spec.min, spec.max)
        && min > max
    {
        sink.push(
            format!("{pointer}/max"),
            format!("max = {max} is below min = {min}: no value can meet the spec"),
        );
    }
    let lower = spec.measure.to_ascii_lowercase();
    if let Some(first) = specs
        .iter()
        .position(|other| other.measure.to_ascii_lowercase() == lower)
        && first < index
    {
        sink.push(
            format!("{pointer}/measure"),
            format!(
                "\"{}\" has a spec already (at /performance/{first}); give min and max in one",
                spec.measure
            ),
        );
    }
}

fn check_roles(ports: &PortRoles, sink: &mut IssueSink) {
    let mut seen: Vec<(&str, String)> = Vec::new();
    for (pointer, net) in ports.named_nets() {
        match seen.iter().find(|(known, _)| *known == net) {
            Some((_, first)) => sink.push(
                format!("/ports{pointer}"),
                format!("net \"{net}\" already has a role (at /ports{first}); a port has one role"),
            ),
            None => seen.push((net, pointer)),
        }
    }
    for (index, bias) in ports.bias.iter().enumerate() {
        if bias.volts.is_some() == bias.amps.is_some() {
            sink.push(
                format!("/ports/bias/{index}"),
                format!(
                    "bias \"{}\" needs exactly one of volts (a voltage) or amps (a current drawn out of the port)",
                    bias.net
                ),
            );
        }
    }
    if let Some(inputs) = &ports.inputs
        && let Some(supply) = &ports.supply
        && !(0.0..=supply.volts.abs()).contains(&inputs.common_mode_v.abs())
    {
        sink.push(
            "/ports/inputs/common_mode_v",
            format!(
                "common_mode_v = {} V is outside the supply's 0…{} V",
                inputs.common_mode_v, supply.volts
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn build(document: serde_json::Value, newer: bool) -> (PerformanceObjectives, Vec<String>) {
        let mut sink = IssueSink::new("objectives.json");
        let parsed: PerformanceDocument = serde_json::from_value(document).unwrap();
        let built = build_performance(parsed, newer, &mut sink);
        let issues = sink
            .into_issues()
            .into_iter()
            .map(|issue| format!("{} {}", issue.pointer, issue.message))
            .collect();
        (built, issues)
    }

    #[test]
    fn specs_and_roles_are_read_and_measures_lowered() {
        let (built, issues) = build(
            json!({
                "performance": [{"measure": "UGBW_Hz", "min": 5e7}],
                "ports": {"supply": {"net": "vdd", "volts": 1.8}, "ground": "vss",
                          "inputs": {"plus": "inp", "minus": "inn", "common_mode_v": 0.9},
                          "outputs": ["out"], "bias": [{"net": "vbias", "volts": 0.7}], "load_f": 1e-13},
                "testbench": "ota_ac"
            }),
            true,
        );
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(built.specs[0].measure, "ugbw_hz");
        assert_eq!(built.testbench, Some(TestbenchKind::OtaAc));
        assert_eq!(built.ports.unwrap().named_nets().len(), 6);
    }

    #[test]
    fn bad_specs_and_roles_are_named_by_pointer() {
        let (_, issues) = build(
            json!({
                "performance": [{"measure": "gain_db"}, {"measure": "ugbw_hz", "min": 2, "max": 1},
                                {"measure": "GAIN_DB", "min": 1}],
                "ports": {"supply": {"net": "vdd", "volts": 1.8}, "ground": "vdd",
                          "inputs": {"plus": "a", "minus": "b", "common_mode_v": 2.5},
                          "bias": [{"net": "vb"}]}
            }),
            true,
        );
        let text = issues.join("\n");
        for expected in [
            "/performance/0 the spec on \"gain_db\" has neither min nor max",
            "/performance/1/max max = 1 is below min = 2",
            "/performance/2/measure \"GAIN_DB\" has a spec already (at /performance/0)",
            "/ports/ground net \"vdd\" already has a role (at /ports/supply/net)",
            "/ports/bias/0 bias \"vb\" needs exactly one of volts",
            "/ports/inputs/common_mode_v common_mode_v = 2.5 V is outside",
        ] {
            assert!(text.contains(expected), "{expected:?} not in\n{text}");
        }
    }

    #[test]
    fn the_schematic_has_estimated_junctions_unless_told_none() {
        let (built, issues) = build(json!({"performance": [{"measure": "x", "min": 1}]}), true);
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(built.schematic_junctions, SchematicJunctions::Estimated);
        let (built, issues) = build(json!({"schematic_junctions": "none"}), true);
        assert!(issues.is_empty(), "{issues:?}");
        assert_eq!(built.schematic_junctions, SchematicJunctions::None);
        assert_eq!(built.schematic_junctions.as_str(), "none");
        let (_, issues) = build(json!({"schematic_junctions": "none"}), false);
        assert!(
            issues[0].starts_with(
                "/schematic_junctions \"schematic_junctions\" needs schema_version 1.1.0"
            ),
            "{issues:?}"
        );
    }

    #[test]
    fn a_bad_junctions_value_names_the_file_and_pointer() {
        let file = crate::InputFile {
            label: "objectives.json".into(),
            bytes: br#"{"schema_version": "1.1.0", "objectives": [{"name": "performance_max"}],
                        "performance": [{"measure": "ugbw_hz", "min": 1}],
                        "schematic_junctions": "drawn"}"#
                .to_vec(),
        };
        let errors = crate::load_objectives(&file).expect_err("\"drawn\" is no choice");
        let text = errors.to_string();
        assert!(
            text.contains("objectives.json: /schematic_junctions: ")
                && text.contains("estimated")
                && text.contains("none"),
            "{text}"
        );
    }

    #[test]
    fn a_1_0_0_file_may_not_use_them() {
        let (built, issues) = build(json!({"performance": [{"measure": "x", "min": 1}]}), false);
        assert_eq!(built, PerformanceObjectives::default());
        assert!(issues[0].starts_with("/performance \"performance\" needs schema_version 1.1.0"));
    }
}
