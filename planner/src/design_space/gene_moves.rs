//! The design space's gene moves that need no space: one spelling of the groups'
//! dummies and rings, a shuffle, and the order crossover.

use std::collections::{BTreeMap, HashSet};

use crate::random::SplitMix64;

/// One spelling of a per-group choice (a pair's arrangement, a matched cell's dummies
/// or ring): `global` applies to every group without an entry in `overrides`. When
/// `groups` are every module the choice applies to, `global` takes the first group's
/// value and `overrides` holds the groups that differ; without groups, only entries
/// equal to `global` go.
pub(super) fn fold_groups<T: Clone + PartialEq>(
    groups: &[String],
    global: &mut T,
    overrides: &mut BTreeMap<String, T>,
) {
    let Some(first) = groups.first() else {
        overrides.retain(|_, value| *value != *global);
        return;
    };
    let value_of = |module: &String| overrides.get(module).unwrap_or(global).clone();
    let first_value = value_of(first);
    let differing: BTreeMap<String, T> = groups
        .iter()
        .map(|module| (module.clone(), value_of(module)))
        .filter(|(_, value)| *value != first_value)
        .collect();
    *global = first_value;
    *overrides = differing;
}

pub(super) fn shuffle<T>(items: &mut [T], rng: &mut SplitMix64) {
    for index in (1..items.len()).rev() {
        let other = rng.below(index as u64 + 1) as usize;
        items.swap(index, other);
    }
}

/// Order crossover (OX1): `first[a..b]` stays where it is, the remaining places
/// take the other devices in the order `second` lists them.
pub(super) fn order_crossover(
    first: &[String],
    second: &[String],
    rng: &mut SplitMix64,
) -> Vec<String> {
    if first.len() < 2 || first.len() != second.len() {
        return first.to_vec();
    }
    let a = rng.below(first.len() as u64) as usize;
    let b = rng.below(first.len() as u64) as usize;
    let (low, high) = (a.min(b), a.max(b));
    let kept: HashSet<&String> = first[low..=high].iter().collect();
    let mut rest = second.iter().filter(|device| !kept.contains(device));
    (0..first.len())
        .map(|index| {
            if (low..=high).contains(&index) {
                first[index].clone()
            } else {
                rest.next().cloned().unwrap_or_else(|| first[index].clone())
            }
        })
        .collect()
}
