//! Wires a worker node together: the pool, the compiled skill schemas, the gRPC server on
//! a bound listener, and (optionally) the registration task.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use centroid_proto::v1::worker_server::WorkerServer;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::TcpListenerStream;

use centroid_proto::reflection::reflection_service;
use centroid_runtime::{HEALTH_FILE_DESCRIPTOR_SET, RequireToken, health_service, tls};
use tonic::server::NamedService;
use tonic::service::interceptor::InterceptedService;

use crate::config::WorkerConfig;
use crate::error::WorkerError;
use crate::pool::Pool;
use crate::registration::{RegistrationSettings, spawn_registration};
use crate::scratch_dir;
use crate::service::WorkerService;
use crate::skill_process::SkillServerCommand;
use crate::state::{WorkerProbe, WorkerState};
use crate::supervisor;

/// A serving worker node.
pub struct Node {
    pub local_address: SocketAddr,
    pub state: Arc<WorkerState>,
    /// fires when the coordinator refuses the registration
    pub registration_refused: Option<oneshot::Receiver<WorkerError>>,
    server_shutdown: oneshot::Sender<()>,
    server_task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl Node {
    /// Starts the skill servers, then serves the Worker service on `listener`,
    /// then registers with the coordinator when one is configured.
    pub async fn start(config: &WorkerConfig, listener: TcpListener) -> Result<Node, WorkerError> {
        let local_address = listener.local_addr()?;
        // the coordinator's address is checked before anything starts
        let coordinator = match &config.coordinator {
            Some(url) => Some((url, tls::endpoint(config.common.tls.as_ref(), url)?)),
            None => None,
        };
        let command = SkillServerCommand {
            python: config.python.clone(),
            skills_dir: config.skills_dir.clone(),
            memory_limit_bytes: config.memory_limit_bytes(),
            signoff_decks: config.signoff_decks.clone(),
        };
        let pool = Pool::new(
            command,
            config.slot_count(),
            config.prefetch_count(),
            Duration::from_millis(config.startup_timeout_ms),
        );
        let temporary_dir = std::env::temp_dir();
        match scratch_dir::remove_leftovers(&temporary_dir) {
            Ok(0) => {}
            Ok(removed) => {
                tracing::info!(removed, directory = %temporary_dir.display(), "removed the scratch directories of dead workers")
            }
            Err(error) => {
                tracing::warn!(%error, directory = %temporary_dir.display(), "cannot look for the scratch directories of dead workers")
            }
        }
        let (catalog, _server_info) = supervisor::start_all(&pool).await?;
        let hostname = hostname();
        let worker_id = config.worker_id.clone().unwrap_or_else(|| {
            format!(
                "{hostname}-{}",
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            )
        });
        let state = WorkerState::new(
            worker_id,
            pool,
            catalog,
            Duration::from_millis(config.drain_grace_ms),
            Duration::from_millis(config.default_deadline_ms),
            config.max_plan_steps,
        );

        let (server_shutdown, shutdown_requested) = oneshot::channel::<()>();
        let service = WorkerServer::new(WorkerService::new(state.clone()))
            .max_decoding_message_size(64 * 1024 * 1024)
            .max_encoding_message_size(512 * 1024 * 1024);
        let authenticate = RequireToken::new(config.common.token.clone());
        let service = InterceptedService::new(service, authenticate.clone());
        let health = health_service(
            Arc::new(WorkerProbe(state.clone())),
            &[<WorkerServer<WorkerService> as NamedService>::NAME],
        )
        .await;
        let reflection = InterceptedService::new(
            reflection_service(&[HEALTH_FILE_DESCRIPTOR_SET]),
            authenticate,
        );
        let mut server = tonic::transport::Server::builder();
        if let Some(tls) = &config.common.tls {
            server = server.tls_config(tls.server_config()?)?;
        }
        let server = server
            .add_service(health)
            .add_service(reflection)
            .add_service(service);
        let server_task = tokio::spawn(server.serve_with_incoming_shutdown(
            incoming_without_nagle(listener),
            async {
                let _ = shutdown_requested.await;
            },
        ));
        tracing::info!(address = %local_address, worker_id = %state.worker_id, slots = config.slot_count(), prefetch = config.prefetch_count(), "worker serving");

        let mut registration_refused = None;
        if let Some((coordinator_url, coordinator_endpoint)) = coordinator {
            let (refused_sender, refused_receiver) = oneshot::channel();
            let settings = RegistrationSettings {
                coordinator_url: coordinator_url.clone(),
                coordinator_endpoint,
                advertise_address: config.advertise_address.clone().unwrap_or_else(|| {
                    tls::url_for(config.common.tls.as_ref(), &local_address.to_string())
                }),
                heartbeat_interval: Duration::from_millis(config.heartbeat_interval_ms),
                hostname,
                token: config.coordinator_token(),
                instance_id: uuid::Uuid::new_v4().simple().to_string(),
            };
            state.attach_registration(spawn_registration(state.clone(), settings, refused_sender));
            registration_refused = Some(refused_receiver);
        } else {
            tracing::info!("no coordinator configured: running standalone");
        }

        Ok(Node {
            local_address,
            state,
            registration_refused,
            server_shutdown,
            server_task,
        })
    }

    /// Stops serving, deregisters if still registered, and stops the idle
    /// skill servers (end of stdin, then SIGKILL after a short grace).
    pub async fn stop(self) -> Result<(), WorkerError> {
        self.state.stop_registration("stopped").await;
        let _ = self.server_shutdown.send(());
        let served = self.server_task.await.unwrap_or(Ok(()));
        let processes = self.state.pool().take_idle_processes();
        let mut stops = tokio::task::JoinSet::new();
        for process in processes {
            stops.spawn(process.shut_down(Duration::from_secs(2)));
        }
        while stops.join_next().await.is_some() {}
        served.map_err(WorkerError::from)
    }
}

/// Accepted connections with TCP_NODELAY: without it a response written in two
/// pieces waits for the peer's delayed ACK (~40 ms per candidate).
pub(crate) fn incoming_without_nagle(
    listener: TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    TcpListenerStream::new(listener).map(|accepted| {
        let stream = accepted?;
        if let Err(error) = stream.set_nodelay(true) {
            tracing::warn!(%error, "cannot set TCP_NODELAY");
        }
        Ok(stream)
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
}
