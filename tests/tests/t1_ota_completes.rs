//! Acceptance 1: a job on the five-transistor OTA completes with a DRC-clean best
//! layout, LVS-clean when `lvs.run` ran; a late watcher gets the whole history; the
//! best layout's GDS is served by FetchArtifact.

use std::time::Duration;

use centroid_proto::v1::{FetchArtifactRequest, JobEventKind};
use centroid_tests::{Sandbox, kind, small_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ota5_job_completes_with_a_drc_clean_best_layout() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 1).await;
    sandbox.add_worker("w2", 1).await;
    let job_id = sandbox.submit_example("ota5", small_job(3, 2, 42)).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(240)).await;
    let summary = done.job.clone().unwrap();
    assert_eq!(
        summary.outcome,
        "completed",
        "{summary:?}\n{}",
        sandbox.coordinator.logs()
    );
    assert!(summary.best_passed, "{summary:?}");
    let best = done
        .candidates
        .iter()
        .find(|candidate| candidate.candidate_id == summary.best_candidate_id)
        .expect("best candidate");
    assert_eq!(best.drc_violations, 0, "best is DRC-clean: {best:?}");
    // a passing best was routed and LVS ran on it and matched: no pass without proof
    let plan: serde_json::Value = serde_json::from_str(&done.best_plan_json).unwrap();
    let lvs_planned = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|step| step["skill"] == "lvs.run");
    assert!(lvs_planned, "the best plan routes and runs LVS: {plan}");
    assert_eq!(best.lvs, "match", "{best:?}");
    eprintln!(
        "best {} score {:.3} area {:.1} µm² matching {:.3} lvs {:?} (lvs planned: {lvs_planned})",
        best.candidate_id, best.score, best.area_um2, best.matching_score, best.lvs
    );

    // a late watcher receives what already happened, ending with completed
    let events = sandbox.events(&job_id).await;
    assert_eq!(kind(&events[0]), JobEventKind::StateChanged);
    assert!(
        events
            .iter()
            .any(|event| kind(event) == JobEventKind::PlanCreated)
    );
    assert!(
        events
            .iter()
            .any(|event| kind(event) == JobEventKind::Evaluation)
    );
    assert_eq!(kind(events.last().unwrap()), JobEventKind::Completed);
    let states: Vec<&str> = events
        .iter()
        .filter(|event| kind(event) == JobEventKind::StateChanged)
        .map(|event| event.state.as_str())
        .collect();
    for state in [
        "parsing",
        "planning",
        "executing",
        "evaluating",
        "completed",
    ] {
        assert!(states.contains(&state), "{state} missing from {states:?}");
    }

    // the best layout's GDS, streamed
    let mut client = sandbox.client().await.unwrap();
    let mut stream = client
        .fetch_artifact(FetchArtifactRequest {
            job_id: job_id.clone(),
            candidate_id: String::new(),
            name: "layout.gds".into(),
        })
        .await
        .expect("fetch artifact")
        .into_inner();
    let mut gds = Vec::new();
    while let Some(chunk) = stream.message().await.unwrap() {
        assert_eq!(chunk.offset as usize, gds.len());
        gds.extend_from_slice(&chunk.content);
    }
    assert!(gds.len() > 100);
    assert_eq!(
        &gds[..4],
        &[0x00, 0x06, 0x00, 0x02],
        "a GDSII HEADER record"
    );
    centroid_tests::assert_accounted_once(&sandbox, &job_id).await;
}
