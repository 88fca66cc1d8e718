//! `centroid run --signoff-deck`: the foundry's deck in the loop, with the real
//! `klayout` binary (provisioned by `make signoff`/`make test`). One run with the
//! official IHP SG13G2 deck (a test fixture, Apache-2.0) must come out clean; a
//! deck that flags every Metal1 shape must fail the job's best with the deck's
//! counts per rule; a deck that cannot run must never read as "0 violations".

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from)
}

/// `centroid run examples/ota5` (IHP) with `deck`, two candidates, one iteration.
fn run_with_deck(deck: &Path, out: &Path) -> (Output, Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_centroid"))
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
        .args([
            "run",
            "--candidates",
            "2",
            "--iterations",
            "1",
            "--slots",
            "2",
            "--seed",
            "3",
        ])
        .arg("--signoff-deck")
        .arg(deck)
        .arg("--out")
        .arg(out)
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    let report = std::fs::read(out.join("report.json"))
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
        .unwrap_or(Value::Null);
    (output, report)
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Items per category of a KLayout report database, read by KLayout's own module.
fn lyrdb_counts(path: &Path) -> Value {
    let script = "import sys, json, klayout.rdb as rdb\n\
                  db = rdb.ReportDatabase(''); db.load(sys.argv[1])\n\
                  print(json.dumps({c.name(): c.num_items() for c in db.each_category()}))\n";
    let output = Command::new(python())
        .args(["-c", script])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "klayout cannot read {}: {}",
        path.display(),
        describe(&output)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn klayout_binary_present() -> bool {
    Command::new("klayout")
        .arg("-v")
        .output()
        .is_ok_and(|output| output.status.success())
}

#[test]
fn the_official_deck_finds_the_best_layout_clean() {
    assert!(
        klayout_binary_present(),
        "the klayout binary is missing: run `make signoff`"
    );
    let out = tempfile::tempdir().unwrap();
    let deck =
        repository().join("worker/skills/tests/fixtures/signoff/ihp_sg13g2/sg13g2_maximal.lydrc");
    let (output, report) = run_with_deck(&deck, out.path());
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("foundry deck clean"));
    let best = &report["best"];
    assert_eq!(best["passed"], true, "{report}");
    assert_eq!(
        best["checks"],
        serde_json::json!({"drc": "clean", "lvs": "match", "signoff": "clean"})
    );
    assert_eq!(best["signoff"]["deck"], "sg13g2_maximal.lydrc");
    assert_eq!(best["signoff"]["violations"], 0);
    assert!(
        best["candidate_id"].as_str().unwrap().contains("-signoff-"),
        "{best}"
    );
    // both marker databases open in KLayout: ours with a category per rule, the deck's
    assert_eq!(best["lyrdb"], "best.lyrdb");
    let ours = lyrdb_counts(&out.path().join("best.lyrdb"));
    assert!(
        ours.as_object()
            .is_some_and(|categories| !categories.is_empty()),
        "{ours}"
    );
    assert!(
        ours.as_object().unwrap().values().all(|count| count == 0),
        "{ours}"
    );
    assert_eq!(best["signoff_lyrdb"], "best_signoff.lyrdb");
    let deck_counts = lyrdb_counts(&out.path().join("best_signoff.lyrdb"));
    assert!(
        deck_counts
            .as_object()
            .unwrap()
            .values()
            .all(|count| count == 0),
        "{deck_counts}"
    );
    let page = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(page.contains("foundry deck clean") && page.contains("klayout best.gds -m best.lyrdb"));
}

#[test]
fn a_deck_that_flags_metal1_fails_the_best_and_a_deck_that_cannot_run_is_no_pass() {
    assert!(
        klayout_binary_present(),
        "the klayout binary is missing: run `make signoff`"
    );
    let decks = tempfile::tempdir().unwrap();
    // Metal1 is GDS 8/0 in examples/pdk/ihp_sg13g2.json
    let flagging = decks.path().join("flag_metal1.drc");
    std::fs::write(
        &flagging,
        "source($input)\nreport(\"flag\", $report)\ninput(8, 0).output(\"M1.all\", \"every Metal1 shape\")\n",
    )
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let (output, report) = run_with_deck(&flagging, out.path());
    assert_eq!(
        output.status.code(),
        Some(3),
        "completed, not passed: {}",
        describe(&output)
    );
    let best = &report["best"];
    assert_eq!(best["passed"], false);
    assert_eq!(best["checks"]["signoff"], "violations");
    let flagged = best["signoff"]["by_rule"]["M1.all"].as_u64().unwrap_or(0);
    assert!(flagged > 0, "{best}");
    assert_eq!(best["signoff"]["violations"].as_u64(), Some(flagged));

    let broken = decks.path().join("broken.drc");
    std::fs::write(&broken, "raise \"this deck is broken\"\n").unwrap();
    let out = tempfile::tempdir().unwrap();
    let (output, report) = run_with_deck(&broken, out.path());
    assert_eq!(output.status.code(), Some(3), "{}", describe(&output));
    let best = &report["best"];
    assert_eq!(best["passed"], false, "{best}");
    assert_eq!(best["checks"]["signoff"], "not run", "{best}");
    assert!(
        best["signoff"].is_null(),
        "a deck that failed is not a verdict: {best}"
    );
}
