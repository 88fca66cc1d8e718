//! The long-term memory (seed 000 §4.4) is the planner crate's case memory
//! ([`centroid_planner::case_memory`]); a farm keeps it on Redis
//! ([`redis_cases`]). The planner's names are re-exported here under the paths
//! the job session still uses.

pub mod redis_cases;

pub use centroid_planner::case_memory::{
    Case, CaseMemory, DEFAULT_MAX_CASES, FailurePattern, MemoryError, Signature, most_similar,
    similar_failures,
};
