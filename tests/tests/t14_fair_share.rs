//! Jobs share the slots (issue 15, found by hand): a second job used to wait until
//! the first had dispatched its whole iteration. Now each job keeps only a window of
//! its iteration in the work queue, so a small job submitted after a large one runs
//! alongside it and ends long before it.

use std::time::{Duration, Instant};

use centroid_tests::{Sandbox, sleep_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_job_after_a_large_one_is_not_starved() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    // 60 × 0.4 s on two slots: about 12 s of work
    let large = sandbox.submit_example("ota5", sleep_job(60, 1, 400)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // 4 × 0.4 s: alone it would take under a second
    let small = sandbox.submit_example("ota5", sleep_job(4, 1, 400)).await;
    let started = Instant::now();
    let (mut small_done_at, mut large_done_at) = (None, None);
    while small_done_at.is_none() || large_done_at.is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "the jobs did not end"
        );
        for (job_id, done_at) in [(&small, &mut small_done_at), (&large, &mut large_done_at)] {
            if done_at.is_none()
                && sandbox
                    .get_job(job_id)
                    .await
                    .job
                    .is_some_and(|job| job.state == "done")
            {
                *done_at = Some(started.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (small_done, large_done) = (small_done_at.unwrap(), large_done_at.unwrap());
    eprintln!("small job done after {small_done:?}, large job after {large_done:?}");
    assert!(
        small_done * 2 < large_done,
        "the small job shared the slots: done after {small_done:?}, the large one after {large_done:?}"
    );
    let large_view = sandbox.get_job(&large).await;
    assert_eq!(large_view.job.unwrap().outcome, "completed");
    assert_eq!(
        large_view
            .candidates
            .iter()
            .filter(|candidate| candidate.status == "finished")
            .count(),
        60,
        "every candidate of the large job ran once"
    );
}
