//! What distinguishes one candidate from another: its design point (the search's
//! genes; the plan of skill calls is drawn from it, [`crate::plan`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A point of the design space (what distinguishes one candidate from another).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DesignPoint {
    /// ABBA, ABAB or 2D
    pub arrangement: String,
    /// each device's fingers are split into this many unit instances (divides nf)
    pub finger_split: u32,
    /// dummies per row end of matched modules (0 = none)
    pub dummies: u32,
    pub guard_ring: bool,
    /// index of the permutation of module rows used by placement
    pub row_order: u32,
    /// extra spacing between placed modules, in nanometres
    pub spacing_nm: u32,
    /// target width/height of the placement, in percent (100 = square)
    pub aspect_ratio_pct: u32,
    /// placement order, left to right, as device ids: a cell stands where its first
    /// listed device stands; devices not listed follow in the circuit's default
    /// order (empty: the default order)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<String>,
    /// rows per device kind (`nmos`, `pmos`, `passive`) when more than one
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rows: BTreeMap<String, u32>,
    /// arrangement per matched module id, in place of `arrangement`
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub module_arrangements: BTreeMap<String, String>,
    /// dummies per row end of one matched module, in place of `dummies`
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub module_dummies: BTreeMap<String, u32>,
    /// whether one matched module gets a guard ring, in place of `guard_ring`
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub module_rings: BTreeMap<String, bool>,
    /// how a hierarchical circuit is laid out: `blocks` (each subcircuit of two devices
    /// or more laid out once as its own routed cell, its instances placed by the
    /// parent) or flat (empty; `flat` is spelled empty)
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hierarchy: String,
    /// each block's own point by subcircuit (with `hierarchy: blocks`): its knobs,
    /// its order by local ids and its modules' genes (no `hierarchy`, no `blocks` of
    /// its own); a block without one is drawn from this point's knobs, which
    /// otherwise mean the parent's floorplan
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub blocks: BTreeMap<String, DesignPoint>,
    /// which of the packings of the parent's block instances `route.nets` weighs it
    /// takes (`pack_block_rows`' `rank`): 0 the smallest estimate, 1 the next, …
    /// (issue 26: the estimate misjudges; the farm tries the next-best for real)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pack_rank: u32,
}

fn is_zero(rank: &u32) -> bool {
    *rank == 0
}

/// The aspect ratio (percent) from which a parent's rows of blocks are one instance
/// a row below it, the point's choice; from it up the workers pack them again
/// (`pack_block_rows`), and a point's `pack_rank` means something.
pub const PACKED_FROM_ASPECT_PCT: u32 = 75;

/// The `hierarchy` of a point laid out as blocks.
pub const BLOCKS: &str = "blocks";
/// The `hierarchy` of a flat layout as the design space and a written point name it.
pub const FLAT: &str = "flat";

impl DesignPoint {
    /// The dummies per row end of matched module `module`.
    pub fn dummies_of(&self, module: &str) -> u32 {
        self.module_dummies
            .get(module)
            .copied()
            .unwrap_or(self.dummies)
    }

    /// Whether matched module `module` gets a guard ring.
    pub fn ring_of(&self, module: &str) -> bool {
        self.module_rings
            .get(module)
            .copied()
            .unwrap_or(self.guard_ring)
    }

    /// Whether the point lays a hierarchical circuit out as blocks.
    pub fn builds_blocks(&self) -> bool {
        self.hierarchy == BLOCKS
    }

    /// The point block `subcircuit` is drawn from: its own, else this one.
    pub fn of_block(&self, subcircuit: &str) -> &DesignPoint {
        self.blocks.get(subcircuit).unwrap_or(self)
    }

    pub fn key(&self) -> String {
        let key = self.own_key();
        // appended only when present: the keys of points without them stay as they were
        if self.blocks.is_empty() {
            return key;
        }
        let blocks: BTreeMap<&String, String> = self
            .blocks
            .iter()
            .map(|(subcircuit, point)| (subcircuit, point.key()))
            .collect();
        format!("{key}/b{:016x}", digest(&listed(&blocks)))
    }

    /// The key of the point's own knobs and genes (its blocks' points aside).
    fn own_key(&self) -> String {
        let mut key = format!(
            "{}/s{}/d{}/g{}/r{}/sp{}/ar{}",
            self.arrangement,
            self.finger_split,
            self.dummies,
            u8::from(self.guard_ring),
            self.row_order,
            self.spacing_nm,
            self.aspect_ratio_pct
        );
        // appended only for blocks: the keys of flat points stay as they were
        if self.builds_blocks() {
            key.push_str("/hblocks");
        }
        // appended only when not the first packing: the keys of other points stay as they were
        if self.pack_rank > 0 {
            key.push_str(&format!("/k{}", self.pack_rank));
        }
        if self.order.is_empty()
            && self.rows.is_empty()
            && self.module_arrangements.is_empty()
            && self.module_dummies.is_empty()
            && self.module_rings.is_empty()
        {
            return key;
        }
        // the placement genes are long: a stable digest tells points apart
        let mut genes = format!(
            "{}|{}|{}",
            self.order.join(","),
            listed(&self.rows),
            listed(&self.module_arrangements)
        );
        // appended only when present: the keys of points without them stay as they were
        if !self.module_dummies.is_empty() || !self.module_rings.is_empty() {
            let rings: BTreeMap<&String, u8> = self
                .module_rings
                .iter()
                .map(|(module, ring)| (module, u8::from(*ring)))
                .collect();
            genes.push_str(&format!(
                "|{}|{}",
                listed(&self.module_dummies),
                listed(&rings)
            ));
        }
        format!("{key}/p{:016x}", digest(&genes))
    }
}

/// A stable digest (FNV-1a) of `text`.
fn digest(text: &str) -> u64 {
    text.bytes()
        .fold(0xCBF2_9CE4_8422_2325_u64, |digest, byte| {
            (digest ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3)
        })
}

/// `key=value` for every entry, comma-separated, in key order.
fn listed<K: std::fmt::Display, V: std::fmt::Display>(map: &BTreeMap<K, V>) -> String {
    map.iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}
