//! Slots are shared between running jobs candidate by candidate (issue 29): six
//! jobs submitted together each get a sixth of the dispatches in every second, a
//! job of priority 3 three times the slots of one of priority 1, and a small job
//! submitted behind a 512-candidate iteration starts at once. Measured from the
//! jobs' `CandidateDispatched` event times (the coordinator's clock), on a real
//! coordinator, Redis and worker running `debug.sleep` candidates. (Weights share
//! the slots: the priority test runs candidates long enough that the slots, not
//! the coordinator's time per candidate on this 2-core machine, are what the
//! jobs wait for.)

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use centroid_proto::v1::JobEventKind;
use centroid_tests::{Sandbox, kind, sleep_job};

/// enough slots that each of six jobs keeps several candidates read ahead
const SLOTS: u32 = 12;
const SLEEP_MS: u64 = 100;

/// The times (ms) of a job's dispatches, its first try of each candidate.
async fn dispatch_times(sandbox: &Sandbox, job_id: &str) -> Vec<u64> {
    let mut times: Vec<u64> = sandbox
        .events(job_id)
        .await
        .iter()
        .filter(|event| kind(event) == JobEventKind::CandidateDispatched)
        .map(|event| event.timestamp_ms)
        .collect();
    times.sort_unstable();
    times
}

/// Per whole second from the first dispatch of any job, while every job still
/// had dispatches to come (the second ends before the earliest last dispatch),
/// each job's count of dispatches in it.
fn counts_per_second(jobs: &[Vec<u64>]) -> Vec<Vec<usize>> {
    let start = jobs.iter().filter_map(|times| times.first()).min().copied();
    let end = jobs.iter().filter_map(|times| times.last()).min().copied();
    let (Some(start), Some(end)) = (start, end) else {
        return Vec::new();
    };
    let seconds = (end - start) / 1000;
    (0..seconds)
        .map(|second| {
            let (from, to) = (start + second * 1000, start + (second + 1) * 1000);
            jobs.iter()
                .map(|times| times.iter().filter(|t| (from..to).contains(*t)).count())
                .collect()
        })
        .collect()
}

async fn wait_all_done(sandbox: &Sandbox, jobs: &[String]) {
    for job_id in jobs {
        let view = sandbox.wait_done(job_id, Duration::from_secs(240)).await;
        assert_eq!(
            view.job.expect("job").outcome,
            "completed",
            "job {job_id} completed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_jobs_submitted_together_share_every_second() {
    let mut sandbox = Sandbox::start(&[]);
    // the six jobs wait for a worker, so that all six are queued when the slots come
    // (with the worker first, the first job ran alone for as long as the others took to
    // be submitted — under load most of a second — and finished before the others had
    // run together for three seconds)
    let mut jobs = Vec::new();
    for _ in 0..6 {
        jobs.push(
            sandbox
                .submit_example("ota5", sleep_job(80, 1, SLEEP_MS))
                .await,
        );
    }
    sandbox.add_worker("w1", SLOTS).await;
    wait_all_done(&sandbox, &jobs).await;
    let mut times = Vec::new();
    for job_id in &jobs {
        times.push(dispatch_times(&sandbox, job_id).await);
    }
    let seconds = counts_per_second(&times);
    eprintln!("dispatches per second and job: {seconds:?}");
    assert!(
        seconds.len() >= 3,
        "the jobs ran together for at least three whole seconds: {seconds:?}"
    );
    for (second, counts) in seconds.iter().enumerate().skip(1) {
        let total: usize = counts.iter().sum();
        for (job, count) in counts.iter().enumerate() {
            assert!(
                count * 12 >= total && count * 3 <= total,
                "second {second}: job {job} had {count} of {total} dispatches (between 1/12 and 1/3 wanted): {seconds:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_priority_three_gets_three_times_the_slots() {
    // longer candidates on fewer slots: the slots, not the coordinator's time per
    // candidate, are what the two jobs contend for
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 6).await;
    let mut light = sleep_job(100, 1, 300);
    light.priority = 1;
    let mut heavy = sleep_job(100, 1, 300);
    heavy.priority = 3;
    let jobs = vec![
        sandbox.submit_example("ota5", light).await,
        sandbox.submit_example("ota5", heavy).await,
    ];
    wait_all_done(&sandbox, &jobs).await;
    let mut times = Vec::new();
    for job_id in &jobs {
        times.push(dispatch_times(&sandbox, job_id).await);
    }
    let seconds = counts_per_second(&times);
    eprintln!("dispatches per second (light, heavy): {seconds:?}");
    // over the seconds both ran (the first left out), summed: ≈ 1 : 3
    let (light_sum, heavy_sum) = seconds
        .iter()
        .skip(1)
        .fold((0, 0), |(light, heavy), counts| {
            (light + counts[0], heavy + counts[1])
        });
    assert!(
        light_sum > 0 && heavy_sum >= 2 * light_sum && heavy_sum <= 4 * light_sum,
        "priority 3 against 1: {heavy_sum} against {light_sum} dispatches (≈ 3×): {seconds:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_job_behind_a_512_candidate_iteration_starts_within_a_second() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", SLOTS).await;
    let large = sandbox
        .submit_example("ota5", sleep_job(512, 1, SLEEP_MS))
        .await;
    // the large iteration is running (the queue holds its window, the slots are busy)
    centroid_tests::wait_for_event(
        &sandbox,
        &large,
        Duration::from_secs(60),
        "the large job's first dispatch",
        |event| kind(event) == JobEventKind::CandidateDispatched,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let submitted_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_millis() as u64;
    let small = sandbox
        .submit_example("ota5", sleep_job(4, 1, SLEEP_MS))
        .await;
    sandbox.wait_done(&small, Duration::from_secs(60)).await;
    let small_times = dispatch_times(&sandbox, &small).await;
    let first = *small_times.first().expect("the small job dispatched");
    let waited_ms = first.saturating_sub(submitted_ms);
    let large_view = sandbox.get_job(&large).await;
    let large_finished = large_view
        .candidates
        .iter()
        .filter(|candidate| candidate.status == "finished")
        .count();
    eprintln!(
        "the small job's first candidate started {waited_ms} ms after its submission; the large one had {large_finished} of 512 finished when the small one ended"
    );
    assert!(
        large_finished < 512,
        "the large iteration was still running when the small job ended"
    );
    assert!(
        waited_ms < 1000,
        "the small job started {waited_ms} ms after its submission (within a second wanted)"
    );
    let mut by_state = BTreeMap::new();
    for candidate in &sandbox.get_job(&small).await.candidates {
        *by_state.entry(candidate.status.clone()).or_insert(0) += 1;
    }
    assert_eq!(by_state.get("finished"), Some(&4), "{by_state:?}");
}
