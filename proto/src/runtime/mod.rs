//! What every Centroid process does the same way at start-up: layered
//! configuration ([`config_layers`]), logging ([`logging`]), the
//! authentication of its gRPC calls ([`auth`]) and their TLS ([`tls`]).
//!
//! These live in `centroid-proto` because it is the one crate that the
//! coordinator, the worker and the CLI all depend on, and because both are
//! contracts between the processes of a farm as much as the wire types are: an
//! operator configures every binary with the same file, the same `CENTROID_*`
//! variables and the same flags, and reads one log format from all of them.

pub mod auth;
pub mod config_layers;
pub mod log_entry;
pub mod logging;
pub mod operations;
pub mod tls;
pub mod trace_context;

pub use auth::{AttachToken, AuthChannel, BearerToken, RequireToken};
pub use config_layers::{ConfigError, layered};
pub use log_entry::event_types;
pub use logging::{LogFormat, init_logging};
pub use operations::{OperationsProbe, serve_operations};
pub use tls::{Tls, TlsError, TlsFiles, TlsFlags};
