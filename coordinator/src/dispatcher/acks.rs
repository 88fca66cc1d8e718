//! Acknowledging queue entries in batches: every entry's task asks and waits as
//! before, but one task sends the acknowledgements — all those asked for while
//! the previous batch was on its way go in one store call (one XACK of many ids),
//! so a thousand candidates finishing per second cost a few round trips, not a
//! thousand.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::context::{Context, Interrupted};

/// Most entries acknowledged by one store call.
const MOST_PER_BATCH: usize = 1024;

type Request = (String, oneshot::Sender<Result<(), Arc<Interrupted>>>);

/// The way to the acknowledging task.
#[derive(Clone)]
pub(crate) struct Acks {
    requests: mpsc::UnboundedSender<Request>,
}

/// Why an entry was not acknowledged (it is delivered again; its result is
/// recorded once).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AckFailed {
    /// the batch's store call failed for good, or the coordinator shuts down
    #[error("{0}")]
    Interrupted(Arc<Interrupted>),
    /// the acknowledging task has stopped (the coordinator shuts down)
    #[error("the coordinator shuts down")]
    ShuttingDown,
}

impl Acks {
    /// Starts the acknowledging task.
    pub(crate) fn spawn(context: Arc<Context>) -> (Acks, tokio::task::JoinHandle<()>) {
        let (requests, receiver) = mpsc::unbounded_channel();
        (Acks { requests }, tokio::spawn(ack_loop(context, receiver)))
    }

    /// Acknowledges `entry_id` with the next batch and waits for it.
    pub(crate) async fn ack(&self, entry_id: &str) -> Result<(), AckFailed> {
        let (done, answer) = oneshot::channel();
        self.requests
            .send((entry_id.to_string(), done))
            .map_err(|_| AckFailed::ShuttingDown)?;
        match answer.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(interrupted)) => Err(AckFailed::Interrupted(interrupted)),
            Err(_) => Err(AckFailed::ShuttingDown),
        }
    }
}

async fn ack_loop(context: Arc<Context>, mut receiver: mpsc::UnboundedReceiver<Request>) {
    let mut batch: Vec<Request> = Vec::new();
    while receiver.recv_many(&mut batch, MOST_PER_BATCH).await > 0 {
        let entry_ids: Vec<String> = batch.iter().map(|(entry_id, _)| entry_id.clone()).collect();
        let outcome = context
            .with_store_retry("acknowledge", || context.store.queue_ack_all(&entry_ids))
            .await;
        let answer = outcome.map_err(Arc::new);
        for (_, done) in batch.drain(..) {
            // the entry's task is gone only when the coordinator shuts down
            if done.send(answer.clone()).is_err() {
                tracing::debug!("an acknowledged entry's task ended first");
            }
        }
    }
}
