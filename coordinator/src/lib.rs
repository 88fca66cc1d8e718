//! The Centroid coordinator: job sessions (the state machine of seed 000 §4.1),
//! planning, candidate search, dispatch to workers, evaluation.

pub mod error;
pub mod model;
pub mod store;
