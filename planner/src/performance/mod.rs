//! Post-layout performance in the loop (issue 27): what a job simulates
//! ([`setup`]), the skill calls that extract and simulate ([`steps`]), the schematic's
//! reference simulation ([`reference`]), the judgement of a candidate's measures
//! ([`verdict`]) and their ranking among the job's candidates ([`relative`]).

pub mod reference;
pub mod relative;
pub mod setup;
pub mod steps;
pub mod verdict;

pub use reference::{AcSweep, SchematicSimulation, Simulated};
pub use setup::{PerformanceSetup, TestbenchSource};
pub use verdict::{MeasureVerdict, ParasiticFigures, PerformanceVerdict};

use centroid_schemas::DesignObjectives;

/// A candidate's performance for a job that wants it: the verdict, or why there is
/// none (`None`, `None` for a job without performance objectives).
pub fn assess(
    objectives: &DesignObjectives,
    post_layout: Option<&Simulated>,
    reference: Option<&SchematicSimulation>,
) -> (Option<PerformanceVerdict>, Option<String>) {
    if !objectives.wants_performance() {
        return (None, None);
    }
    match post_layout {
        Some(post) => {
            let schematic = reference.and_then(SchematicSimulation::measured);
            (
                Some(verdict::judge(
                    &objectives.performance.specs,
                    post,
                    schematic,
                )),
                None,
            )
        }
        None => {
            let why = match reference {
                Some(SchematicSimulation::NotSimulated { reason }) => {
                    format!("not simulated here: {reason}")
                }
                _ => "the candidate's plan has no simulation (the workers lack extract.netlist/sim.run, or the rule set has no parasitics section)".to_owned(),
            };
            (None, Some(why))
        }
    }
}

/// What a job's planner needs to plan simulations: the user's testbench (its text,
/// as submitted) and the schematic's simulation once the probe ran.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSimulation {
    pub testbench: Option<String>,
    pub schematic: Option<SchematicSimulation>,
}

impl JobSimulation {
    /// The job's setup (`None` without performance objectives). The testbench was
    /// checked when the job was submitted; one that no longer reads counts as absent.
    pub fn setup(&self, context: &centroid_schemas::TaskContext) -> Option<PerformanceSetup> {
        let testbench = self.testbench.as_ref().and_then(|text| {
            let file = centroid_schemas::InputFile {
                label: centroid_schemas::TESTBENCH_FILE.into(),
                bytes: text.as_bytes().to_vec(),
            };
            centroid_schemas::UserTestbench::read(&file, &context.circuit.name).ok()
        });
        PerformanceSetup::of(context, testbench.as_ref())
    }

    /// Whether candidates simulate (not when the schematic showed this farm cannot).
    pub fn candidates_simulate(&self) -> bool {
        self.schematic
            .as_ref()
            .is_none_or(SchematicSimulation::candidates_simulate)
    }
}
