//! The one-machine cluster of `centroid run`: the coordinator with its in-process
//! store and a worker node with S KLayout processes, in this process, talking gRPC
//! over loopback exactly as a farm does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow};
use centroid_coordinator::memory::CaseMemory;
use centroid_coordinator::store::MemoryStore;
use centroid_coordinator::{Coordinator, CoordinatorConfig, service};
use centroid_runtime::BearerToken;
use centroid_runtime::LlmSettings;
use centroid_worker::WorkerConfig;

use crate::jobs_client::Farm;
use centroid_worker::config::CommandLine as WorkerCommandLine;
use centroid_worker::node::Node;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct LocalCluster {
    /// the coordinator at `http://127.0.0.1:<port>` and this run's random token
    pub farm: Farm,
    coordinator: Coordinator,
    server_stop: oneshot::Sender<()>,
    server: JoinHandle<Result<(), centroid_coordinator::CoordinatorError>>,
    worker: Node,
}

/// Where the venv and the skill package are when neither the environment nor the
/// working directory says: beside the repository this binary was built in.
fn repository_default(relative: &str) -> Option<PathBuf> {
    if Path::new(relative).exists() {
        return None;
    }
    let executable = std::env::current_exe().ok()?;
    executable
        .ancestors()
        .skip(1)
        .map(|ancestor| ancestor.join(relative))
        .find(|candidate| candidate.exists())
}

/// The flags of a worker on this machine: on a free loopback port, with the venv
/// and the skill package of this repository unless the environment names others.
pub fn worker_command_line(
    environment: &HashMap<String, String>,
    coordinator: Option<String>,
) -> WorkerCommandLine {
    let default_unless_set =
        |variable: &str, relative: &str| match environment.contains_key(variable) {
            true => None,
            false => repository_default(relative),
        };
    WorkerCommandLine {
        coordinator,
        listen: Some("127.0.0.1:0".to_owned()),
        python: default_unless_set("CENTROID_PYTHON", ".venv/bin/python"),
        skills_dir: default_unless_set("CENTROID_SKILLS_DIR", "worker/skills"),
        ..WorkerCommandLine::default()
    }
}

impl LocalCluster {
    /// Starts the coordinator (with `llm` for jobs asking for the LLM planner) and a
    /// worker with `slots` KLayout processes; the worker may run `signoff_deck` (a
    /// foundry deck file) for jobs that name it.
    pub async fn start(
        slots: usize,
        signoff_deck: Option<&Path>,
        llm: &LlmSettings,
        memory: Option<Arc<dyn CaseMemory>>,
    ) -> anyhow::Result<LocalCluster> {
        // loopback only, and a random token per run: another user of this machine
        // cannot submit to (or read from) this run's coordinator and worker
        let token = BearerToken::random();
        let mut config = CoordinatorConfig {
            listen: "127.0.0.1:0".to_owned(),
            redis: "memory".to_owned(),
            llm: llm.clone(),
            ..CoordinatorConfig::default()
        };
        config.common.token = Some(token.clone());
        let (listener, local_address) = service::bind(&config.listen)
            .await
            .context("binding the local coordinator")?;
        let coordinator =
            Coordinator::start_with_memory(config, Arc::new(MemoryStore::new()), memory)
                .await
                .context("starting the local coordinator")?;
        let (server_stop, stop_requested) = oneshot::channel::<()>();
        let server = tokio::spawn(service::serve(coordinator.clone(), listener, async {
            let _ = stop_requested.await;
        }));
        let address = format!("http://{local_address}");

        let environment: HashMap<String, String> = std::env::vars().collect();
        let mut command_line = worker_command_line(&environment, Some(address.clone()));
        command_line.slots = Some(slots);
        command_line.signoff_decks = signoff_deck.map(|deck| deck.display().to_string());
        let mut worker_config = WorkerConfig::load_with_environment(&command_line, environment)
            .context("worker configuration")?;
        worker_config.common.token = Some(token.clone());
        let worker_listener = tokio::net::TcpListener::bind(&worker_config.listen)
            .await
            .context("binding the local worker")?;
        let worker = Node::start(&worker_config, worker_listener).await.map_err(|error| {
            anyhow!("starting {slots} KLayout process(es) with {}: {error}; run `make klayout` to provision the venv", worker_config.python.display())
        })?;
        Ok(LocalCluster {
            farm: Farm {
                coordinator: address,
                token: Some(token),
                tls: None,
            },
            coordinator,
            server_stop,
            server,
            worker,
        })
    }

    pub async fn stop(self) {
        if let Err(error) = self.worker.stop().await {
            tracing::warn!(%error, "stopping the local worker");
        }
        let _ = self.server_stop.send(());
        let _ = self.server.await;
        self.coordinator.shutdown().await;
    }
}
