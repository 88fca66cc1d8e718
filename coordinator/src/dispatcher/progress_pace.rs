//! Telling the jobs' drivers that candidates finished, some fifty times a second
//! at most: every finished entry asks; one task wakes the drivers — at once when
//! it was idle, then not again before [`PACE`] has passed (the asks meanwhile make
//! one wake-up). A driver's look at its job reads the job's result ids and walks
//! its round, O(candidates of the round); woken at every finish, with a thousand
//! slots the drivers looked at their jobs thousands of times a second.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::tick;
use crate::context::Context;

/// Least time between two wake-ups of the drivers.
const PACE: Duration = Duration::from_millis(20);

/// The way to the pacing task.
#[derive(Clone)]
pub(crate) struct ProgressPace {
    asked: Arc<Notify>,
}

impl ProgressPace {
    /// Starts the pacing task.
    pub(crate) fn spawn(context: Arc<Context>) -> (ProgressPace, JoinHandle<()>) {
        let pace = ProgressPace {
            asked: Arc::new(Notify::new()),
        };
        (pace.clone(), tokio::spawn(pace_loop(context, pace)))
    }

    /// An entry finished: the drivers are woken within [`PACE`].
    pub(crate) fn finished(&self) {
        // a permit is kept when the task is not waiting: the next turn wakes them
        self.asked.notify_one();
    }
}

async fn pace_loop(context: Arc<Context>, pace: ProgressPace) {
    loop {
        tokio::select! {
            _ = pace.asked.notified() => {}
            _ = context.shutting_down() => return,
        }
        context.progress.notify_waiters();
        if !tick(&context, PACE).await {
            return;
        }
    }
}
