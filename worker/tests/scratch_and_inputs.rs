//! A candidate's scratch directory is private (0700) and the leftovers of a killed
//! worker are removed when the next one starts (only dead workers' directories of
//! this user); `inputs` whose names no file system takes (256+ bytes, control
//! characters, a directory part) are INVALID_PARAM, not INTERNAL_ERROR.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use centroid_proto::v1::Artifact;
use centroid_proto::{Error, ErrorCode};
use common::{WorkerProcess, candidate, run, sleep_candidate, step};
use serde_json::json;

fn input(name: &str) -> Artifact {
    Artifact {
        name: name.into(),
        media_type: String::new(),
        content: b"* nothing\n".to_vec(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scratch_directories_are_private_and_dead_workers_leftovers_removed() {
    let temporary = tempfile::tempdir().unwrap();
    let mut finished = std::process::Command::new("true").spawn().unwrap();
    finished.wait().unwrap();
    let dead_worker = temporary
        .path()
        .join(format!("centroid-candidate-{}-left", finished.id()));
    let live_worker = temporary
        .path()
        .join(format!("centroid-candidate-{}-busy", std::process::id()));
    for dir in [&dead_worker, &live_worker] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(dir.join("candidate.gds"), b"x").unwrap();
    }

    let worker =
        WorkerProcess::start_with_environment(&["--slots", "1"], &[("TMPDIR", temporary.path())]);
    assert!(
        !dead_worker.exists(),
        "a dead worker's leftovers are removed"
    );
    assert!(
        live_worker.join("candidate.gds").exists(),
        "a live worker's directory is left alone"
    );

    // while a candidate runs, its directory is readable by its owner only
    let mut client = worker.client().await;
    let mut request = sleep_candidate("private", 60_000, json!(2));
    request.inputs = vec![input("testbench.sp")];
    let running = tokio::spawn({
        let mut client = client.clone();
        async move { run(&mut client, request).await }
    });
    let own_prefix = format!("centroid-candidate-{}-", worker.pid());
    let started = Instant::now();
    let scratch = loop {
        let found = std::fs::read_dir(temporary.path())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .find(|path| {
                path.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&own_prefix)
            });
        if let Some(found) = found {
            break found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no scratch directory appeared:\n{}",
            worker.logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mode = std::fs::metadata(&scratch).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", scratch.display());
    let finished = running.await.unwrap().expect("the candidate runs");
    assert!(finished.ok, "{finished:#?}");
    assert!(!scratch.exists(), "removed once the candidate is done");

    // names no file system takes are the caller's error
    let too_long = "n".repeat(300);
    for bad in [too_long.as_str(), "nul\0.sp", "line\nbreak.sp", "../up.sp"] {
        let mut request = candidate(
            "bad-name",
            60_000,
            vec![step("s1", "debug.sleep", json!({"seconds": 0}))],
        );
        request.inputs = vec![input(bad)];
        let status = run(&mut client, request).await.expect_err("refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{bad:?}");
        let error = Error::from_status(&status);
        assert_eq!(error.error_code(), ErrorCode::InvalidParam, "{bad:?}");
        assert_eq!(error.details()["field"], "inputs[0].name");
    }
}
