//! The Centroid coordinator: job sessions (the state machine of seed 000 §4.1),
//! planning, candidate search, dispatch to workers, evaluation. The code map is
//! in `ARCHITECTURE.md`; Redis keys, limits, retries and the score in
//! `coordinator/README.md`.

pub mod access;
pub mod agent;
pub mod artifacts;
pub(crate) mod candidate_times;
pub mod config;
pub(crate) mod context;
pub mod coordinator;
pub(crate) mod dispatcher;
pub mod drafting;
pub mod error;
pub(crate) mod farm_load;
pub mod heap_trim;
pub mod llm;
pub mod memory;
pub mod metrics;
pub mod model;
pub mod planner;
pub mod proto_views;
pub mod redis_client;
pub mod registry;
pub mod retry_policy;
pub mod service;
pub(crate) mod session;
pub mod store;
pub(crate) mod submission;
pub(crate) mod worker_calls;

pub use config::CoordinatorConfig;
pub use coordinator::{Coordinator, JobView, SubmitOptions, Submitted};
pub use error::{CoordinatorError, StoreError};
