//! What the CLI's integration tests share: the repository, the venv's Python, and the
//! `centroid` binary set up to run real KLayout skill servers offline.

#![allow(dead_code)] // each test binary uses its own part

use std::path::PathBuf;
use std::process::Command;

pub fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `CENTROID_PYTHON`, else the repository's venv.
pub fn python() -> PathBuf {
    std::env::var_os("CENTROID_PYTHON")
        .map_or_else(|| repository().join(".venv/bin/python"), PathBuf::from)
}

/// The `centroid` binary with the skill servers of this checkout, no LLM configured.
pub fn centroid() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_centroid"));
    command
        .env("CENTROID_PYTHON", python())
        .env("CENTROID_SKILLS_DIR", repository().join("worker/skills"))
        .env_remove("CENTROID_LLM_BASE_URL");
    command
}
