//! `centroid run` end to end on this machine: real KLayout processes, the in-process
//! coordinator and store, loopback gRPC; then the output folder is checked, the GDS
//! read back by KLayout itself.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

mod support;
use support::{centroid, one_iteration_run, python, read_report, repository};

/// Texts of the GDS (label strings), read by KLayout's own reader.
fn gds_labels(gds: &Path) -> Vec<String> {
    let script = "import sys, klayout.db as db\n\
                  layout = db.Layout(); layout.read(sys.argv[1])\n\
                  tops = layout.top_cells(); assert len(tops) == 1, [c.name for c in tops]\n\
                  texts = set()\n\
                  for index in layout.layer_indexes():\n\
                  \x20   for shape in tops[0].begin_shapes_rec(index):\n\
                  \x20       if shape.shape().is_text(): texts.add(shape.shape().text_string)\n\
                  print('\\n'.join(sorted(texts)))\n";
    let output = Command::new(python())
        .args(["-c", script])
        .arg(gds)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "klayout could not read {}: {}",
        gds.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn run_writes_a_clean_layout_and_a_complete_report() {
    let out = tempfile::tempdir().unwrap();
    let output = one_iteration_run(3, 2, 7, out.path())
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("passed"));

    let report: Value = read_report(out.path());
    assert_eq!(report["circuit"], "ota5");
    assert_eq!(report["tech"], "ihp_sg13g2");
    assert_eq!(report["status"], "completed");
    assert!(report["job_id"].as_str().is_some_and(|id| !id.is_empty()));
    assert_eq!(report["iterations"], 1);
    let candidates = report["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 3);
    assert_eq!(report["candidates_evaluated"], 3);
    for candidate in candidates {
        for field in [
            "id",
            "parent",
            "iteration",
            "score",
            "passed",
            "metrics",
            "error",
        ] {
            assert!(
                candidate.get(field).is_some(),
                "candidate without {field}: {candidate}"
            );
        }
    }
    let best = &report["best"];
    assert_eq!(best["passed"], true, "{report}");
    assert_eq!(best["gds"], "best.gds");
    assert_eq!(best["metrics"]["drc_violations"], 0);
    assert_eq!(best["metrics"]["lvs_match"], true);
    assert!(best["metrics"]["area_um2"].as_f64().unwrap() > 0.0);
    assert!(best["metrics"]["matching_score"].as_f64().unwrap() > 0.0);
    let utilization = best["metrics"]["utilization"].as_f64().unwrap();
    assert!(utilization > 0.0 && utilization <= 1.0, "{utilization}");
    assert_eq!(best["drc"]["violations"], 0);
    assert_eq!(best["drc"]["by_rule"], serde_json::json!({}));
    assert_eq!(best["lvs"]["match"], true);
    assert!(
        candidates
            .iter()
            .any(|candidate| candidate["id"] == best["candidate_id"])
    );
    assert!(report["timings"]["total"].as_f64().unwrap() > 0.0);
    // the smallest passing layout is named, and no passing candidate is smaller
    let smallest = &report["smallest_passing"];
    let smallest_area = smallest["area_um2"]
        .as_f64()
        .expect("smallest_passing.area_um2");
    assert!(smallest_area <= best["metrics"]["area_um2"].as_f64().unwrap());
    for candidate in candidates
        .iter()
        .filter(|candidate| candidate["passed"] == true)
    {
        let area = candidate["metrics"]["area_um2"].as_f64().unwrap();
        assert!(
            area >= smallest_area,
            "{candidate} is smaller than {smallest}"
        );
    }
    assert!(
        candidates
            .iter()
            .any(|candidate| candidate["id"] == smallest["candidate_id"])
    );

    // The GDS is real: KLayout reads it, and every net of the circuit has its label.
    let labels = gds_labels(&out.path().join("best.gds"));
    for net in ["inp", "inn", "out", "n1", "tail", "vbias", "vdd", "vss"] {
        assert!(
            labels.iter().any(|label| label == net),
            "no label {net} in best.gds: {labels:?}"
        );
    }
    let png = std::fs::read(out.path().join("best.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");

    // KLayout opens the markers and the layer properties next to the GDS
    assert_eq!(best["lyrdb"], "best.lyrdb");
    assert_eq!(best["lyp"], "best.lyp");
    let script = "import sys, json, klayout.lay as lay, klayout.rdb as rdb\n\
                  view = lay.LayoutView(); view.load_layer_props(sys.argv[2])\n\
                  db = rdb.ReportDatabase(''); db.load(sys.argv[1])\n\
                  print(json.dumps({'items': db.num_items(), \
                  'categories': [c.name() for c in db.each_category()], \
                  'layers': [p.name for p in view.each_layer()]}))\n";
    let opened = Command::new(python())
        .args(["-c", script])
        .arg(out.path().join("best.lyrdb"))
        .arg(out.path().join("best.lyp"))
        .output()
        .unwrap();
    assert!(
        opened.status.success(),
        "{}",
        String::from_utf8_lossy(&opened.stderr)
    );
    let opened: Value = serde_json::from_slice(&opened.stdout).unwrap();
    assert_eq!(opened["items"], 0, "a clean layout has no marker");
    let categories = opened["categories"].as_array().unwrap();
    assert!(
        categories.len() > 10,
        "one category per rule: {categories:?}"
    );
    let layers: Vec<&str> = opened["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(layers.contains(&"Metal1 8/0 (metal1)"), "{layers:?}");
    assert!(layers.contains(&"GatPoly 5/0 (poly)"), "{layers:?}");
    let html = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(
        html.contains("data:image/png;base64,")
            && html.contains("LVS match")
            && html.contains("DRC clean")
    );
    let kept = std::fs::read_dir(out.path().join("candidates"))
        .unwrap()
        .count();
    assert!(kept >= 1, "candidates/ is empty");
    // No half-written files are left behind.
    assert!(std::fs::read_dir(out.path()).unwrap().all(|entry| {
        !entry
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".partial")
    }));
}

#[test]
fn run_with_bad_inputs_exits_2_and_writes_nothing() {
    let work = tempfile::tempdir().unwrap();
    let circuit = work.path().join("bad");
    std::fs::create_dir(&circuit).unwrap();
    for file in ["netlist.json", "drc_rules.json", "objectives.json"] {
        std::fs::copy(
            repository().join("examples/ota5").join(file),
            circuit.join(file),
        )
        .unwrap();
    }
    std::fs::write(
        circuit.join("objectives.json"),
        r#"{"objectives": [{"name": "speed_max"}]}"#,
    )
    .unwrap();
    let out = work.path().join("out");
    let output = centroid()
        .args(["run", "--no-memory", "--out"])
        .arg(&out)
        .arg(&circuit)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("objectives.json: /objectives/0/name"),
        "{stderr}"
    );
    assert!(
        !out.exists(),
        "an output folder was written for invalid inputs"
    );
}

#[test]
fn every_example_circuit_gets_a_passing_layout() {
    for example in [
        "miller_ota",
        "mirror_bank",
        "strongarm_comparator",
        "folded_cascode",
    ] {
        let out = tempfile::tempdir().unwrap();
        let output = centroid()
            .args([
                "run",
                "--no-memory",
                "--candidates",
                "4",
                "--iterations",
                "3",
                "--slots",
                "2",
                "--seed",
                "1",
                "--out",
            ])
            .arg(out.path())
            .arg(repository().join("examples").join(example))
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{example}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value =
            serde_json::from_slice(&std::fs::read(out.path().join("report.json")).unwrap())
                .unwrap();
        assert_eq!(report["best"]["metrics"]["drc_violations"], 0, "{example}");
        assert_eq!(report["best"]["metrics"]["lvs_match"], true, "{example}");
        assert!(
            gds_labels(&out.path().join("best.gds")).len() >= 4,
            "{example}: too few net labels"
        );
    }
}
