//! What module recognition finds (`modules.rs`) and the circuit model carries:
//! module types, their members and roles.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModuleType {
    DifferentialPair,
    CurrentMirror,
    Cascode,
    TailCurrentSource,
    CrossCoupledPair,
    MatchedCurrentSources,
}

impl ModuleType {
    pub fn as_str(self) -> &'static str {
        match self {
            ModuleType::DifferentialPair => "differential_pair",
            ModuleType::CurrentMirror => "current_mirror",
            ModuleType::Cascode => "cascode",
            ModuleType::TailCurrentSource => "tail_current_source",
            ModuleType::CrossCoupledPair => "cross_coupled_pair",
            ModuleType::MatchedCurrentSources => "matched_current_sources",
        }
    }

    pub(crate) fn id_prefix(self) -> &'static str {
        match self {
            ModuleType::DifferentialPair => "dp",
            ModuleType::CurrentMirror => "cm",
            ModuleType::Cascode => "cas",
            ModuleType::TailCurrentSource => "tail",
            ModuleType::CrossCoupledPair => "xcp",
            ModuleType::MatchedCurrentSources => "mcs",
        }
    }

    /// True when the module's devices must be matched in layout (common centroid etc.).
    pub fn is_matched(self) -> bool {
        matches!(
            self,
            ModuleType::DifferentialPair
                | ModuleType::CurrentMirror
                | ModuleType::CrossCoupledPair
                | ModuleType::MatchedCurrentSources
        )
    }
}

/// A device of a module and its role in it (`input_a`, `reference`, `output`, `tail`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleMember {
    pub device_id: String,
    pub role: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CircuitModule {
    pub id: String,
    #[serde(rename = "type")]
    pub module_type: ModuleType,
    pub devices: Vec<ModuleMember>,
    pub properties: Map<String, Value>,
}

impl CircuitModule {
    /// One line: `cm1: current_mirror [M3 reference, M4 output] ratio=1:1`.
    pub fn describe(&self) -> String {
        let members: Vec<String> = self
            .devices
            .iter()
            .map(|member| format!("{} {}", member.device_id, member.role))
            .collect();
        let mut line = format!(
            "{}: {} [{}]",
            self.id,
            self.module_type.as_str(),
            members.join(", ")
        );
        if let Some(Value::String(ratio)) = self.properties.get("ratio") {
            line.push_str(&format!(" ratio={ratio}"));
        }
        line
    }
}
