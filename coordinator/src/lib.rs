//! The Centroid coordinator: job sessions (the state machine of seed 000 §4.1),
//! planning, candidate search, dispatch to workers, evaluation.

pub mod error;
pub mod model;
pub mod store;
pub mod planner;
pub mod registry;
pub mod evaluator;
pub mod search;
pub mod artifacts;
pub mod config;
pub mod coordinator;
pub mod dispatcher;
pub mod session;

pub use config::CoordinatorConfig;
pub use coordinator::{Coordinator, JobView, SubmitOptions, Submitted};
pub use error::{CoordinatorError, StoreError};
pub mod service;
