//! A whole candidate over gRPC on the real binary: tech.load with a small rule
//! set, a device, layout.export and layout.render into the candidate's scratch
//! directory; the GDS that comes back is read back by KLayout in a child process,
//! and sent back as a request's input file to draw the same picture again.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn small_rule_set() -> Value {
    let path = skills_dir().join("tests/fixtures/toy180.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).expect("rule set json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidate_returns_gds_that_klayout_reads_back() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;

    let plan = vec![
        step("tech", "tech.load", json!({"rules": small_rule_set()})),
        step(
            "m1",
            "layout.create_device",
            json!({"device_id": "M1", "type": "nmos", "w": 2e-6, "l": 1.8e-7, "nf": 2}),
        ),
        step(
            "gds",
            "layout.export",
            json!({"cell": "M1", "path": "${CANDIDATE_DIR}/M1.gds"}),
        ),
        step(
            "png",
            "layout.render",
            json!({"cell": "M1", "path": "${CANDIDATE_DIR}/M1.png", "width": 200, "height": 200}),
        ),
    ];
    let response = run(&mut client, candidate("gds-1", 120_000, plan))
        .await
        .expect("candidate runs");
    assert!(response.ok, "{:#?}\n{}", response, worker.logs());
    assert_eq!(response.candidate_id, "gds-1");
    assert_eq!(response.steps.len(), 4);
    let device: Value = serde_json::from_str(&response.steps[1].data_json).unwrap();
    assert_eq!(device["cell_name"], "M1");

    let gds = response
        .artifacts
        .iter()
        .find(|artifact| artifact.name == "M1.gds")
        .expect("a GDS artifact");
    assert_eq!(gds.media_type, "application/x-gdsii");
    // GDSII stream: first record is HEADER (length 6, type 0x00 0x02)
    assert!(gds.content.len() > 100);
    assert_eq!(&gds.content[..4], &[0x00, 0x06, 0x00, 0x02]);
    let png = response
        .artifacts
        .iter()
        .find(|artifact| artifact.name == "M1.png")
        .expect("a PNG artifact");
    assert_eq!(png.media_type, "image/png");
    assert_eq!(&png.content[..8], b"\x89PNG\r\n\x1a\n");

    // KLayout reads the bytes back: one top cell M1 with shapes on the device layers
    let scratch = tempfile::tempdir().unwrap();
    let gds_path = scratch.path().join("returned.gds");
    std::fs::write(&gds_path, &gds.content).unwrap();
    let script = r#"
import json, sys
import klayout.db as kdb
layout = kdb.Layout()
layout.read(sys.argv[1])
top = layout.top_cell()
shapes = 0
layers = set()
for index in layout.layer_indexes():
    shape_iterator = top.begin_shapes_rec(index)
    while not shape_iterator.at_end():
        shapes += 1
        info = layout.get_info(index)
        layers.add((info.layer, info.datatype))
        shape_iterator.next()
print(json.dumps({"top": top.name, "cells": [cell.name for cell in layout.each_cell()],
                  "shapes": shapes, "layers": sorted(layers)}))
"#;
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(python())
            .arg("-c")
            .arg(script)
            .arg(&gds_path)
            .output(),
    )
    .await
    .expect("klayout read-back in time")
    .expect("run python");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let read_back: Value = serde_json::from_slice(&output.stdout).expect("read-back json");
    assert_eq!(read_back["top"], "M1", "{read_back}");
    assert!(read_back["shapes"].as_u64().unwrap() >= 4, "{read_back}");
    // active (1/0), poly (5/0), contact (6/0) and metal-1 (8/0) of the rule set are drawn
    let layers = read_back["layers"].as_array().unwrap();
    for expected in [json!([1, 0]), json!([5, 0]), json!([6, 0]), json!([8, 0])] {
        assert!(
            layers.contains(&expected),
            "layer {expected} missing: {read_back}"
        );
    }

    // the next candidate starts from a reset session: the cell of the previous one is gone
    let response = run(
        &mut client,
        candidate(
            "gds-2",
            60_000,
            vec![step("info", "layout.cell_info", json!({"cell": "M1"}))],
        ),
    )
    .await
    .unwrap();
    assert!(
        !response.ok,
        "session/reset must drop the previous candidate's layout: {response:?}"
    );
    assert!(response.artifacts.is_empty());

    // the returned GDS sent back as the request's input file: read and rendered in a
    // fresh session, it draws the same picture; the input is not returned
    let mut request = candidate(
        "picture-1",
        60_000,
        vec![
            step(
                "read",
                "layout.read",
                json!({"path": "${CANDIDATE_DIR}/M1.gds"}),
            ),
            step(
                "png",
                "layout.render",
                json!({"cell": "M1", "path": "${CANDIDATE_DIR}/M1.png", "width": 200, "height": 200}),
            ),
        ],
    );
    request.inputs = vec![gds.clone()];
    let pictured = run(&mut client, request).await.expect("a result");
    assert!(pictured.ok, "{pictured:#?}");
    let names: Vec<&str> = pictured
        .artifacts
        .iter()
        .map(|artifact| artifact.name.as_str())
        .collect();
    assert_eq!(names, ["M1.png"]);
    assert_eq!(pictured.artifacts[0].content, png.content);

    // an input named with a directory part is refused before anything runs
    let mut request = candidate(
        "picture-2",
        60_000,
        vec![step(
            "read",
            "layout.read",
            json!({"path": "${CANDIDATE_DIR}/x.gds"}),
        )],
    );
    request.inputs = vec![centroid_proto::v1::Artifact {
        name: "../x.gds".into(),
        media_type: String::new(),
        content: gds.content.clone(),
    }];
    let status = run(&mut client, request).await.expect_err("refused");
    let error = centroid_proto::Error::from_status(&status);
    assert_eq!(error.error_code(), centroid_proto::ErrorCode::InvalidParam);
    assert!(error.message.contains("inputs[0]"), "{}", error.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn klayout_stderr_lines_reach_the_worker_log_with_candidate_and_session() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    // a skill that raises (debug.fail, as a skill bug would): the skill server
    // writes the traceback to its stderr and answers INTERNAL_ERROR
    let plan = vec![
        step("tech", "tech.load", json!({"rules": small_rule_set()})),
        step(
            "m1",
            "layout.create_device",
            json!({"device_id": "M1", "type": "nmos", "w": 1e-6, "l": 1.8e-7}),
        ),
        step("fail", "debug.fail", json!({"message": "a skill bug"})),
    ];
    let mut request = candidate("stderr-1", 60_000, plan);
    request.session_id = "job-42".to_string();
    let response = run(&mut client, request).await.unwrap();
    assert!(!response.ok);
    let error = response.error.unwrap();
    assert_eq!(
        error.error_code(),
        centroid_proto::ErrorCode::InternalError,
        "{error:?}"
    );
    assert!(
        error.details()["traceback"]
            .as_str()
            .is_some_and(|traceback| traceback.contains("Traceback"))
    );

    let started = std::time::Instant::now();
    loop {
        let logs = worker.logs();
        let forwarded = logs.lines().any(|line| {
            line.contains("centroid_worker::klayout")
                && line.contains("candidate_id=stderr-1")
                && line.contains("session_id=job-42")
        });
        if forwarded {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no stderr line of the candidate in the log:\n{logs}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_klayout_process_runs_under_the_configured_memory_cap() {
    let worker = WorkerProcess::start(&["--slots", "1", "--memory-limit-mb", "3000"]);
    let mut client = worker.client().await;
    let pid = health(&mut client).await.slot_health[0].pid;
    let limits =
        std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("read the child's limits");
    let address_space = limits
        .lines()
        .find(|line| line.starts_with("Max address space"))
        .expect("an address-space line");
    let expected = (3000u64 * 1024 * 1024).to_string();
    assert!(address_space.contains(&expected), "{address_space}");
    // and it still works under the cap
    let response = run(
        &mut client,
        candidate("capped", 30_000, vec![step("s1", "debug.noop", json!({}))]),
    )
    .await
    .unwrap();
    assert!(response.ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_writing_outside_the_scratch_directory_is_refused_and_writes_nothing() {
    let worker = WorkerProcess::start(&["--slots", "1"]);
    let mut client = worker.client().await;
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("stolen.gds");
    let calls_before = health(&mut client).await.slot_health[0].calls_forwarded;
    for (id, path) in [
        ("absolute", target.display().to_string()),
        (
            "dotdot",
            format!(
                "${{CANDIDATE_DIR}}/../{}/stolen.gds",
                outside.path().display()
            ),
        ),
    ] {
        let plan = vec![
            step("tech", "tech.load", json!({"rules": small_rule_set()})),
            step(
                "m1",
                "layout.create_device",
                json!({"device_id": "M1", "type": "nmos", "w": 2e-6, "l": 1.8e-7, "nf": 2}),
            ),
            step("gds", "layout.export", json!({"cell": "M1", "path": path})),
        ];
        let response = run(&mut client, candidate(id, 120_000, plan))
            .await
            .expect("a result");
        assert!(!response.ok, "{response:#?}");
        let error = response.steps[2]
            .error
            .clone()
            .expect("the export step was refused");
        assert_eq!(
            error.error_code(),
            centroid_proto::ErrorCode::InvalidParam,
            "{error:?}"
        );
        assert_eq!(
            error.details()["reason"],
            "path_outside_scratch",
            "{error:?}"
        );
        assert_eq!(error.details()["pointer"], "/path");
    }
    // two calls reached KLayout per candidate (tech.load, create_device), never the export
    let calls_after = health(&mut client).await.slot_health[0].calls_forwarded;
    assert_eq!(
        calls_after - calls_before,
        4,
        "the export never reached KLayout"
    );
    assert!(
        !target.exists(),
        "nothing was written outside the scratch directory"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}
