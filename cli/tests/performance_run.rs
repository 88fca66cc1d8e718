//! Post-layout performance in the loop (issue 27), end to end through `centroid run`:
//! real KLayout, real ngspice on the SKY130 models. The 5T OTA of `examples/ota5_perf`
//! with `performance_max`: the schematic simulated once, every candidate extracted and
//! simulated, report.json's `best.performance`, and `best_extracted.spice` simulated
//! again outside Centroid giving the measures the report states. A broken user
//! testbench fails the candidates with the reason naming the file and line; the job
//! goes on and ends without a passing layout (exit 3). A process without models here
//! (IHP SG13G2) is extracted, not simulated, and says why.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

mod support;
use support::{describe, one_iteration_run, python, read_report, repository};

fn run(circuit: &Path, out: &Path) -> Output {
    one_iteration_run(2, 2, 1, out)
        .arg(circuit)
        .output()
        .unwrap()
}

/// `sim.run`'s own function on `dut` and `testbench` for SKY130, outside any job: the
/// measures.
fn simulate_again(dut: &Path, testbench: &Path, deck: &Path) -> Value {
    let script = "import json, sys\n\
                  from centroid_skills.skills.simulation import sim_run\n\
                  result = sim_run(None, {'dut_path': sys.argv[1], 'testbench_path': sys.argv[2],\n\
                  \x20   'deck_path': sys.argv[3], 'tech': 'sky130', 'circuit': 'ota5'})\n\
                  print(json.dumps(result['measures']))\n";
    let output = Command::new(python())
        .current_dir(repository().join("worker/skills"))
        .args(["-c", script])
        .args([dut, testbench, deck])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", describe(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_ota_is_simulated_before_and_after_layout_and_its_extracted_netlist_simulates_alike() {
    let out = tempfile::tempdir().unwrap();
    let output = run(&repository().join("examples/ota5_perf"), out.path());
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let progress = String::from_utf8_lossy(&output.stderr);
    assert!(
        progress.contains("the schematic simulated: gain_db = "),
        "{progress}"
    );

    let report = read_report(out.path());
    assert_eq!(report["tech"], "sky130");
    let best = &report["best"];
    let performance = best["performance"].as_object().expect("best.performance");
    for measure in ["gain_db", "ugbw_hz", "phase_margin_deg"] {
        let verdict = &performance[measure];
        let schematic = verdict["schematic"].as_f64().unwrap();
        let post = verdict["post_layout"].as_f64().unwrap();
        let degradation = verdict["degradation_pct"].as_f64().unwrap();
        assert!(schematic > 0.0 && post > 0.0, "{measure}: {verdict}");
        // the wires of a 5T OTA this small cost little: within 10 % of the schematic
        assert!(degradation.abs() < 10.0, "{measure}: {verdict}");
        assert!(verdict["spec"]["min"].is_number(), "{measure}: {verdict}");
    }
    // the open-loop gain is a DC figure: parasitic capacitance leaves it as it is
    assert!(
        performance["gain_db"]["degradation_pct"]
            .as_f64()
            .unwrap()
            .abs()
            < 0.5
    );
    for candidate in report["candidates"].as_array().unwrap() {
        let parasitics = &candidate["metrics"]["parasitics"];
        assert!(
            parasitics["nets"]["out"]["ground_ff"].as_f64().unwrap() > 0.0,
            "{parasitics}"
        );
        let pairs = parasitics["pairs"].as_array().unwrap();
        assert!(
            pairs
                .iter()
                .any(|pair| pair["nets"] == serde_json::json!(["inp", "inn"])),
            "the input pair's nets are compared: {parasitics}"
        );
        assert_eq!(candidate["metrics"]["electrical"]["clean"], true);
        // the coordinator re-scored the job's candidates with their performance
        // relative to each other's
        let relative = candidate["metrics"]["performance"]["relative_value"]
            .as_f64()
            .unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&relative), "{candidate}");
    }

    // the Bode plot: both AC responses in report.json, drawn in report.html
    for curve in ["schematic", "post_layout"] {
        let sweep = &best["ac_sweep"][curve];
        assert_eq!(sweep["node"], "out", "{curve}");
        assert_eq!(
            sweep["frequency_hz"].as_array().unwrap().len(),
            201,
            "{curve}"
        );
    }
    let page = std::fs::read_to_string(out.path().join("report.html")).unwrap();
    assert!(page.contains("<h2>Post-layout performance</h2>"));
    assert!(page.contains("aria-label=\"Bode plot, schematic and post-layout\""));

    assert_eq!(best["extracted"], "best_extracted.spice");
    assert_eq!(best["testbench"], "best_testbench.sp");
    let extracted = out.path().join("best_extracted.spice");
    let text = std::fs::read_to_string(&extracted).unwrap();
    assert!(
        text.contains(".subckt ota5 vdd vss inp inn out vbias"),
        "{text}"
    );
    assert!(text.contains("sky130_fd_pr__nfet_01v8"), "{text}");
    let deck = out.path().join("again.cir");
    let measures = simulate_again(&extracted, &out.path().join("best_testbench.sp"), &deck);
    for (measure, verdict) in performance {
        let reported = verdict["post_layout"].as_f64().unwrap();
        let again = measures[measure].as_f64().unwrap();
        assert!(
            (again - reported).abs() <= 1e-6 * reported.abs().max(1e-12),
            "{measure}: report {reported}, simulated again {again}"
        );
    }
}

/// The example's circuit with the user's `testbench` and a spec on `ugbw_hz`, no roles.
fn circuit_with_testbench(dir: &Path, testbench: &str) {
    let example = repository().join("examples/ota5_perf");
    std::fs::copy(example.join("netlist.sp"), dir.join("netlist.sp")).unwrap();
    std::fs::copy(example.join("drc_rules.json"), dir.join("drc_rules.json")).unwrap();
    let mut objectives: Value =
        serde_json::from_slice(&std::fs::read(example.join("objectives.json")).unwrap()).unwrap();
    objectives.as_object_mut().unwrap().remove("ports");
    objectives["performance"] = serde_json::json!([{"measure": "ugbw_hz", "min": 1e6}]);
    std::fs::write(dir.join("objectives.json"), objectives.to_string()).unwrap();
    std::fs::write(dir.join("testbench.sp"), testbench).unwrap();
}

/// An open-loop AC testbench of the OTA with `line_11` and the `measure` of line 13.
fn testbench(line_11: &str, measure: &str) -> String {
    format!(
        "* the user's open-loop AC testbench of ota5\n\
         Vsupply vdd 0 1.8\n\
         Vground vss 0 0\n\
         Vbias vbias 0 0.7\n\
         Xdut vdd vss inp inn out vbias ota5\n\
         Cload out 0 1p\n\
         Vcm cm 0 0.9\n\
         Vin inp cm dc 0 ac 1\n\
         Lfb out inn 1G\n\
         Cfb inn cm 1G\n\
         {line_11}\n\
         .ac dec 20 1 10G\n\
         {measure}\n\
         .end\n"
    )
}

#[test]
fn a_user_testbench_is_simulated_and_a_broken_one_fails_the_candidates_naming_its_line() {
    let good_measure = ".meas ac ugbw_hz when vdb(out)=0";
    // (what, testbench, what the reason says: the file and line where there is one)
    let cases = [
        (
            "a refused line",
            testbench("Rbroken out 0 resistance_of_nothing", good_measure),
            "unknown parameter (resistance_of_nothing) (testbench.sp line 11)",
        ),
        (
            "an unknown node",
            testbench("* nothing", ".meas ac ugbw_hz when vdb(nowhere)=0"),
            "names v(nowhere), which the circuit does not have (testbench.sp line 13)",
        ),
        (
            "a measure that never gives a value",
            testbench("* nothing", ".meas ac ugbw_hz when vdb(out)=500"),
            "testbench.sp:13: .meas ugbw_hz gave no value",
        ),
        (
            "no operating point",
            // the current 1 + v² has no solution at any voltage
            testbench("Bnc nc 0 I=1+v(nc)*v(nc)", good_measure),
            "the simulation did not converge",
        ),
    ];
    for (what, text, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        circuit_with_testbench(dir.path(), &text);
        let output = run(dir.path(), out.path());
        assert_eq!(
            output.status.code(),
            Some(3),
            "{what}: {}",
            describe(&output)
        );
        let report = read_report(out.path());
        for candidate in report["candidates"].as_array().unwrap() {
            assert_eq!(candidate["passed"], false, "{what}");
            let reasons = candidate["metrics"]["reasons"].to_string();
            assert!(
                reasons.contains("simulation failed: sim.run") && reasons.contains(expected),
                "{what}: {reasons}"
            );
        }
        // the layout is kept: the job went on and wrote its best layout
        assert!(out.path().join("best.gds").is_file(), "{what}");
    }

    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    circuit_with_testbench(dir.path(), &testbench("* nothing", good_measure));
    let output = run(dir.path(), out.path());
    assert!(
        matches!(output.status.code(), Some(0) | Some(3)),
        "{}",
        describe(&output)
    );
    let report = read_report(out.path());
    let ugbw = &report["best"]["performance"]["ugbw_hz"];
    assert!(ugbw["post_layout"].as_f64().unwrap() > 1e6, "{ugbw}");
    assert!(ugbw["schematic"].as_f64().unwrap() > 1e6, "{ugbw}");
    // the user's testbench is theirs: not written to the output folder
    assert!(report["best"].get("testbench").is_none());
}

#[test]
fn a_process_without_models_here_is_extracted_not_simulated_and_says_why() {
    // examples/ota5 on IHP SG13G2 (PSP103 OSDI models: not with this ngspice) with the
    // performance objectives of the SKY130 example
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    for file in ["netlist.json", "drc_rules.json"] {
        std::fs::copy(
            repository().join("examples/ota5").join(file),
            dir.path().join(file),
        )
        .unwrap();
    }
    std::fs::copy(
        repository().join("examples/ota5_perf/objectives.json"),
        dir.path().join("objectives.json"),
    )
    .unwrap();
    let output = run(dir.path(), out.path());
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    let progress = String::from_utf8_lossy(&output.stderr);
    assert!(
        progress.contains("not simulated: process 'ihp_sg13g2' has no simulation models"),
        "{progress}"
    );
    let report = read_report(out.path());
    assert!(report["best"].get("performance").is_none());
    for candidate in report["candidates"].as_array().unwrap() {
        let metrics = &candidate["metrics"];
        assert!(
            metrics["reasons"]
                .to_string()
                .contains("performance_max is not measured (not simulated here"),
            "{metrics}"
        );
        assert!(
            metrics["parasitics"]["nets"]["out"]["ground_ff"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
}
