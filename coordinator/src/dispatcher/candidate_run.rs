//! One queue entry from delivery to recorded result: the checks before running
//! (job alive, not cancelled, no result yet), the delivery counter and dead
//! letters, waiting for a slot, the call, and what the retry policy says after a
//! failed try (adjust the step, retry after a back-off, or record).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use centroid_planner::job_events::EventData;
use centroid_proto::Error;
use centroid_proto::v1::RunCandidateResponse;
use tokio::sync::watch;

use super::preflight::{Delivered, Preflight, preflight};
use super::recorder::Recorder;
use super::recording::{Finished, record, record_dead_letter, result_of_try};
use super::slot_line::{Place, SlotLine};
use super::{Disposition, InFlight};
use crate::context::Context;
use crate::model::{CandidateRecord, EventKind, JobRecord, Plan, QueueEntry};
use crate::registry::SlotGuard;
use crate::retry_policy::{Decision, RetryPolicy, Tries, decide};
use crate::worker_calls::{
    self, CallOutcome, cancel_on_worker, is_unreachable, response_failure, run_on_slot,
    step_failure,
};

/// How often a candidate waiting for a slot looks again without a wake-up.
const SLOT_POLL: Duration = Duration::from_millis(250);

/// Runs `entry` from its delivery (`delivered`: read already with the other
/// entries of its queue read, or not yet) to its recorded result.
pub(super) async fn run_entry(
    (context, recorder): (&Arc<Context>, &Recorder),
    in_flight: &InFlight,
    entry: &QueueEntry,
    place: Place,
    delivered: Delivered,
) -> Disposition {
    match preflight(context, entry, delivered).await {
        Preflight::Run(job, candidate, deliveries) => {
            tracing::Span::current().record("trace_id", job.trace_id.as_str());
            let mut run = CandidateRun::new(
                (context, recorder),
                in_flight,
                entry,
                job,
                *candidate,
                place,
            );
            run.counted_delivery = Some(deliveries);
            run.run().await
        }
        Preflight::Skip(disposition) => disposition,
    }
}

/// The state of one candidate's tries.
struct CandidateRun<'a> {
    context: &'a Arc<Context>,
    /// where the dispatched event and the result are written (batched)
    recorder: &'a Recorder,
    in_flight: &'a InFlight,
    entry: &'a QueueEntry,
    /// shared with the store's copy (parsed once per change of the record)
    job: Arc<JobRecord>,
    /// the skills the candidate's plan needs
    required_skills: Vec<String>,
    /// the plan as it runs now (after ReAct adjustments)
    plan: Plan,
    adjustments: Vec<String>,
    /// workers to avoid (they failed this candidate with SERVICE_UNAVAILABLE)
    avoided: BTreeSet<String>,
    tries: Tries,
    policy: RetryPolicy,
    deliveries: u32,
    count_next_delivery: bool,
    /// the delivery counted when the entry was read ([`preflight`]): the first
    /// try's count, without another store call
    counted_delivery: Option<u32>,
    started: Instant,
    cancel: watch::Receiver<bool>,
    shutdown: watch::Receiver<bool>,
    /// the entry's place in the line for a slot, kept from when the queue was read
    /// to its first slot; it stands in the line again for each later wait
    place: Option<Place>,
    line: Arc<SlotLine>,
    ticket: u64,
}

/// What came of waiting or trying: go on, or end with a disposition.
type Step<T> = Result<T, Disposition>;

impl<'a> CandidateRun<'a> {
    fn new(
        (context, recorder): (&'a Arc<Context>, &'a Recorder),
        in_flight: &'a InFlight,
        entry: &'a QueueEntry,
        job: Arc<JobRecord>,
        candidate: CandidateRecord,
        place: Place,
    ) -> CandidateRun<'a> {
        let config = &context.config;
        let CandidateRecord {
            plan,
            required_skills,
            ..
        } = candidate;
        CandidateRun {
            line: place.line().clone(),
            ticket: place.ticket(),
            place: Some(place),
            context,
            recorder,
            in_flight,
            entry,
            plan,
            required_skills,
            cancel: context.cancel_signal(&job.job_id),
            shutdown: context.shutdown.subscribe(),
            job,
            adjustments: Vec::new(),
            avoided: BTreeSet::new(),
            tries: Tries::default(),
            policy: RetryPolicy::new(
                Duration::from_millis(config.retry_base_ms),
                Duration::from_millis(config.retry_max_ms),
            ),
            deliveries: 0,
            count_next_delivery: true,
            counted_delivery: None,
            started: Instant::now(),
        }
    }

    fn ids(&self) -> (&str, &str) {
        (&self.entry.job_id, &self.entry.candidate_id)
    }

    async fn run(mut self) -> Disposition {
        loop {
            if *self.cancel.borrow() {
                return Disposition::Ack;
            }
            if self.count_next_delivery
                && let Err(disposition) = self.count_delivery().await
            {
                return disposition;
            }
            self.count_next_delivery = true;
            let slot = match self.wait_for_slot().await {
                Ok(slot) => slot,
                Err(disposition) => return disposition,
            };
            let worker_id = slot.worker_id.clone();
            let (error, response) = match self.call(slot).await {
                Ok(Tried::Succeeded(response)) => {
                    return self.finish(Some(response), None, &worker_id).await;
                }
                Ok(Tried::Failed(error, response)) => (error, response),
                Err(disposition) => return disposition,
            };
            let code = error.error_code();
            let jitter = worker_calls::jitter(&self.entry.candidate_id);
            match decide(code, error.retryable, &self.tries, &self.policy, jitter) {
                Decision::Adjust => {
                    let failed_step = response
                        .as_ref()
                        .map(|response| response_failure(response).1);
                    if !self.adjust(&failed_step.unwrap_or_default(), &error).await {
                        return self.finish(response, Some(error), &worker_id).await;
                    }
                }
                Decision::Retry {
                    delay,
                    counts_as_delivery,
                    avoid_worker,
                } => {
                    if avoid_worker {
                        self.avoided.insert(worker_id.clone());
                    }
                    if is_unreachable(&error) {
                        self.context.registry.mark_unreachable(&worker_id);
                    }
                    self.count_next_delivery = counts_as_delivery;
                    if let Err(disposition) =
                        self.pause_before_retry(&error, &worker_id, delay).await
                    {
                        return disposition;
                    }
                }
                Decision::Record => return self.finish(response, Some(error), &worker_id).await,
            }
            self.tries.count(code);
        }
    }

    /// Bumps the delivery counter; past `max_deliveries` the entry is dead-lettered.
    async fn count_delivery(&mut self) -> Step<()> {
        let context = self.context;
        let entry = self.entry;
        let (job_id, candidate_id) = (entry.job_id.as_str(), entry.candidate_id.as_str());
        let count = match self.counted_delivery.take() {
            Some(count) => count,
            None => context
                .with_store_retry("count delivery", || {
                    context.store.bump_deliveries(job_id, candidate_id)
                })
                .await
                .map_err(Disposition::interrupted)?,
        };
        self.deliveries = count;
        if count <= context.config.max_deliveries {
            return Ok(());
        }
        let reason = format!(
            "delivered {count} times (max_deliveries {})",
            context.config.max_deliveries
        );
        tracing::warn!(session_id = job_id, candidate_id, %reason, "dead-lettering");
        context.metrics.dead_lettered();
        context
            .with_store_retry("dead-letter", || context.store.dead_letter(entry, &reason))
            .await
            .map_err(Disposition::interrupted)?;
        let duration_ms = self.started.elapsed().as_millis() as u64;
        record_dead_letter(
            (context, self.recorder),
            &self.job,
            candidate_id,
            (count, duration_ms),
            reason,
        )
        .await;
        Err(Disposition::LeavePending) // acknowledged by dead_letter
    }

    /// Waits for a slot on a live worker with the skills — or a place in its waiting
    /// room when the job's candidates are short ([`crate::candidate_times`]) and no
    /// such worker has a free slot — in its turn (the line:
    /// [`SlotLine`]); with no live worker for a whole lease, hands the entry back (its
    /// lease lapses and any coordinator may take it). It looks again when woken
    /// (the usher wakes the front of the line when slots free: [`super::usher_loop`];
    /// the entry before it leaves the line or passes a slot on), else every
    /// `SLOT_POLL`: a freed slot wakes a few entries, not all that wait.
    async fn wait_for_slot(&mut self) -> Step<SlotGuard> {
        let context = self.context;
        let mut no_worker_since: Option<Instant> = None;
        let place = match self.place.take() {
            Some(place) => place,
            None => self
                .line
                .stand(self.ticket, &self.entry.job_id, self.entry.weight),
        };
        place.needs(&self.required_skills);
        loop {
            // listening before looking: a wake-up in between is kept as a permit
            let woken = place.wake().notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            // a place in a worker's waiting room only for a job of short candidates
            let may_wait = context.candidate_times.may_prefetch(&self.entry.job_id);
            if let Some(slot) = context.registry.try_acquire_where(
                &self.required_skills,
                &self.avoided,
                may_wait,
                |worker_skills| self.line.is_turn_of(self.ticket, worker_skills),
            ) {
                place.took_slot();
                return Ok(slot);
            }
            // woken for a free slot it could not take (taken meanwhile, or on a worker
            // without its skills): the entry behind it may take it
            if place.looked() {
                self.line.wake_behind(self.ticket);
            }
            if context.registry.alive_slots() == 0 {
                let since = *no_worker_since.get_or_insert_with(Instant::now);
                if since.elapsed() > context.config.lease_timeout() {
                    let (job_id, candidate_id) = self.ids();
                    tracing::info!(
                        session_id = job_id,
                        candidate_id,
                        "no live worker here; handing the entry back"
                    );
                    return Err(Disposition::LeavePending);
                }
            } else {
                no_worker_since = None;
            }
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep(SLOT_POLL) => {}
                _ = self.cancel.wait_for(|cancelled| *cancelled) => return Err(Disposition::Ack),
                _ = self.shutdown.wait_for(|stopping| *stopping) => return Err(Disposition::LeavePending),
            }
        }
    }

    /// One try on the taken slot.
    async fn call(&mut self, slot: SlotGuard) -> Step<Tried> {
        let files = worker_calls::request_files_of(self.context, &self.entry.job_id, &self.plan)
            .await
            .map_err(Disposition::interrupted)?;
        let context = self.context;
        let (job_id, candidate_id) = (self.entry.job_id.clone(), self.entry.candidate_id.clone());
        let worker_id = slot.worker_id.clone();
        self.in_flight.set_worker(self.entry, Some(&worker_id));
        // written with the other candidates' writes of the moment (one store call)
        let dispatched = Context::event_of(
            &self.job,
            EventKind::CandidateDispatched,
            &candidate_id,
            format!("on {worker_id}"),
            EventData::CandidateDispatched {
                worker_id: worker_id.clone(),
                delivery: self.deliveries,
            },
        );
        self.recorder.report(context, &self.job, dispatched).await;
        let deadline_ms = self.job.options.candidate_deadline_ms;
        let rpc_timeout = Duration::from_millis(deadline_ms + context.config.rpc_grace_ms);
        let mut request =
            worker_calls::run_request(&candidate_id, &job_id, &self.plan, deadline_ms, false);
        request.inputs = files;
        let outcome = run_on_slot(
            &slot,
            request,
            rpc_timeout,
            &self.job.trace_id,
            &mut self.cancel,
            &mut self.shutdown,
        )
        .await;
        // a refusal for capacity marks the worker saturated before the slot is
        // given back, or a candidate woken by the release could call it at once
        if let CallOutcome::Failed(error) = &outcome
            && error.error_code() == centroid_proto::ErrorCode::ResourceExhausted
            && error.retryable
        {
            context.registry.mark_saturated(&worker_id);
        }
        if let CallOutcome::Response(response) = &outcome {
            context.candidate_times.saw(&job_id, response.duration_ms);
        }
        let outcome = worker_calls::keep_layout_of_failed_simulation(outcome);
        let client = slot.client.clone();
        drop(slot);
        self.in_flight.set_worker(self.entry, None);
        match outcome {
            CallOutcome::Response(response) if response.ok => Ok(Tried::Succeeded(response)),
            CallOutcome::Response(response) => {
                Ok(Tried::Failed(response_failure(&response).0, Some(response)))
            }
            CallOutcome::Failed(error) => Ok(Tried::Failed(error, None)),
            CallOutcome::Cancelled => {
                tracing::info!(session_id = %job_id, candidate_id = %candidate_id, worker_id = %worker_id, "candidate abandoned: job cancelled");
                cancel_on_worker(client, &worker_id, &job_id, &candidate_id).await;
                Err(Disposition::Ack)
            }
            CallOutcome::ShuttingDown => Err(Disposition::LeavePending),
            CallOutcome::WorkerLost => {
                tracing::warn!(session_id = %job_id, candidate_id = %candidate_id, worker_id = %worker_id, "worker lost mid-candidate; the lease will lapse and the candidate be reclaimed");
                context
                    .report(
                        &self.job,
                        EventKind::CandidateRetried,
                        &candidate_id,
                        format!("worker {worker_id} lost (no heartbeat, or unreachable); lease left to lapse"),
                        EventData::WorkerLost {
                            worker_id: worker_id.clone(),
                        },
                    )
                    .await;
                // marked as on the dead worker so the renewal skips it; the reclaimer takes it
                self.in_flight.set_worker(self.entry, Some(&worker_id));
                Err(Disposition::LeavePending)
            }
        }
    }

    /// Asks the job's planner to adjust the failed step (ReAct); `false` when it
    /// knows no fix.
    async fn adjust(&mut self, failed_step: &str, error: &Error) -> bool {
        let context = self.context;
        let candidate_id = self.entry.candidate_id.clone();
        let planner = match context.job_planner(&self.job).await {
            Ok(Some(planner)) => planner,
            Ok(None) => return false,
            Err(interrupted) => {
                tracing::warn!(%interrupted, "no planner to adjust the step");
                return false;
            }
        };
        let skills = context.registry.skills();
        let failure = step_failure(error);
        let adjusted = planner
            .adjust(&self.plan, failed_step, &failure, &skills)
            .await;
        context
            .emit_llm_calls(&self.job, &candidate_id, &adjusted.calls)
            .await
            .unwrap_or_else(|interrupted| {
                tracing::warn!(%interrupted, "model calls of a ReAct step not reported")
            });
        if let Some(reason) = &adjusted.fallback {
            let message = format!("the heuristic planner adjusts step {failed_step}: {reason}");
            let data = EventData::PlannerFallback {
                fallback: reason.clone(),
                iteration: None,
                step_id: Some(failed_step.to_string()),
            };
            context
                .report(&self.job, EventKind::Planner, &candidate_id, message, data)
                .await;
        }
        let Some(adjustment) = adjusted.adjustment else {
            return false;
        };
        context
            .report(
                &self.job,
                EventKind::StepAdjusted,
                &candidate_id,
                adjustment.note.clone(),
                EventData::StepAdjusted {
                    step_id: failed_step.to_string(),
                },
            )
            .await;
        self.adjustments.push(adjustment.note);
        self.plan = adjustment.plan;
        true
    }

    async fn pause_before_retry(
        &mut self,
        error: &Error,
        worker_id: &str,
        delay: Duration,
    ) -> Step<()> {
        let candidate_id = self.entry.candidate_id.clone();
        let code = error.error_code().wire_name();
        let delay_ms = delay.as_millis() as u64;
        self.context.metrics.retried(code);
        self.context
            .report(
                &self.job,
                EventKind::CandidateRetried,
                &candidate_id,
                format!("{code}: {}", error.message),
                EventData::CandidateRetried {
                    worker_id: worker_id.to_string(),
                    retry_in_ms: delay_ms,
                },
            )
            .await;
        tokio::select! {
            _ = tokio::time::sleep(delay) => Ok(()),
            _ = self.cancel.wait_for(|cancelled| *cancelled) => Err(Disposition::Ack),
            _ = self.shutdown.wait_for(|stopping| *stopping) => Err(Disposition::LeavePending),
        }
    }

    /// Records the candidate's result (ok, or its last error).
    async fn finish(
        self,
        response: Option<RunCandidateResponse>,
        error: Option<Error>,
        worker_id: &str,
    ) -> Disposition {
        let (mut result, artifacts) =
            result_of_try(&self.entry.candidate_id, worker_id, response, error);
        result.attempts = self.deliveries;
        result.duration_ms = self.started.elapsed().as_millis() as u64;
        result.plan = Some(self.plan);
        result.adjustments = self.adjustments;
        let finished = Finished {
            result,
            artifacts: &artifacts,
        };
        match record((self.context, self.recorder), &self.job, finished).await {
            true => Disposition::Ack,
            false => Disposition::LeavePending,
        }
    }
}

/// How a try ended when the candidate goes on.
enum Tried {
    Succeeded(RunCandidateResponse),
    /// failed with this error (and the worker's response when it answered)
    Failed(Error, Option<RunCandidateResponse>),
}
