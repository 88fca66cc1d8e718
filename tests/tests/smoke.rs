use std::time::Duration;

use centroid_tests::{Sandbox, small_job};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ota5_smoke() {
    let mut sandbox = Sandbox::start(&[]);
    sandbox.add_worker("w1", 2).await;
    let job_id = sandbox.submit_example("ota5", small_job(2, 1, 1)).await;
    let done = sandbox.wait_done(&job_id, Duration::from_secs(240)).await;
    sandbox.dump_logs();
    println!("{:#?}", done);
}
