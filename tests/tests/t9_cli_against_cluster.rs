//! Issue 7: the `centroid` CLI as a thin client of a running cluster — a real Redis,
//! coordinator and two workers as processes: it lists the workers, submits and
//! watches a job and fetches its result, reads status, cancels, and refuses bad
//! inputs without submitting anything.

use std::path::Path;
use std::process::{Command, Output};

use centroid_proto::v1::ListJobsRequest;
use centroid_tests::{Sandbox, binary, python, repository_root, skills_dir};
use serde_json::Value;

fn centroid(sandbox: &Sandbox, arguments: &[&str]) -> Output {
    Command::new(binary("centroid"))
        .args(arguments)
        .env("CENTROID_COORDINATOR", sandbox.coordinator.url())
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", skills_dir())
        .output()
        .expect("run centroid")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn report(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report.json"))
        .expect("report.json is JSON")
}

async fn job_count(sandbox: &Sandbox) -> usize {
    let mut client = sandbox.client().await.expect("connect");
    client
        .list_jobs(ListJobsRequest { limit: 0 })
        .await
        .expect("list jobs")
        .into_inner()
        .jobs
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_submits_watches_fetches_cancels_and_refuses_bad_inputs() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    sandbox.add_worker("w2", 1).await;
    let ota5 = repository_root().join("examples/ota5");
    let ota5 = ota5.to_str().unwrap();

    // workers
    let workers = centroid(&sandbox, &["workers"]);
    assert!(workers.status.success(), "{}", text(&workers.stderr));
    let listing = text(&workers.stdout);
    assert!(
        listing.contains("w1") && listing.contains("w2"),
        "{listing}"
    );

    // submit --wait: watches, then fetches the result
    let out = sandbox.dir.path().join("out-submit");
    let submitted = centroid(
        &sandbox,
        &[
            "submit",
            ota5,
            "--candidates",
            "3",
            "--iterations",
            "1",
            "--seed",
            "3",
            "--wait",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(
        submitted.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&submitted.stdout),
        text(&submitted.stderr)
    );
    let job_id = text(&submitted.stdout)
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    assert!(
        job_id.starts_with("job-"),
        "first line is the job id: {}",
        text(&submitted.stdout)
    );
    let submitted_report = report(&out);
    assert_eq!(submitted_report["job_id"], job_id.as_str());
    assert_eq!(submitted_report["status"], "completed");
    assert_eq!(submitted_report["best"]["passed"], true);
    assert_eq!(submitted_report["best"]["metrics"]["lvs_match"], true);
    assert!(std::fs::metadata(out.join("best.gds")).unwrap().len() > 0);

    // status of one job and of all
    let status = centroid(&sandbox, &["status", &job_id]);
    assert!(status.status.success());
    assert!(
        text(&status.stdout).contains("completed"),
        "{}",
        text(&status.stdout)
    );
    let listing = centroid(&sandbox, &["status"]);
    assert!(text(&listing.stdout).contains(&job_id));

    // result again, elsewhere: the same best layout
    let again = sandbox.dir.path().join("out-result");
    let fetched = centroid(
        &sandbox,
        &["result", &job_id, "--out", again.to_str().unwrap()],
    );
    assert_eq!(fetched.status.code(), Some(0), "{}", text(&fetched.stderr));
    assert_eq!(
        report(&again)["best"]["candidate_id"],
        submitted_report["best"]["candidate_id"]
    );
    assert_eq!(
        std::fs::read(again.join("best.gds")).unwrap(),
        std::fs::read(out.join("best.gds")).unwrap()
    );

    // watch a finished job: replays its events to the end
    let watched = centroid(&sandbox, &["watch", &job_id]);
    assert_eq!(watched.status.code(), Some(0), "{}", text(&watched.stderr));
    assert!(
        text(&watched.stderr).contains("completed"),
        "{}",
        text(&watched.stderr)
    );

    // cancel a long job right after submitting it
    let long = centroid(
        &sandbox,
        &[
            "submit",
            ota5,
            "--candidates",
            "8",
            "--iterations",
            "50",
            "--seed",
            "4",
        ],
    );
    assert!(long.status.success(), "{}", text(&long.stderr));
    let long_id = text(&long.stdout).trim().to_owned();
    let cancelled = centroid(&sandbox, &["cancel", &long_id]);
    assert!(cancelled.status.success(), "{}", text(&cancelled.stderr));
    let watched = centroid(&sandbox, &["watch", &long_id]);
    assert_eq!(
        watched.status.code(),
        Some(1),
        "a cancelled job does not watch as a success"
    );
    assert!(
        text(&watched.stdout).contains("cancelled"),
        "{}",
        text(&watched.stdout)
    );
    let fetched = centroid(
        &sandbox,
        &[
            "result",
            &long_id,
            "--out",
            sandbox.dir.path().join("out-cancelled").to_str().unwrap(),
        ],
    );
    assert_eq!(fetched.status.code(), Some(1));
    assert_eq!(
        report(&sandbox.dir.path().join("out-cancelled"))["status"],
        "cancelled"
    );

    // bad inputs: exit 2 with every problem, and nothing reaches the coordinator
    let before = job_count(&sandbox).await;
    let bad = sandbox.dir.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    for file in ["netlist.json", "drc_rules.json", "objectives.json"] {
        std::fs::copy(
            repository_root().join("examples/ota5").join(file),
            bad.join(file),
        )
        .unwrap();
    }
    std::fs::write(bad.join("netlist.json"), "{\"top\": \"x\", \"cells\": [}").unwrap();
    std::fs::write(
        bad.join("objectives.json"),
        "{\"objectives\": [{\"name\": \"area_min\", \"weight\": 7}]}",
    )
    .unwrap();
    let refused = centroid(&sandbox, &["submit", bad.to_str().unwrap(), "--wait"]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("netlist.json: (document): invalid JSON at line 1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("objectives.json: /objectives/0/weight"),
        "{stderr}"
    );
    assert!(text(&refused.stdout).is_empty(), "no job id printed");
    assert_eq!(job_count(&sandbox).await, before, "nothing was submitted");
}
