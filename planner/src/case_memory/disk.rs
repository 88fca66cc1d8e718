//! The on-disk memory of `centroid run`: a directory holding a marker file
//! (`centroid-memory.json`, format and version), `cases/{job}.json` and
//! `failures/{id}.json`. Every file is written whole to `tmp/` and renamed into
//! place (after fsync), so a kill at any moment leaves each file either old or
//! new, never torn, and jobs running at once never share a file. A directory that
//! is not a Centroid memory is refused, never overwritten.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::case_memory::{
    Case, CaseMemory, DEFAULT_MAX_CASES, DEFAULT_MAX_FAILURES, FailurePattern, MemoryError,
    MemoryFuture, evicted,
};

const MARKER: &str = "centroid-memory.json";
const FORMAT: &str = "centroid-memory";
const VERSION: u64 = 1;

pub struct DiskMemory {
    root: PathBuf,
    max_cases: usize,
    max_failures: usize,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> MemoryError + '_ {
    move |source| MemoryError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl DiskMemory {
    /// Opens the memory at `root`, creating it when the directory is missing or
    /// empty; refuses a directory that holds something else.
    pub fn open(root: &Path) -> Result<DiskMemory, MemoryError> {
        let marker = root.join(MARKER);
        match std::fs::read_to_string(&marker) {
            Ok(text) => check_marker(&marker, &text)?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let empty = match std::fs::read_dir(root) {
                    Ok(mut entries) => entries.next().is_none(),
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
                    Err(error) => return Err(io(root)(error)),
                };
                if !empty {
                    return Err(MemoryError::Foreign {
                        path: root.to_path_buf(),
                        reason: format!("the directory has files but no {MARKER}"),
                    });
                }
                for folder in ["cases", "failures", "tmp"] {
                    let path = root.join(folder);
                    std::fs::create_dir_all(&path).map_err(io(&path))?;
                }
                let memory = DiskMemory::at(root);
                memory.write(
                    &marker,
                    &serde_json::json!({"format": FORMAT, "version": VERSION}),
                )?;
                return Ok(memory);
            }
            Err(error) => return Err(io(&marker)(error)),
        }
        for folder in ["cases", "failures", "tmp"] {
            let path = root.join(folder);
            std::fs::create_dir_all(&path).map_err(io(&path))?;
        }
        Ok(DiskMemory::at(root))
    }

    fn at(root: &Path) -> DiskMemory {
        DiskMemory {
            root: root.to_path_buf(),
            max_cases: DEFAULT_MAX_CASES,
            max_failures: DEFAULT_MAX_FAILURES,
        }
    }

    /// Caps on cases and failure patterns (the least used/oldest go beyond).
    pub fn with_caps(mut self, max_cases: usize, max_failures: usize) -> DiskMemory {
        self.max_cases = max_cases.max(1);
        self.max_failures = max_failures.max(1);
        self
    }

    /// The default place: `$XDG_DATA_HOME/centroid/memory`, else
    /// `~/.local/share/centroid/memory`.
    pub fn default_root() -> Option<PathBuf> {
        if let Some(data) = std::env::var_os("XDG_DATA_HOME").filter(|value| !value.is_empty()) {
            return Some(PathBuf::from(data).join("centroid/memory"));
        }
        std::env::var_os("HOME")
            .filter(|value| !value.is_empty())
            .map(|home| PathBuf::from(home).join(".local/share/centroid/memory"))
    }

    /// Writes `value` as `path` atomically (temporary file, fsync, rename).
    fn write(&self, path: &Path, value: &impl Serialize) -> Result<(), MemoryError> {
        use std::io::Write as _;
        let text = serde_json::to_vec_pretty(value).map_err(|error| MemoryError::Corrupt {
            path: path.to_path_buf(),
            reason: error.to_string(),
        })?;
        let temporary = self
            .root
            .join("tmp")
            .join(uuid::Uuid::new_v4().simple().to_string());
        let mut file = std::fs::File::create(&temporary).map_err(io(&temporary))?;
        file.write_all(&text).map_err(io(&temporary))?;
        file.sync_all().map_err(io(&temporary))?;
        std::fs::rename(&temporary, path).map_err(io(path))
    }

    fn read_all<T: DeserializeOwned>(&self, folder: &str) -> Result<Vec<T>, MemoryError> {
        let directory = self.root.join(folder);
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(&directory).map_err(io(&directory))? {
            let path = entry.map_err(io(&directory))?.path();
            if path
                .extension()
                .is_some_and(|extension| extension == "json")
            {
                paths.push(path);
            }
        }
        paths.sort();
        paths
            .into_iter()
            .filter_map(|path| match std::fs::read(&path) {
                Ok(bytes) => {
                    Some(
                        serde_json::from_slice(&bytes).map_err(|error| MemoryError::Corrupt {
                            path: path.clone(),
                            reason: error.to_string(),
                        }),
                    )
                }
                // forgotten between the listing and the read
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
                Err(error) => Some(Err(io(&path)(error))),
            })
            .collect()
    }

    fn file(&self, folder: &str, id: &str) -> PathBuf {
        self.root
            .join(folder)
            .join(format!("{}.json", file_name(id)))
    }

    fn put_case_now(&self, case: &Case) -> Result<(), MemoryError> {
        self.write(&self.file("cases", &case.job_id), case)?;
        let cases = self.read_all::<Case>("cases")?;
        for job_id in evicted(&cases, self.max_cases) {
            remove(&self.file("cases", &job_id))?;
        }
        Ok(())
    }

    fn forget_now(&self, job_id: &str) -> Result<bool, MemoryError> {
        let path = self.file("cases", job_id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(io(&path)(error)),
        }
    }

    fn used_now(&self, job_id: &str) -> Result<(), MemoryError> {
        let path = self.file("cases", job_id);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            // forgotten (or never stored): nothing to count
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(io(&path)(error)),
        };
        let mut case: Case =
            serde_json::from_slice(&bytes).map_err(|error| MemoryError::Corrupt {
                path: path.clone(),
                reason: error.to_string(),
            })?;
        case.uses += 1;
        self.write(&path, &case)
    }

    fn put_failure_now(&self, failure: &FailurePattern) -> Result<(), MemoryError> {
        self.write(&self.file("failures", &failure.id), failure)?;
        let mut failures = self.read_all::<FailurePattern>("failures")?;
        if failures.len() > self.max_failures {
            failures.sort_by_key(|failure| failure.stored_ms);
            let excess = failures.len() - self.max_failures;
            for failure in failures.into_iter().take(excess) {
                remove(&self.file("failures", &failure.id))?;
            }
        }
        Ok(())
    }
}

/// Removes an evicted file; one already gone (forgotten meanwhile) is fine.
fn remove(path: &Path) -> Result<(), MemoryError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io(path)(error)),
        _ => Ok(()),
    }
}

fn check_marker(marker: &Path, text: &str) -> Result<(), MemoryError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|error| MemoryError::Foreign {
            path: marker.to_path_buf(),
            reason: format!("not JSON: {error}"),
        })?;
    match (value["format"].as_str(), value["version"].as_u64()) {
        (Some(FORMAT), Some(VERSION)) => Ok(()),
        (Some(FORMAT), version) => Err(MemoryError::Foreign {
            path: marker.to_path_buf(),
            reason: format!("version {version:?}; this Centroid reads version {VERSION}"),
        }),
        _ => Err(MemoryError::Foreign {
            path: marker.to_path_buf(),
            reason: format!("format is not {FORMAT:?}"),
        }),
    }
}

/// A file name for an id: kept when plain, else hex-encoded.
fn file_name(id: &str) -> String {
    let plain = !id.is_empty()
        && id.len() <= 120
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if plain {
        id.to_string()
    } else {
        id.bytes().map(|byte| format!("{byte:02x}")).collect()
    }
}

// the store is plain files: every operation is done when it is called, and its
// future is ready
impl CaseMemory for DiskMemory {
    fn put_case<'a>(&'a self, case: &'a Case) -> MemoryFuture<'a, ()> {
        Box::pin(std::future::ready(self.put_case_now(case)))
    }

    fn cases(&self) -> MemoryFuture<'_, Vec<Case>> {
        Box::pin(std::future::ready(self.read_all("cases")))
    }

    fn forget<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, bool> {
        Box::pin(std::future::ready(self.forget_now(job_id)))
    }

    fn used<'a>(&'a self, job_id: &'a str) -> MemoryFuture<'a, ()> {
        Box::pin(std::future::ready(self.used_now(job_id)))
    }

    fn put_failure<'a>(&'a self, failure: &'a FailurePattern) -> MemoryFuture<'a, ()> {
        Box::pin(std::future::ready(self.put_failure_now(failure)))
    }

    fn failures(&self) -> MemoryFuture<'_, Vec<FailurePattern>> {
        Box::pin(std::future::ready(self.read_all("failures")))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}
