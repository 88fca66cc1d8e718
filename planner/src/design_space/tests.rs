//! Random points, mutation, crossover and the canonical spelling of a point.

use std::collections::HashSet;

use super::*;

pub(crate) fn space() -> DesignSpace {
    DesignSpace {
        arrangements: vec!["ABBA".into(), "ABAB".into()],
        finger_splits: vec![1, 2],
        dummies: vec![0, 1],
        guard_rings: vec![false],
        row_orders: 2,
        spacings_nm: vec![0],
        aspect_ratios_pct: vec![100],
        kinds: vec![
            KindOrder {
                kind: "nmos".into(),
                devices: vec!["M1".into(), "M2".into(), "M5".into()],
                max_rows: 2,
            },
            KindOrder {
                kind: "pmos".into(),
                devices: vec!["M3".into(), "M4".into()],
                max_rows: 1,
            },
        ],
        modules: vec!["dp".into()],
        bound: vec![],
        groups: vec!["dp".into(), "mirror".into()],
        hierarchies: Vec::new(),
        top_devices: Vec::new(),
        pack_ranks: Vec::new(),
        blocks: BTreeMap::new(),
    }
}

fn same_devices(order: &[String], space: &DesignSpace) -> bool {
    let mut sorted = order.to_vec();
    sorted.sort();
    let mut all = space.default_order();
    all.sort();
    sorted == all
}

#[test]
fn mutations_and_crossovers_keep_every_device_once_and_rows_within_bounds() {
    let space = space();
    let mut rng = SplitMix64::new(11);
    let mut point = space.default_point();
    let mut other = space.random_point(&mut rng);
    for _ in 0..500 {
        point = space.mutate(&point, &mut rng);
        other = space.crossover(&point, &other, &mut rng);
        for candidate in [&point, &other] {
            assert!(
                same_devices(&candidate.order, &space),
                "{:?}",
                candidate.order
            );
            assert!(candidate.rows.get("nmos").is_none_or(|rows| *rows <= 2));
            assert!(!candidate.rows.contains_key("pmos"));
        }
    }
}

#[test]
fn mutations_give_single_groups_their_own_dummies_in_one_spelling() {
    let space = space();
    let mut rng = SplitMix64::new(3);
    let mut point = space.default_point();
    let mut apart = 0;
    for _ in 0..400 {
        point = space.mutate(&point, &mut rng);
        for (module, count) in &point.module_dummies {
            assert!(space.groups.contains(module), "{module}");
            assert!(space.dummies.contains(count));
            assert_ne!(
                *count, point.dummies,
                "an override repeats the global count"
            );
            assert_ne!(module, "dp", "the first group's count is the global one");
        }
        assert!(point.module_rings.is_empty(), "no rings in this space");
        let counts: HashSet<u32> = space
            .groups
            .iter()
            .map(|module| point.dummies_of(module))
            .collect();
        apart += usize::from(counts.len() > 1);
    }
    assert!(apart > 0, "no point gave the two groups different dummies");
    // three spellings of "two dummies at both groups" are one point, one key
    let default = space.default_point();
    let mut each = default.clone();
    each.dummies = 0;
    each.module_dummies = [("dp".into(), 2), ("mirror".into(), 2)].into();
    let mut global = default.clone();
    global.dummies = 2;
    let mut repeated = global.clone();
    repeated.module_dummies = [("mirror".into(), 2)].into();
    let canonical = space.canonical(&global);
    assert!(canonical.module_dummies.is_empty());
    for spelling in [&each, &repeated] {
        assert_eq!(space.canonical(spelling), canonical);
        assert_eq!(space.canonical(spelling).key(), canonical.key());
    }
    // and the first group's own count is the global one
    let mut apart = default;
    apart.module_dummies = [("dp".into(), 0)].into();
    let canonical = space.canonical(&apart);
    assert_eq!(canonical.dummies, 0);
    assert_eq!(canonical.module_dummies, [("mirror".into(), 1)].into());
}

#[test]
fn a_partial_order_is_completed_from_the_default() {
    let space = space();
    let mut point = space.default_point();
    point.order = vec!["M5".into(), "unknown".into(), "M5".into()];
    assert_eq!(space.full_order(&point), ["M5", "M1", "M2", "M3", "M4"]);
}

#[test]
fn the_space_counts_orders_rows_and_module_arrangements() {
    let space = space();
    // knobs (arrangement: the module's)·2·(dummies: the first group's)·1·2·1·1 = 4;
    // orders 3!·2 (rows) · 2!·1 = 24; one module's arrangement: 2; two groups'
    // dummies and rings: (2·1)²
    assert_eq!(space.size(), 4 * 24 * 2 * 4);
    let mut rng = SplitMix64::new(5);
    let first = space.random_point(&mut rng);
    let again = space.random_point(&mut SplitMix64::new(5));
    assert_eq!(first, again, "deterministic for a seed");
}
