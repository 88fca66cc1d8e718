//! The skills the live workers advertise, by name, with their input JSON Schemas:
//! what a plan may call and how its arguments are fitted.

use std::collections::HashMap;

use serde_json::Value;

/// Skills advertised by the live workers, with their input JSON Schemas
/// (`Value::Null` when not fetched).
pub type SkillCatalog = HashMap<String, Value>;
