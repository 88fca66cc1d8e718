//! Live progress of a job from its events: a progress line (indicatif) on a terminal,
//! plain log lines otherwise.

use std::io::IsTerminal as _;
use std::time::Duration;

use centroid_planner::job_events::EventData;
use centroid_proto::v1::{JobEvent, JobEventKind};
use indicatif::{ProgressBar, ProgressStyle};

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
        let data = EventData::parse(&event.data_json);
        self.iteration = event.iteration;
        if !event.state.is_empty() {
            self.state = event.state.clone();
        }
        match JobEventKind::try_from(event.kind).unwrap_or(JobEventKind::Unspecified) {
            JobEventKind::CandidateDispatched => self.running += 1,
            JobEventKind::CandidateFinished => {
                self.running = self.running.saturating_sub(1);
                match data {
                    Some(EventData::CandidateFinished(finished)) if !finished.ok => {
                        self.failed += 1
                    }
                    _ => self.done += 1,
                }
            }
            JobEventKind::CandidateRetried => self.running = self.running.saturating_sub(1),
            JobEventKind::CandidateDeadLettered => self.failed += 1,
            JobEventKind::Evaluation | JobEventKind::Iteration | JobEventKind::Completed => {
                if let Some(score) = data.as_ref().and_then(EventData::score) {
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
            iteration = self.iteration,
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
    use centroid_planner::job_events::{CandidateFinished, MeasuredFigures};

    fn event(kind: JobEventKind, data: Option<EventData>) -> JobEvent {
        JobEvent {
            kind: kind as i32,
            state: "executing".into(),
            data_json: data.map_or(String::new(), |data| data.to_value().to_string()),
            ..JobEvent::default()
        }
    }

    fn finished(ok: bool) -> Option<EventData> {
        Some(EventData::CandidateFinished(CandidateFinished {
            ok,
            status: if ok { "finished" } else { "failed" }.into(),
            worker_id: "w".into(),
            attempts: 1,
            duration_ms: 100,
            metrics: MeasuredFigures::default(),
            adjustments: Vec::new(),
        }))
    }

    fn best_so_far(best_score: f64) -> Option<EventData> {
        Some(EventData::Iteration {
            best_candidate_id: "c".into(),
            best_score,
        })
    }

    #[test]
    fn tally_counts_running_done_failed_and_best() {
        let mut tally = Tally::default();
        for _ in 0..3 {
            tally.apply(&event(JobEventKind::CandidateDispatched, None));
        }
        tally.apply(&event(JobEventKind::CandidateFinished, finished(true)));
        tally.apply(&event(JobEventKind::CandidateFinished, finished(false)));
        tally.apply(&event(JobEventKind::Iteration, best_so_far(0.4)));
        tally.apply(&event(JobEventKind::Iteration, best_so_far(0.7)));
        tally.apply(&event(JobEventKind::Iteration, best_so_far(0.5)));
        assert_eq!((tally.running, tally.done, tally.failed), (1, 1, 1));
        assert_eq!(tally.best_score, Some(0.7));
        assert!(tally.line().contains("best score 0.7000"));
    }
}
