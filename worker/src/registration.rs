//! Registration with the coordinator and heartbeats, on their own tokio task so
//! that busy slots never starve them. The coordinator being down is retried with
//! back-off; a refusal (protocol version mismatch) is fatal and reported once.

use std::sync::Arc;
use std::time::Duration;

use centroid_proto::v1::coordinator_client::CoordinatorClient;
use centroid_proto::v1::{
    DeregisterWorkerRequest, HeartbeatRequest, RegisterWorkerRequest, WorkerInfo,
};
use centroid_proto::{Error, PROTOCOL_VERSION, check_protocol_version};
use centroid_runtime::{AttachToken, AuthChannel};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tonic::transport::Endpoint;

use crate::error::WorkerError;

const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
const DEREGISTER_TIMEOUT: Duration = Duration::from_secs(3);

/// What registration and heartbeats report about this worker (the worker's
/// state implements it; this module does not depend on that state).
pub trait WorkerReport: Send + Sync + 'static {
    fn worker_id(&self) -> String;
    fn slot_count(&self) -> u32;
    /// calls taken beyond the slots, waiting in the worker for one
    fn prefetch(&self) -> u32;
    fn free_slots(&self) -> u32;
    fn running_candidates(&self) -> Vec<String>;
    fn is_draining(&self) -> bool;
    fn skill_names(&self) -> Vec<String>;
    fn klayout_version(&self) -> String;
}

/// Where and how to register.
#[derive(Debug, Clone)]
pub struct RegistrationSettings {
    /// e.g. "http://127.0.0.1:50051"
    pub coordinator_url: String,
    /// the coordinator at `coordinator_url`, over TLS when the worker has TLS
    /// settings (`centroid_runtime::tls::endpoint`)
    pub coordinator_endpoint: Endpoint,
    /// the address the coordinator reaches this worker at
    pub advertise_address: String,
    /// sent with every call to the coordinator
    pub token: Option<centroid_runtime::BearerToken>,
    pub heartbeat_interval: Duration,
    pub hostname: String,
    /// random, new for this process: the coordinator takes a registration under a
    /// live worker's id only from the same instance
    pub instance_id: String,
}

/// The running registration task.
#[derive(Debug)]
pub struct RegistrationHandle {
    stop: watch::Sender<Option<String>>,
    task: JoinHandle<()>,
}

impl RegistrationHandle {
    /// Stops heartbeats and deregisters (if registered), waiting a few seconds at most.
    pub async fn deregister(self, reason: &str) {
        self.stop.send_replace(Some(reason.to_string()));
        let _ = tokio::time::timeout(DEREGISTER_TIMEOUT + Duration::from_secs(1), self.task).await;
    }
}

/// Starts the registration task. A refusal by the coordinator is sent on `refused`.
pub fn spawn_registration(
    state: Arc<dyn WorkerReport>,
    settings: RegistrationSettings,
    refused: oneshot::Sender<WorkerError>,
) -> RegistrationHandle {
    let (stop, stop_requested) = watch::channel(None);
    let task = tokio::spawn(registration_loop(state, settings, stop_requested, refused));
    RegistrationHandle { stop, task }
}

enum RegisterFailure {
    /// the coordinator answered and said no: do not retry
    Refused(String),
    /// the coordinator could not be reached or failed: retry later
    Unreachable(String),
}

async fn registration_loop(
    state: Arc<dyn WorkerReport>,
    settings: RegistrationSettings,
    mut stop_requested: watch::Receiver<Option<String>>,
    refused: oneshot::Sender<WorkerError>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut registered_client: Option<CoordinatorClient<AuthChannel>> = None;
    let mut heartbeat_interval = settings.heartbeat_interval;
    loop {
        if stop_requested.borrow().is_some() {
            break;
        }
        let Some(client) = registered_client.as_mut() else {
            match register(state.as_ref(), &settings).await {
                Ok((client, interval)) => {
                    tracing::info!(coordinator = %settings.coordinator_url, worker_id = %state.worker_id(), "registered with the coordinator");
                    registered_client = Some(client);
                    heartbeat_interval = interval.unwrap_or(settings.heartbeat_interval);
                    backoff = FIRST_BACKOFF;
                }
                Err(RegisterFailure::Refused(message)) => {
                    tracing::error!(coordinator = %settings.coordinator_url, %message, "coordinator refused the registration");
                    let _ = refused.send(WorkerError::RegistrationRefused(message));
                    return;
                }
                Err(RegisterFailure::Unreachable(message)) => {
                    tracing::warn!(coordinator = %settings.coordinator_url, %message, retry_in_ms = backoff.as_millis() as u64, "registration failed; retrying");
                    if wait_or_stop(backoff, &mut stop_requested).await {
                        break;
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
            continue;
        };
        if wait_or_stop(heartbeat_interval, &mut stop_requested).await {
            break;
        }
        let heartbeat = HeartbeatRequest {
            worker_id: state.worker_id(),
            free_slots: state.free_slots(),
            running_candidates: state.running_candidates(),
            draining: state.is_draining(),
            protocol_version: PROTOCOL_VERSION,
            instance_id: settings.instance_id.clone(),
        };
        match client.heartbeat(heartbeat).await {
            Ok(response) if response.get_ref().known => {}
            Ok(_) => {
                tracing::warn!("coordinator does not know this worker; registering again");
                registered_client = None;
            }
            Err(status) => {
                tracing::warn!(code = ?status.code(), message = status.message(), "heartbeat failed; registering again");
                registered_client = None;
            }
        }
    }
    let reason = stop_requested.borrow().clone().unwrap_or_default();
    if let Some(mut client) = registered_client {
        let request = DeregisterWorkerRequest {
            worker_id: state.worker_id(),
            reason,
            instance_id: settings.instance_id.clone(),
        };
        match tokio::time::timeout(DEREGISTER_TIMEOUT, client.deregister_worker(request)).await {
            Ok(Ok(_)) => tracing::info!("deregistered from the coordinator"),
            Ok(Err(status)) => tracing::warn!(message = status.message(), "deregistration failed"),
            Err(_) => tracing::warn!("deregistration timed out"),
        }
    }
}

/// Sleeps `duration`; `true` when a stop was requested meanwhile.
async fn wait_or_stop(
    duration: Duration,
    stop_requested: &mut watch::Receiver<Option<String>>,
) -> bool {
    let stopped = tokio::select! {
        _ = tokio::time::sleep(duration) => false,
        _ = stop_requested.wait_for(Option::is_some) => true,
    };
    stopped || stop_requested.borrow().is_some()
}

async fn register(
    state: &dyn WorkerReport,
    settings: &RegistrationSettings,
) -> Result<(CoordinatorClient<AuthChannel>, Option<Duration>), RegisterFailure> {
    let endpoint = settings
        .coordinator_endpoint
        .clone()
        .connect_timeout(REQUEST_TIMEOUT)
        .timeout(REQUEST_TIMEOUT);
    let channel = endpoint
        .connect()
        .await
        .map_err(|error| RegisterFailure::Unreachable(format!("cannot connect: {error}")))?;
    let mut client =
        CoordinatorClient::with_interceptor(channel, AttachToken::new(settings.token.clone()));
    let request = RegisterWorkerRequest {
        worker: Some(WorkerInfo {
            worker_id: state.worker_id(),
            address: settings.advertise_address.clone(),
            slots: state.slot_count(),
            skills: state.skill_names(),
            klayout_version: state.klayout_version(),
            protocol_version: PROTOCOL_VERSION,
            hostname: settings.hostname.clone(),
            instance_id: settings.instance_id.clone(),
            prefetch: state.prefetch(),
        }),
    };
    let response = match client.register_worker(request).await {
        Ok(response) => response.into_inner(),
        Err(status) if status.code() == tonic::Code::Unauthenticated => {
            return Err(RegisterFailure::Refused(format!(
                "the coordinator refused the credentials: {}",
                status.message()
            )));
        }
        Err(status) => {
            let error = Error::from_status(&status);
            let message = format!("{}: {}", error.error_code().wire_name(), error.message);
            return Err(if error.retryable {
                RegisterFailure::Unreachable(message)
            } else {
                RegisterFailure::Refused(message)
            });
        }
    };
    if let Err(error) = check_protocol_version(response.protocol_version) {
        return Err(RegisterFailure::Refused(error.message));
    }
    let interval = (response.heartbeat_interval_ms > 0)
        .then(|| Duration::from_millis(response.heartbeat_interval_ms));
    Ok((client, interval))
}
