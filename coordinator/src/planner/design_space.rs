//! The design space of a task and a small deterministic random generator over it.

use serde::{Deserialize, Serialize};

use crate::model::DesignPoint;

/// The values each coordinate of a [`DesignPoint`] may take for one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignSpace {
    pub arrangements: Vec<String>,
    pub finger_splits: Vec<u32>,
    pub dummies: Vec<u32>,
    pub guard_rings: Vec<bool>,
    pub row_orders: u32,
    pub spacings_nm: Vec<u32>,
    pub aspect_ratios_pct: Vec<u32>,
}

impl DesignSpace {
    /// The point a layout engineer would try first: common centroid, fingers split
    /// into units, one dummy per row end, compact, square.
    pub fn default_point(&self) -> DesignPoint {
        DesignPoint {
            arrangement: self
                .arrangements
                .first()
                .cloned()
                .unwrap_or_else(|| "ABBA".into()),
            finger_split: *self.finger_splits.iter().max().unwrap_or(&1),
            dummies: if self.dummies.contains(&1) {
                1
            } else {
                self.dummies.first().copied().unwrap_or(0)
            },
            guard_ring: false,
            row_order: 0,
            spacing_nm: self.spacings_nm.first().copied().unwrap_or(0),
            aspect_ratio_pct: if self.aspect_ratios_pct.contains(&100) {
                100
            } else {
                self.aspect_ratios_pct[0]
            },
        }
    }

    pub fn random_point(&self, rng: &mut SplitMix64) -> DesignPoint {
        DesignPoint {
            arrangement: rng.pick(&self.arrangements).clone(),
            finger_split: *rng.pick(&self.finger_splits),
            dummies: *rng.pick(&self.dummies),
            guard_ring: *rng.pick(&self.guard_rings),
            row_order: rng.below(self.row_orders.max(1) as u64) as u32,
            spacing_nm: *rng.pick(&self.spacings_nm),
            aspect_ratio_pct: *rng.pick(&self.aspect_ratios_pct),
        }
    }

    /// Changes one coordinate of `point` to another allowed value.
    pub fn mutate(&self, point: &DesignPoint, rng: &mut SplitMix64) -> DesignPoint {
        let mut mutated = point.clone();
        for _ in 0..8 {
            match rng.below(7) {
                0 => mutated.arrangement = rng.pick(&self.arrangements).clone(),
                1 => mutated.finger_split = *rng.pick(&self.finger_splits),
                2 => mutated.dummies = *rng.pick(&self.dummies),
                3 => mutated.guard_ring = *rng.pick(&self.guard_rings),
                4 => mutated.row_order = rng.below(self.row_orders.max(1) as u64) as u32,
                5 => mutated.spacing_nm = *rng.pick(&self.spacings_nm),
                _ => mutated.aspect_ratio_pct = *rng.pick(&self.aspect_ratios_pct),
            }
            if mutated != *point {
                break;
            }
        }
        mutated
    }

    /// Number of distinct points.
    pub fn size(&self) -> u64 {
        [
            self.arrangements.len() as u64,
            self.finger_splits.len() as u64,
            self.dummies.len() as u64,
            self.guard_rings.len() as u64,
            self.row_orders.max(1) as u64,
            self.spacings_nm.len() as u64,
            self.aspect_ratios_pct.len() as u64,
        ]
        .iter()
        .product()
    }
}

/// SplitMix64: tiny, fast, and the same sequence on every platform for a seed.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (0 when bound is 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            0
        } else {
            self.next_u64() % bound
        }
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
