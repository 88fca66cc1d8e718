//! What the MCP tools run on: one local KLayout skill server (the worker crate's
//! [`SkillProcess`], started as the worker starts it) holding one layout session
//! whose scratch directory is the MCP session's directory. The skill server
//! confines every file argument to that directory (`session/reset {scratch_dir}`).
//! A process that dies, runs past the call deadline or is running a cancelled call
//! is thrown away (its process group killed); the next call gets a fresh one on the
//! same directory (its layout starts empty).

use std::future::Future;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use centroid_worker::SkillProcessError;
use centroid_worker::skill_process::{SkillProcess, SkillServerCommand, ToolDescription};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::cancellation::Cancellation;

/// Deadline of the start-up calls (`initialize`, `tools/list`, `session/reset`).
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A call that did not get a skill result.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The process failed and was thrown away; the session's layout is gone.
    #[error(
        "{0}; the KLayout process was replaced and its layout session starts again empty (load the technology again)"
    )]
    ProcessLost(SkillProcessError),
    /// No process could be started.
    #[error("cannot start KLayout: {0}")]
    Start(SkillProcessError),
    /// The skill server refused the call at the protocol level.
    #[error("{0}")]
    Refused(SkillProcessError),
    /// The client cancelled the call while it ran; its process was killed.
    #[error("cancelled by the client; the KLayout process was replaced")]
    Cancelled,
}

impl BackendError {
    /// The skill error code this failure is reported with.
    pub fn code(&self) -> &'static str {
        match self {
            BackendError::ProcessLost(SkillProcessError::Timeout { .. }) => "TIMEOUT",
            BackendError::ProcessLost(_) | BackendError::Start(_) => "SERVICE_UNAVAILABLE",
            BackendError::Refused(_) => "INTERNAL_ERROR",
            BackendError::Cancelled => "CANCELLED",
        }
    }
}

/// Runs skills for the MCP server (a trait so the protocol is testable without KLayout).
pub trait SkillBackend {
    /// The skill server's result of `skill` (`{ok, error, data, duration_ms}`);
    /// [`BackendError::Cancelled`] once `cancellation` is set while it runs.
    fn call(
        &mut self,
        skill: &str,
        arguments: Value,
        cancellation: &Cancellation,
    ) -> impl Future<Output = Result<Value, BackendError>>;
    /// The session directory every file argument must be in.
    fn workdir(&self) -> &Path;
}

/// The session directory: a given one (kept) or a new private temporary one
/// (removed when dropped).
#[derive(Debug)]
pub struct Workdir {
    path: PathBuf,
    remove_on_drop: bool,
}

impl Workdir {
    /// `dir`, created when missing, as an absolute path (the skill server wants one).
    pub fn given(dir: &Path) -> std::io::Result<Workdir> {
        std::fs::create_dir_all(dir)?;
        Ok(Workdir {
            path: dir.canonicalize()?,
            remove_on_drop: false,
        })
    }

    /// A new directory `centroid-mcp-*` under the system's temporary directory,
    /// readable by this user only.
    pub fn temporary() -> std::io::Result<Workdir> {
        let base = std::env::temp_dir();
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_nanos())
            .unwrap_or_default();
        let mut attempt = 0u32;
        loop {
            let path = base.join(format!(
                "centroid-mcp-{}-{stamp:x}-{attempt}",
                std::process::id()
            ));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {
                    return Ok(Workdir {
                        path: path.canonicalize()?,
                        remove_on_drop: true,
                    });
                }
                Err(error)
                    if error.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 =>
                {
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// The absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Workdir {
    fn drop(&mut self) {
        if self.remove_on_drop
            && let Err(error) = std::fs::remove_dir_all(&self.path)
        {
            tracing::warn!(%error, dir = %self.path.display(), "cannot remove the session directory");
        }
    }
}

/// One KLayout skill server with its session in the work directory.
pub struct KLayoutBackend {
    command: SkillServerCommand,
    workdir: Workdir,
    call_timeout: Duration,
    /// `None` after a failure, until the next call starts a fresh process
    process: Option<SkillProcess>,
}

impl KLayoutBackend {
    /// Starts the skill server and reads its catalog.
    pub async fn start(
        command: SkillServerCommand,
        workdir: Workdir,
        call_timeout: Duration,
    ) -> Result<(KLayoutBackend, Vec<ToolDescription>), SkillProcessError> {
        let mut process = spawn_ready(&command, workdir.path()).await?;
        let skills = process.list_tools(Instant::now() + START_DEADLINE).await?;
        let backend = KLayoutBackend {
            command,
            workdir,
            call_timeout,
            process: Some(process),
        };
        Ok((backend, skills))
    }

    /// Ends the skill server (end of input, then a kill after 2 s).
    pub async fn stop(mut self) {
        if let Some(process) = self.process.take() {
            process.shut_down(Duration::from_secs(2)).await;
        }
    }
}

/// A skill server that answered `initialize` and has its session in `dir`.
async fn spawn_ready(
    command: &SkillServerCommand,
    dir: &Path,
) -> Result<SkillProcess, SkillProcessError> {
    let mut process = SkillProcess::spawn(command, 0)?;
    let info = process.initialize(Instant::now() + START_DEADLINE).await?;
    process
        .reset_session(Instant::now() + START_DEADLINE, Some(dir), "")
        .await?;
    tracing::info!(pid = process.pid(), klayout = %info.klayout_version, dir = %dir.display(), "KLayout skill server ready");
    Ok(process)
}

impl SkillBackend for KLayoutBackend {
    async fn call(
        &mut self,
        skill: &str,
        arguments: Value,
        cancellation: &Cancellation,
    ) -> Result<Value, BackendError> {
        let mut process = match self.process.take() {
            Some(process) => process,
            None => tokio::select! {
                spawned = spawn_ready(&self.command, self.workdir.path()) =>
                    spawned.map_err(BackendError::Start)?,
                () = cancellation.cancelled() => return Err(BackendError::Cancelled),
            },
        };
        let outcome = tokio::select! {
            outcome = process.request(
                "tools/call",
                json!({"name": skill, "arguments": arguments}),
                Instant::now() + self.call_timeout,
            ) => outcome,
            () = cancellation.cancelled() => {
                tracing::info!(pid = process.pid(), skill, "call cancelled: killing the KLayout process group; the next call starts a new one");
                process.kill().await;
                return Err(BackendError::Cancelled);
            }
        };
        match outcome {
            Ok(result) => {
                self.process = Some(process);
                Ok(result)
            }
            Err(error) if error.child_is_unusable() => {
                tracing::warn!(%error, skill, "KLayout process lost; the next call starts a new one");
                process.kill().await;
                Err(BackendError::ProcessLost(error))
            }
            Err(error) => {
                self.process = Some(process);
                Err(BackendError::Refused(error))
            }
        }
    }

    fn workdir(&self) -> &Path {
        self.workdir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_workdir_is_private_and_removed_a_given_one_is_kept() {
        use std::os::unix::fs::PermissionsExt;
        let temporary = Workdir::temporary().unwrap();
        let path = temporary.path().to_path_buf();
        assert!(path.is_absolute() && path.is_dir());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(path.join("a.gds"), b"x").unwrap();
        drop(temporary);
        assert!(!path.exists());

        let kept = tempfile::tempdir().unwrap();
        let given = Workdir::given(&kept.path().join("new/session")).unwrap();
        let path = given.path().to_path_buf();
        drop(given);
        assert!(path.is_dir());
    }

    #[test]
    fn failures_have_skill_error_codes() {
        let timeout = BackendError::ProcessLost(SkillProcessError::Timeout {
            method: "tools/call".into(),
        });
        assert_eq!(timeout.code(), "TIMEOUT");
        assert!(timeout.to_string().contains("starts again empty"));
        let exited = BackendError::ProcessLost(SkillProcessError::Exited {
            status: "killed by signal 9".into(),
        });
        assert_eq!(exited.code(), "SERVICE_UNAVAILABLE");
    }
}
