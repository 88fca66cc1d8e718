//! `centroid run examples/two_supply`: an OTA on vdd1 driving a PMOS source follower on
//! vdd2 whose bulk is tied to its source — three PMOS bulk nets, each in its own n-well.
//! The job's best layout must be DRC clean (our checker), LVS clean and clean under the
//! official SKY130 deck of the shared folder (`support::shared_file`), with an n-well per
//! bulk net at least in the GDS.

mod support;

use serde_json::Value;
use support::{describe, one_iteration_run, python, read_report, repository, shared_file};

/// Merged n-well polygons (GDS 64/20 in the SKY130 rule set) of the GDS's top cell.
fn nwell_count(gds: &std::path::Path) -> u64 {
    let script = "import sys, klayout.db as db\n\
                  ly = db.Layout(); ly.read(sys.argv[1])\n\
                  top = ly.top_cells()[0]\n\
                  r = db.Region(top.begin_shapes_rec(ly.layer(64, 20)))\n\
                  print(r.merged().count())\n";
    let output = std::process::Command::new(python())
        .args(["-c", script])
        .arg(gds)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn two_supplies_and_a_bulk_on_source_come_out_clean() {
    let deck = shared_file("decks/sky130/sky130A_mr.drc");
    let out = tempfile::tempdir().unwrap();
    let output = one_iteration_run(2, 2, 3, out.path())
        .arg("--signoff-deck")
        .arg(&deck)
        .arg(repository().join("examples/two_supply"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let report: Value = read_report(out.path());
    let best = &report["best"];
    assert_eq!(
        best["checks"],
        serde_json::json!({"drc": "clean", "lvs": "match", "signoff": "clean"}),
        "{best}"
    );
    assert_eq!(best["signoff"]["violations"], 0, "{best}");
    // one well per PMOS row at least: vdd1, vdd2 and buf never share one
    assert!(
        nwell_count(&out.path().join("best.gds")) >= 3,
        "vdd1, vdd2, buf"
    );
}
