//! Candidates' scratch directories: `centroid-candidate-<worker pid>-<random>` in
//! the temporary directory, mode 0700 (other local users cannot read a candidate's
//! files). A worker killed mid-candidate leaves its directories behind; the next
//! worker to start removes those of ours (same owner) whose worker process is
//! gone, never those of a live worker.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

/// What every scratch directory's name starts with.
pub const PREFIX: &str = "centroid-candidate-";

/// A new scratch directory of this worker process (removed when dropped).
pub fn create() -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// Removes from `temporary_dir` the scratch directories owned by this user whose
/// worker process is no longer running. Returns how many were removed; one that
/// cannot be removed is logged and the others are still tried.
pub fn remove_leftovers(temporary_dir: &Path) -> io::Result<usize> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let user = unsafe { libc::geteuid() };
    let mut removed = 0;
    for entry in std::fs::read_dir(temporary_dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(owner_pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        // not following links: a link named like ours is not ours
        let metadata = entry.path().symlink_metadata()?;
        if !metadata.is_dir() || metadata.uid() != user || process_runs(owner_pid) {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => removed += 1,
            Err(error) => tracing::warn!(
                path = %entry.path().display(),
                %error,
                "cannot remove a dead worker's scratch directory"
            ),
        }
    }
    Ok(removed)
}

/// The worker pid in a scratch directory's name (`None`: not a scratch directory
/// of this naming).
fn owner_pid(name: &str) -> Option<u32> {
    let (pid, random) = name.strip_prefix(PREFIX)?.split_once('-')?;
    (!random.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Whether a process with this pid exists (ours or another user's).
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return true; // never a worker's: leave it alone
    }
    // SAFETY: signal 0 only checks that the process exists.
    let result = unsafe { libc::kill(pid, 0) };
    result == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_is_private_and_named_after_this_process() {
        let dir = create().unwrap();
        let metadata = dir.path().metadata().unwrap();
        assert_eq!(metadata.mode() & 0o777, 0o700);
        let name = dir.path().file_name().unwrap().to_str().unwrap();
        assert_eq!(owner_pid(name), Some(std::process::id()));
    }

    #[test]
    fn only_the_directories_of_dead_workers_are_removed() {
        let temporary = tempfile::tempdir().unwrap();
        let mut finished = std::process::Command::new("true").spawn().unwrap();
        finished.wait().unwrap();
        let dead_pid = finished.id();
        let dead = temporary.path().join(format!("{PREFIX}{dead_pid}-abc"));
        let live = temporary
            .path()
            .join(format!("{PREFIX}{}-abc", std::process::id()));
        let legacy = temporary.path().join(format!("{PREFIX}xyz123"));
        let unrelated = temporary.path().join("something-else");
        for dir in [&dead, &live, &legacy, &unrelated] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("file"), b"x").unwrap();
        }
        let dead_link = temporary.path().join(format!("{PREFIX}{dead_pid}-link"));
        std::os::unix::fs::symlink(&unrelated, &dead_link).unwrap();
        assert_eq!(remove_leftovers(temporary.path()).unwrap(), 1);
        assert!(!dead.exists());
        for kept in [&live, &legacy, &unrelated] {
            assert!(kept.join("file").exists(), "{}", kept.display());
        }
        assert!(
            dead_link.symlink_metadata().is_ok(),
            "a link is not followed"
        );
    }

    #[test]
    fn names_of_other_shapes_carry_no_pid() {
        assert_eq!(owner_pid("centroid-candidate-42-a1"), Some(42));
        for name in [
            "centroid-candidate-abc",
            "centroid-candidate-42-",
            "centroid-candidate--a",
            "centroid-candidate-4x-a",
            "other-42-a",
        ] {
            assert_eq!(owner_pid(name), None, "{name}");
        }
    }
}
