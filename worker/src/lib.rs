//! The Centroid worker node: a gRPC `Worker` service over a supervised pool of
//! long-lived headless KLayout processes ("skill servers", JSON-RPC on stdio).
//!
//! Code map (each file does one thing):
//! - [`config`]: layered configuration (defaults → `centroid.toml` → `CENTROID_*` env → flags).
//! - [`skill_process`]: one child process: spawn, JSON-RPC client over stdio, deadline, kill.
//! - [`skill_reply`]: reading the child's reply to one request (each line classified).
//! - [`schema_check`]: the compiled skill schemas from `tools/list` (each compiled once).
//! - [`pool`]: N slots, one candidate per slot, admission through the waiting room.
//! - [`waiting_room`]: a free slot, else one of `prefetch` waiting places (FIFO), else a refusal.
//! - [`supervisor`]: keeps a live child on every slot (restart after a death or a timeout).
//! - [`cancel`]: the running candidates by id, so `CancelCandidate` can stop one.
//! - [`candidate`]: runs one candidate's plan on a slot.
//! - [`service`]: the tonic `Worker` service, the drain logic and `CancelCandidate`.
//! - [`registration`]: registration with the coordinator and heartbeats on their own task.
//! - [`node`]: wires it all together (used by `main.rs`, the tests and the bench).
//! - [`simulation`]: bench/test mode only: a worker without KLayout answering
//!   candidates after a set delay (`--simulate-candidate-ms`).
//!
//! Architecture invariants: only this crate talks to KLayout; a call into KLayout
//! always has a deadline; parameters are validated before KLayout sees them.

pub mod cancel;
pub mod candidate;
pub mod candidate_inputs;
pub mod config;
pub mod confinement;
pub mod error;
pub mod metrics;
pub mod node;
pub mod pool;
pub mod registration;
pub mod schema_check;
pub mod scratch_dir;
pub mod service;
pub mod simulation;
pub mod skill_process;
pub mod skill_reply;
pub mod state;
pub mod supervisor;
pub mod waiting_room;

pub use config::WorkerConfig;
pub use error::{SkillProcessError, WorkerError};
