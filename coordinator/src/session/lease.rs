//! The job's lease: one driver per job across coordinators sharing a store. A
//! driver takes the lease before it touches the job, renews it on its own task
//! every third of the lease, and gives it up when it stops; a coordinator that
//! dies lets it lapse, and another takes the job over.

use std::sync::Arc;

use tokio::sync::watch;

use super::Driver;
use crate::context::{Context, Interrupted};

/// Starts the driver of a job unless one runs in this process.
pub(crate) fn spawn_driver(context: &Arc<Context>, job_id: &str) {
    let mut drivers = context.drivers.lock().expect("drivers lock");
    if drivers
        .get(job_id)
        .is_some_and(|handle| !handle.is_finished())
    {
        return;
    }
    let span = tracing::info_span!(
        "session",
        session_id = %job_id,
        trace_id = tracing::field::Empty
    );
    let driver = tracing::Instrument::instrument(drive(context.clone(), job_id.to_string()), span);
    drivers.insert(job_id.to_string(), tokio::spawn(driver));
}

/// Runs a job to its end (or until the coordinator shuts down), holding the job's
/// driver lease.
async fn drive(context: Arc<Context>, job_id: String) {
    if !take_lease(&context, &job_id).await {
        return;
    }
    let (lost_sender, lost) = watch::channel(false);
    let renewer = tokio::spawn(renew_lease(context.clone(), job_id.clone(), lost_sender));
    if let Some((mut driver, job)) = Driver::load(context.clone(), job_id.clone(), lost).await {
        driver.run(job).await;
    }
    renewer.abort();
    if let Err(error) = context.store.release_job(&job_id, &context.driver_id).await {
        // the lease then lapses on its own: a takeover waits one lease longer
        tracing::warn!(session_id = %job_id, %error, "cannot give the job lease up; it lapses by itself");
    }
}

/// Renews the lease every third of its time; tells `lost` when another
/// coordinator holds it.
async fn renew_lease(context: Arc<Context>, job_id: String, lost: watch::Sender<bool>) {
    let lease = context.config.lease_timeout();
    loop {
        tokio::time::sleep(lease / 3).await;
        match context
            .store
            .lease_job(&job_id, &context.driver_id, lease)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(session_id = %job_id, "lost the job lease to another coordinator");
                lost.send_replace(true);
                return;
            }
            Err(error) => {
                tracing::warn!(session_id = %job_id, %error, "cannot renew the job lease")
            }
        }
    }
}

/// Waits for the job's lease; `false` when the job finished meanwhile, its
/// record cannot be read, or on shutdown.
async fn take_lease(context: &Context, job_id: &str) -> bool {
    let lease = context.config.lease_timeout();
    let mut announced = false;
    loop {
        match context
            .store
            .lease_job(job_id, &context.driver_id, lease)
            .await
        {
            Ok(true) => return true,
            Ok(false) if !announced => {
                announced = true;
                tracing::info!(session_id = %job_id, "another coordinator drives this job; waiting for its lease to lapse");
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(session_id = %job_id, %error, "cannot take the job lease"),
        }
        tokio::select! {
            _ = tokio::time::sleep(lease / 3) => {}
            _ = context.shutting_down() => return false,
        }
        match context
            .with_store_retry("read job", || context.store.get_job(job_id))
            .await
        {
            Ok(Some(job)) if job.is_finished() => return false,
            Ok(_) => {}
            // the driver that holds the lease meets the same record
            Err(Interrupted::Store(_)) | Err(Interrupted::Shutdown) => return false,
        }
    }
}
