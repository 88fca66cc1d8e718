//! Dispatch at scale (issue 29): slots held and candidates/s of one and of two
//! coordinators sharing one Redis, with a fleet of simulated workers.
//!
//! Real processes: redis-server (AOF on), two `centroid-coordinator` binaries on
//! one key prefix (one queue, one consumer group; each job driven by the one it
//! was submitted to, under its job lease), and `centroid-worker` processes in
//! their simulation mode (`--simulate-candidate-ms`, no KLayout; at most 250 slots
//! each, at least two). For each slot count and run, the same fleet is started
//! twice, in alternating order: all workers registered with coordinator A and
//! every job submitted to A ("one"), then half of the workers and of the jobs on
//! each coordinator ("two"). Each time `CENTROID_BENCH_JOBS` noop jobs of one
//! iteration share `slots × CENTROID_BENCH_ROUNDS` candidates.
//!
//! From the jobs' event logs: candidates/s over the middle 80 % of the finishes
//! (from the 10 % to the 90 % finish: no ramp-up, no tail); slots held (%) =
//! candidates/s × the simulated candidate time / slots (the share of the slots'
//! time spent running candidates); dispatch → finish latency (median). From
//! `/proc/<pid>/stat`: the CPU time (user + system) both coordinators spent over
//! the run, per candidate — what predicts how many slots one coordinator can keep
//! busy on a core of its own, whatever else loads the machine.
//!
//!     cargo bench -p centroid-tests --bench dispatch_scale
//!     (CENTROID_BENCH_SLOTS=100,300,1000 CENTROID_BENCH_RUNS=3 CENTROID_BENCH_ROUNDS=10
//!      CENTROID_BENCH_JOBS=4 CENTROID_BENCH_DELAY_MS=100 by default)
//!     (CENTROID_BENCH_COORDINATOR / CENTROID_BENCH_WORKER: binaries of another build
//!      to run instead of this one's, e.g. main's for a before/after pair)

use std::time::Duration;

use centroid_proto::v1::JobEventKind;
use centroid_tests::simulated_worker::{SimulatedWorkerProcess, wait_registered};
use centroid_tests::{
    CoordinatorProcess, Sandbox, client_for, event_data, example_request, kind, sleep_job,
};

const SLOTS_PER_PROCESS: usize = 250;
/// Most candidates per job (see `Bench::run`): fewer than ota5's 1,944 points a
/// random draw can give with the simulated workers' skills — a job asking for
/// more drafts those 1,944 only (and the bench's count of finishes fails), after
/// the search has drawn to its limit of tries (what the 10-round runs measured
/// before, as drafting).
const MOST_PER_JOB: usize = 1_900;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|left, right| left.total_cmp(right));
    match values.len() {
        0 => f64::NAN,
        count => values[count / 2],
    }
}

/// What one run measured.
struct Measured {
    per_second: f64,
    held_percent: f64,
    latency_ms: f64,
    /// coordinator CPU (both processes, user + system) per candidate
    cpu_ms_per_candidate: f64,
}

/// CPU time (user + system) the process has used, in ms (`/proc/<pid>/stat`).
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc stat");
    // the fields after the command (in parentheses, which may hold spaces)
    let fields: Vec<&str> = stat[stat.rfind(')').expect("stat command") + 2..]
        .split_whitespace()
        .collect();
    let ticks = |index: usize| fields[index].parse::<f64>().expect("stat ticks");
    // utime and stime: fields 14 and 15 of the line, 12 and 13 after the command
    // SAFETY: sysconf only reads a system constant
    let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) * 1000.0 / ticks_per_second
}

struct Bench {
    sandbox: Sandbox,
    second: CoordinatorProcess,
    delay_ms: u64,
    rounds: usize,
    jobs: usize,
    started_workers: usize,
}

impl Bench {
    fn urls(&self) -> [String; 2] {
        [self.sandbox.coordinator.url(), self.second.url()]
    }

    /// Starts the fleet of `slots` slots, registered with one coordinator or
    /// split between the two.
    async fn start_fleet(
        &mut self,
        slots: usize,
        coordinators: usize,
    ) -> Vec<SimulatedWorkerProcess> {
        let processes = slots.div_ceil(SLOTS_PER_PROCESS).max(2);
        let urls = self.urls();
        let mut fleet = Vec::new();
        for index in 0..processes {
            let share = slots / processes + usize::from(index < slots % processes);
            self.started_workers += 1;
            let worker_id = format!("sim{}", self.started_workers);
            let url = &urls[index % coordinators];
            fleet.push(SimulatedWorkerProcess::start(
                self.sandbox.dir.path(),
                url,
                &worker_id,
                share as u32,
                self.delay_ms,
            ));
        }
        for (index, url) in urls.iter().enumerate().take(coordinators) {
            let ids: Vec<String> = fleet
                .iter()
                .skip(index)
                .step_by(coordinators)
                .map(|worker| worker.worker_id.clone())
                .collect();
            wait_registered(url, &ids).await;
        }
        fleet
    }

    /// CPU time of both coordinators so far, in ms.
    fn coordinators_cpu_ms(&self) -> f64 {
        cpu_ms(self.sandbox.coordinator.pid()) + cpu_ms(self.second.pid())
    }

    async fn run(&mut self, slots: usize, coordinators: usize, seed: u64) -> Measured {
        let mut fleet = self.start_fleet(slots, coordinators).await;
        let cpu_before = self.coordinators_cpu_ms();
        let total = slots * self.rounds;
        let urls = self.urls();
        // a job's event log keeps its last `max_events_per_job` (10,000) events, about
        // four per candidate: at most 2,000 candidates per job keep every finish (and
        // ota5's design space holds 1,944: `MOST_PER_JOB`)
        let jobs = self.jobs.max(total.div_ceil(MOST_PER_JOB));
        let mut submitted = Vec::new();
        for index in 0..jobs {
            let count = total / jobs + usize::from(index < total % jobs);
            let mut options = sleep_job(count as u32, 1, 0);
            options.seed = seed * 100 + index as u64;
            let url = urls[index % coordinators].clone();
            let mut client = client_for(&url).await.expect("connect");
            let job_id = client
                .submit_job(example_request("ota5", options, "scale"))
                .await
                .expect("submit")
                .into_inner()
                .job_id;
            submitted.push((url, job_id));
        }
        self.wait_all_done(&submitted).await;
        // before the event logs are read (serving them is not dispatching)
        let cpu_spent = self.coordinators_cpu_ms() - cpu_before;
        let mut finishes = Vec::new();
        let mut latencies = Vec::new();
        for (url, job_id) in &submitted {
            let (job_finishes, job_latencies) = job_times(url, job_id).await;
            finishes.extend(job_finishes);
            latencies.extend(job_latencies);
        }
        for worker in &mut fleet {
            worker.stop();
        }
        assert_eq!(finishes.len(), total, "every candidate finished once");
        finishes.sort_unstable();
        let low = finishes[total / 10];
        let high = finishes[total * 9 / 10];
        let counted = (total * 9 / 10 - total / 10) as f64;
        let per_second = counted / ((high - low).max(1) as f64 / 1000.0);
        Measured {
            per_second,
            held_percent: 100.0 * per_second * self.delay_ms as f64 / 1000.0 / slots as f64,
            latency_ms: median(&mut latencies),
            cpu_ms_per_candidate: cpu_spent / total as f64,
        }
    }

    /// Waits for every submitted job to complete. It polls one ListJobs call (the
    /// newest jobs, each with its state and counts) every 200 ms, not a GetJob per
    /// job: a GetJob answer lists every candidate and result of the job, work a
    /// real client watching a job does not ask of the coordinator every 200 ms (it
    /// watches its events), which counted in the coordinators' CPU per candidate.
    /// A job the listing leaves out is asked for with GetJob.
    async fn wait_all_done(&self, submitted: &[(String, String)]) {
        let mut client = client_for(&self.urls()[0]).await.expect("connect");
        let mut pending: Vec<&(String, String)> = submitted.iter().collect();
        let started = std::time::Instant::now();
        while !pending.is_empty() {
            let listed = client
                .list_jobs(centroid_proto::v1::ListJobsRequest {
                    limit: submitted.len() as u32,
                })
                .await
                .expect("list jobs")
                .into_inner()
                .jobs;
            let mut still = Vec::new();
            for submission in pending {
                let (url, job_id) = submission;
                let job = match listed.iter().find(|job| &job.job_id == job_id) {
                    Some(job) => job.clone(),
                    None => get_job(url, job_id).await,
                };
                if job.state == "done" {
                    assert_eq!(job.outcome, "completed", "{job:?}");
                    continue;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(900),
                    "job {job_id} not done: {job:?}\n{}",
                    self.sandbox.coordinator.logs()
                );
                still.push(submission);
            }
            pending = still;
            if !pending.is_empty() {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// The job's summary (GetJob).
async fn get_job(url: &str, job_id: &str) -> centroid_proto::v1::JobSummary {
    let mut client = client_for(url).await.expect("connect");
    client
        .get_job(centroid_proto::v1::GetJobRequest {
            job_id: job_id.to_string(),
        })
        .await
        .expect("get job")
        .into_inner()
        .job
        .expect("job view")
}

/// The job's finish times and dispatch → finish latencies, from its events.
async fn job_times(url: &str, job_id: &str) -> (Vec<u64>, Vec<f64>) {
    let mut dispatched = std::collections::HashMap::new();
    let (mut finishes, mut latencies) = (Vec::new(), Vec::new());
    for event in events(url, job_id).await {
        match kind(&event) {
            JobEventKind::CandidateDispatched => {
                dispatched.insert(event.candidate_id.clone(), event.timestamp_ms);
            }
            JobEventKind::CandidateFinished => {
                assert_eq!(event_data(&event)["ok"], true, "{event:?}");
                finishes.push(event.timestamp_ms);
                if let Some(start) = dispatched.get(&event.candidate_id) {
                    latencies.push(event.timestamp_ms.saturating_sub(*start) as f64);
                }
            }
            _ => {}
        }
    }
    (finishes, latencies)
}

/// Every event of the job (WatchJob ends after the last one).
async fn events(url: &str, job_id: &str) -> Vec<centroid_proto::v1::JobEvent> {
    let mut client = client_for(url).await.expect("connect");
    let mut stream = client
        .watch_job(centroid_proto::v1::WatchJobRequest {
            job_id: job_id.to_string(),
            after_cursor: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut events = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(60), stream.message())
        .await
        .expect("watch stalled")
        .expect("watch")
    {
        let last = event.last;
        events.push(event);
        if last {
            break;
        }
    }
    events
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let slot_counts: Vec<usize> = std::env::var("CENTROID_BENCH_SLOTS")
        .unwrap_or_else(|_| "100,300,1000".into())
        .split(',')
        .filter_map(|count| count.trim().parse().ok())
        .collect();
    let runs = env_number("CENTROID_BENCH_RUNS", 3);
    let sandbox = Sandbox::start(&[]);
    let second = CoordinatorProcess::start_named(
        &sandbox.dir.path().join("second"),
        &sandbox.redis.url(),
        &sandbox.prefix,
        "coordinator-second",
        &[],
    );
    let mut bench = Bench {
        sandbox,
        second,
        delay_ms: env_number("CENTROID_BENCH_DELAY_MS", 100) as u64,
        rounds: env_number("CENTROID_BENCH_ROUNDS", 10),
        jobs: env_number("CENTROID_BENCH_JOBS", 4).max(2),
        started_workers: 0,
    };
    let mut rows = Vec::new();
    for &slots in &slot_counts {
        let mut one = Vec::new();
        let mut two = Vec::new();
        for run in 0..runs {
            let seed = (slots * 10 + run) as u64;
            // paired: both set-ups in each run, alternating which goes first
            let order: [usize; 2] = if run % 2 == 0 { [1, 2] } else { [2, 1] };
            for coordinators in order {
                let measured = bench.run(slots, coordinators, seed).await;
                eprintln!(
                    "slots {slots} coordinators {coordinators} run {run}: {:.1} candidates/s, {:.1} % held, latency {:.0} ms, coordinator CPU {:.3} ms per candidate",
                    measured.per_second,
                    measured.held_percent,
                    measured.latency_ms,
                    measured.cpu_ms_per_candidate
                );
                if coordinators == 1 {
                    &mut one
                } else {
                    &mut two
                }
                .push(measured);
            }
        }
        rows.push((slots, one, two));
    }
    println!();
    println!(
        "dispatch at scale: simulated workers ({} ms per candidate), {} jobs x {} candidates per slot, {runs} paired runs, medians",
        bench.delay_ms, bench.jobs, bench.rounds
    );
    println!(
        "{:>6} {:>13} {:>16} {:>11} {:>11} {:>13} {:>16} {:>11} {:>11} {:>10}",
        "slots",
        "1 coord held",
        "1 coord cand/s",
        "1 lat (ms)",
        "1 CPU ms/c",
        "2 coord held",
        "2 coord cand/s",
        "2 lat (ms)",
        "2 CPU ms/c",
        "2/1 ratio"
    );
    for (slots, one, two) in rows {
        let ratios: Vec<f64> = one
            .iter()
            .zip(&two)
            .map(|(one, two)| two.per_second / one.per_second)
            .collect();
        let pick = |runs: &[Measured], field: fn(&Measured) -> f64| {
            median(&mut runs.iter().map(field).collect::<Vec<_>>())
        };
        println!(
            "{:>6} {:>12.1}% {:>16.1} {:>11.0} {:>11.3} {:>12.1}% {:>16.1} {:>11.0} {:>11.3} {:>10.2}",
            slots,
            pick(&one, |m| m.held_percent),
            pick(&one, |m| m.per_second),
            pick(&one, |m| m.latency_ms),
            pick(&one, |m| m.cpu_ms_per_candidate),
            pick(&two, |m| m.held_percent),
            pick(&two, |m| m.per_second),
            pick(&two, |m| m.latency_ms),
            pick(&two, |m| m.cpu_ms_per_candidate),
            median(&mut ratios.clone()),
        );
    }
}
