//! What every Centroid process does the same way at start-up: layered
//! configuration ([`config_layers`]) of the settings every binary shares
//! ([`common_settings`], loaded by [`binary_settings`]), logging ([`logging`]) and its JSON line
//! ([`log_entry`]), the trace id carried between processes ([`trace_context`]),
//! the operator's HTTP endpoint ([`operations`]), the gRPC health service
//! ([`grpc_health`]) and a server's announcement
//! once bound ([`server_start`]: that endpoint, the ready file), the authentication of its gRPC
//! calls ([`auth`], [`principals`]) and their TLS ([`tls`]); and the settings of the LLM planner's
//! model ([`llm_settings`]), which the coordinator and the CLI both read.
//!
//! These are contracts between the processes of a farm as much as the wire types
//! are: an operator configures every binary with the same file, the same
//! `CENTROID_*` variables and the same flags, and reads one log format from all of
//! them. The generated gRPC types stay in `centroid-proto` (the only crate that
//! exposes prost types); this crate may depend on it, never the other way round.

pub mod auth;
pub mod binary_settings;
pub mod common_settings;
pub mod config_layers;
pub mod grpc_health;
pub mod llm_settings;
pub mod log_entry;
pub mod logging;
pub mod operations;
pub mod principals;
pub mod server_start;
pub mod tls;
pub mod trace_context;

pub use auth::{AttachToken, AuthChannel, BearerToken, RequireToken, TokenError};
pub use binary_settings::{BinaryFlags, BinarySettings};
pub use common_settings::{CommonFlags, CommonSettings, ServerFlags, ServerSettings};
pub use config_layers::{ConfigError, layered};
pub use grpc_health::{HEALTH_FILE_DESCRIPTOR_SET, health_service};
pub use llm_settings::{LightModel, LlmSettings, ModelSharePolicy, Provider};
pub use log_entry::event_types;
pub use logging::{LogFormat, init_logging};
pub use operations::{OperationsProbe, serve_operations};
pub use principals::{Principal, Principals, PrincipalsError, Role};
pub use server_start::{AnnounceError, announce_server};
pub use tls::{Tls, TlsError, TlsFiles};
