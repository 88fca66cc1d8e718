//! Beyond the OTA: a hierarchical circuit (flattened ids like `X1/M1`) and a
//! mirror bank (ratioed, interdigitated) come out DRC- and LVS-clean too.

use std::time::Duration;

use centroid_tests::{Sandbox, small_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folded_cascode_and_mirror_bank_complete_clean() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    for example in ["folded_cascode", "mirror_bank"] {
        let job_id = sandbox.submit_example(example, small_job(3, 2, 1)).await;
        let done = sandbox.wait_done(&job_id, Duration::from_secs(240)).await;
        let summary = done.job.clone().unwrap();
        assert_eq!(summary.outcome, "completed", "{example}: {summary:?}");
        let best = done
            .candidates
            .iter()
            .find(|candidate| candidate.candidate_id == summary.best_candidate_id)
            .expect("best");
        assert_eq!(best.drc_violations, 0, "{example}: {best:?}");
        assert_eq!(best.lvs, "match", "{example}: {best:?}");
        assert!(summary.best_passed, "{example}: {best:?}");
    }
}
