//! Issue 26 end to end: `centroid run` of `examples/ota5_spice` (SKY130) with 1 mA on vdd
//! (`constraints.net_currents`) is DRC and LVS clean, reports the widths it drew, and its
//! GDS holds wires as wide as 1 mA needs on li1 (the rails: 0.18 mA/µm) and met1 (the
//! trunks: 0.65 mA/µm), which the same run without the current does not.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{python_on_gds, repository, run_inputs};

const AMPERES: f64 = 1e-3;

/// ota5_spice in a fresh directory, vdd given `current` (none: the example as it is).
fn inputs(current: Option<f64>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let example = repository().join("examples/ota5_spice");
    for name in ["netlist.sp", "drc_rules.json"] {
        std::fs::copy(example.join(name), dir.path().join(name)).unwrap();
    }
    let mut objectives: Value =
        serde_json::from_slice(&std::fs::read(example.join("objectives.json")).unwrap()).unwrap();
    if let Some(amperes) = current {
        objectives["schema_version"] = json!("1.1.0");
        objectives["constraints"]["net_currents"] = json!({"vdd": amperes});
    }
    std::fs::write(
        dir.path().join("objectives.json"),
        serde_json::to_vec_pretty(&objectives).unwrap(),
    )
    .unwrap();
    dir
}

fn run(current: Option<f64>) -> (tempfile::TempDir, Value) {
    let inputs = inputs(current);
    run_inputs(inputs.path(), 2, 2, 1)
}

/// Whether the GDS's top cell holds a shape of GDS layer `layer`/20 at least `width` µm wide
/// in both directions (the merged layer shrunk by just under half of it is not empty).
fn holds_wire_as_wide_as(gds: &Path, layer: u32, width: f64) -> bool {
    let script = format!(
        "import sys, klayout.db as db\n\
         ly = db.Layout(); ly.read(sys.argv[1])\n\
         top = ly.top_cells()[0]\n\
         r = db.Region(top.begin_shapes_rec(ly.layer({layer}, 20))).merged()\n\
         d = int({width} * 1000 / 2) - 5\n\
         print(0 if r.sized(-d).is_empty() else 1)\n"
    );
    python_on_gds(&script, gds).trim() == "1"
}

#[test]
fn a_current_on_vdd_widens_its_wires_and_the_layout_stays_clean() {
    let (plain_out, plain) = run(None);
    let (wide_out, wide) = run(Some(AMPERES));
    for report in [&plain, &wide] {
        assert_eq!(
            report["best"]["checks"]["drc"], "clean",
            "{}",
            report["best"]
        );
        assert_eq!(
            report["best"]["checks"]["lvs"], "match",
            "{}",
            report["best"]
        );
    }
    // the rule set's density of li1 (the rails): 180 A/m (vdd has one pmos row: one rail,
    // no trunk)
    let rail = AMPERES / 180.0 * 1e6;
    let plain_gds = plain_out.path().join("best.gds");
    let wide_gds = wide_out.path().join("best.gds");
    assert!(holds_wire_as_wide_as(&wide_gds, 67, rail), "li1 rail");
    assert!(!holds_wire_as_wide_as(&plain_gds, 67, rail));
    let widths = wide["best"]["metrics"]["layout"]["current_widths"]
        .as_array()
        .expect("current_widths in report.json");
    let li1 = widths
        .iter()
        .find(|entry| entry["net"] == "vdd" && entry["layer"] == "li1")
        .expect("vdd on li1");
    assert!(li1["drawn_um"].as_f64().unwrap() >= rail - 0.005, "{li1}");
    assert!(
        plain["best"]["metrics"]["layout"]
            .get("current_widths")
            .is_none()
    );
    let html = std::fs::read_to_string(wide_out.path().join("report.html")).unwrap();
    assert!(
        html.contains("Wires sized for their current"),
        "report.html"
    );
    assert!(html.contains("<td class=\"l\">li1</td>"), "report.html");
}
