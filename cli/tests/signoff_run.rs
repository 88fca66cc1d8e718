//! `centroid run --signoff-deck`: the foundry's deck in the loop, with the real
//! `klayout` binary (provisioned by `make signoff`/`make test`). One run with the
//! official IHP SG13G2 deck (Apache-2.0; the official decks are third-party files of
//! the shared folder, `support::shared_file`) must come out clean; one
//! run of the official GF180MCU deck (efabless mpw_precheck, Apache-2.0) on the
//! GF180 ota5 (a process the generators were not written against) must come out
//! clean; a deck that flags every Metal1 shape must fail the job's best with the
//! deck's counts per rule; a deck that cannot run must never read as "0 violations".
//! Each official deck runs in one test only (the GF180 deck takes ~30-60 s a run).

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::{centroid, describe, python, repository, shared_file};

/// `centroid run examples/ota5` (IHP) with `deck`, two candidates, one iteration.
fn run_with_deck(deck: &Path, out: &Path) -> (Output, Value) {
    run_example_with_deck("examples/ota5", 2, deck, out)
}

/// `centroid run EXAMPLE` with `deck`, `candidates` candidates, one iteration, seed 3.
fn run_example_with_deck(
    example: &str,
    candidates: u32,
    deck: &Path,
    out: &Path,
) -> (Output, Value) {
    let output = centroid()
        .args([
            "run",
            "--no-memory",
            "--candidates",
            &candidates.to_string(),
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
        .arg(repository().join(example))
        .output()
        .unwrap();
    let report = std::fs::read(out.join("report.json"))
        .map(|bytes| serde_json::from_slice(&bytes).unwrap())
        .unwrap_or(Value::Null);
    (output, report)
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

/// Fails the test, saying how to provision it, when there is no `klayout` binary to
/// run decks with (`CENTROID_KLAYOUT_BINARY`, else `klayout` on `PATH`, as `signoff.run`
/// looks for it).
fn require_klayout_binary() {
    let binary = std::env::var_os("CENTROID_KLAYOUT_BINARY")
        .filter(|value| !value.is_empty())
        .unwrap_or_else(|| "klayout".into());
    let runs = Command::new(&binary)
        .args(["-b", "-v"])
        .output()
        .is_ok_and(|output| output.status.success());
    assert!(
        runs,
        "the klayout binary that runs foundry decks ({}) is missing or does not start: \
         run `make signoff` (installs Debian's klayout; `make test` does it) or set \
         CENTROID_KLAYOUT_BINARY to a KLayout executable",
        binary.to_string_lossy()
    );
}

#[test]
fn the_official_deck_finds_the_best_layout_clean() {
    require_klayout_binary();
    let out = tempfile::tempdir().unwrap();
    let deck = shared_file("decks/ihp_sg13g2/sg13g2_maximal.lydrc");
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
    require_klayout_binary();
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

#[test]
fn the_official_gf180_deck_finds_the_gf180_ota5_clean() {
    require_klayout_binary();
    let out = tempfile::tempdir().unwrap();
    let deck = shared_file("decks/gf180mcu/gf180mcuD_mr.drc");
    // one candidate: one deck run (the deck takes ~30-60 s on two cores)
    let (output, report) = run_example_with_deck("examples/gf180/ota5", 1, &deck, out.path());
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    assert_eq!(report["tech"], "gf180mcu_3v3", "{report}");
    let best = &report["best"];
    assert_eq!(best["passed"], true, "{report}");
    assert_eq!(
        best["checks"],
        serde_json::json!({"drc": "clean", "lvs": "match", "signoff": "clean"}),
        "{best}"
    );
    assert_eq!(best["drc"]["violations"], 0, "{best}");
    assert_eq!(best["signoff"]["deck"], "gf180mcuD_mr.drc");
    assert_eq!(best["signoff"]["violations"], 0, "{best}");
    let signoff_runs = report["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|candidate| candidate["id"].as_str().unwrap().contains("-signoff-"))
        .count();
    assert_eq!(signoff_runs, 1, "one deck run: {report}");
    // the deck really ran its rules: its report has a category per rule, all empty
    let deck_counts = lyrdb_counts(&out.path().join("best_signoff.lyrdb"));
    let categories = deck_counts.as_object().unwrap();
    assert!(categories.len() > 300, "{} categories", categories.len());
    for rule in [
        "CO.6a", "CO.6b", "V1.3c", "V1.3d", "V1.4b", "V1.4c", "M1.2b", "M1.3",
    ] {
        assert_eq!(categories.get(rule), Some(&Value::from(0)), "{rule}");
    }
    assert!(categories.values().all(|count| count == 0), "{deck_counts}");
}
