//! What the search tried per block of a hierarchical layout (issue 26): each entry of
//! the best candidate's blocks table (`metrics.layout.blocks`) gains how many
//! distinct layouts of the block the candidates measured and the smallest passing one.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::report::CandidateRecord;

/// Of one block cell: its distinct layouts (bounding box and device area, nm²) and
/// the smallest bounding box of a passing candidate.
type Seen = (BTreeSet<(i64, i64)>, Option<f64>);

/// Per block cell: the distinct layouts measured (bounding box and device area, in
/// nm² so that equal layouts compare equal) and the smallest bounding box of a
/// passing candidate.
fn tried_per_block(candidates: &[CandidateRecord]) -> BTreeMap<String, (usize, Option<f64>)> {
    let mut layouts: BTreeMap<String, Seen> = BTreeMap::new();
    for candidate in candidates {
        let blocks = candidate
            .metrics
            .as_ref()
            .and_then(|metrics| metrics.other.get("layout"))
            .and_then(|layout| layout.get("blocks"))
            .and_then(Value::as_array);
        for block in blocks.into_iter().flatten() {
            let Some(cell) = block.get("cell").and_then(Value::as_str) else {
                continue;
            };
            let number = |key: &str| block.get(key).and_then(Value::as_f64).unwrap_or(0.0);
            let area = number("bbox_area_um2");
            let entry = layouts.entry(cell.to_owned()).or_default();
            let nm2 = |um2: f64| (um2 * 1e6).round() as i64;
            entry.0.insert((nm2(area), nm2(number("device_area_um2"))));
            if candidate.passed && area > 0.0 {
                entry.1 = Some(entry.1.map_or(area, |known: f64| known.min(area)));
            }
        }
    }
    layouts
        .into_iter()
        .map(|(cell, (seen, best))| (cell, (seen.len(), best)))
        .collect()
}

/// Adds `variants_tried` and `best_variant_area_um2` to each block of `layout`
/// (the best candidate's figures), from every candidate's.
pub fn annotate_blocks(layout: Option<&mut Value>, candidates: &[CandidateRecord]) {
    let Some(blocks) = layout
        .and_then(|layout| layout.get_mut("blocks"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let tried = tried_per_block(candidates);
    for block in blocks.iter_mut() {
        let Some(cell) = block.get("cell").and_then(Value::as_str) else {
            continue;
        };
        let Some((variants, best)) = tried.get(cell).copied() else {
            continue;
        };
        if let Some(object) = block.as_object_mut() {
            object.insert("variants_tried".into(), json!(variants));
            object.insert("best_variant_area_um2".into(), json!(best));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::CandidateMetrics;

    fn candidate(passed: bool, areas: &[(&str, f64)]) -> CandidateRecord {
        let blocks: Vec<Value> = areas
            .iter()
            .map(
                |(cell, area)| json!({"cell": cell, "bbox_area_um2": area, "device_area_um2": 1.0}),
            )
            .collect();
        let mut other = serde_json::Map::new();
        other.insert("layout".into(), json!({ "blocks": blocks }));
        CandidateRecord {
            id: "c".into(),
            parent: None,
            origin: "draft".into(),
            iteration: 0,
            score: None,
            passed,
            metrics: Some(CandidateMetrics {
                other,
                ..CandidateMetrics::default()
            }),
            error: None,
            seconds: None,
            slot_seconds: None,
            design: Value::Null,
        }
    }

    #[test]
    fn each_block_counts_its_distinct_layouts_and_its_smallest_passing_one() {
        let candidates = [
            candidate(true, &[("BLK_a", 30.0), ("BLK_b", 8.0)]),
            candidate(true, &[("BLK_a", 30.0), ("BLK_b", 9.0)]),
            candidate(false, &[("BLK_a", 20.0)]),
            candidate(true, &[("BLK_a", 25.0)]),
        ];
        let mut layout = json!({"blocks": [{"cell": "BLK_a"}, {"cell": "BLK_b"}]});
        annotate_blocks(Some(&mut layout), &candidates);
        assert_eq!(layout["blocks"][0]["variants_tried"], 3);
        assert_eq!(layout["blocks"][0]["best_variant_area_um2"], 25.0);
        assert_eq!(layout["blocks"][1]["variants_tried"], 2);
        assert_eq!(layout["blocks"][1]["best_variant_area_um2"], 8.0);
    }
}
