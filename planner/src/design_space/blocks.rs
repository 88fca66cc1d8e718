//! The blocks of a hierarchical circuit in the design space (issue 26): each block
//! explores its own knobs (its space is that of its subcircuit on its own, computed
//! as a flat circuit's) while the top's knobs mean the parent's floorplan. A block
//! without its own point inherits the top's knobs and its own space's default order
//! ([`DesignSpace::inherited`]); one spelling per layout leaves such a block without
//! an entry.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use super::DesignSpace;
use crate::design_point::DesignPoint;
use crate::random::SplitMix64;

/// The space of one block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockSpace {
    /// the path of its representative instance (`X1`): its devices' flat ids are
    /// `path/` + their local ids
    pub path: String,
    /// its knobs and genes by local ids (no hierarchy, no blocks)
    pub space: DesignSpace,
}

impl DesignSpace {
    /// The point block `subcircuit` is drawn from when `top` gives it none: the top's
    /// knobs, the block's own default order (its devices arranged on their own: a
    /// series stack in chain order, each inner node between its two devices), the
    /// top's genes of the block's modules. Not the top's order of the representative's
    /// devices: that order arranges the flat circuit (matched modules across every
    /// instance, rows too long to arrange by nets), and a block drawn in it had its
    /// inner nets cross each other in its channel (a four-device stack in the order
    /// 3 1 4 2). `None` for a subcircuit that is no block of the space.
    pub fn inherited(&self, top: &DesignPoint, subcircuit: &str) -> Option<DesignPoint> {
        let block = self.blocks.get(subcircuit)?;
        let order = block.space.default_order();
        let modules = &block.space.modules;
        let groups = &block.space.groups;
        Some(DesignPoint {
            order,
            module_arrangements: kept(&top.module_arrangements, modules),
            module_dummies: kept(&top.module_dummies, groups),
            module_rings: kept(&top.module_rings, groups),
            hierarchy: String::new(),
            blocks: BTreeMap::new(),
            // the top's packing choice is the top's: a block packs as it would alone
            pack_rank: 0,
            ..top.clone()
        })
    }

    /// The point block `subcircuit` is drawn from: its own, else the inherited one.
    pub fn block_point(&self, top: &DesignPoint, subcircuit: &str) -> Option<DesignPoint> {
        match top.blocks.get(subcircuit) {
            Some(own) => Some(own.clone()),
            None => self.inherited(top, subcircuit),
        }
    }

    /// The point's full order as the layout depends on it: for a point laid out as
    /// blocks, the top's own devices in the point's order and the devices drawn inside
    /// blocks (which the top's order does not arrange) in the default order after
    /// them — so two points whose orders differ only inside blocks are one point;
    /// else the full order.
    pub(super) fn top_order(&self, point: &DesignPoint) -> Vec<String> {
        let order = self.full_order(point);
        if self.blocks.is_empty() || !point.builds_blocks() {
            return order;
        }
        let own: HashSet<&str> = self.top_devices.iter().map(String::as_str).collect();
        let drawn_by_top = DesignPoint {
            order: order
                .into_iter()
                .filter(|device| own.contains(device.as_str()))
                .collect(),
            blocks: BTreeMap::new(),
            ..point.clone()
        };
        self.full_order(&drawn_by_top)
    }

    /// Each block's own point in its space's spelling; none for a flat point, for a
    /// subcircuit that is no block, nor where it is the inherited point.
    pub(super) fn canonical_blocks(&self, point: &mut DesignPoint) {
        if !point.builds_blocks() || self.blocks.is_empty() {
            point.blocks.clear();
            return;
        }
        let own: HashSet<&str> = self.top_devices.iter().map(String::as_str).collect();
        if own.is_empty() {
            // and a module's own choice reaches the layout only through the blocks that
            // inherit it (`inherited` keeps the entries their spaces name)
            let named = |names: fn(&DesignSpace) -> &Vec<String>, module: &String| {
                self.blocks
                    .values()
                    .any(|block| names(&block.space).contains(module))
            };
            point
                .module_arrangements
                .retain(|module, _| named(|space| &space.modules, module));
            point
                .module_dummies
                .retain(|module, _| named(|space| &space.groups, module));
            point
                .module_rings
                .retain(|module, _| named(|space| &space.groups, module));
        }
        let own_points = std::mem::take(&mut point.blocks);
        for (subcircuit, block_point) in own_points {
            let Some(block) = self.blocks.get(&subcircuit) else {
                continue;
            };
            let mut canonical = block.space.canonical(&block_point);
            canonical.hierarchy.clear();
            canonical.blocks.clear();
            let inherited = self
                .inherited(point, &subcircuit)
                .map(|inherited| block.space.canonical(&inherited));
            if inherited.as_ref() != Some(&canonical) {
                point.blocks.insert(subcircuit, canonical);
            }
        }
        // a row count of the top's is drawn by the top's own devices of that kind and by
        // the blocks inheriting the top's knobs: of a kind neither has two cells of, it
        // draws nothing
        let blocks = &self.blocks;
        let inheriting: Vec<&BlockSpace> = blocks
            .iter()
            .filter(|(subcircuit, _)| !point.blocks.contains_key(*subcircuit))
            .map(|(_, block)| block)
            .collect();
        point.rows.retain(|kind, _| {
            self.cells_of(kind, &|device| own.contains(device)) > 1
                || inheriting
                    .iter()
                    .any(|block| block.space.cells_of(kind, &|_| true) > 1)
        });
    }

    /// How many cells row kind `kind` lays out of the devices `drawn` takes: a bound
    /// module's devices are one cell.
    fn cells_of(&self, kind: &str, drawn: &dyn Fn(&str) -> bool) -> usize {
        let devices: Vec<&String> = self
            .kinds
            .iter()
            .filter(|order| order.kind == kind)
            .flat_map(|order| &order.devices)
            .filter(|device| drawn(device))
            .collect();
        let merged: usize = self
            .bound
            .iter()
            .map(|group| {
                group
                    .iter()
                    .filter(|device| devices.contains(device))
                    .count()
            })
            .map(|members| members.saturating_sub(1))
            .sum();
        devices.len() - merged
    }

    /// A random point of every block's space (for a point laid out as blocks).
    pub(super) fn random_blocks(&self, point: &mut DesignPoint, rng: &mut SplitMix64) {
        if !point.builds_blocks() {
            return;
        }
        for (subcircuit, block) in &self.blocks {
            point
                .blocks
                .insert(subcircuit.clone(), block.space.random_point(rng));
        }
    }

    /// For a point laid out as blocks, one draw among the top and each block: when a
    /// block is drawn, its point (own or inherited) mutated in its space. `None`:
    /// mutate the top (and no draw at all without blocks: flat circuits' mutations
    /// stay as they were for a seed).
    pub(super) fn mutate_a_block(
        &self,
        point: &DesignPoint,
        rng: &mut SplitMix64,
    ) -> Option<DesignPoint> {
        if !point.builds_blocks() || self.blocks.is_empty() {
            return None;
        }
        let drawn = rng.below(self.blocks.len() as u64 + 1) as usize;
        let (subcircuit, block) = self.blocks.iter().nth(drawn.checked_sub(1)?)?;
        let original = self.canonical(point);
        let base = self.block_point(&original, subcircuit)?;
        let mut mutated = original.clone();
        mutated
            .blocks
            .insert(subcircuit.clone(), block.space.mutate(&base, rng));
        Some(self.canonical(&mutated))
    }

    /// Each block's point of `child` taken whole from one parent or the other (own
    /// or inherited there; none from a flat parent): how a parent combines variants
    /// of its children.
    pub(super) fn crossover_blocks(
        &self,
        (first, second): (&DesignPoint, &DesignPoint),
        child: &mut DesignPoint,
        rng: &mut SplitMix64,
    ) {
        for subcircuit in self.blocks.keys() {
            let parent = if rng.below(2) == 0 { first } else { second };
            if !parent.builds_blocks() {
                continue;
            }
            if let Some(block_point) = self.block_point(&self.canonical(parent), subcircuit) {
                child.blocks.insert(subcircuit.clone(), block_point);
            }
        }
    }
}

/// The entries of `genes` whose module is one of `modules`.
fn kept<T: Clone>(genes: &BTreeMap<String, T>, modules: &[String]) -> BTreeMap<String, T> {
    genes
        .iter()
        .filter(|(module, _)| modules.contains(module))
        .map(|(module, gene)| (module.clone(), gene.clone()))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kind_order::KindOrder;

    /// A block of two nmos and one pmos device, its own space.
    fn block_space() -> DesignSpace {
        DesignSpace {
            arrangements: vec!["ABBA".into(), "ABAB".into()],
            finger_splits: vec![1, 2],
            dummies: vec![0, 1],
            guard_rings: vec![false],
            row_orders: 2,
            spacings_nm: vec![0, 200, 500],
            aspect_ratios_pct: vec![100, 50],
            kinds: vec![
                KindOrder {
                    kind: "nmos".into(),
                    devices: vec!["M1".into(), "M2".into()],
                    max_rows: 2,
                },
                KindOrder {
                    kind: "pmos".into(),
                    devices: vec!["M3".into()],
                    max_rows: 1,
                },
            ],
            modules: vec![],
            bound: vec![],
            groups: vec![],
            hierarchies: Vec::new(),
            top_devices: Vec::new(),
            pack_ranks: Vec::new(),
            blocks: BTreeMap::new(),
        }
    }

    /// The top of two blocks, `amp` (instance `X1`) and `bias` (instance `X2`),
    /// and one device of its own.
    pub(crate) fn space() -> DesignSpace {
        let flat_ids = |path: &str| -> Vec<String> {
            ["M1", "M2"]
                .iter()
                .map(|id| format!("{path}/{id}"))
                .collect()
        };
        let mut nmos: Vec<String> = flat_ids("X1");
        nmos.extend(flat_ids("X2"));
        nmos.push("MC".into());
        let block = |path: &str| BlockSpace {
            path: path.into(),
            space: block_space(),
        };
        DesignSpace {
            kinds: vec![
                KindOrder {
                    kind: "nmos".into(),
                    devices: nmos,
                    max_rows: 2,
                },
                KindOrder {
                    kind: "pmos".into(),
                    devices: vec!["X1/M3".into(), "X2/M3".into()],
                    max_rows: 1,
                },
            ],
            hierarchies: vec!["blocks".into(), "flat".into()],
            top_devices: vec!["MC".into()],
            blocks: [("amp".into(), block("X1")), ("bias".into(), block("X2"))].into(),
            ..block_space()
        }
    }

    #[test]
    fn a_block_without_its_own_point_inherits_the_top_and_has_no_entry() {
        let space = space();
        let top = DesignPoint {
            aspect_ratio_pct: 50,
            order: vec!["X1/M2".into(), "X2/M1".into()],
            ..space.default_point()
        };
        let inherited = space.inherited(&top, "amp").unwrap();
        assert_eq!(inherited.aspect_ratio_pct, 50);
        // the block's own default order, whatever the top's order of its devices
        assert_eq!(inherited.order, ["M1", "M2", "M3"]);
        assert!(inherited.hierarchy.is_empty() && inherited.blocks.is_empty());
        // written out as its own point, it is the same layout: one spelling, no entry
        let spelled = DesignPoint {
            blocks: [("amp".to_string(), inherited)].into(),
            ..top.clone()
        };
        assert!(space.canonical(&spelled).blocks.is_empty());
        // a point of its own stays; a flat point has none
        let own = DesignPoint {
            spacing_nm: 500,
            ..block_space().default_point()
        };
        let with_own = DesignPoint {
            blocks: [("amp".to_string(), own)].into(),
            ..top.clone()
        };
        assert_eq!(space.canonical(&with_own).blocks["amp"].spacing_nm, 500);
        assert_ne!(
            space.canonical(&with_own).key(),
            space.canonical(&top).key()
        );
        let flat = DesignPoint {
            hierarchy: String::new(),
            ..with_own
        };
        assert!(space.canonical(&flat).blocks.is_empty());
    }

    #[test]
    fn orders_that_differ_only_inside_blocks_are_one_point_when_laid_out_as_blocks() {
        let space = space();
        let listed = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
        let first = DesignPoint {
            order: listed(&["X1/M1", "X2/M2", "MC", "X1/M2", "X2/M1", "X2/M3", "X1/M3"]),
            ..space.default_point()
        };
        let second = DesignPoint {
            order: listed(&["MC", "X2/M1", "X1/M2", "X2/M2", "X1/M1", "X1/M3", "X2/M3"]),
            ..space.default_point()
        };
        assert!(first.builds_blocks());
        let canonical = space.canonical(&first);
        assert_eq!(canonical.key(), space.canonical(&second).key());
        assert_eq!(
            canonical.key(),
            space.canonical(&space.default_point()).key()
        );
        assert_eq!(space.canonical(&canonical), canonical, "one spelling");
        // laid out flat, the top's order arranges every device: two points
        let flat = |point: &DesignPoint| {
            space.canonical(&DesignPoint {
                hierarchy: String::new(),
                ..point.clone()
            })
        };
        assert_ne!(flat(&first).key(), flat(&second).key());
        assert_eq!(flat(&first).order, first.order);
    }

    #[test]
    fn crossover_takes_each_block_point_whole_from_one_parent() {
        let space = space();
        let mut rng = SplitMix64::new(7);
        let first = space.canonical(&DesignPoint {
            blocks: [
                ("amp".to_string(), block_space().random_point(&mut rng)),
                ("bias".to_string(), block_space().random_point(&mut rng)),
            ]
            .into(),
            ..space.default_point()
        });
        // the second's blocks inherit its top
        let second = space.canonical(&DesignPoint {
            hierarchy: "blocks".into(),
            blocks: BTreeMap::new(),
            aspect_ratio_pct: 50,
            spacing_nm: 200,
            ..space.random_point(&mut rng)
        });
        let mut from = BTreeMap::<(&str, bool), usize>::new();
        for seed in 0..40 {
            let child = space.crossover(&first, &second, &mut SplitMix64::new(seed));
            for subcircuit in ["amp", "bias"] {
                let drawn = space.block_point(&child, subcircuit).unwrap();
                let of = |parent: &DesignPoint| {
                    let point = space.block_point(parent, subcircuit).unwrap();
                    block_space().canonical(&point)
                };
                let whole = block_space().canonical(&drawn);
                let from_first = whole == of(&first);
                assert!(
                    from_first || whole == of(&second),
                    "{subcircuit}: {whole:?}"
                );
                *from.entry((subcircuit, from_first)).or_default() += 1;
            }
        }
        // each block came from either parent across seeds
        assert_eq!(from.len(), 4, "{from:?}");
    }

    #[test]
    fn mutations_change_the_top_or_one_block_and_random_points_draw_every_block() {
        let space = space();
        let mut rng = SplitMix64::new(3);
        let point = space.canonical(&space.default_point());
        let (mut tops, mut blocks) = (0, 0);
        for _ in 0..60 {
            let mutated = space.mutate(&point, &mut rng);
            assert_ne!(mutated, point);
            if mutated.blocks.is_empty() {
                tops += 1;
            } else {
                assert_eq!(mutated.blocks.len(), 1, "one block at a time");
                blocks += 1;
            }
        }
        assert!(
            tops > 0 && blocks > 0,
            "{tops} top, {blocks} block mutations"
        );
        let random = space.random_point(&mut SplitMix64::new(9));
        assert_eq!(random, space.random_point(&mut SplitMix64::new(9)));
        if random.builds_blocks() {
            assert_eq!(random.blocks.len(), 2);
        }
        assert!(space.size() > block_space().size().pow(2));
    }
}
