//! What a simulation gave: its measures and, for an AC testbench, the response of the
//! output node (the Bode plot); and the schematic's simulation, run once per job by
//! the rule-set probe and kept in the job's record as the reference every candidate's
//! post-layout measures are compared with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The AC response of one node: frequency, gain (dB), phase (degrees).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AcSweep {
    pub node: String,
    pub frequency_hz: Vec<f64>,
    pub gain_db: Vec<f64>,
    pub phase_deg: Vec<f64>,
}

/// What `sim.run` answered: measures by `.meas` name, the sweep when asked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Simulated {
    pub measures: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<AcSweep>,
}

impl Simulated {
    /// Reads `sim.run`'s data (`measures`, `ac_sweep`).
    pub fn from_data(data: &Value) -> Option<Simulated> {
        let measures: BTreeMap<String, f64> = data
            .get("measures")?
            .as_object()?
            .iter()
            .filter_map(|(name, value)| Some((name.clone(), value.as_f64()?)))
            .collect();
        let sweep = data
            .get("ac_sweep")
            .and_then(|sweep| serde_json::from_value::<AcSweep>(sweep.clone()).ok())
            .filter(|sweep| !sweep.frequency_hz.is_empty());
        Some(Simulated { measures, sweep })
    }
}

/// The schematic's simulation, as the probe left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SchematicSimulation {
    /// it ran: the reference measures (and sweep)
    Measured(Simulated),
    /// the testbench or the simulation failed (the candidates will fail the same way
    /// and say where)
    Failed { reason: String },
    /// this farm cannot simulate the process (no models, no ngspice): the candidates
    /// are extracted, not simulated
    NotSimulated { reason: String },
}

impl SchematicSimulation {
    /// What a failed `sim.run` means: the process cannot be simulated here
    /// (`sim_no_models`, `ngspice_missing`), or the simulation failed.
    pub fn from_failure(reason_code: &str, message: &str) -> SchematicSimulation {
        let reason = message.chars().take(600).collect::<String>();
        match reason_code {
            "sim_no_models" | "ngspice_missing" => SchematicSimulation::NotSimulated { reason },
            _ => SchematicSimulation::Failed { reason },
        }
    }

    /// The reference measures, when the schematic simulated.
    pub fn measured(&self) -> Option<&Simulated> {
        match self {
            SchematicSimulation::Measured(simulated) => Some(simulated),
            _ => None,
        }
    }

    /// Whether the candidates should simulate (not when the farm cannot).
    pub fn candidates_simulate(&self) -> bool {
        !matches!(self, SchematicSimulation::NotSimulated { .. })
    }
}
