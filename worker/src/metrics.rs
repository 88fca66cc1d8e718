//! The worker's Prometheus metrics (served with `--metrics-listen`): slots total
//! and busy, candidates by outcome and error code, how long they take, KLayout
//! process restarts, and whether the worker drains.

use centroid_runtime::operations::registered;
use prometheus::{Histogram, HistogramOpts, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use crate::pool::Pool;

pub struct WorkerMetrics {
    registry: Registry,
    candidates: IntCounterVec,
    candidate_duration: Histogram,
    slots: IntGaugeVec,
    restarts: IntGauge,
    draining: IntGauge,
}

impl std::fmt::Debug for WorkerMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerMetrics")
    }
}

impl Default for WorkerMetrics {
    fn default() -> Self {
        let registry = Registry::new();
        let gauge = |name: &str, help: &str| IntGauge::new(name, help).expect("valid metric");
        WorkerMetrics {
            candidates: registered(
                &registry,
                IntCounterVec::new(
                    Opts::new(
                        "centroid_worker_candidates_total",
                        "candidates run, by outcome and error code",
                    ),
                    &["outcome", "error_code"],
                )
                .expect("valid metric"),
            ),
            candidate_duration: registered(
                &registry,
                Histogram::with_opts(
                    HistogramOpts::new(
                        "centroid_worker_candidate_duration_seconds",
                        "one candidate on one slot",
                    )
                    .buckets(vec![
                        0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
                    ]),
                )
                .expect("valid metric"),
            ),
            slots: registered(
                &registry,
                IntGaugeVec::new(
                    Opts::new("centroid_worker_slots", "KLayout slots: total and busy"),
                    &["kind"],
                )
                .expect("valid metric"),
            ),
            restarts: registered(
                &registry,
                gauge(
                    "centroid_worker_klayout_restarts",
                    "KLayout processes started beyond the first, all slots",
                ),
            ),
            draining: registered(
                &registry,
                gauge("centroid_worker_draining", "1 while the worker drains"),
            ),
            registry,
        }
    }
}

impl WorkerMetrics {
    /// A candidate ended: `error_code` empty when it ran to the end.
    pub fn candidate_ended(&self, ok: bool, error_code: &str, seconds: f64) {
        let outcome = if ok { "ok" } else { "failed" };
        self.candidates
            .with_label_values(&[outcome, error_code])
            .inc();
        self.candidate_duration.observe(seconds);
    }

    /// Reads the gauges from the pool, then encodes everything.
    pub fn render(&self, pool: &Pool, draining: bool) -> String {
        let statuses = pool.statuses();
        self.slots
            .with_label_values(&["total"])
            .set(statuses.len() as i64);
        let busy = statuses.iter().filter(|status| status.busy).count();
        self.slots.with_label_values(&["busy"]).set(busy as i64);
        self.restarts
            .set(statuses.iter().map(|status| status.restarts()).sum::<u64>() as i64);
        self.draining.set(i64::from(draining));
        centroid_runtime::operations::encode(&self.registry)
    }
}
