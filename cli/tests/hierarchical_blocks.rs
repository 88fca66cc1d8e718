//! `centroid run` on a hierarchical SPICE circuit laid out as blocks (issue 26): four
//! unity buffers of one OTA subcircuit and a bias subcircuit, real KLayout processes.
//! The best layout is DRC clean and matches the flat circuit (LVS), and its GDS, read
//! back by KLayout, holds each subcircuit's block cell once, referenced once per
//! instance.

use std::path::Path;

use serde_json::Value;

mod support;
use support::{OTA_AND_BIAS_SUBCKTS, python_on_gds, run_spice_on_sky130};

/// The circuit: the OTA and bias subcircuits of `support`, then the top.
fn netlist() -> String {
    let top = "\
.subckt chain in out ibias
XB vb ibias bias
X1 in o1 o1 vb ota
X2 o1 o2 o2 vb ota
X3 o2 o3 o3 vb ota
X4 o3 out out vb ota
.ends chain
.end
";
    format!(
        "* Four unity buffers of one OTA and the bias stage they share (issue 26: blocks)\n{OTA_AND_BIAS_SUBCKTS}{top}"
    )
}

/// Per cell of the GDS: how many times other cells reference it.
fn references(gds: &Path) -> Value {
    let script = "import sys, json, klayout.db as db\n\
                  layout = db.Layout(); layout.read(sys.argv[1])\n\
                  counts = {c.name: 0 for c in layout.each_cell()}\n\
                  for cell in layout.each_cell():\n\
                  \x20   for inst in cell.each_inst():\n\
                  \x20       counts[layout.cell(inst.cell_index).name] += inst.size()\n\
                  print(json.dumps(counts))\n";
    serde_json::from_str(&python_on_gds(script, gds)).unwrap()
}

#[test]
fn repeated_subcircuits_are_laid_out_once_and_referenced_per_instance() {
    let (out, report) = run_spice_on_sky130(&netlist(), 1, 1, 7);
    let best = &report["best"];
    assert_eq!(best["metrics"]["drc_violations"], 0, "{report}");
    assert_eq!(best["metrics"]["lvs_match"], true, "{report}");
    let candidate = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|candidate| candidate["id"] == best["candidate_id"])
        .unwrap();
    assert_eq!(candidate["design"]["hierarchy"], "blocks", "{candidate}");
    // the report names each block once with its placements and its own utilisation
    let blocks = best["metrics"]["layout"]["blocks"].as_array().unwrap();
    let placed: Vec<(&str, u64)> = blocks
        .iter()
        .map(|block| {
            (
                block["cell"].as_str().unwrap(),
                block["instances"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(placed, vec![("BLK_bias", 1), ("BLK_ota", 4)], "{blocks:?}");
    for block in blocks {
        let utilisation = block["utilisation"].as_f64().unwrap();
        assert!(utilisation > 0.0 && utilisation < 1.0, "{block}");
    }
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(
        html.contains("<h3>Blocks</h3>") && html.contains("BLK_ota"),
        "no blocks table"
    );

    let counts = references(&out.path().join("best.gds"));
    assert_eq!(counts["BLK_ota"], 4, "{counts}");
    assert_eq!(counts["BLK_bias"], 1, "{counts}");
    // the devices of a block are drawn once: each device cell referenced once, by its
    // block's rows, whatever the number of instances
    let devices: Vec<(&String, &Value)> = counts
        .as_object()
        .unwrap()
        .iter()
        .filter(|(name, _)| name.contains("_dev_"))
        .collect();
    assert_eq!(devices.len(), 5, "{counts}");
    assert!(devices.iter().all(|(_, count)| **count == 1), "{counts}");
}
