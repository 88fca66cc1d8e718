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
/// A member drawn as k parallel units (`parallel_units.rs`) is k entries: the device that
/// stands for the set, then each other unit with `unit_of` naming it (same role): one
/// member to match, k devices to draw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleMember {
    pub device_id: String,
    pub role: String,
    /// the member this device is a parallel unit of (`None`: the device is a member)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_of: Option<String>,
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
    /// The members to match (each with its parallel units, [`CircuitModule::units_of`]).
    pub fn members(&self) -> impl Iterator<Item = &ModuleMember> {
        self.devices
            .iter()
            .filter(|member| member.unit_of.is_none())
    }

    /// The other parallel units of member `device_id`, in order.
    pub fn units_of<'a>(&'a self, device_id: &'a str) -> impl Iterator<Item = &'a str> {
        self.devices
            .iter()
            .filter(move |member| member.unit_of.as_deref() == Some(device_id))
            .map(|member| member.device_id.as_str())
    }

    /// One line: `cm1: current_mirror [M3 reference, M4 output ×4] ratio=1:4` (×k: a
    /// member of k parallel units).
    pub fn describe(&self) -> String {
        let members: Vec<String> = self
            .members()
            .map(|member| {
                let units = 1 + self.units_of(&member.device_id).count();
                if units > 1 {
                    format!("{} {} ×{units}", member.device_id, member.role)
                } else {
                    format!("{} {}", member.device_id, member.role)
                }
            })
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
