//! `drc_rules.json`: the rule set model (seed 001 §5.3, extended in 1.1.0 with GDS
//! datatypes, layer roles, electrical values, derived layers and the grid, in 1.2.0 with
//! line-end and adjacent-side enclosures, minimum areas and wide-metal spacing, in 1.3.0 with
//! the `models` table for SPICE netlists, in 1.4.0 with the `parasitics` section —
//! [`crate::parasitics`]) and the checks a schema cannot express. Rule
//! semantics: docs/contracts.md §1.

mod layer_checks;
mod model;
mod required_roles;
mod rule_checks;
mod written;

pub use model::{
    DEFAULT_GRID_M, DerivedLayer, DerivedOp, DrcRule, DrcRuleSet, LayerDef, MAX_DERIVED_LAYERS,
    RuleType,
};
pub(crate) use required_roles::role_missing_message;
pub(crate) use written::{DrcDocument, build_rule_set};
