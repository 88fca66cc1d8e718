//! The probe a job runs on a worker once, before its first plan: `tech.load` of the
//! rule set, `route.info` (the pitch the placement leaves between cells, when the
//! workers route) and `layout.create_device` of every distinct device size of the
//! circuit. A device the rule set cannot draw (a gate shorter than the poly width
//! rule, a finger too narrow for a contact with its enclosures …) is found here,
//! by the same generator that would draw it, and the job fails at once naming the
//! devices — instead of every candidate of every iteration failing the same way.
//!
//! For a job measuring performance it also simulates the schematic, once
//! (`sim.schematic`, the testbench, `sim.run`): the reference every candidate's
//! post-layout measures are compared with, and the first sign of a testbench that
//! does not simulate or a process this farm has no models for.

use centroid_schemas::{Circuit, DeviceType};
use serde_json::{Value, json};

use crate::candidate_plan::device_spec;
use crate::heuristic::routing_advertised;
use crate::performance::steps::{SCHEMATIC_RUN_STEP, schematic_steps, testbench_arguments};
use crate::performance::{PerformanceSetup, SchematicSimulation, Simulated};
use crate::plan::{Plan, PlanStep};
use crate::plan_builder::{cell_name, skill_id};
use crate::skill_catalog::SkillCatalog;

/// The probe's plan and which devices each of its `layout.create_device` steps stands for.
pub struct RulesProbe {
    pub plan: Plan,
    /// (step id, the devices of that size: the first is drawn)
    pub device_steps: Vec<(String, Vec<String>)>,
    /// whether it simulates the schematic
    pub simulates: bool,
}

/// What the probe found.
#[derive(Debug, Default, PartialEq)]
pub struct ProbeFindings {
    /// the routing pitch (µm), when `route.info` answered
    pub pitch_um: Option<f64>,
    /// one line per device size the rule set cannot draw: `M1 (and M2): <reason>`
    pub undrawable: Vec<String>,
    /// the schematic's simulation, when the probe ran one
    pub schematic: Option<SchematicSimulation>,
}

/// Whether the workers can simulate the schematic of `setup`.
fn schematic_advertised(setup: &PerformanceSetup, skills: &SkillCatalog) -> bool {
    let builtin = testbench_arguments(setup).is_some();
    ["sim.schematic", "sim.run"]
        .iter()
        .chain(builtin.then_some(&"sim.testbench"))
        .all(|skill| skills.contains_key(*skill))
}

/// The probe for `circuit` under `drc_rules`, with the steps `skills` allow; with a
/// `performance` setup it simulates the schematic too.
pub fn rules_probe_plan(
    drc_rules: &Value,
    circuit: &Circuit,
    skills: &SkillCatalog,
    performance: Option<&PerformanceSetup>,
) -> RulesProbe {
    let step = |step_id: String, skill: &str, arguments: Value| PlanStep {
        step_id,
        skill: skill.into(),
        arguments,
        optional: false,
        output_cell: String::new(),
    };
    let mut steps = vec![step(
        "p1_tech_load".into(),
        "tech.load",
        json!({"rules": drc_rules}),
    )];
    if routing_advertised(skills) {
        steps.push(step("p2_route_info".into(), "route.info", json!({})));
    }
    let mut device_steps: Vec<(String, Vec<String>)> = Vec::new();
    if skills.contains_key("layout.create_device") {
        let mut sizes: Vec<(Value, Vec<String>)> = Vec::new();
        for device in &circuit.devices {
            let drawn = matches!(
                device.device_type,
                DeviceType::Nmos | DeviceType::Pmos | DeviceType::Resistor | DeviceType::Capacitor
            );
            let (Some(w), Some(l)) = (device.params.w, device.params.l) else {
                continue;
            };
            if !drawn {
                continue;
            }
            let size = json!({
                "type": device.device_type.as_str(),
                "w": w,
                "l": l,
                "nf": device.params.nf.max(1),
                "m": device.params.m.max(1),
            });
            match sizes.iter_mut().find(|(known, _)| *known == size) {
                Some((_, devices)) => devices.push(device.id.clone()),
                None => sizes.push((size, vec![device.id.clone()])),
            }
        }
        for (index, (mut arguments, devices)) in sizes.into_iter().enumerate() {
            let step_id = format!("p{}_device", index + 3);
            arguments["device_id"] = json!(skill_id(&devices[0]));
            arguments["cell_name"] = json!(cell_name("probe", &devices[0]));
            steps.push(step(step_id.clone(), "layout.create_device", arguments));
            device_steps.push((step_id, devices));
        }
    }
    let simulates = performance.is_some_and(|setup| schematic_advertised(setup, skills));
    if let Some(setup) = performance.filter(|_| simulates) {
        let devices: Vec<Value> = circuit
            .devices
            .iter()
            .filter(|device| {
                matches!(
                    device.device_type,
                    DeviceType::Nmos
                        | DeviceType::Pmos
                        | DeviceType::Resistor
                        | DeviceType::Capacitor
                )
            })
            .map(device_spec)
            .collect();
        steps.extend(schematic_steps(setup, devices));
    }
    RulesProbe {
        plan: Plan {
            summary: "rule-set probe: routing pitch and drawable devices".into(),
            steps,
        },
        device_steps,
        simulates,
    }
}

/// One step's answer: (step id, skill, ok, error code, error message, data).
pub struct ProbeStep<'a> {
    pub step_id: &'a str,
    pub skill: &'a str,
    pub ok: bool,
    pub error_code: &'a str,
    pub error_message: &'a str,
    /// the error's `details.reason` ("" when it has none)
    pub error_reason: &'a str,
    pub data: Option<Value>,
}

impl RulesProbe {
    /// Reads the probe's answers: the pitch, and the devices whose creation the
    /// generator refused as INVALID_PARAM (a step that did not run says nothing).
    pub fn findings<'a>(&self, steps: impl IntoIterator<Item = ProbeStep<'a>>) -> ProbeFindings {
        let mut findings = ProbeFindings::default();
        for step in steps {
            if step.step_id == SCHEMATIC_RUN_STEP && self.simulates {
                findings.schematic = Some(match step.data.as_ref().filter(|_| step.ok) {
                    Some(data) => match Simulated::from_data(data) {
                        Some(simulated) => SchematicSimulation::Measured(simulated),
                        None => SchematicSimulation::Failed {
                            reason: "sim.run answered without measures".into(),
                        },
                    },
                    None => {
                        SchematicSimulation::from_failure(step.error_reason, step.error_message)
                    }
                });
            }
            if step.skill == "route.info" && step.ok {
                findings.pitch_um = step
                    .data
                    .as_ref()
                    .and_then(|data| data.get("pitch_um"))
                    .and_then(Value::as_f64);
            }
            let Some((_, devices)) = self
                .device_steps
                .iter()
                .find(|(step_id, _)| step_id == step.step_id)
            else {
                continue;
            };
            if !step.ok && step.error_code == "INVALID_PARAM" {
                let others = match devices.len() {
                    1 => String::new(),
                    _ => format!(" (and {} of the same size)", devices[1..].join(", ")),
                };
                findings
                    .undrawable
                    .push(format!("{}{others}: {}", devices[0], step.error_message));
            }
        }
        findings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use centroid_schemas::TaskContext;

    fn circuit(netlist: &str) -> Circuit {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
        let file = |label: &str, path: &str| centroid_schemas::InputFile {
            label: label.into(),
            bytes: read(path).into_bytes(),
        };
        let inputs = centroid_schemas::TaskInputs {
            netlist: file("netlist.json", netlist),
            drc_rules: file("drc_rules.json", "examples/ota5/drc_rules.json"),
            objectives: file("objectives.json", "examples/ota5/objectives.json"),
        };
        TaskContext::load(&inputs, "probe").unwrap().circuit
    }

    fn catalog(skills: &[&str]) -> SkillCatalog {
        skills
            .iter()
            .map(|skill| (skill.to_string(), json!({"type": "object"})))
            .collect()
    }

    #[test]
    fn one_step_per_distinct_device_size_and_routing_only_when_advertised() {
        let circuit = circuit("examples/ota5/netlist.json");
        let sizes: std::collections::BTreeSet<String> = circuit
            .devices
            .iter()
            .map(|device| {
                format!(
                    "{:?}{:?}{:?}{}{}",
                    device.device_type,
                    device.params.w,
                    device.params.l,
                    device.params.nf,
                    device.params.m
                )
            })
            .collect();
        let probe = rules_probe_plan(
            &json!({}),
            &circuit,
            &catalog(&["tech.load", "layout.create_device"]),
            None,
        );
        assert_eq!(probe.device_steps.len(), sizes.len());
        let covered: usize = probe.device_steps.iter().map(|(_, ids)| ids.len()).sum();
        assert_eq!(
            covered,
            circuit.devices.len(),
            "every device is covered once"
        );
        assert!(
            probe
                .plan
                .steps
                .iter()
                .all(|step| step.skill != "route.info")
        );
        let routed = rules_probe_plan(
            &json!({}),
            &circuit,
            &catalog(&[
                "tech.load",
                "layout.create_device",
                "route.info",
                "route.nets",
                "layout.place",
            ]),
            None,
        );
        assert_eq!(routed.plan.steps[1].skill, "route.info");
    }

    #[test]
    fn a_refused_device_is_named_with_the_others_of_its_size() {
        let probe = RulesProbe {
            plan: Plan {
                summary: String::new(),
                steps: Vec::new(),
            },
            device_steps: vec![
                ("p3_device".into(), vec!["M1".into(), "M2".into()]),
                ("p4_device".into(), vec!["M5".into()]),
            ],
            simulates: false,
        };
        let step = |step_id, skill, ok, code, message, data| ProbeStep {
            step_id,
            skill,
            ok,
            error_code: code,
            error_message: message,
            error_reason: "",
            data,
        };
        let findings = probe.findings([
            step(
                "p2_route_info",
                "route.info",
                true,
                "",
                "",
                Some(json!({"pitch_um": 0.46})),
            ),
            step(
                "p3_device",
                "layout.create_device",
                false,
                "INVALID_PARAM",
                "l=0.13 µm is below the minimum gate length 0.15 µm",
                None,
            ),
            step(
                "p4_device",
                "layout.create_device",
                false,
                "TIMEOUT",
                "slow",
                None,
            ),
        ]);
        assert_eq!(findings.pitch_um, Some(0.46));
        assert_eq!(
            findings.undrawable,
            ["M1 (and M2 of the same size): l=0.13 µm is below the minimum gate length 0.15 µm"]
        );
    }
}
