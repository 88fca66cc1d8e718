//! The coordinator's Prometheus metrics (served with `--metrics-listen`): the
//! queue depth an autoscaler scales workers on, jobs by state, candidates by
//! outcome and error code, retries, dead letters, slots per worker, and how long
//! candidates take.

use centroid_proto::runtime::operations::registered;
use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

use crate::model::CandidateResult;

/// Most jobs whose state the gauge reads per scrape.
const JOBS_READ_PER_SCRAPE: usize = 1_000;

pub struct CoordinatorMetrics {
    registry: Registry,
    candidates: IntCounterVec,
    retries: IntCounterVec,
    dead_letters: IntCounter,
    candidate_duration: Histogram,
    queue: IntGaugeVec,
    jobs: IntGaugeVec,
    slots: IntGaugeVec,
}

impl std::fmt::Debug for CoordinatorMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CoordinatorMetrics")
    }
}

impl Default for CoordinatorMetrics {
    fn default() -> Self {
        let registry = Registry::new();
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric")
        };
        let gauge_vec = |name: &str, help: &str, labels: &[&str]| {
            IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric")
        };
        CoordinatorMetrics {
            candidates: registered(
                &registry,
                counter_vec(
                    "centroid_candidates_total",
                    "candidates recorded, by outcome and error code",
                    &["outcome", "error_code"],
                ),
            ),
            retries: registered(
                &registry,
                counter_vec(
                    "centroid_candidate_retries_total",
                    "candidate retries, by error code",
                    &["code"],
                ),
            ),
            dead_letters: registered(
                &registry,
                IntCounter::new("centroid_dead_letters_total", "candidates dead-lettered")
                    .expect("valid metric"),
            ),
            candidate_duration: registered(
                &registry,
                Histogram::with_opts(
                    HistogramOpts::new(
                        "centroid_candidate_duration_seconds",
                        "from the first delivery to the result, per candidate",
                    )
                    .buckets(vec![
                        0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
                    ]),
                )
                .expect("valid metric"),
            ),
            queue: registered(
                &registry,
                gauge_vec(
                    "centroid_queue_depth",
                    "candidates in the work queue: waiting (not delivered yet) or pending (delivered, not done)",
                    &["state"],
                ),
            ),
            jobs: registered(
                &registry,
                gauge_vec("centroid_jobs", "unfinished jobs by state", &["state"]),
            ),
            slots: registered(
                &registry,
                gauge_vec(
                    "centroid_worker_slots",
                    "slots of each live worker: total and busy with this coordinator's candidates",
                    &["worker", "kind"],
                ),
            ),
            registry,
        }
    }
}

impl CoordinatorMetrics {
    /// Metrics with the series a dashboard expects present from the start (at 0).
    pub fn new() -> CoordinatorMetrics {
        let metrics = CoordinatorMetrics::default();
        for code in [
            "TIMEOUT",
            "SERVICE_UNAVAILABLE",
            "RESOURCE_EXHAUSTED",
            "INTERNAL_ERROR",
        ] {
            metrics.retries.with_label_values(&[code]);
        }
        metrics.candidates.with_label_values(&["ok", ""]);
        for state in ["waiting", "pending"] {
            metrics.queue.with_label_values(&[state]);
        }
        metrics
    }

    /// A recorded result.
    pub fn candidate_recorded(&self, result: &CandidateResult) {
        let outcome = if result.ok {
            "ok"
        } else {
            result.status.as_str()
        };
        let code = if result.ok {
            ""
        } else {
            result.error_code.as_str()
        };
        self.candidates.with_label_values(&[outcome, code]).inc();
        self.candidate_duration
            .observe(result.duration_ms as f64 / 1000.0);
    }

    pub fn retried(&self, code: &str) {
        self.retries.with_label_values(&[code]).inc();
    }

    pub fn dead_lettered(&self) {
        self.dead_letters.inc();
    }

    /// Reads the gauges from the store and the registry, then encodes everything.
    pub(crate) async fn render(&self, context: &crate::context::Context) -> String {
        if let (Ok(waiting), Ok(pending)) = (
            context.store.queue_waiting_count().await,
            context.store.queue_pending_count().await,
        ) {
            self.queue
                .with_label_values(&["waiting"])
                .set(waiting as i64);
            self.queue
                .with_label_values(&["pending"])
                .set(pending as i64);
        }
        if let Ok(job_ids) = context.store.active_jobs().await {
            self.jobs.reset();
            for job_id in job_ids.iter().take(JOBS_READ_PER_SCRAPE) {
                if let Ok(Some(job)) = context.store.get_job(job_id).await {
                    self.jobs.with_label_values(&[job.state.as_str()]).inc();
                }
            }
        }
        self.slots.reset();
        for status in context
            .registry
            .statuses()
            .into_iter()
            .filter(|status| status.alive)
        {
            let Some(info) = status.info else { continue };
            let worker = info.worker_id.as_str();
            self.slots
                .with_label_values(&[worker, "total"])
                .set(info.slots as i64);
            self.slots
                .with_label_values(&[worker, "busy"])
                .set(status.running as i64);
        }
        centroid_proto::runtime::operations::encode(&self.registry)
    }
}
