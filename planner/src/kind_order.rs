//! The devices of one row kind in their default placement order: what the
//! design space's order genes permute and the placement order completes.

use serde::{Deserialize, Serialize};

/// The devices of one row kind, in the default placement order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindOrder {
    /// `nmos`, `pmos` or `passive`
    pub kind: String,
    pub devices: Vec<String>,
    /// the most rows this kind may be folded into
    pub max_rows: u32,
}
