//! The candidate journal as a search tree (seed 003): every candidate is a node
//! with its parent; each iteration repairs failed leaves, combines the smallest
//! variant of each block under an elite floorplan (hierarchical circuits,
//! `block_variants.rs`), breeds children of the best points (tournament selection,
//! crossover, mutation: an evolutionary search over the design space) and drafts
//! new random points. Deterministic for a given seed and journal.

use std::collections::HashSet;

use crate::candidate::{CandidateRecord, Origin};
use crate::design_point::DesignPoint;
use crate::design_space::DesignSpace;
use crate::evaluation::Evaluation;
use crate::random::SplitMix64;

mod block_variants;
mod draw_image;
mod point_set;
use block_variants::combined_points;
pub use block_variants::{BlockRecord, BlockVariant, VARIANTS_KEPT, block_records};
use draw_image::DrawImage;
use point_set::PointSet;

/// A node of the journal.
#[derive(Debug, Clone)]
pub struct Node {
    pub candidate_id: String,
    pub parent_id: String,
    pub point: DesignPoint,
    pub evaluation: Option<Evaluation>,
    pub origin: Origin,
}

impl Node {
    /// Whether the node is a point of the design space (a plan written whole by a
    /// model is not: its point only labels it, so the search neither repairs nor
    /// mutates it).
    fn is_point(&self) -> bool {
        self.origin != Origin::LlmPlan
    }

    fn is_buggy(&self) -> bool {
        self.evaluation
            .as_ref()
            .is_none_or(|evaluation| !evaluation.passed)
    }

    fn score(&self) -> f64 {
        self.evaluation
            .as_ref()
            .map_or(0.0, |evaluation| evaluation.score)
    }
}

/// What the next iteration should run.
#[derive(Debug, Clone, PartialEq)]
pub struct Proposal {
    pub point: DesignPoint,
    pub parent_id: String,
    pub origin: Origin,
}

pub struct Journal {
    nodes: Vec<Node>,
}

impl Journal {
    pub fn from_candidates(candidates: &[CandidateRecord]) -> Journal {
        let mut nodes: Vec<Node> = candidates
            .iter()
            .map(|candidate| Node {
                candidate_id: candidate.candidate_id.clone(),
                parent_id: candidate.parent_id.clone(),
                point: candidate.design_point.clone(),
                evaluation: candidate.evaluation.clone(),
                origin: candidate.origin,
            })
            .collect();
        nodes.sort_by(|left, right| left.candidate_id.cmp(&right.candidate_id));
        Journal { nodes }
    }

    /// The best node: passed first, then by score, then by id (stable).
    pub fn best(&self) -> Option<&Node> {
        Journal::best_of(self.nodes.iter())
    }

    fn best_of<'a>(nodes: impl Iterator<Item = &'a Node>) -> Option<&'a Node> {
        nodes
            .filter(|node| node.evaluation.is_some())
            .max_by(|left, right| {
                let key = |node: &Node| {
                    (
                        node.evaluation
                            .as_ref()
                            .is_some_and(|evaluation| evaluation.passed),
                        node.score(),
                    )
                };
                let (left_passed, left_score) = key(left);
                let (right_passed, right_score) = key(right);
                left_passed
                    .cmp(&right_passed)
                    .then(left_score.total_cmp(&right_score))
                    .then(right.candidate_id.cmp(&left.candidate_id))
            })
    }

    /// The population the next children come from: up to `size` evaluated points,
    /// best first (passed before failed, then by score).
    fn elite(&self, size: usize) -> Vec<&Node> {
        let mut ranked: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|node| node.is_point() && node.evaluation.is_some())
            .collect();
        ranked.sort_by(|left, right| {
            let passed = |node: &Node| node.evaluation.as_ref().is_some_and(|e| e.passed);
            passed(right)
                .cmp(&passed(left))
                .then(right.score().total_cmp(&left.score()))
                .then(left.candidate_id.cmp(&right.candidate_id))
        });
        if ranked.first().is_some_and(|node| !node.is_buggy()) {
            ranked.retain(|node| !node.is_buggy());
        }
        ranked.truncate(size);
        ranked
    }

    /// Failed nodes nobody tried to repair yet, best first (a node without an
    /// evaluation is still running — an iteration drafted ahead — not failed).
    fn unrepaired_failures(&self) -> Vec<&Node> {
        let parents: HashSet<&str> = self
            .nodes
            .iter()
            .map(|node| node.parent_id.as_str())
            .collect();
        let mut failures: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|node| {
                node.is_point()
                    && node.evaluation.is_some()
                    && node.is_buggy()
                    && !parents.contains(node.candidate_id.as_str())
            })
            .collect();
        failures.sort_by(|left, right| {
            right
                .score()
                .total_cmp(&left.score())
                .then(left.candidate_id.cmp(&right.candidate_id))
        });
        failures
    }

    /// A repaired point for a failed node, from what its evaluation says.
    fn repair(space: &DesignSpace, node: &Node, rng: &mut SplitMix64) -> DesignPoint {
        let mut point = node.point.clone();
        let reasons = node
            .evaluation
            .as_ref()
            .map(|evaluation| evaluation.reasons.join(" "))
            .unwrap_or_default();
        let next_larger = |values: &[u32], current: u32| {
            values
                .iter()
                .copied()
                .filter(|value| *value > current)
                .min()
        };
        if reasons.contains("DRC violations") {
            if let Some(spacing) = next_larger(&space.spacings_nm, point.spacing_nm) {
                point.spacing_nm = spacing;
            } else {
                point.guard_ring = false;
                point.module_rings.clear();
            }
        }
        if reasons.contains("matching") {
            point.arrangement = space
                .arrangements
                .iter()
                .find(|arrangement| **arrangement != point.arrangement && *arrangement != "ABAB")
                .cloned()
                .unwrap_or_else(|| "ABBA".into());
            if space.dummies.contains(&1) && point.dummies == 0 {
                point.dummies = 1;
            }
            // every group gets the dummies (a module without them may be the mismatch)
            point.module_dummies.retain(|_, count| *count > 0);
            if let Some(split) = space.finger_splits.iter().max() {
                point.finger_split = *split;
            }
        }
        if reasons.contains("max_area") {
            point.guard_ring = false;
            point.module_rings.clear();
            point.spacing_nm = space.spacings_nm.iter().copied().min().unwrap_or(0);
            point.aspect_ratio_pct = 100;
            point.dummies = point.dummies.min(1);
            point
                .module_dummies
                .values_mut()
                .for_each(|count| *count = (*count).min(1));
        }
        if reasons.contains("did not run") {
            point.guard_ring = false;
            point.module_rings.clear();
            point.dummies = point.dummies.min(1);
            point.module_dummies.clear();
            point.arrangement = space
                .arrangements
                .first()
                .cloned()
                .unwrap_or_else(|| "ABBA".into());
        }
        if point == node.point {
            point = space.mutate(&node.point, rng);
        }
        point
    }

    /// Proposals for iteration `iteration`: the `preset` ones first (a planner's
    /// advice), then about a quarter repairs, for a hierarchical circuit about a
    /// quarter combinations of the best block variants, half improvements of the
    /// best, the rest new drafts; never a point already tried, nor one of `avoid` (points
    /// that failed on similar circuits).
    pub fn propose(
        &self,
        space: &DesignSpace,
        count: usize,
        seed: u64,
        iteration: u32,
        preset: Vec<Proposal>,
        avoid: &[DesignPoint],
    ) -> Vec<Proposal> {
        let mut rng =
            SplitMix64::new(seed ^ (iteration as u64).wrapping_mul(0xA24B_AED4_963E_E407));
        // a point names its whole order, so that two spellings of one layout are one point
        let whole = |point: &DesignPoint| space.canonical(point);
        let mut seen: PointSet = self
            .nodes
            .iter()
            .filter(|node| node.is_point())
            .map(|node| whole(&node.point))
            .chain(avoid.iter().map(whole))
            .collect();
        let mut proposals = Vec::new();
        let accept =
            |mut proposal: Proposal, seen: &mut PointSet, proposals: &mut Vec<Proposal>| {
                proposal.point = whole(&proposal.point);
                if proposals.len() < count && seen.add(&proposal.point) {
                    proposals.push(proposal);
                    true
                } else {
                    false
                }
            };
        for proposal in preset {
            accept(proposal, &mut seen, &mut proposals);
        }
        if self.nodes.is_empty() && !avoid.contains(&space.default_point()) {
            accept(
                Proposal {
                    point: space.default_point(),
                    parent_id: String::new(),
                    origin: Origin::Draft,
                },
                &mut seen,
                &mut proposals,
            );
        } else {
            let repairs = (count / 4).max(1);
            for node in self.unrepaired_failures().into_iter().take(repairs) {
                let point = Journal::repair(space, node, &mut rng);
                accept(
                    Proposal {
                        point,
                        parent_id: node.candidate_id.clone(),
                        origin: Origin::Repair,
                    },
                    &mut seen,
                    &mut proposals,
                );
            }
            let elite = self.elite(count.max(4));
            // the best point with the next packing of the top's blocks not tried yet:
            // the packing's estimate misjudges both ways, routing it tells (issue 26)
            if let Some(best) = elite.first().filter(|node| node.point.builds_blocks()) {
                for rank in &space.pack_ranks {
                    let point = DesignPoint {
                        pack_rank: *rank,
                        ..best.point.clone()
                    };
                    let proposal = Proposal {
                        point,
                        parent_id: best.candidate_id.clone(),
                        origin: Origin::Improve,
                    };
                    if accept(proposal, &mut seen, &mut proposals) {
                        break;
                    }
                }
            }
            if !space.blocks.is_empty() {
                let records = block_records(self.nodes.iter(), space, VARIANTS_KEPT);
                let combinations = (count / 4).max(1);
                let mut made = 0;
                for (point, parent_id) in combined_points(space, &elite, &records) {
                    if made == combinations {
                        break;
                    }
                    let proposal = Proposal {
                        point,
                        parent_id,
                        origin: Origin::Combine,
                    };
                    if accept(proposal, &mut seen, &mut proposals) {
                        made += 1;
                    }
                }
            }
            if !elite.is_empty() {
                // the population: children of the best points (crossover of two
                // tournament winners, or one winner alone), each mutated once or twice
                let children = (count * 3 / 4).max(1);
                let mut made = 0;
                for _ in 0..children * 10 {
                    if made == children {
                        break;
                    }
                    let first = tournament(&elite, &mut rng);
                    let mut point = if elite.len() > 1 && rng.below(2) == 0 {
                        let second = tournament(&elite, &mut rng);
                        space.crossover(&first.point, &second.point, &mut rng)
                    } else {
                        first.point.clone()
                    };
                    point = space.mutate(&point, &mut rng);
                    if rng.below(3) == 0 {
                        point = space.mutate(&point, &mut rng);
                    }
                    if accept(
                        Proposal {
                            point,
                            parent_id: first.candidate_id.clone(),
                            origin: Origin::Improve,
                        },
                        &mut seen,
                        &mut proposals,
                    ) {
                        made += 1;
                    }
                }
            }
        }
        // new drafts until the iteration is full, or every point a draw can give is
        // proposed or tried (no draw could be accepted: the same points as drawing
        // on to the limit of tries)
        let image = DrawImage::of(space);
        let mut covered = image
            .as_ref()
            .map_or(0, |image| seen.count(|point| image.holds(point)));
        let mut tries = 0;
        while proposals.len() < count
            && tries < count * 50
            && (seen.len() as u64) < space.size()
            && image.as_ref().is_none_or(|image| covered < image.size())
        {
            tries += 1;
            let point = space.random_point(&mut rng);
            let proposal = Proposal {
                point,
                parent_id: String::new(),
                origin: Origin::Draft,
            };
            if accept(proposal, &mut seen, &mut proposals) {
                covered += 1;
            }
        }
        proposals
    }
}

/// The better of two random members of `elite` (sorted best first).
fn tournament<'a>(elite: &[&'a Node], rng: &mut SplitMix64) -> &'a Node {
    let a = rng.below(elite.len() as u64) as usize;
    let b = rng.below(elite.len() as u64) as usize;
    elite[a.min(b)]
}

#[cfg(test)]
mod tests;
