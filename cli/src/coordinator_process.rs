//! The `centroid-coordinator` binary as a child of `centroid run`: found next to
//! this executable (else `CENTROID_COORDINATOR_BIN`, else on `PATH`), started with
//! the in-process store on a free loopback port, its address learnt from a ready
//! file in a private directory. Its environment is built here: nothing of this
//! shell's `CENTROID_*` reaches it (a `CENTROID_REDIS` must not make it join a
//! farm) but the log filter, the run's token and the `[cli.llm]` model; its
//! configuration file is an empty one. It dies with this process (killed when
//! dropped, and by the kernel when this process dies), logs to this process's
//! stderr, and stops on SIGTERM.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use centroid_runtime::logging::LOG_FILTER_VARIABLE;
use centroid_runtime::{BearerToken, LlmSettings, LogFormat};
use tokio::process::{Child, Command};

/// The binary's name.
const BINARY: &str = "centroid-coordinator";
/// Names the binary when it is not next to `centroid`.
pub const BINARY_VARIABLE: &str = "CENTROID_COORDINATOR_BIN";
/// The log filter when this shell sets none: the CLI's own (quiet unless asked).
const DEFAULT_LOG_FILTER: &str = "warn";
/// How long the coordinator may take to serve.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long it may take to stop after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
const READY_POLL: Duration = Duration::from_millis(20);

/// What the child coordinator is started with.
pub struct CoordinatorLaunch<'a> {
    /// the run's token: every call to the coordinator must carry it
    pub token: &'a BearerToken,
    /// the model of jobs that ask for the LLM planner (`[cli.llm]`)
    pub llm: &'a LlmSettings,
    /// the long-term memory's directory; `None`: no memory
    pub memory: Option<&'a Path>,
    pub log_format: LogFormat,
}

pub struct CoordinatorProcess {
    child: Child,
    /// the loopback address it serves on
    pub address: String,
    /// holds the ready file and the empty configuration; removed when dropped
    _private: tempfile::TempDir,
}

impl CoordinatorProcess {
    /// Starts the coordinator and waits until it serves.
    pub async fn start(launch: &CoordinatorLaunch<'_>) -> anyhow::Result<CoordinatorProcess> {
        let binary = coordinator_binary()?;
        let private = tempfile::Builder::new()
            .prefix("centroid-run-")
            .tempdir()
            .context("creating a private directory for the local coordinator")?;
        let config = private.path().join("coordinator.toml");
        std::fs::write(&config, "").with_context(|| format!("writing {}", config.display()))?;
        let ready = private.path().join("coordinator.ready");
        let memory = match launch.memory {
            None => OsString::from("off"),
            Some(directory) => directory.as_os_str().to_owned(),
        };
        let log_format = match launch.log_format {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        };
        let mut command = Command::new(&binary);
        command
            .arg("--config")
            .arg(&config)
            .args(["--listen", "127.0.0.1:0", "--redis", "memory"])
            .arg("--memory")
            .arg(memory)
            .arg("--ready-file")
            .arg(&ready)
            .args(["--log-format", log_format])
            .env_clear()
            .envs(environment(std::env::vars_os(), launch.token, launch.llm))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let parent = std::process::id();
        // SAFETY: runs in the forked child before exec and calls only
        // async-signal-safe functions (prctl, getppid); it allocates nothing.
        unsafe {
            command.pre_exec(move || die_with_parent(parent));
        }
        // the kernel signals the child when the thread that forked it ends: this
        // runs on the thread driving `centroid run` (the runtime's `block_on`),
        // which lives as long as the process
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut process = CoordinatorProcess {
            child,
            address: String::new(),
            _private: private,
        };
        process.address = process.wait_until_ready(&ready, &binary).await?;
        Ok(process)
    }

    /// The address in the ready file, once the coordinator wrote it; an error when
    /// it exits first or takes longer than [`READY_TIMEOUT`] (then it is killed).
    async fn wait_until_ready(&mut self, ready: &Path, binary: &Path) -> anyhow::Result<String> {
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        loop {
            match std::fs::read_to_string(ready) {
                Ok(address) if !address.trim().is_empty() => return Ok(address.trim().into()),
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(error).context(format!("reading {}", ready.display())),
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited before it served ({}); its log is above",
                    binary.display(),
                    described(status)
                );
            }
            if tokio::time::Instant::now() >= deadline {
                self.child.kill().await?;
                bail!(
                    "{} did not serve within {} s; killed",
                    binary.display(),
                    READY_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// SIGTERM, then waits for the coordinator to stop (it is killed after
    /// [`STOP_TIMEOUT`]).
    pub async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on our child, not reaped yet (`id` is `None` once it is).
            if unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) } != 0 {
                let error = std::io::Error::last_os_error();
                tracing::warn!(%error, "signalling the local coordinator to stop");
            }
        }
        match tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) if status.success() => {}
            Ok(Ok(status)) => {
                tracing::warn!(status = %described(status), "the local coordinator stopped")
            }
            Ok(Err(error)) => tracing::warn!(%error, "waiting for the local coordinator"),
            Err(_) => {
                tracing::warn!(
                    "the local coordinator did not stop within {} s; killing it",
                    STOP_TIMEOUT.as_secs()
                );
                if let Err(error) = self.child.kill().await {
                    tracing::warn!(%error, "killing the local coordinator");
                }
            }
        }
    }
}

/// In the child before exec: the kernel kills it when this process dies; and when
/// this process died before that was set, the child does not start.
fn die_with_parent(parent: u32) -> std::io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() as u32 != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// The calls a job's first iteration would make, as `centroid-coordinator
/// print-prompts` builds them from `request` (a JSON `PreviewRequest`) with the
/// `llm` model's budget: the binary's stdout. No model is asked; the child's
/// environment holds none of this shell's `CENTROID_*` but `llm`, and an empty
/// configuration file.
pub async fn print_prompts(
    request: &serde_json::Value,
    llm: &LlmSettings,
) -> anyhow::Result<String> {
    use tokio::io::AsyncWriteExt;
    let binary = coordinator_binary()?;
    let config = tempfile::NamedTempFile::new().context("creating an empty configuration")?;
    let mut child = Command::new(&binary)
        .arg("print-prompts")
        .env_clear()
        .envs(
            std::env::vars_os()
                .filter(|(name, _)| !name.to_string_lossy().starts_with("CENTROID_")),
        )
        .envs(llm.to_environment())
        .env(
            centroid_runtime::config_layers::CONFIG_FILE_VARIABLE,
            config.path(),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let mut stdin = child.stdin.take().context("the child's stdin")?;
    stdin
        .write_all(&serde_json::to_vec(request)?)
        .await
        .context("sending the request")?;
    drop(stdin);
    let output = child
        .wait_with_output()
        .await
        .context("waiting for the prompts")?;
    if !output.status.success() {
        bail!(
            "{} print-prompts: {}",
            binary.display(),
            described(output.status)
        );
    }
    String::from_utf8(output.stdout).context("the prompts are not UTF-8")
}

/// Where the binary is: next to `centroid` (`beside`), else what `variable`
/// names, else the first on `path`; an error naming every place looked at.
fn locate(
    beside: Option<&Path>,
    variable: Option<&OsStr>,
    path: Option<&OsStr>,
) -> anyhow::Result<PathBuf> {
    let mut looked = Vec::new();
    if let Some(directory) = beside {
        let candidate = directory.join(BINARY);
        if candidate.is_file() {
            return Ok(candidate);
        }
        looked.push(format!("next to centroid ({})", directory.display()));
    }
    match variable.filter(|named| !named.is_empty()) {
        Some(named) if Path::new(named).is_file() => return Ok(PathBuf::from(named)),
        Some(named) => looked.push(format!(
            "{BINARY_VARIABLE} ({}: no such file)",
            Path::new(named).display()
        )),
        None => looked.push(format!("{BINARY_VARIABLE} (not set)")),
    }
    if let Some(found) = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|directory| directory.join(BINARY))
        .find(|candidate| candidate.is_file())
    {
        return Ok(found);
    }
    looked.push("on PATH".into());
    Err(anyhow!(
        "{BINARY} not found: looked {}; build it with `make build` (or `cargo build --bins`)",
        looked.join(", ")
    ))
}

/// The child's environment: this process's without any `CENTROID_*` variable,
/// then the log filter (this shell's, else the CLI's default), the token and the
/// LLM settings as the variables the coordinator's settings read.
fn environment(
    inherited: impl Iterator<Item = (OsString, OsString)>,
    token: &BearerToken,
    llm: &LlmSettings,
) -> Vec<(OsString, OsString)> {
    let mut log_filter = OsString::from(DEFAULT_LOG_FILTER);
    let mut environment = Vec::new();
    for (name, value) in inherited {
        if name == LOG_FILTER_VARIABLE {
            log_filter = value;
        } else if !name.to_string_lossy().starts_with("CENTROID_") {
            environment.push((name, value));
        }
    }
    environment.push((LOG_FILTER_VARIABLE.into(), log_filter));
    let (name, value) = token.to_environment();
    environment.push((name.into(), value.into()));
    environment.extend(
        llm.to_environment()
            .into_iter()
            .map(|(name, value)| (name.into(), value.into())),
    );
    environment
}

/// The `centroid-coordinator` binary: beside this executable, else
/// `CENTROID_COORDINATOR_BIN`, else on `PATH` ([`locate`]).
fn coordinator_binary() -> anyhow::Result<PathBuf> {
    locate(
        std::env::current_exe()
            .ok()
            .as_deref()
            .and_then(Path::parent),
        std::env::var_os(BINARY_VARIABLE).as_deref(),
        std::env::var_os("PATH").as_deref(),
    )
}

fn described(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variables(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    fn value<'a>(environment: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
        environment
            .iter()
            .find(|(variable, _)| variable == name)
            .map(|(_, value)| value.as_os_str())
    }

    #[test]
    fn the_child_gets_no_farm_setting_but_the_filter_token_and_model() {
        let token = BearerToken::new("run-token").unwrap();
        let llm = LlmSettings {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "local".into(),
            light: centroid_runtime::LightModel {
                model: "local-light".into(),
                ..Default::default()
            },
            ..LlmSettings::default()
        };
        let inherited = variables(&[
            ("PATH", "/usr/bin"),
            ("CENTROID_REDIS", "redis://farm:6379"),
            ("CENTROID_CONFIG", "/etc/centroid.toml"),
            ("CENTROID_TOKEN", "the farm's token"),
            ("CENTROID_LLM_MODEL", "the shell's model"),
            ("CENTROID_LOG", "debug"),
        ]);
        let handed_on = environment(inherited.into_iter(), &token, &llm);
        assert_eq!(value(&handed_on, "PATH"), Some(OsStr::new("/usr/bin")));
        assert_eq!(value(&handed_on, "CENTROID_REDIS"), None);
        assert_eq!(value(&handed_on, "CENTROID_CONFIG"), None);
        assert_eq!(
            value(&handed_on, "CENTROID_TOKEN"),
            Some(OsStr::new("run-token"))
        );
        assert_eq!(
            value(&handed_on, "CENTROID_LLM_MODEL"),
            Some(OsStr::new("local")),
            "[cli.llm], not the shell's variable"
        );
        assert_eq!(
            value(&handed_on, "CENTROID_LLM_LIGHT_MODEL"),
            Some(OsStr::new("local-light")),
            "[cli.llm.light] goes to the child too"
        );
        assert_eq!(value(&handed_on, "CENTROID_LOG"), Some(OsStr::new("debug")));
        let names: Vec<&OsString> = handed_on.iter().map(|(name, _)| name).collect();
        let unique: std::collections::HashSet<&&OsString> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "one value per variable");
        let quiet = environment(variables(&[("HOME", "/root")]).into_iter(), &token, &llm);
        assert_eq!(
            value(&quiet, "CENTROID_LOG"),
            Some(OsStr::new("warn")),
            "the CLI's own default filter"
        );
    }

    #[test]
    fn the_binary_is_found_beside_then_named_then_on_path_else_every_place_is_named() {
        let beside = tempfile::tempdir().unwrap();
        let named = tempfile::tempdir().unwrap();
        let on_path = tempfile::tempdir().unwrap();
        let empty = tempfile::tempdir().unwrap();
        for directory in [&beside, &named, &on_path] {
            std::fs::write(directory.path().join(BINARY), "").unwrap();
        }
        let named_binary = named.path().join(BINARY);
        let path = std::env::join_paths([empty.path(), on_path.path()]).unwrap();
        assert_eq!(
            locate(
                Some(beside.path()),
                Some(named_binary.as_os_str()),
                Some(&path)
            )
            .unwrap(),
            beside.path().join(BINARY)
        );
        assert_eq!(
            locate(
                Some(empty.path()),
                Some(named_binary.as_os_str()),
                Some(&path)
            )
            .unwrap(),
            named_binary
        );
        assert_eq!(
            locate(Some(empty.path()), None, Some(&path)).unwrap(),
            on_path.path().join(BINARY)
        );
        let missing = locate(
            Some(empty.path()),
            Some(OsStr::new("/nowhere/centroid-coordinator")),
            Some(empty.path().as_os_str()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            missing.contains(&empty.path().display().to_string())
                && missing.contains(
                    "CENTROID_COORDINATOR_BIN (/nowhere/centroid-coordinator: no such file)"
                )
                && missing.contains("on PATH")
                && missing.contains("make build"),
            "{missing}"
        );
    }
}
