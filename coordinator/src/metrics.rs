//! The coordinator's Prometheus metrics (served with `--metrics-listen`): the
//! queue depth an autoscaler scales workers on, jobs by state, candidates by
//! outcome and error code, retries, dead letters, slots per worker, how long
//! candidates take, and the LLM planner's calls and tokens.

use centroid_runtime::operations::registered;
use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

use crate::model::CandidateResult;
use crate::registry::Registry as WorkerRegistry;
use crate::store::Store;

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
    llm_calls: IntCounterVec,
    llm_tokens: IntCounterVec,
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
            llm_calls: registered(
                &registry,
                counter_vec(
                    "centroid_llm_calls_total",
                    "calls to the LLM planner's model, by role (planner, critic, meta, react, repair) and outcome (used, rejected, failed)",
                    &["role", "outcome"],
                ),
            ),
            llm_tokens: registered(
                &registry,
                counter_vec(
                    "centroid_llm_tokens_total",
                    "tokens sent to and received from the model (kind: prompt, completion)",
                    &["kind"],
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
        for kind in ["prompt", "completion"] {
            metrics.llm_tokens.with_label_values(&[kind]);
        }
        metrics
    }

    /// One call to the model.
    pub fn llm_call(&self, role: &str, outcome: &str, prompt_tokens: u32, completion_tokens: u32) {
        self.llm_calls.with_label_values(&[role, outcome]).inc();
        self.llm_tokens
            .with_label_values(&["prompt"])
            .inc_by(u64::from(prompt_tokens));
        self.llm_tokens
            .with_label_values(&["completion"])
            .inc_by(u64::from(completion_tokens));
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

    /// Reads the gauges from the store and the workers' registry, then encodes
    /// everything. A gauge the store cannot answer keeps its last value (logged).
    pub(crate) async fn render(&self, store: &dyn Store, workers: &WorkerRegistry) -> String {
        match (
            store.queue_waiting_count().await,
            store.queue_pending_count().await,
        ) {
            (Ok(waiting), Ok(pending)) => {
                self.queue
                    .with_label_values(&["waiting"])
                    .set(waiting as i64);
                self.queue
                    .with_label_values(&["pending"])
                    .set(pending as i64);
            }
            (Err(error), _) | (_, Err(error)) => {
                tracing::warn!(%error, "metrics: the queue depth is not read");
            }
        }
        match store.active_jobs().await {
            Ok(job_ids) => {
                self.jobs.reset();
                for job_id in job_ids.iter().take(JOBS_READ_PER_SCRAPE) {
                    match store.get_job(job_id).await {
                        Ok(Some(job)) => self.jobs.with_label_values(&[job.state().as_str()]).inc(),
                        // ended and expired between the two reads
                        Ok(None) => {}
                        Err(error) => {
                            tracing::warn!(%error, job_id = %job_id, "metrics: a job's state is not read");
                        }
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "metrics: the jobs by state are not read"),
        }
        self.slots.reset();
        for status in workers.statuses().into_iter().filter(|status| status.alive) {
            let Some(info) = status.info else { continue };
            let worker = info.worker_id.as_str();
            self.slots
                .with_label_values(&[worker, "total"])
                .set(info.slots as i64);
            self.slots
                .with_label_values(&[worker, "busy"])
                .set(status.running as i64);
        }
        centroid_runtime::operations::encode(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_calls_and_tokens_are_counted() {
        let metrics = CoordinatorMetrics::new();
        let before = centroid_runtime::operations::encode(&metrics.registry);
        assert!(
            before.contains("centroid_llm_tokens_total{kind=\"prompt\"} 0"),
            "{before}"
        );
        metrics.llm_call("planner", "used", 1200, 300);
        metrics.llm_call("critic", "failed", 800, 0);
        let text = centroid_runtime::operations::encode(&metrics.registry);
        for line in [
            "centroid_llm_calls_total{outcome=\"used\",role=\"planner\"} 1",
            "centroid_llm_calls_total{outcome=\"failed\",role=\"critic\"} 1",
            "centroid_llm_tokens_total{kind=\"prompt\"} 2000",
            "centroid_llm_tokens_total{kind=\"completion\"} 300",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }
}
