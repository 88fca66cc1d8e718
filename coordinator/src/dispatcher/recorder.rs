//! Writing the candidates' dispatched events and results in batches ("group
//! commit"): every entry's task hands its write over and waits as before, but one
//! task sends them — all those handed over while the previous batch was on its
//! way go in one store call ([`crate::store::JobRecords::write_candidates`]: one
//! Redis pipeline), so a thousand candidates dispatched and finished per second
//! cost a few round trips, not two thousand. No timer: under load the writes
//! gather while a batch is on its way; an idle coordinator sends each at once.
//!
//! One task, first come first written: a candidate's dispatched event (written
//! before its call starts) is always before its finished event. A store that stays
//! down retries the whole batch ([`Context::with_store_retry`]); at shutdown the
//! waiting writes are answered as interrupted (their entries stay pending).

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::context::{Context, Interrupted};
use crate::error::StoreError;
use crate::model::{CandidateResult, EventRecord, JobRecord};
use crate::store::CandidateWrite;

/// Most writes sent by one store call.
const MOST_PER_BATCH: usize = 512;

type Answer = (CandidateWrite, Result<bool, WriteFailed>);
type Request = (CandidateWrite, oneshot::Sender<Answer>);

/// Why a write was not done.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteFailed {
    /// the batch's store call failed for good, or the coordinator shuts down
    #[error("{0}")]
    Interrupted(Arc<Interrupted>),
    /// the store refused this write (the others of its batch were done)
    #[error("store: {0}")]
    Refused(StoreError),
    /// the recording task has stopped (the coordinator shuts down)
    #[error("the coordinator shuts down")]
    ShuttingDown,
}

/// The way to the recording task.
#[derive(Clone)]
pub(crate) struct Recorder {
    requests: mpsc::UnboundedSender<Request>,
}

impl Recorder {
    /// Starts the recording task.
    pub(crate) fn spawn(context: Arc<Context>) -> (Recorder, tokio::task::JoinHandle<()>) {
        let (requests, receiver) = mpsc::unbounded_channel();
        let task = tokio::spawn(record_loop(context, receiver));
        (Recorder { requests }, task)
    }

    /// Appends `event` to the job's log with the next batch and waits for it; as
    /// [`Context::report`], an event not appended is logged, not fatal.
    pub(crate) async fn report(&self, context: &Context, job: &JobRecord, event: EventRecord) {
        let (kind, candidate_id) = (event.kind, event.candidate_id.clone());
        let write = CandidateWrite::Event {
            job_id: job.job_id.clone(),
            event,
        };
        match self.write(write).await {
            Ok((CandidateWrite::Event { event, .. }, Ok(_))) => context.event_appended(job, &event),
            Ok((_, Ok(_))) => unreachable!("the recorder answers with the write it was given"),
            Ok((_, Err(failed))) | Err(failed) => {
                tracing::warn!(session_id = %job.job_id, %candidate_id, ?kind, %failed, "event not appended");
            }
        }
    }

    /// Records `result` with its `event` with the next batch, unless a result is
    /// recorded already: the two back, and whether this write recorded them.
    pub(crate) async fn record(
        &self,
        job_id: &str,
        result: CandidateResult,
        event: EventRecord,
    ) -> Result<(CandidateResult, EventRecord, bool), WriteFailed> {
        let write = CandidateWrite::Result {
            job_id: job_id.to_string(),
            result: Box::new(result),
            event,
        };
        match self.write(write).await? {
            (CandidateWrite::Result { result, event, .. }, outcome) => {
                Ok((*result, event, outcome?))
            }
            _ => unreachable!("the recorder answers with the write it was given"),
        }
    }

    /// Hands `write` to the task and waits for its answer.
    async fn write(&self, write: CandidateWrite) -> Result<Answer, WriteFailed> {
        let (done, answer) = oneshot::channel();
        self.requests
            .send((write, done))
            .map_err(|_| WriteFailed::ShuttingDown)?;
        answer.await.map_err(|_| WriteFailed::ShuttingDown)
    }
}

async fn record_loop(context: Arc<Context>, mut receiver: mpsc::UnboundedReceiver<Request>) {
    let mut batch: Vec<Request> = Vec::new();
    while receiver.recv_many(&mut batch, MOST_PER_BATCH).await > 0 {
        let (writes, answers): (Vec<CandidateWrite>, Vec<oneshot::Sender<Answer>>) =
            batch.drain(..).unzip();
        let outcome = context
            .with_store_retry("record candidates", || {
                context.store.write_candidates(&writes)
            })
            .await;
        let outcomes: Vec<Result<bool, WriteFailed>> = match outcome {
            Ok(outcomes) => outcomes
                .into_iter()
                .map(|outcome| outcome.map_err(WriteFailed::Refused))
                .collect(),
            Err(interrupted) => {
                let interrupted = Arc::new(interrupted);
                (0..writes.len())
                    .map(|_| Err(WriteFailed::Interrupted(interrupted.clone())))
                    .collect()
            }
        };
        for ((write, outcome), done) in writes.into_iter().zip(outcomes).zip(answers) {
            // the writer's task is gone only when the coordinator shuts down
            if done.send((write, outcome)).is_err() {
                tracing::debug!("a recorded write's task ended first");
            }
        }
    }
}
