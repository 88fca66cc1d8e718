//! Live progress of a job from its events: a progress line (indicatif) on a terminal,
//! plain log lines otherwise.

use std::io::IsTerminal as _;
use std::time::Duration;

use centroid_proto::v1::{JobEvent, JobEventKind};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;

/// Counts the progress line shows.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    pub iteration: u32,
    pub done: u32,
    pub running: u32,
    pub failed: u32,
    pub best_score: Option<f64>,
    pub state: String,
}

impl Tally {
    /// Folds one event in.
    pub fn apply(&mut self, event: &JobEvent) {
        let data: Value = serde_json::from_str(&event.data_json).unwrap_or(Value::Null);
        self.iteration = event.iteration;
        if !event.state.is_empty() {
            self.state = event.state.clone();
        }
        match JobEventKind::try_from(event.kind).unwrap_or(JobEventKind::Unspecified) {
            JobEventKind::CandidateDispatched => self.running += 1,
            JobEventKind::CandidateFinished => {
                self.running = self.running.saturating_sub(1);
                if data.get("ok").and_then(Value::as_bool) == Some(false) {
                    self.failed += 1;
                } else {
                    self.done += 1;
                }
            }
            JobEventKind::CandidateRetried => self.running = self.running.saturating_sub(1),
            JobEventKind::CandidateDeadLettered => self.failed += 1,
            JobEventKind::Evaluation | JobEventKind::Iteration | JobEventKind::Completed => {
                let score = data
                    .get("best_score")
                    .or_else(|| data.get("score"))
                    .and_then(Value::as_f64);
                if let Some(score) = score {
                    self.best_score = Some(self.best_score.map_or(score, |best| best.max(score)));
                }
            }
            _ => {}
        }
    }

    pub fn line(&self) -> String {
        let best = self
            .best_score
            .map_or_else(|| "–".to_owned(), |score| format!("{score:.4}"));
        format!(
            "{state} · iteration {iteration} · candidates done {done}, running {running}, failed {failed} · best score {best}",
            state = if self.state.is_empty() {
                "starting"
            } else {
                &self.state
            },
            iteration = self.iteration + 1,
            done = self.done,
            running = self.running,
            failed = self.failed,
        )
    }
}

/// Shows a job's progress as events arrive.
pub struct Progress {
    tally: Tally,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(job_id: &str) -> Progress {
        // A progress line only in an interactive session; logs and pipes get plain lines.
        let interactive = std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
        let bar = interactive.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(job_id.to_owned());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        if bar.is_none() {
            eprintln!("job {job_id}: watching");
        }
        Progress {
            tally: Tally::default(),
            bar,
        }
    }

    pub fn on_event(&mut self, event: &JobEvent) {
        self.tally.apply(event);
        match &self.bar {
            Some(bar) => {
                bar.set_message(self.tally.line());
                let kind = JobEventKind::try_from(event.kind).unwrap_or(JobEventKind::Unspecified);
                if matches!(
                    kind,
                    JobEventKind::Iteration
                        | JobEventKind::WaitingForWorkers
                        | JobEventKind::CandidateDeadLettered
                ) {
                    bar.println(format!(
                        "{}: {}",
                        kind.as_str_name()
                            .trim_start_matches("JOB_EVENT_KIND_")
                            .to_ascii_lowercase(),
                        event.message
                    ));
                }
            }
            None => {
                let kind = JobEventKind::try_from(event.kind).unwrap_or(JobEventKind::Unspecified);
                let name = kind
                    .as_str_name()
                    .trim_start_matches("JOB_EVENT_KIND_")
                    .to_ascii_lowercase();
                let candidate = if event.candidate_id.is_empty() {
                    String::new()
                } else {
                    format!(" {}", event.candidate_id)
                };
                eprintln!(
                    "[{}] {name}{candidate}: {} | {}",
                    event.state,
                    event.message,
                    self.tally.line()
                );
            }
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_with_message(self.tally.line());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: JobEventKind, data: &str) -> JobEvent {
        JobEvent {
            kind: kind as i32,
            state: "executing".into(),
            data_json: data.into(),
            ..JobEvent::default()
        }
    }

    #[test]
    fn tally_counts_running_done_failed_and_best() {
        let mut tally = Tally::default();
        for _ in 0..3 {
            tally.apply(&event(JobEventKind::CandidateDispatched, ""));
        }
        tally.apply(&event(JobEventKind::CandidateFinished, r#"{"ok": true}"#));
        tally.apply(&event(JobEventKind::CandidateFinished, r#"{"ok": false}"#));
        tally.apply(&event(JobEventKind::Evaluation, r#"{"score": 0.4}"#));
        tally.apply(&event(JobEventKind::Evaluation, r#"{"score": 0.7}"#));
        tally.apply(&event(JobEventKind::Evaluation, r#"{"score": 0.5}"#));
        assert_eq!((tally.running, tally.done, tally.failed), (1, 1, 1));
        assert_eq!(tally.best_score, Some(0.7));
        assert!(tally.line().contains("best score 0.7000"));
    }
}
