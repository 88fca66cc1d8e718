//! Keeps a live skill server on every slot: starts them at boot, starts one on a
//! slot found without a live process, and replaces a process that died or ran
//! past a deadline (killed, then restarted in the background while the slot stays
//! reserved, so the failed candidate is answered at once).

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{SkillProcessError, WorkerError};
use crate::pool::{Pool, SlotLease};
use crate::schema_check::CompiledSkillSchemas;
use crate::skill_process::{ServerInfo, SkillProcess};

/// Attempts to start a replacement before the slot is freed without a process.
const RESTART_ATTEMPTS: u32 = 3;

/// Starts one process per slot (concurrently) and builds the compiled skill schemas from
/// the first one's `tools/list`.
pub async fn start_all(
    pool: &Arc<Pool>,
) -> Result<(CompiledSkillSchemas, ServerInfo), WorkerError> {
    let mut leases = Vec::new();
    for _ in 0..pool.slot_count() {
        leases.push(
            pool.try_acquire("")
                .expect("a fresh pool has every slot free"),
        );
    }
    let mut starts = tokio::task::JoinSet::new();
    for mut lease in leases {
        starts.spawn(async move {
            let result = start_process(&mut lease).await;
            (lease, result)
        });
    }
    let mut server_info = None;
    let mut first_error = None;
    let mut ready_leases = Vec::new();
    while let Some(joined) = starts.join_next().await {
        let (lease, result) = joined.expect("start task panicked");
        match result {
            Ok(info) => server_info = server_info.or(Some(info)),
            Err(error) => first_error = first_error.or(Some(error)),
        }
        ready_leases.push(lease);
    }
    if let Some(error) = first_error {
        return Err(WorkerError::Startup(error));
    }
    let server_info = server_info.expect("at least one slot");
    ready_leases.sort_by_key(SlotLease::index);
    let first_lease = &mut ready_leases[0];
    let deadline = Instant::now() + pool.startup_timeout();
    let tools = first_lease
        .process
        .as_mut()
        .expect("started above")
        .list_tools(deadline)
        .await?;
    let catalog = CompiledSkillSchemas::build(tools, &server_info)?;
    tracing::info!(
        slots = pool.slot_count(),
        skills = catalog.skill_names().len(),
        klayout_version = %server_info.klayout_version,
        "skill servers ready"
    );
    Ok((catalog, server_info))
}

/// Spawns and initializes a process on the leased slot.
pub async fn start_process(lease: &mut SlotLease) -> Result<ServerInfo, SkillProcessError> {
    let pool = lease.pool().clone();
    let mut process = SkillProcess::spawn(pool.command(), lease.index())?;
    let deadline = Instant::now() + pool.startup_timeout();
    let info = match process.initialize(deadline).await {
        Ok(info) => info,
        Err(error) => {
            process.kill().await;
            return Err(error);
        }
    };
    lease.record_process_started(process.pid());
    lease.process = Some(process);
    Ok(info)
}

/// Makes sure the leased slot has a live process (a process that died while idle
/// is replaced here, before the candidate touches it).
pub async fn ensure_live_process(lease: &mut SlotLease) -> Result<(), SkillProcessError> {
    let slot = lease.index();
    if let Some(process) = lease.process.as_mut() {
        if !process.has_exited() {
            return Ok(());
        }
        tracing::warn!(
            slot,
            pid = process.pid(),
            "skill server died while idle; starting a new one"
        );
        let dead = lease.process.take().expect("checked above");
        dead.kill().await;
        lease.record_process_gone();
    }
    start_process(lease).await.map(|_| ())
}

/// Kills the slot's process and starts a fresh one in the background. The slot
/// stays leased (busy) until the new process is up or the attempts are spent.
pub fn replace_process(mut lease: SlotLease, reason: String) {
    lease.mark_restarting();
    let failed_process = lease.process.take();
    lease.record_process_gone();
    tokio::spawn(async move {
        if let Some(process) = failed_process {
            tracing::warn!(slot = lease.index(), pid = process.pid(), %reason, "replacing skill server");
            process.kill().await;
        }
        let mut backoff = Duration::from_millis(200);
        for attempt in 1..=RESTART_ATTEMPTS {
            match start_process(&mut lease).await {
                Ok(_) => {
                    tracing::info!(
                        slot = lease.index(),
                        pid = lease.process.as_ref().map(SkillProcess::pid),
                        "skill server restarted"
                    );
                    return;
                }
                Err(error) => {
                    tracing::error!(slot = lease.index(), attempt, %error, "skill server restart failed");
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
            }
        }
        // the slot is freed without a process; the next candidate tries again
    });
}
