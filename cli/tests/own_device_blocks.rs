//! `centroid run` on a two-stage amplifier whose first stage (an input pair, its mirror
//! load and tail) is the top's own devices beside a bias block and four buffer OTAs
//! (issue 26), real KLayout processes. The own devices are drawn as blocks of their
//! own, one per kind, which the top packs beside the others: in the best layout read
//! back from its GDS, no device cell stands in the top outside a block; the layout is
//! smaller than main's (the own devices in two full-width rows under the rows of
//! blocks), DRC clean, LVS matched, and the matched modules among the own devices stay
//! common-centroid structures with their centroids met.

use std::path::Path;

use serde_json::Value;

mod support;
use support::{OTA_AND_BIAS_SUBCKTS, python_on_gds, run_spice_on_sky130};

/// The circuit: the OTA and bias subcircuits of `support`, then the top.
fn netlist() -> String {
    let top = "\
.subckt amp inp inn out ibias
XB vb ibias bias
MA1 n1 inp tail vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=4
MA2 n2 inn tail vss sky130_fd_pr__nfet_01v8 w=2u l=0.5u nf=4
MA3 n1 n1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=4
MA4 n2 n1 vdd vdd sky130_fd_pr__pfet_01v8 w=2u l=0.5u nf=4
MA5 tail vb vss vss sky130_fd_pr__nfet_01v8 w=2u l=1u nf=4
X1 n2 o1 o1 vb ota
X2 o1 o2 o2 vb ota
X3 o2 o3 o3 vb ota
X4 o3 out out vb ota
.ends amp
.end
";
    format!(
        "* A two-stage amplifier: its input pair, mirror and tail are the top's own devices (issue 26)\n{OTA_AND_BIAS_SUBCKTS}{top}"
    )
}

/// main's best area for this circuit and seed (its planner at 9050cf7: the own devices
/// in rows of their own), µm²: 810.75 with that commit's skills, 722.46 with the skills
/// merged after it (two-layer channels, series stacks); the smaller (this branch: 712.2
/// and 647.1)
const MAIN_AREA_UM2: f64 = 722.46;

/// The cells the top reaches without entering a block cell (`BLK_…`), and the bounding
/// box of the top (µm).
const LOOSE_CELLS: &str = "\
import json, sys
import klayout.db as db
layout = db.Layout(); layout.read(sys.argv[1])
top = layout.cell('TOP')
seen, stack = set(), [top.cell_index()]
while stack:
    cell = layout.cell(stack.pop())
    for index in cell.each_child_cell():
        child = layout.cell(index)
        if child.name.startswith('BLK_') or child.name in seen:
            continue
        seen.add(child.name)
        stack.append(index)
box = top.dbbox()
print(json.dumps({'cells': sorted(seen), 'width': box.width(), 'height': box.height()}))
";

fn loose_cells(gds: &Path) -> Value {
    serde_json::from_str(&python_on_gds(LOOSE_CELLS, gds)).unwrap()
}

#[test]
fn the_tops_own_devices_are_packed_as_blocks_beside_the_others() {
    let (out, report) = run_spice_on_sky130(&netlist(), 1, 1, 7);
    let metrics = &report["best"]["metrics"];
    assert_eq!(metrics["drc_violations"], 0, "{report}");
    assert_eq!(metrics["lvs_match"], true, "{report}");
    let blocks: Vec<&str> = metrics["layout"]["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["cell"].as_str().unwrap())
        .collect();
    for own in ["BLK_amp_own_nmos", "BLK_amp_own_pmos"] {
        assert!(blocks.contains(&own), "{blocks:?}");
    }

    // no device, matched structure or ring drawn in the top outside a block
    let gds = loose_cells(&out.path().join("best.gds"));
    let loose: Vec<&str> = gds["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| cell.as_str().unwrap())
        .filter(|cell| ["dev_", "mod_", "gr_"].iter().any(|p| cell.starts_with(p)))
        .collect();
    assert!(loose.is_empty(), "{loose:?}");
    let area = gds["width"].as_f64().unwrap() * gds["height"].as_f64().unwrap();
    assert!(
        area < MAIN_AREA_UM2,
        "{area:.1} µm², main {MAIN_AREA_UM2} µm²"
    );

    // the own input pair and mirror: common centroid, centroids met
    let groups = metrics["layout"]["groups"].as_array().unwrap();
    for members in [["MA1", "MA2"], ["MA3", "MA4"]] {
        let group = groups
            .iter()
            .find(|group| group["devices"] == serde_json::json!(members))
            .unwrap_or_else(|| panic!("{members:?} measured in no group: {groups:?}"));
        assert_eq!(group["structure"], "common_centroid", "{group}");
        assert!(
            group["centroid_error_um"].as_f64().unwrap() < 1e-6,
            "{group}"
        );
    }
}
