//! `centroid run` on four matched current sources, each a stack of two segments (issue
//! 26), written once as instances of a stack subcircuit (laid out as blocks: one block
//! per instance) and once device by device (laid out flat: the bottoms in one matched
//! cell, the tops in rows). The recognised members are the bottom segments, and each
//! member is measured as its whole stack in both layouts alike — checked against the
//! gate centroids read back from each kept candidate's GDS.

use std::process::Command;

use serde_json::Value;

mod support;
use support::{
    AREA_AND_MATCHING_ONE_ITERATION, describe, one_iteration_run, python, read_report,
    spice_inputs_on_sky130,
};

const INSTANCES: &str = "\
* Four matched current sources, each a stack of two segments (issue 26: stacked members)
.global vss
.subckt stack2 d g s
MT d g mid vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MB mid g s vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
.ends stack2
.subckt sources o1 o2 o3 o4 vb
XA o1 vb vss stack2
XB o2 vb vss stack2
XC o3 vb vss stack2
XD o4 vb vss stack2
.ends sources
.end
";

const DEVICES: &str = "\
* The same sources written device by device: the segments of a stack are not named as such
.global vss
.subckt sources o1 o2 o3 o4 vb
MAT o1 vb na vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MAB na vb vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MBT o2 vb nb vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MBB nb vb vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MCT o3 vb nc vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MCB nc vb vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MDT o4 vb nd vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
MDB nd vb vss vss sky130_fd_pr__nfet_01v8 w=1u l=0.5u
.ends sources
.end
";

/// Gate centroids read from a GDS (poly ∩ active, µm): for every cell whose name matches
/// one of the patterns, one `[x, y, area]` per placement in the top cell.
const GATES: &str = "\
import json, re, sys
import klayout.db as db
layout = db.Layout(); layout.read(sys.argv[1])
(top,) = layout.top_cells()
layers = [layout.layer(*map(int, spec.split('/'))) for spec in sys.argv[2:4]]
patterns = [re.compile(p) for p in sys.argv[4:]]
def moments(cell):
    gates = db.Region(cell.begin_shapes_rec(layers[0])) & db.Region(cell.begin_shapes_rec(layers[1]))
    sx = sy = total = 0.0
    for polygon in gates.each_merged():
        area, centre = float(polygon.area()), polygon.bbox().center()
        sx, sy, total = sx + centre.x * area, sy + centre.y * area, total + area
    return sx, sy, total
found = {}
def walk(cell, trans):
    for inst in cell.each_inst():
        for sub in inst.cell_inst.each_cplx_trans():
            child, placed = inst.cell, trans * sub
            if any(p.search(child.name) for p in patterns):
                sx, sy, total = moments(child)
                centre = placed.to_itrans(1.0) * db.DPoint(sx / total, sy / total)
                found.setdefault(child.name, []).append(
                    [centre.x * layout.dbu, centre.y * layout.dbu, total * layout.dbu ** 2])
            else:
                walk(child, placed)
walk(top, db.ICplxTrans())
print(json.dumps(found))
";

/// `[x, y, area]` per placement of each cell matching `patterns` in `gds`.
fn gates(gds: &std::path::Path, patterns: &[&str]) -> serde_json::Map<String, Value> {
    let rules: Value = serde_json::from_slice(
        &std::fs::read(support::repository().join("examples/ota5_spice/drc_rules.json")).unwrap(),
    )
    .unwrap();
    let layer = |role: &str| {
        let (_, layer) = rules["layers"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, layer)| layer["role"] == role)
            .unwrap();
        format!("{}/{}", layer["layer"], layer["datatype"])
    };
    let output = Command::new(python())
        .args(["-c", GATES])
        .arg(gds)
        .args([layer("poly"), layer("active")])
        .args(patterns)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn point(value: &Value) -> [f64; 3] {
    let at = |index: usize| value[index].as_f64().unwrap_or(0.0);
    [at(0), at(1), at(2)]
}

/// Every member's centroid matches a distinct one of `expected` (within 5 nm).
fn each_matches_one(members: &[(String, [f64; 2])], expected: &[[f64; 2]], what: &str) {
    let mut free = expected.to_vec();
    for (member, [x, y]) in members {
        let position = free
            .iter()
            .position(|[ex, ey]| (x - ex).hypot(y - ey) < 5e-3)
            .unwrap_or_else(|| panic!("{what}: {member} at ({x}, {y}) is none of {free:?}"));
        free.remove(position);
    }
}

fn largest_distance(points: &[[f64; 2]]) -> f64 {
    let mut largest: f64 = 0.0;
    for (index, a) in points.iter().enumerate() {
        for b in &points[index + 1..] {
            largest = largest.max((a[0] - b[0]).hypot(a[1] - b[1]));
        }
    }
    largest
}

/// Runs the job on `netlist` and checks every candidate whose layout is kept; returns
/// the hierarchies (`blocks`, `flat`) of the layouts checked.
fn checked_layouts(netlist: &str) -> Vec<String> {
    let inputs = spice_inputs_on_sky130(netlist, AREA_AND_MATCHING_ONE_ITERATION);
    let out = tempfile::tempdir().unwrap();
    let output = one_iteration_run(2, 2, 7, out.path())
        .arg(inputs.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report = read_report(out.path());
    let mut layouts = Vec::new();
    for candidate in report["candidates"].as_array().unwrap() {
        // the best one's layout is `best.gds`, the top few others' in `candidates/`
        let gds = if candidate["id"] == report["best"]["candidate_id"] {
            out.path().join("best.gds")
        } else {
            out.path()
                .join("candidates")
                .join(format!("{}.gds", candidate["id"].as_str().unwrap()))
        };
        if gds.is_file() {
            layouts.push(check_candidate(candidate, &gds));
        }
    }
    layouts
}

/// The candidate's stacked members against its GDS; returns its hierarchy.
fn check_candidate(candidate: &Value, gds: &std::path::Path) -> String {
    let hierarchy = candidate["design"]["hierarchy"].as_str().unwrap_or("flat");
    let hierarchy = if hierarchy.is_empty() {
        "flat"
    } else {
        hierarchy
    };
    let groups = candidate["metrics"]["layout"]["groups"].as_array().unwrap();
    let sources: Vec<&Value> = groups
        .iter()
        .filter(|group| group["module"].as_str().unwrap().starts_with("mcs"))
        .collect();
    assert_eq!(sources.len(), 1, "{hierarchy}: {groups:?}");
    let group = sources[0];
    let members: Vec<(String, [f64; 2])> = group["centroids_um"]
        .as_object()
        .unwrap_or_else(|| panic!("{hierarchy}: no centroids: {group}"))
        .iter()
        .map(|(member, at)| (member.clone(), [point(at)[0], point(at)[1]]))
        .collect();
    // the four bottom segments are the members
    assert_eq!(members.len(), 4, "{hierarchy}: {group}");
    assert!(
        members.iter().all(|(member, _)| member.ends_with('B')),
        "{group}"
    );
    let expected: Vec<[f64; 2]> = if hierarchy == "blocks" {
        // one block per instance: a member's centroid is its block's gates'
        let found = gates(gds, &["^BLK_stack2$"]);
        let blocks = found["BLK_stack2"].as_array().unwrap();
        assert_eq!(blocks.len(), 4, "{found:?}");
        blocks
            .iter()
            .map(|at| [point(at)[0], point(at)[1]])
            .collect()
    } else {
        flat_bottoms_are_units(gds, &members);
        members.iter().map(|(_, at)| *at).collect()
    };
    each_matches_one(&members, &expected, hierarchy);
    let error = group["centroid_error_um"].as_f64().unwrap();
    assert!(
        (error - largest_distance(&expected)).abs() < 5e-3,
        "{hierarchy}: {error} µm reported, the GDS says {}",
        largest_distance(&expected)
    );
    hierarchy.to_owned()
}

/// A flat layout: the bottoms in one matched cell (one unit each), the tops in rows. A
/// member's centroid is the area-weighted mean of its top's gates (cell `dev_…T`) and
/// one unit's: once the top is taken out, what is left stands where a distinct unit does.
fn flat_bottoms_are_units(gds: &std::path::Path, members: &[(String, [f64; 2])]) {
    let found = gates(gds, &["^dev_", "^mod_.*_unit$"]);
    let units: Vec<[f64; 3]> = found
        .iter()
        .filter(|(cell, _)| cell.starts_with("mod_"))
        .flat_map(|(_, placed)| placed.as_array().unwrap().iter().map(point))
        .collect();
    assert_eq!(units.len(), 4, "{found:?}");
    let mut bottoms = Vec::new();
    for (member, [x, y]) in members {
        let top_cell = format!("dev_{}T", &member[..member.len() - 1]);
        let top = found
            .get(&top_cell)
            .unwrap_or_else(|| panic!("no {top_cell}: {found:?}"));
        let [tx, ty, top_area] = point(&top[0]);
        let unit_area = units[0][2];
        let share = top_area + unit_area;
        bottoms.push((
            member.clone(),
            [
                (x * share - tx * top_area) / unit_area,
                (y * share - ty * top_area) / unit_area,
            ],
        ));
    }
    let unit_centres: Vec<[f64; 2]> = units.iter().map(|[x, y, _]| [*x, *y]).collect();
    each_matches_one(&bottoms, &unit_centres, "flat bottoms");
}

#[test]
fn a_stack_member_is_measured_as_its_whole_stack_in_the_blocks_and_the_flat_layout() {
    let blocks = checked_layouts(INSTANCES);
    assert!(blocks.iter().any(|layout| layout == "blocks"), "{blocks:?}");
    let flat = checked_layouts(DEVICES);
    assert!(
        !flat.is_empty() && flat.iter().all(|layout| layout == "flat"),
        "{flat:?}"
    );
}
