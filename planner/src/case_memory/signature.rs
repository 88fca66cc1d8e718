//! A circuit's structural signature and its embedding (seed 000 §4.4.2): what a
//! layout engineer would call "the same kind of circuit" — the recognised
//! modules and their roles, the device types, how devices connect (diode
//! connections, shared gates, net fan-out) and the sizes normalised by the rule
//! set's smallest width. Deterministic, offline, any circuit; cosine similarity
//! of two embeddings is 1 for the same circuit and low for unrelated ones.

use std::collections::BTreeMap;

use centroid_schemas::{RuleType, TaskContext};
use serde::{Deserialize, Serialize};

/// Dimensions of the hashed feature space.
pub const DIMENSIONS: usize = 128;

/// How much each family of features weighs (topology above sizes).
const MODULE_WEIGHT: f64 = 3.0;
const CONNECTION_WEIGHT: f64 = 1.5;
const DEVICE_WEIGHT: f64 = 1.0;
const SIZE_WEIGHT: f64 = 0.5;

/// The features of a circuit, named (for `centroid cases show`), and its embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signature {
    /// feature name → count or value
    pub features: BTreeMap<String, f64>,
    /// unit-length hashed embedding of `features`
    pub embedding: Vec<f64>,
}

impl Signature {
    pub fn of(task: &TaskContext) -> Signature {
        let mut features: BTreeMap<String, f64> = BTreeMap::new();
        let mut add = |name: String, value: f64| *features.entry(name).or_default() += value;
        let circuit = &task.circuit;
        for module in &circuit.modules {
            let kind = module.module_type.as_str();
            add(format!("module:{kind}"), MODULE_WEIGHT);
            let mut roles: Vec<&str> = module
                .devices
                .iter()
                .map(|member| member.role.as_str())
                .collect();
            roles.sort_unstable();
            add(format!("roles:{kind}:{}", roles.join("+")), MODULE_WEIGHT);
        }
        let unit = smallest_width(task);
        for device in &circuit.devices {
            let kind = device.device_type.as_str();
            add(format!("device:{kind}"), DEVICE_WEIGHT);
            if device.device_type.is_mos() {
                if device.gate().is_some() && device.gate() == device.drain() {
                    add(format!("diode:{kind}"), CONNECTION_WEIGHT);
                }
                let gate_fanout = device
                    .gate()
                    .and_then(|gate| circuit.net(gate))
                    .map_or(0, |net| net.connections.len());
                add(
                    format!("gate_fanout:{kind}:{}", gate_fanout.min(4)),
                    CONNECTION_WEIGHT,
                );
            }
            if let (Some(unit), Some(w), Some(l)) = (unit, device.params.w, device.params.l) {
                let w_bucket = (w * f64::from(device.params.m.max(1)) / unit)
                    .log2()
                    .round();
                let l_bucket = (l / unit).log2().round();
                add(format!("w:{kind}:{w_bucket}"), SIZE_WEIGHT);
                add(format!("l:{kind}:{l_bucket}"), SIZE_WEIGHT);
            }
        }
        for net in &circuit.nets {
            let fanout = net.connections.len().min(6);
            add(
                format!("net:{}:{fanout}", net.net_type.as_str()),
                CONNECTION_WEIGHT,
            );
        }
        let embedding = embed(&features);
        Signature {
            features,
            embedding,
        }
    }

    /// Cosine similarity of the two embeddings, in [0, 1].
    pub fn similarity(&self, other: &Signature) -> f64 {
        cosine(&self.embedding, &other.embedding)
    }
}

/// The rule set's smallest `width` rule (the unit sizes are counted in), if any.
fn smallest_width(task: &TaskContext) -> Option<f64> {
    task.drc_rules
        .rules
        .iter()
        .filter(|rule| rule.rule_type == RuleType::Width)
        .filter_map(|rule| rule.min)
        .filter(|min| *min > 0.0)
        .min_by(f64::total_cmp)
}

/// Features hashed (FNV-1a, stable across platforms and releases) into
/// [`DIMENSIONS`] buckets, square-rooted (so one family does not drown the others)
/// and normalised to unit length.
fn embed(features: &BTreeMap<String, f64>) -> Vec<f64> {
    let mut vector = vec![0.0; DIMENSIONS];
    for (name, value) in features {
        let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
        vector[(hash % DIMENSIONS as u64) as usize] += value.sqrt();
    }
    let norm = vector.iter().map(|value| value * value).sum::<f64>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|value| *value /= norm);
    }
    vector
}

fn cosine(left: &[f64], right: &[f64]) -> f64 {
    if left.len() != right.len() {
        return 0.0;
    }
    left.iter()
        .zip(right)
        .map(|(a, b)| a * b)
        .sum::<f64>()
        .clamp(0.0, 1.0)
}
