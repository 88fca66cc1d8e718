//! The design space of a task: seven global knobs plus the placement genes a
//! layout engineer would move by hand — the left-to-right order of the devices of
//! each kind, how many rows each kind is folded into, the arrangement of each
//! matched pair, and the dummies and guard ring of each matched module; for a
//! hierarchical circuit laid out as blocks, each block's own space (`blocks.rs`).
//! Random points, mutations and crossovers over it, all deterministic for a seed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::design_point::{BLOCKS, DesignPoint, PACKED_FROM_ASPECT_PCT};
use crate::kind_order::KindOrder;
use crate::placement_order::complete;
use crate::random::SplitMix64;

mod blocks;
mod gene_moves;
pub use blocks::BlockSpace;
#[cfg(test)]
pub(crate) use blocks::tests::space as space_with_blocks;
use gene_moves::{fold_groups, order_crossover, shuffle};

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
    /// the placement order genes: one list per row kind (empty: no order to explore)
    #[serde(default)]
    pub kinds: Vec<KindOrder>,
    /// matched modules whose arrangement is chosen per module
    #[serde(default)]
    pub modules: Vec<String>,
    /// devices always drawn as one cell (they move together in the order)
    #[serde(default)]
    pub bound: Vec<Vec<String>>,
    /// matched modules whose dummies and guard ring are chosen per module
    #[serde(default)]
    pub groups: Vec<String>,
    /// how a hierarchical circuit may be laid out (`blocks`, `flat`), the engineer's
    /// default first; empty: flat only (no hierarchy, or workers without blocks)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hierarchies: Vec<String>,
    /// each block's own space by subcircuit, when blocks are offered (empty else)
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub blocks: BTreeMap<String, BlockSpace>,
    /// the devices the top draws itself when laid out as blocks (flat ids; the rest
    /// are drawn inside blocks, in their own orders): empty without blocks
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_devices: Vec<String>,
    /// the packings of the top's block instances a point may take (`pack_rank`), the
    /// smallest estimate first: offered where the top packs its rows of blocks and the
    /// workers take a rank (empty: only the first)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pack_ranks: Vec<u32>,
}

/// The coordinates a mutation may change (one more, `hierarchy`, when the space
/// has a choice of hierarchy).
const GENES: u64 = 11;

/// A point's `hierarchy` as spelled in a point: `blocks`, or empty for flat.
fn spelled(hierarchy: &str) -> String {
    if hierarchy == BLOCKS {
        BLOCKS.to_string()
    } else {
        String::new()
    }
}

impl DesignSpace {
    /// The point a layout engineer would try first: common centroid, fingers split
    /// into units, one dummy per row end, compact, square, the default order (matched
    /// devices side by side, the devices of a branch next to each other), one row per
    /// kind.
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
            order: self.default_order(),
            rows: BTreeMap::new(),
            module_arrangements: BTreeMap::new(),
            module_dummies: BTreeMap::new(),
            module_rings: BTreeMap::new(),
            hierarchy: spelled(self.hierarchies.first().map_or("", String::as_str)),
            blocks: BTreeMap::new(),
            pack_rank: 0,
        }
    }

    fn default_order(&self) -> Vec<String> {
        self.kinds
            .iter()
            .flat_map(|kind| kind.devices.iter().cloned())
            .collect()
    }

    pub fn random_point(&self, rng: &mut SplitMix64) -> DesignPoint {
        let mut order = Vec::new();
        let mut rows = BTreeMap::new();
        for kind in &self.kinds {
            let mut devices = kind.devices.clone();
            shuffle(&mut devices, rng);
            order.extend(devices);
            let count = 1 + rng.below(u64::from(kind.max_rows.max(1))) as u32;
            if count > 1 {
                rows.insert(kind.kind.clone(), count);
            }
        }
        let module_arrangements = self
            .modules
            .iter()
            .map(|module| (module.clone(), rng.pick(&self.arrangements).clone()))
            .collect();
        let mut point = DesignPoint {
            arrangement: rng.pick(&self.arrangements).clone(),
            finger_split: *rng.pick(&self.finger_splits),
            dummies: *rng.pick(&self.dummies),
            guard_ring: *rng.pick(&self.guard_rings),
            row_order: rng.below(self.row_orders.max(1) as u64) as u32,
            spacing_nm: *rng.pick(&self.spacings_nm),
            aspect_ratio_pct: *rng.pick(&self.aspect_ratios_pct),
            order,
            rows,
            module_arrangements,
            // one dummy count and one ring for every matched module (as an engineer
            // starts); the mutations give single modules their own — per-module
            // choices in every random point spread a small budget too thin (folded
            // cascode, five seeds; BENCHMARKS.md)
            module_dummies: BTreeMap::new(),
            module_rings: BTreeMap::new(),
            // drawn only when there is a choice: the random points of flat circuits
            // stay as they were for a seed
            hierarchy: if self.hierarchies.len() > 1 {
                spelled(rng.pick::<String>(&self.hierarchies))
            } else {
                spelled(self.hierarchies.first().map_or("", String::as_str))
            },
            blocks: BTreeMap::new(),
            pack_rank: 0,
        };
        // drawn only when there is a choice: the random points of spaces without
        // packings stay as they were for a seed
        if self.offers_pack_ranks() && point.builds_blocks() {
            point.pack_rank = *rng.pick(&self.pack_ranks);
        }
        self.random_blocks(&mut point, rng);
        point
    }

    /// Whether points choose among packings of the top's block instances.
    fn offers_pack_ranks(&self) -> bool {
        self.pack_ranks.len() > 1
    }

    /// The point's order of every device of the space: its listed devices first
    /// (those the space knows), then the rest in the default order — so a point
    /// recalled from another circuit or written by a model is still a full order.
    pub fn full_order(&self, point: &DesignPoint) -> Vec<String> {
        complete(point, &self.kinds, &self.bound)
    }

    /// One spelling per layout: the whole order, the arrangements of the pairs, the
    /// dummies and rings of the groups each as the first's value plus those that differ
    /// from it, and a knob the space offers one value of at that value.
    pub fn canonical(&self, point: &DesignPoint) -> DesignPoint {
        let hierarchy = if self.hierarchies.contains(&point.hierarchy) {
            spelled(&point.hierarchy)
        } else {
            String::new()
        };
        // every field but the order and the hierarchy (made anew) cloned once
        let mut canonical = DesignPoint {
            arrangement: point.arrangement.clone(),
            finger_split: point.finger_split,
            dummies: point.dummies,
            guard_ring: point.guard_ring,
            row_order: point.row_order,
            spacing_nm: point.spacing_nm,
            aspect_ratio_pct: point.aspect_ratio_pct,
            order: self.top_order(point),
            rows: point.rows.clone(),
            module_arrangements: point.module_arrangements.clone(),
            module_dummies: point.module_dummies.clone(),
            module_rings: point.module_rings.clone(),
            // a rank only where the top's rows of blocks are packed
            pack_rank: if point.builds_blocks()
                && point.aspect_ratio_pct >= PACKED_FROM_ASPECT_PCT
                && self.pack_ranks.contains(&point.pack_rank)
            {
                point.pack_rank
            } else {
                0
            },
            hierarchy,
            blocks: point.blocks.clone(),
        };
        if canonical.builds_blocks() {
            // blocks inherit the top's knobs and the entries their spaces name (their
            // own module ids): the top's spelling stays as it is
            let global = canonical.arrangement.clone();
            canonical
                .module_arrangements
                .retain(|_, arrangement| *arrangement != global);
        } else {
            self.only_offered_values(&mut canonical);
            // the global arrangement is drawn by the pairs without their own only
            fold_groups(
                &self.modules,
                &mut canonical.arrangement,
                &mut canonical.module_arrangements,
            );
        }
        fold_groups(
            &self.groups,
            &mut canonical.dummies,
            &mut canonical.module_dummies,
        );
        fold_groups(
            &self.groups,
            &mut canonical.guard_ring,
            &mut canonical.module_rings,
        );
        self.canonical_blocks(&mut canonical);
        canonical
    }

    /// A knob the space offers one value of takes that value: the space offers one
    /// where the others would draw the same layout (a block without matched cells, one
    /// device), so a point inherited from a top that chose otherwise, or a block point
    /// differing from it only there, is spelled as the one layout it draws.
    fn only_offered_values(&self, point: &mut DesignPoint) {
        fn only<T: Clone>(values: &[T], value: &mut T) {
            if let [only] = values {
                *value = only.clone();
            }
        }
        only(&self.arrangements, &mut point.arrangement);
        only(&self.finger_splits, &mut point.finger_split);
        only(&self.dummies, &mut point.dummies);
        only(&self.guard_rings, &mut point.guard_ring);
        only(&self.spacings_nm, &mut point.spacing_nm);
        only(&self.aspect_ratios_pct, &mut point.aspect_ratio_pct);
        if self.row_orders <= 1 {
            point.row_order = 0;
        }
    }

    /// Changes one coordinate of `point` to another allowed value: of the top, or
    /// of one block's point (when laid out as blocks).
    pub fn mutate(&self, point: &DesignPoint, rng: &mut SplitMix64) -> DesignPoint {
        if let Some(mutated) = self.mutate_a_block(point, rng) {
            return mutated;
        }
        let original = self.canonical(point);
        let mut mutated = original.clone();
        let hierarchies = self.hierarchies.len() > 1;
        let genes = GENES + u64::from(hierarchies) + u64::from(self.offers_pack_ranks());
        for _ in 0..16 {
            match rng.below(genes) {
                0 => mutated.arrangement = rng.pick(&self.arrangements).clone(),
                1 => mutated.finger_split = *rng.pick(&self.finger_splits),
                2 => mutated.dummies = *rng.pick(&self.dummies),
                3 => mutated.guard_ring = *rng.pick(&self.guard_rings),
                4 => mutated.row_order = rng.below(self.row_orders.max(1) as u64) as u32,
                5 => mutated.spacing_nm = *rng.pick(&self.spacings_nm),
                6 => mutated.aspect_ratio_pct = *rng.pick(&self.aspect_ratios_pct),
                7 => self.mutate_order(&mut mutated.order, rng),
                8 => self.mutate_rows(&mut mutated.rows, rng),
                9 => self.mutate_module(&mut mutated.module_arrangements, rng),
                10 => self.mutate_group(&mut mutated, rng),
                GENES if hierarchies => {
                    mutated.hierarchy = spelled(rng.pick::<String>(&self.hierarchies))
                }
                _ => mutated.pack_rank = *rng.pick(&self.pack_ranks),
            }
            mutated = self.canonical(&mutated);
            if mutated != original {
                break;
            }
        }
        mutated
    }

    /// Swaps two devices of one kind, moves one, or reverses a stretch (what an
    /// engineer does dragging cells along a row).
    fn mutate_order(&self, order: &mut [String], rng: &mut SplitMix64) {
        let movable: Vec<&KindOrder> = self
            .kinds
            .iter()
            .filter(|kind| kind.devices.len() > 1)
            .collect();
        if movable.is_empty() {
            return;
        }
        let kind = *rng.pick(&movable);
        let positions: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, device)| kind.devices.contains(device))
            .map(|(index, _)| index)
            .collect();
        let a = rng.below(positions.len() as u64) as usize;
        let mut b = rng.below(positions.len() as u64 - 1) as usize;
        if b >= a {
            b += 1;
        }
        let (low, high) = (a.min(b), a.max(b));
        let mut genes: Vec<String> = positions
            .iter()
            .map(|&index| order[index].clone())
            .collect();
        match rng.below(3) {
            0 => genes.swap(low, high),
            1 => {
                let moved = genes.remove(a);
                genes.insert(b, moved);
            }
            _ => genes[low..=high].reverse(),
        }
        for (index, gene) in positions.into_iter().zip(genes) {
            order[index] = gene;
        }
    }

    fn mutate_rows(&self, rows: &mut BTreeMap<String, u32>, rng: &mut SplitMix64) {
        let foldable: Vec<&KindOrder> =
            self.kinds.iter().filter(|kind| kind.max_rows > 1).collect();
        if foldable.is_empty() {
            return;
        }
        let kind = *rng.pick(&foldable);
        let count = 1 + rng.below(u64::from(kind.max_rows)) as u32;
        if count > 1 {
            rows.insert(kind.kind.clone(), count);
        } else {
            rows.remove(&kind.kind);
        }
    }

    fn mutate_module(&self, arrangements: &mut BTreeMap<String, String>, rng: &mut SplitMix64) {
        if self.modules.is_empty() {
            return;
        }
        let module = rng.pick(&self.modules).clone();
        arrangements.insert(module, rng.pick(&self.arrangements).clone());
    }

    /// Gives one matched module its own dummy count or guard ring (what an engineer
    /// does for the one pair whose matching matters most, or takes off a large
    /// mirror that gains nothing from them).
    fn mutate_group(&self, point: &mut DesignPoint, rng: &mut SplitMix64) {
        if self.groups.is_empty() {
            return;
        }
        let module = rng.pick(&self.groups).clone();
        if self.guard_rings.len() > 1 && rng.below(2) == 0 {
            point
                .module_rings
                .insert(module, *rng.pick(&self.guard_rings));
        } else {
            point
                .module_dummies
                .insert(module, *rng.pick(&self.dummies));
        }
    }

    /// A child of two points: each global knob from either parent, the order by
    /// order crossover (a stretch of `first`'s order kept in place, the other devices
    /// in `second`'s order), rows, module arrangements and each module's dummies
    /// and ring gene by gene.
    pub fn crossover(
        &self,
        first: &DesignPoint,
        second: &DesignPoint,
        rng: &mut SplitMix64,
    ) -> DesignPoint {
        let mut coin = || rng.below(2) == 0;
        let mut child = DesignPoint {
            arrangement: if coin() {
                &first.arrangement
            } else {
                &second.arrangement
            }
            .clone(),
            finger_split: if coin() {
                first.finger_split
            } else {
                second.finger_split
            },
            dummies: if coin() {
                first.dummies
            } else {
                second.dummies
            },
            guard_ring: if coin() {
                first.guard_ring
            } else {
                second.guard_ring
            },
            row_order: if coin() {
                first.row_order
            } else {
                second.row_order
            },
            spacing_nm: if coin() {
                first.spacing_nm
            } else {
                second.spacing_nm
            },
            aspect_ratio_pct: if coin() {
                first.aspect_ratio_pct
            } else {
                second.aspect_ratio_pct
            },
            order: Vec::new(),
            rows: BTreeMap::new(),
            module_arrangements: BTreeMap::new(),
            module_dummies: BTreeMap::new(),
            module_rings: BTreeMap::new(),
            hierarchy: first.hierarchy.clone(),
            blocks: BTreeMap::new(),
            pack_rank: first.pack_rank,
        };
        if self.hierarchies.len() > 1 && coin() {
            child.hierarchy = second.hierarchy.clone();
        }
        if self.offers_pack_ranks() && coin() {
            child.pack_rank = second.pack_rank;
        }
        for kind in &self.kinds {
            let pick = if coin() { first } else { second };
            if let Some(rows) = pick.rows.get(&kind.kind) {
                child.rows.insert(kind.kind.clone(), *rows);
            }
        }
        for module in &self.modules {
            let pick = if coin() { first } else { second };
            if let Some(arrangement) = pick.module_arrangements.get(module) {
                child
                    .module_arrangements
                    .insert(module.clone(), arrangement.clone());
            }
        }
        // a module's dummies and ring go together: both shape its ends
        for module in &self.groups {
            let pick = if coin() { first } else { second };
            child
                .module_dummies
                .insert(module.clone(), pick.dummies_of(module));
            child
                .module_rings
                .insert(module.clone(), pick.ring_of(module));
        }
        child.order = order_crossover(&self.full_order(first), &self.full_order(second), rng);
        self.crossover_blocks((first, second), &mut child, rng);
        self.canonical(&child)
    }

    /// Number of distinct points (saturating).
    pub fn size(&self) -> u64 {
        // with groups, the global dummies and ring are the first group's (canonical)
        let global = |values: usize| if self.groups.is_empty() { values } else { 1 };
        // with pairs, the global arrangement is the first pair's (canonical)
        let arrangement = if self.modules.is_empty() {
            self.arrangements.len()
        } else {
            1
        };
        let knobs = [
            arrangement as u64,
            self.finger_splits.len() as u64,
            global(self.dummies.len()) as u64,
            global(self.guard_rings.len()) as u64,
            self.row_orders.max(1) as u64,
            self.spacings_nm.len() as u64,
            self.aspect_ratios_pct.len() as u64,
            self.hierarchies.len() as u64,
            self.pack_ranks.len() as u64,
        ];
        let orders = self.kinds.iter().flat_map(|kind| {
            (1..=kind.devices.len() as u64).chain([u64::from(kind.max_rows.max(1))])
        });
        let modules = self.modules.iter().map(|_| self.arrangements.len() as u64);
        let groups = self
            .groups
            .iter()
            .map(|_| (self.dummies.len() * self.guard_rings.len()) as u64);
        knobs
            .into_iter()
            .chain(orders)
            .chain(modules)
            .chain(groups)
            .chain(self.blocks.values().map(|block| block.space.size()))
            .fold(1u64, |size, factor| size.saturating_mul(factor.max(1)))
    }
}

#[cfg(test)]
mod tests;
