//! A hierarchical candidate's blocks (issue 26): every block of the hierarchy laid
//! out once, after the blocks it places, by the stages of a flat plan on its own
//! devices (local ids, port names as nets) into `BLK_<subcircuit>` with its ports;
//! then each instance a `layout.instantiate_block` cell that its parent places in
//! rows of their own and routes as a pseudo-device of type `block`.

use std::collections::{BTreeMap, HashMap, HashSet};

use centroid_schemas::Circuit;
use serde_json::{Value, json};

use super::{Draft, Target};
use crate::design_point::{DesignPoint, PACKED_FROM_ASPECT_PCT};
use crate::hierarchy::{ChildBlock, Hierarchy, Scope};
use crate::placement_order::fold;
use crate::plan_builder::{PlanBuilder, TOP_CELL, cell_name, skill_id};
use crate::skill_catalog::SkillCatalog;

/// One instance of a block placed by a draft.
pub(crate) struct BlockInstance {
    /// the cell holding the reference (`I_X1`, behind the parent's prefix)
    cell: String,
    /// the block's routed cell
    block_cell: String,
    /// its device id in the parent's routing
    name: String,
    /// each exposed port → the parent's net
    terminals: BTreeMap<String, String>,
    /// the flat ids of the devices drawn inside it
    drawn: Vec<String>,
}

/// Whether the workers lay blocks out: `layout.instantiate_block`, and `route.nets`
/// taking `ports`.
pub(crate) fn blocks_supported(skills: &SkillCatalog) -> bool {
    let takes_ports = skills.get("route.nets").is_some_and(|schema| {
        schema
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key("ports"))
    });
    skills.contains_key("layout.instantiate_block") && takes_ports
}

/// The packing ranks a point may choose for the top's block instances (`route.nets`'
/// `pack_block_rows.rank`: 0 the packing with the smallest estimate, then the next
/// ones; issue 26): three where the workers take a rank, else only the first.
pub(crate) fn pack_ranks(skills: &SkillCatalog) -> Vec<u32> {
    let takes_rank = skills.get("route.nets").is_some_and(|schema| {
        schema
            .pointer("/properties/pack_block_rows/properties/rank")
            .is_some()
    });
    if takes_rank {
        vec![0, 1, 2]
    } else {
        Vec::new()
    }
}

/// The routed cell of a block (`layout.metrics` names its figures by it).
pub(crate) fn block_cell(subcircuit: &str) -> String {
    cell_name("BLK", subcircuit)
}

/// `tech.load`, every block of `hierarchy` bottom up, and the draft of the top with
/// its block instances: what a flat plan's draft is after `tech.load`. A block is
/// drawn in its order of `block_orders` (by local ids: its own point's, else its own
/// default order), else in `order`'s (the flat placement order) — and from its own
/// point's knobs, else `point`'s.
pub(crate) fn draft_blocks<'a>(
    (flat, hierarchy): (&'a Circuit, &'a Hierarchy),
    point: &'a DesignPoint,
    (order, block_orders): (&[String], &BTreeMap<String, Vec<String>>),
    skills: &'a SkillCatalog,
    (drc_rules, pitch_um): (&Value, f64),
) -> Draft<'a> {
    let mut builder = PlanBuilder::new(skills);
    builder.push("tech.load", json!({"rules": drc_rules}), false, "");
    // per block: the ids (relative to an instance) of every device drawn inside it
    let mut drawn: HashMap<String, Vec<String>> = HashMap::new();
    let mut drawn_in_blocks = (0, 0);
    for (index, block) in hierarchy.blocks.iter().enumerate() {
        let target = Target {
            cell: block_cell(&block.subcircuit),
            prefix: format!("{}_", cell_name(&format!("B{index}"), &block.subcircuit)),
            ports: block.ports.clone(),
        };
        let scope = &block.scope;
        let block_order = block_orders
            .get(&block.subcircuit)
            .cloned()
            .unwrap_or_else(|| local_order(scope, order));
        let mut draft = Draft::in_cell(
            (&scope.circuit, flat),
            point.of_block(&block.subcircuit),
            block_order,
            builder,
            target,
        );
        draft.add_matched_modules();
        draft.add_single_devices();
        draft.add_block_instances(&scope.children, &drawn);
        draft.add_dummies_and_rings();
        draft.place_in_rows_and_route(pitch_um);
        let mut inside: Vec<String> = draft.used.iter().cloned().collect();
        inside.sort();
        for instance in &draft.blocks {
            let prefix = format!("{}/", scope.path);
            inside.extend(
                instance
                    .drawn
                    .iter()
                    .filter_map(|id| id.strip_prefix(&prefix))
                    .map(str::to_string),
            );
        }
        if !draft.routed {
            draft.builder.notes.push(format!(
                "block {} was not routed: its instances are left out",
                block.subcircuit
            ));
            inside.clear();
        }
        drawn.insert(block.subcircuit.clone(), inside);
        drawn_in_blocks.0 += draft.matched_cells.len();
        drawn_in_blocks.1 += draft.units.len();
        builder = draft.builder;
    }
    let top = &hierarchy.top;
    let mut draft = Draft::in_cell(
        (&top.circuit, flat),
        point,
        order.to_vec(),
        builder,
        Target::top(),
    );
    draft.add_block_instances(&top.children, &drawn);
    draft.drawn_in_blocks = drawn_in_blocks;
    draft
}

/// The point's order of the scope's own devices, as local ids.
fn local_order(scope: &Scope, order: &[String]) -> Vec<String> {
    let local: HashMap<String, &String> = scope
        .circuit
        .devices
        .iter()
        .map(|device| (scope.flat_id(&device.id), &device.id))
        .collect();
    order
        .iter()
        .filter_map(|flat_id| local.get(flat_id).map(|id| (*id).clone()))
        .collect()
}

impl<'a> Draft<'a> {
    /// `layout.instantiate_block` for each block instance of the scope whose block
    /// was laid out (`drawn`: the devices inside each block, relative ids).
    fn add_block_instances(
        &mut self,
        children: &[ChildBlock],
        drawn: &HashMap<String, Vec<String>>,
    ) {
        if !self.builder.has("layout.instantiate_block") {
            return;
        }
        for child in children {
            let Some(inside) = drawn.get(&child.subcircuit).filter(|ids| !ids.is_empty()) else {
                continue;
            };
            let name = skill_id(&child.name);
            let block = block_cell(&child.subcircuit);
            let cell = self.cell("I", &child.name);
            let arguments = json!({"block": block, "device_id": name, "cell_name": cell});
            if !self
                .builder
                .push("layout.instantiate_block", arguments, false, "")
            {
                continue;
            }
            // (a parent's own devices, drawn as a block of the top, keep their ids)
            let drawn: Vec<String> = inside
                .iter()
                .map(|id| match child.path.as_str() {
                    "" => id.clone(),
                    path => format!("{path}/{id}"),
                })
                .collect();
            self.inside_blocks.extend(drawn.iter().cloned());
            self.blocks.push(BlockInstance {
                cell,
                block_cell: block,
                name,
                terminals: child.terminals.clone(),
                drawn,
            });
        }
    }

    /// The rows of block instances, above the device rows: one instance a row for
    /// tall aspect ratios, else about as many rows as instances in a row; each
    /// block's instances next to each other, those of one matched module interleaved
    /// (`matched_order`) in whole rows of their own, as many in each: a sequence
    /// symmetric about its middle laid row by row over full rows of one width is
    /// point-symmetric, a common centroid in both directions. With the rows, per such
    /// module the indices (into them) of its rows: rows a packing moves whole, one
    /// above the other (`pack_block_rows`' `whole_rows`).
    pub(super) fn block_rows(&self) -> (Vec<Vec<String>>, Vec<Vec<usize>>) {
        if self.blocks.is_empty() {
            return (Vec::new(), Vec::new());
        }
        let weight = |instance: &BlockInstance| instance.drawn.len().max(1) as u64;
        let count = if self.point.aspect_ratio_pct < 75 {
            self.blocks.len()
        } else {
            (self.blocks.len() as f64).sqrt().round().max(1.0) as usize
        };
        let total: u64 = self.blocks.iter().map(weight).sum();
        let row_weight = total.div_ceil(count as u64).max(1);
        let mut rows = Vec::new();
        let mut loose: Vec<(String, u64)> = Vec::new();
        let fold_loose = |loose: &mut Vec<(String, u64)>, rows: &mut Vec<Vec<String>>| {
            let weight: u64 = loose.iter().map(|(_, weight)| weight).sum();
            let count = weight.div_ceil(row_weight).max(1) as usize;
            rows.extend(fold(loose, count));
            loose.clear();
        };
        let mut module_rows_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (module, segment) in self.matched_order() {
            if let [instance] = segment[..] {
                loose.push((instance.cell.clone(), weight(instance)));
                continue;
            }
            if !loose.is_empty() {
                fold_loose(&mut loose, &mut rows);
            }
            let weight: u64 = segment.iter().map(|instance| weight(instance)).sum();
            let wanted = (weight as f64 / row_weight as f64).round().max(1.0);
            let module_rows = (1..=segment.len())
                .filter(|rows| segment.len() % rows == 0)
                .min_by(|a, b| {
                    let distance = |rows: usize| (rows as f64 - wanted).abs();
                    distance(*a).total_cmp(&distance(*b))
                })
                .unwrap_or(1);
            let first = rows.len();
            rows.extend(
                segment
                    .chunks(segment.len() / module_rows)
                    .map(|row| row.iter().map(|instance| instance.cell.clone()).collect()),
            );
            // (a run of two or more instances is always a matched module's)
            if let Some(module) = module {
                module_rows_of
                    .entry(module)
                    .or_default()
                    .extend(first..rows.len());
            }
        }
        if !loose.is_empty() {
            fold_loose(&mut loose, &mut rows);
        }
        (rows, module_rows_of.into_values().collect())
    }

    /// The block instances by block cell; inside one block cell, the instances drawing
    /// the members of one matched module (a member's parallel units — the copies of an
    /// `m=k` instance — count as that member) side by side where the first of them
    /// stands, the members interleaved about their middle (A B A B B A B A) so that
    /// their centroids meet, as a layout engineer draws the units of matched devices.
    /// Each segment: one matched module's instances interleaved (with the module's
    /// index: a module drawn by instances of two blocks has a segment in each), or one
    /// other instance.
    fn matched_order(&self) -> Vec<(Option<usize>, Vec<&BlockInstance>)> {
        let mut member_of: HashMap<&str, (usize, &str)> = HashMap::new();
        for (index, module) in self.flat.modules.iter().enumerate() {
            if !module.module_type.is_matched() {
                continue;
            }
            for member in &module.devices {
                let stands_for = member.unit_of.as_deref().unwrap_or(&member.device_id);
                member_of
                    .entry(member.device_id.as_str())
                    .or_insert((index, stands_for));
            }
        }
        let mut instances: Vec<&BlockInstance> = self.blocks.iter().collect();
        instances.sort_by(|a, b| a.block_cell.cmp(&b.block_cell));
        let mut ordered = Vec::with_capacity(instances.len());
        for run in instances.chunk_by(|a, b| a.block_cell == b.block_cell) {
            // per module: its members in order of appearance, each with its instances
            let mut modules: BTreeMap<usize, Vec<(&str, Vec<&BlockInstance>)>> = BTreeMap::new();
            let mut slots: Vec<Result<usize, &BlockInstance>> = Vec::new();
            for instance in run {
                let found = instance
                    .drawn
                    .iter()
                    .find_map(|id| member_of.get(id.as_str()).copied());
                let Some((module, member)) = found else {
                    slots.push(Err(*instance));
                    continue;
                };
                let members = modules.entry(module).or_insert_with(|| {
                    slots.push(Ok(module));
                    Vec::new()
                });
                match members.iter_mut().find(|(id, _)| *id == member) {
                    Some((_, placed)) => placed.push(instance),
                    None => members.push((member, vec![instance])),
                }
            }
            for slot in slots {
                match slot {
                    Err(instance) => ordered.push((None, vec![instance])),
                    Ok(module) => ordered.push((
                        Some(module),
                        interleaved(modules.remove(&module).unwrap_or_default()),
                    )),
                }
            }
        }
        ordered
    }

    /// The packing rank `route.nets` is sent with the rows of blocks: the point's,
    /// for the top (no ports; a block drawn from the top's point when it has none of
    /// its own packs as it would alone) when not the first and the workers take it
    /// (none otherwise: main's plan).
    pub(super) fn pack_rank(&self) -> Option<u32> {
        (self.point.pack_rank > 0
            && self.target.ports.is_empty()
            && self
                .builder
                .takes_field("route.nets", "pack_block_rows", "rank"))
        .then_some(self.point.pack_rank)
    }

    /// Whether `route.nets` packs the rows of blocks again by the blocks' real sizes
    /// (which the planner does not know): the rows of `block_rows` are then a
    /// preference, kept unless a packing is smaller. Not for the tall aspect ratios,
    /// whose one instance a row is the point's choice. When a matched module's
    /// instances are interleaved in rows of their own, only for workers that keep
    /// such rows whole (`whole_rows`: a packing sorts blocks by height and would
    /// scatter them).
    pub(super) fn packs_block_rows(&self) -> bool {
        !self.blocks.is_empty()
            && self.point.aspect_ratio_pct >= PACKED_FROM_ASPECT_PCT
            && (self
                .matched_order()
                .iter()
                .all(|(_, segment)| segment.len() < 2)
                || self
                    .builder
                    .takes_field("route.nets", "pack_block_rows", "whole_rows"))
    }

    /// Each block instance as `route.nets` takes it: a pseudo-device of type `block`
    /// whose terminals are its ports.
    pub(super) fn block_devices(&self) -> Vec<Value> {
        self.blocks
            .iter()
            .map(|instance| {
                json!({"id": instance.name, "type": "block", "terminals": instance.terminals})
            })
            .collect()
    }

    /// `; hierarchy blocks: …` for a layout of blocks, `; hierarchy flat` for a flat
    /// one where blocks were offered (else empty).
    pub(super) fn hierarchy_summary(&self) -> String {
        if self.blocks.is_empty() || self.target.cell != TOP_CELL {
            let flat = if self.blocks_offered {
                "; hierarchy flat"
            } else {
                ""
            };
            return flat.to_string();
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for instance in &self.blocks {
            *counts.entry(instance.block_cell.as_str()).or_default() += 1;
        }
        let listed: Vec<String> = counts
            .iter()
            .map(|(cell, count)| format!("{cell} ×{count}"))
            .collect();
        let inside: HashSet<&String> = self.inside_blocks.iter().collect();
        format!(
            "; hierarchy blocks: {} ({} devices inside blocks)",
            listed.join(", "),
            inside.len()
        )
    }
}

/// The members' instances in a sequence symmetric about its middle: half of each
/// member's instances taken in turn, a member's odd one in the middle, then the first
/// half mirrored (A×4, B×4: A B A B B A B A; both centroids at the middle).
fn interleaved<T: Copy>(members: Vec<(&str, Vec<T>)>) -> Vec<T> {
    let mut halves: Vec<usize> = members.iter().map(|(_, items)| items.len() / 2).collect();
    let mut left: Vec<usize> = Vec::new();
    while halves.iter().any(|half| *half > 0) {
        for (member, half) in halves.iter_mut().enumerate() {
            if *half > 0 {
                *half -= 1;
                left.push(member);
            }
        }
    }
    let middle = members
        .iter()
        .enumerate()
        .filter(|(_, (_, items))| items.len() % 2 == 1)
        .map(|(member, _)| member);
    let sequence: Vec<usize> = left
        .iter()
        .copied()
        .chain(middle)
        .chain(left.iter().rev().copied())
        .collect();
    let mut next = vec![0usize; members.len()];
    sequence
        .into_iter()
        .map(|member| {
            let item = members[member].1[next[member]];
            next[member] += 1;
            item
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::interleaved;

    /// The centroid of each member's positions in the sequence.
    fn centroids(sequence: &[(char, usize)]) -> Vec<(char, f64)> {
        let mut found: Vec<(char, f64, f64)> = Vec::new();
        for (position, (member, _)) in sequence.iter().enumerate() {
            match found.iter_mut().find(|(id, _, _)| id == member) {
                Some((_, sum, count)) => {
                    *sum += position as f64;
                    *count += 1.0;
                }
                None => found.push((*member, position as f64, 1.0)),
            }
        }
        found
            .into_iter()
            .map(|(id, sum, count)| (id, sum / count))
            .collect()
    }

    #[test]
    fn matched_members_units_meet_at_the_middle() {
        let a: Vec<(char, usize)> = (0..4).map(|unit| ('A', unit)).collect();
        let b: Vec<(char, usize)> = (0..4).map(|unit| ('B', unit)).collect();
        let sequence = interleaved(vec![("A", a), ("B", b)]);
        let letters: String = sequence.iter().map(|(member, _)| *member).collect();
        assert_eq!(letters, "ABABBABA");
        assert!(
            centroids(&sequence)
                .iter()
                .all(|(_, c)| (c - 3.5).abs() < 1e-9)
        );
        // every unit once
        let mut units: Vec<(char, usize)> = sequence.clone();
        units.sort();
        assert_eq!(units.len(), 8);
        units.dedup();
        assert_eq!(units.len(), 8);
        // odd counts: one of each in the middle; 2 + 3 units, centroids still meet
        let c: Vec<(char, usize)> = (0..2).map(|unit| ('C', unit)).collect();
        let d: Vec<(char, usize)> = (0..3).map(|unit| ('D', unit)).collect();
        let sequence = interleaved(vec![("C", c), ("D", d)]);
        let letters: String = sequence.iter().map(|(member, _)| *member).collect();
        assert_eq!(letters, "CDDDC");
        assert!(
            centroids(&sequence)
                .iter()
                .all(|(_, c)| (c - 2.0).abs() < 1e-9)
        );
    }
}
