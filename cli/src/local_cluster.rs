//! The one-machine cluster of `centroid run`: the `centroid-coordinator` binary as
//! a child process with its in-process store, and a worker node with S KLayout
//! processes in this process, talking gRPC over loopback exactly as a farm does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};
use centroid_runtime::{BearerToken, LlmSettings, LogFormat};
use centroid_worker::WorkerConfig;
use centroid_worker::config::CommandLine as WorkerCommandLine;
use centroid_worker::node::Node;

use crate::coordinator_process::{CoordinatorLaunch, CoordinatorProcess};
use crate::jobs_client::Farm;

pub struct LocalCluster {
    /// the coordinator at `http://127.0.0.1:<port>` and this run's random token
    pub farm: Farm,
    coordinator: CoordinatorProcess,
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
    /// Starts the coordinator (with `llm` for jobs asking for the LLM planner, and
    /// the long-term memory in `memory`) and a worker with `slots` KLayout
    /// processes; the worker may run `signoff_deck` (a foundry deck file) for jobs
    /// that name it.
    pub async fn start(
        slots: usize,
        signoff_deck: Option<&Path>,
        llm: &LlmSettings,
        memory: Option<&Path>,
        log_format: LogFormat,
    ) -> anyhow::Result<LocalCluster> {
        // loopback only, and a random token per run: another user of this machine
        // cannot submit to (or read from) this run's coordinator and worker
        let token = BearerToken::random();
        let launch = CoordinatorLaunch {
            token: &token,
            llm,
            memory,
            log_format,
        };
        let coordinator = CoordinatorProcess::start(&launch).await?;
        let address = format!("http://{}", coordinator.address);
        match start_worker(slots, signoff_deck, &address, &token).await {
            Ok(worker) => Ok(LocalCluster {
                farm: Farm {
                    coordinator: address,
                    token: Some(token),
                    tls: None,
                },
                coordinator,
                worker,
            }),
            Err(error) => {
                coordinator.stop().await;
                Err(error)
            }
        }
    }

    pub async fn stop(self) {
        if let Err(error) = self.worker.stop().await {
            tracing::warn!(%error, "stopping the local worker");
        }
        self.coordinator.stop().await;
    }
}

/// A worker node in this process with `slots` KLayout processes, registered with
/// the coordinator at `address`.
async fn start_worker(
    slots: usize,
    signoff_deck: Option<&Path>,
    address: &str,
    token: &BearerToken,
) -> anyhow::Result<Node> {
    let environment: HashMap<String, String> = std::env::vars().collect();
    let mut command_line = worker_command_line(&environment, Some(address.to_owned()));
    command_line.slots = Some(slots);
    command_line.signoff_decks = signoff_deck.map(|deck| deck.display().to_string());
    let mut worker_config = WorkerConfig::load_with_environment(&command_line, environment)
        .context("worker configuration")?;
    worker_config.common.token = Some(token.clone());
    let worker_listener = tokio::net::TcpListener::bind(&worker_config.listen)
        .await
        .context("binding the local worker")?;
    Node::start(&worker_config, worker_listener).await.map_err(|error| {
        anyhow!(
            "starting {slots} KLayout process(es) with {}: {error}; run `make klayout` to provision the venv",
            worker_config.python.display()
        )
    })
}
