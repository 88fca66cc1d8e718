//! What the search's random draws can give: how many distinct points (each in its
//! one spelling, [`DesignSpace::canonical`]) `DesignSpace::random_point` reaches,
//! and whether a point is one of them. The draft loop stops once every one of them
//! is proposed or tried already: no further draw could be accepted, so stopping
//! there drafts the same points — it used to draw on to its limit of tries
//! (`DesignSpace::size` counts every spelling of an order and the groups' own
//! genes, which random draws never give: ota5's 1,944 drawable points against
//! 11,664), ~0.4 s per 2,000-candidate iteration.
//!
//! Known exactly for flat spaces (no blocks, at most one hierarchy) whose kinds
//! name distinct devices and rows, whose modules are distinct and whose bound
//! modules lie within one kind each; otherwise unknown, and the loop draws to its
//! limit as before. An overcount only delays the stop; an undercount would stop
//! too early, so every count here is of distinct values.

use std::collections::{HashMap, HashSet};

use crate::design_point::{BLOCKS, DesignPoint};
use crate::design_space::DesignSpace;
use crate::placement_order::complete;

pub(super) struct DrawImage<'a> {
    space: &'a DesignSpace,
    /// the index in `space.kinds` of every device the kinds list
    kind_of: HashMap<&'a str, usize>,
    /// the `hierarchy` every random point spells
    hierarchy: &'static str,
    size: u64,
}

/// The number of distinct values of `values`.
fn distinct<T: PartialEq>(values: &[T]) -> u64 {
    let mut count = 0u64;
    for (index, value) in values.iter().enumerate() {
        if !values[..index].contains(value) {
            count += 1;
        }
    }
    count
}

fn factorial(count: u64) -> u64 {
    (1..=count).fold(1u64, |product, factor| product.saturating_mul(factor))
}

impl<'a> DrawImage<'a> {
    /// `None` when the count is not known exactly (see the module's comment).
    pub(super) fn of(space: &'a DesignSpace) -> Option<DrawImage<'a>> {
        if !space.blocks.is_empty() || space.hierarchies.len() > 1 {
            return None;
        }
        let mut kind_of: HashMap<&str, usize> = HashMap::new();
        let mut kind_names: HashSet<&str> = HashSet::new();
        for (index, kind) in space.kinds.iter().enumerate() {
            if !kind_names.insert(kind.kind.as_str()) {
                return None;
            }
            for device in &kind.devices {
                if kind_of.insert(device.as_str(), index).is_some() {
                    return None;
                }
            }
        }
        // each bound module collapses its listed devices into one unit of one kind
        let mut units: Vec<u64> = space
            .kinds
            .iter()
            .map(|kind| kind.devices.len() as u64)
            .collect();
        let mut grouped: HashSet<&str> = HashSet::new();
        for group in &space.bound {
            let mut kinds_of_group = HashSet::new();
            let mut listed = 0u64;
            for device in group {
                if !grouped.insert(device.as_str()) {
                    return None;
                }
                if let Some(kind) = kind_of.get(device.as_str()) {
                    kinds_of_group.insert(*kind);
                    listed += 1;
                }
            }
            match kinds_of_group.into_iter().collect::<Vec<_>>()[..] {
                [] => {}
                [kind] => units[kind] -= listed - 1,
                _ => return None,
            }
        }
        if distinct(&space.modules) != space.modules.len() as u64 {
            return None;
        }
        let arrangements = distinct(&space.arrangements);
        let factors = [
            // each module's arrangement (the global one is the first module's; without
            // modules, the global one alone)
            arrangements.saturating_pow(space.modules.len().max(1) as u32),
            distinct(&space.finger_splits),
            // random points give every group the global dummies and ring
            distinct(&space.dummies),
            distinct(&space.guard_rings),
            u64::from(space.row_orders.max(1)),
            distinct(&space.spacings_nm),
            distinct(&space.aspect_ratios_pct),
        ];
        let orders = units.into_iter().map(factorial);
        let rows = space
            .kinds
            .iter()
            .map(|kind| u64::from(kind.max_rows.max(1)));
        let size = factors
            .into_iter()
            .chain(orders)
            .chain(rows)
            .fold(1u64, |size, factor| size.saturating_mul(factor));
        let hierarchy = match space.hierarchies.first() {
            Some(first) if first == BLOCKS => BLOCKS,
            _ => "",
        };
        Some(DrawImage {
            space,
            kind_of,
            hierarchy,
            size,
        })
    }

    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Whether `point` (in its one spelling) is one a random draw gives.
    pub(super) fn holds(&self, point: &DesignPoint) -> bool {
        let space = self.space;
        let knobs = space.arrangements.contains(&point.arrangement)
            && space.finger_splits.contains(&point.finger_split)
            && space.dummies.contains(&point.dummies)
            && space.guard_rings.contains(&point.guard_ring)
            && point.row_order < space.row_orders.max(1)
            && space.spacings_nm.contains(&point.spacing_nm)
            && space.aspect_ratios_pct.contains(&point.aspect_ratio_pct)
            && point.hierarchy == self.hierarchy;
        let genes = point.module_dummies.is_empty()
            && point.module_rings.is_empty()
            && point.blocks.is_empty()
            && point.rows.iter().all(|(kind, rows)| {
                space
                    .kinds
                    .iter()
                    .any(|known| known.kind == *kind && (2..=known.max_rows).contains(rows))
            })
            && point
                .module_arrangements
                .iter()
                .all(|(module, arrangement)| {
                    space.modules.contains(module)
                        && space.arrangements.contains(arrangement)
                        && *arrangement != point.arrangement
                });
        knobs && genes && self.drawable_order(point)
    }

    /// Every device once, the kinds one after the other in the space's order, each
    /// bound module together in its own order (what completing a draw spells).
    fn drawable_order(&self, point: &DesignPoint) -> bool {
        if point.order.len() != self.kind_of.len() {
            return false;
        }
        let mut last_kind = 0;
        for device in &point.order {
            match self.kind_of.get(device.as_str()) {
                Some(kind) if *kind >= last_kind => last_kind = *kind,
                _ => return false,
            }
        }
        complete(point, &self.space.kinds, &self.space.bound) == point.order
    }
}
