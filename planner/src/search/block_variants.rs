//! Block-level selection (issue 26): every passing candidate laid out as blocks
//! measured each block's cell on its own (`layout.metrics` `blocks`); the journal
//! keeps per block the smallest variants seen — a variant is the point the block was
//! drawn from, its own or the one it inherited from the top — and drafts children
//! that put the best variant of each block under a parent floorplan of the elite.

use std::collections::BTreeMap;

use crate::candidate_plan::block_cell;
use crate::design_point::DesignPoint;
use crate::design_space::DesignSpace;

use super::Node;

/// How many variants of each block the journal keeps.
pub const VARIANTS_KEPT: usize = 3;

/// One way a block was drawn and the area its cell took.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockVariant {
    /// the point the block was drawn from, in its space's spelling
    pub point: DesignPoint,
    /// its key (ties between equal areas go to the smaller key)
    pub key: String,
    /// the bounding box of the block's cell, µm²
    pub area_um2: f64,
    /// how many candidates drew the block from this point
    pub candidates: usize,
}

/// What the journal learnt about one block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockRecord {
    /// the distinct variants measured (passing or not)
    pub tried: usize,
    /// the best variants among passing candidates, smallest first
    pub best: Vec<BlockVariant>,
}

/// One variant as the journal measured it: its point, the smallest area of a
/// passing candidate drawing it, how many candidates drew it.
type Measured = (DesignPoint, Option<f64>, usize);

/// Per block of `space` (by subcircuit), the variants `nodes` measured: how many
/// distinct ones, and the `keep` smallest of the passing candidates (ties by key).
pub fn block_records<'a>(
    nodes: impl Iterator<Item = &'a Node>,
    space: &DesignSpace,
    keep: usize,
) -> BTreeMap<String, BlockRecord> {
    // per block: variant key → what was measured of it
    let mut seen: BTreeMap<&String, BTreeMap<String, Measured>> = BTreeMap::new();
    for node in nodes {
        let Some(evaluation) = node.evaluation.as_ref() else {
            continue;
        };
        let Some(figures) = evaluation.layout.as_ref() else {
            continue;
        };
        if !node.is_point() || !node.point.builds_blocks() || figures.blocks.is_empty() {
            continue;
        }
        let top = space.canonical(&node.point);
        for (subcircuit, block) in &space.blocks {
            let cell = block_cell(subcircuit);
            let Some(figure) = figures.blocks.iter().find(|figure| figure.cell == cell) else {
                continue;
            };
            let Some(drawn) = space.block_point(&top, subcircuit) else {
                continue;
            };
            let point = block.space.canonical(&drawn);
            let key = point.key();
            let entry = seen
                .entry(subcircuit)
                .or_default()
                .entry(key)
                .or_insert((point, None, 0));
            entry.2 += 1;
            if evaluation.passed && figure.bbox_area_um2 > 0.0 {
                let area = figure.bbox_area_um2;
                entry.1 = Some(entry.1.map_or(area, |known: f64| known.min(area)));
            }
        }
    }
    seen.into_iter()
        .map(|(subcircuit, variants)| {
            let tried = variants.len();
            let mut best: Vec<BlockVariant> = variants
                .into_iter()
                .filter_map(|(key, (point, area, candidates))| {
                    area.map(|area_um2| BlockVariant {
                        point,
                        key,
                        area_um2,
                        candidates,
                    })
                })
                .collect();
            best.sort_by(|a, b| a.area_um2.total_cmp(&b.area_um2).then(a.key.cmp(&b.key)));
            best.truncate(keep);
            (subcircuit.clone(), BlockRecord { tried, best })
        })
        .collect()
}

/// Children of `parents` (best first) that combine the best variant of every block
/// with the parent's floorplan: first each parent with every block's best variant,
/// then with one block's second best, … in that order, with the parent's id
/// (deterministic; the caller takes the first it has not tried).
pub fn combined_points(
    space: &DesignSpace,
    parents: &[&Node],
    records: &BTreeMap<String, BlockRecord>,
) -> Vec<(DesignPoint, String)> {
    if records.values().all(|record| record.best.is_empty()) {
        return Vec::new();
    }
    // every block's best variant, then each block in turn taking its next best
    let mut choices: Vec<BTreeMap<&String, &DesignPoint>> = Vec::new();
    let best: BTreeMap<&String, &DesignPoint> = records
        .iter()
        .filter_map(|(subcircuit, record)| Some((subcircuit, &record.best.first()?.point)))
        .collect();
    choices.push(best.clone());
    for rank in 1..VARIANTS_KEPT {
        for (subcircuit, record) in records {
            if let Some(variant) = record.best.get(rank) {
                let mut choice = best.clone();
                choice.insert(subcircuit, &variant.point);
                choices.push(choice);
            }
        }
    }
    let mut children = Vec::new();
    for choice in &choices {
        for parent in parents
            .iter()
            .filter(|parent| parent.is_point() && parent.point.builds_blocks())
        {
            let mut child = space.canonical(&parent.point);
            for (subcircuit, point) in choice {
                child.blocks.insert((*subcircuit).clone(), (*point).clone());
            }
            children.push((space.canonical(&child), parent.candidate_id.clone()));
        }
    }
    children
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::{CandidateRecord, Origin};
    use crate::design_space::space_with_blocks;
    use crate::evaluation::Evaluation;
    use crate::figures::{BlockFigure, LayoutFigures};
    use crate::plan::Plan;
    use crate::search::Journal;

    fn candidate(
        id: &str,
        point: DesignPoint,
        (passed, score): (bool, f64),
        areas: &[(&str, f64)],
    ) -> CandidateRecord {
        let blocks = areas
            .iter()
            .map(|(subcircuit, area)| BlockFigure {
                cell: block_cell(subcircuit),
                instances: 1,
                bbox_area_um2: *area,
                ..BlockFigure::default()
            })
            .collect();
        CandidateRecord {
            candidate_id: id.into(),
            job_id: "j".into(),
            iteration: 0,
            parent_id: String::new(),
            origin: Origin::Draft,
            design_point: point,
            plan: Plan::default(),
            required_skills: vec![],
            evaluation: Some(Evaluation {
                score,
                passed,
                drc_violations: 0,
                lvs: "match".into(),
                area_um2: 100.0,
                area_score: 0.5,
                matching_score: 1.0,
                reasons: vec![],
                drc_by_rule: Default::default(),
                lvs_mismatches: Vec::new(),
                signoff: None,
                layout: Some(LayoutFigures {
                    blocks,
                    ..LayoutFigures::default()
                }),
                performance: None,
                parasitics: None,
                electrical: None,
                performance_share: None,
            }),
        }
    }

    /// Three variants of `amp` (the smallest one failed), `bias` inherited.
    fn journal(space: &DesignSpace) -> (Journal, [DesignPoint; 3]) {
        let amp = &space.blocks["amp"].space;
        let variant = |spacing_nm: u32, aspect_ratio_pct: u32| DesignPoint {
            spacing_nm,
            aspect_ratio_pct,
            ..amp.default_point()
        };
        let variants = [variant(500, 100), variant(200, 50), variant(0, 50)];
        let with = |amp: &DesignPoint, aspect_ratio_pct: u32| DesignPoint {
            aspect_ratio_pct,
            blocks: [("amp".to_string(), amp.clone())].into(),
            ..space.default_point()
        };
        let candidates = [
            candidate(
                "c1",
                with(&variants[0], 100),
                (true, 0.9),
                &[("amp", 50.0), ("bias", 20.0)],
            ),
            candidate(
                "c2",
                with(&variants[1], 50),
                (true, 0.8),
                &[("amp", 30.0), ("bias", 25.0)],
            ),
            candidate(
                "c3",
                with(&variants[2], 100),
                (false, 0.1),
                &[("amp", 10.0)],
            ),
        ];
        (Journal::from_candidates(&candidates), variants)
    }

    #[test]
    fn each_block_keeps_its_smallest_passing_variants() {
        let space = space_with_blocks();
        let (journal, variants) = journal(&space);
        let records = block_records(journal.nodes.iter(), &space, VARIANTS_KEPT);
        let amp = &records["amp"];
        assert_eq!(amp.tried, 3);
        let areas: Vec<f64> = amp.best.iter().map(|variant| variant.area_um2).collect();
        assert_eq!(areas, [30.0, 50.0], "the failed 10 µm² variant is not kept");
        let canonical = |point: &DesignPoint| space.blocks["amp"].space.canonical(point);
        assert_eq!(amp.best[0].point, canonical(&variants[1]));
        // bias inherited c1's and c2's tops: two variants, c1's the smaller
        let bias = &records["bias"];
        assert_eq!(bias.tried, 2);
        let c1 = space.canonical(&journal.nodes[0].point);
        let inherited = space.inherited(&c1, "bias").unwrap();
        assert_eq!(
            bias.best[0].point,
            space.blocks["bias"].space.canonical(&inherited)
        );
    }

    #[test]
    fn combining_puts_each_blocks_best_variant_under_an_elite_floorplan() {
        let space = space_with_blocks();
        let (journal, variants) = journal(&space);
        let proposals = journal.propose(&space, 4, 1, 1, vec![], &[]);
        assert_eq!(proposals, journal.propose(&space, 4, 1, 1, vec![], &[]));
        let combined: Vec<&crate::search::Proposal> = proposals
            .iter()
            .filter(|proposal| proposal.origin == Origin::Combine)
            .collect();
        assert_eq!(combined.len(), 1, "{proposals:?}");
        let child = &combined[0].point;
        assert_eq!(combined[0].parent_id, "c1", "the best floorplan");
        let c1 = space.canonical(&journal.nodes[0].point);
        assert_eq!(child.aspect_ratio_pct, c1.aspect_ratio_pct);
        let drawn = |point: &DesignPoint, subcircuit: &str| {
            let block = &space.blocks[subcircuit].space;
            block.canonical(&space.block_point(point, subcircuit).unwrap())
        };
        assert_eq!(
            drawn(child, "amp"),
            space.blocks["amp"].space.canonical(&variants[1])
        );
        assert_eq!(drawn(child, "bias"), drawn(&c1, "bias"));
        // a flat journal combines nothing
        let flat = DesignSpace {
            blocks: BTreeMap::new(),
            ..space.clone()
        };
        let none = journal.propose(&flat, 4, 1, 1, vec![], &[]);
        assert!(
            none.iter()
                .all(|proposal| proposal.origin != Origin::Combine)
        );
    }
}
