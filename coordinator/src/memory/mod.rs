//! The long-term memory (seed 000 §4.4) is the planner crate's case memory
//! ([`centroid_planner::case_memory`]); a farm keeps it on Redis
//! ([`redis_cases`]).

pub mod redis_cases;
