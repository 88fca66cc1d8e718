//! The Centroid coordinator: job sessions (the state machine of seed 000 §4.1),
//! planning, candidate search, dispatch to workers, evaluation.

pub mod artifacts;
pub mod config;
pub mod coordinator;
pub mod dispatcher;
pub mod error;
pub mod evaluator;
pub mod model;
pub mod planner;
pub mod registry;
pub mod search;
pub mod session;
pub mod store;

pub use config::CoordinatorConfig;
pub use coordinator::{Coordinator, JobView, SubmitOptions, Submitted};
pub use error::{CoordinatorError, StoreError};
pub mod service;
