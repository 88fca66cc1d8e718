//! The layer roles a rule set must give, and the message naming a missing one.

use crate::issue::IssueSink;
use crate::layer_roles::{REQUIRED_ROLES, is_known_role, names_for_role};

use super::model::DrcRuleSet;

pub(crate) fn role_missing_message(role: &str, why: &str) -> String {
    let names = names_for_role(role);
    let inferred = if names.is_empty() {
        String::new()
    } else {
        format!(" or name it {}", names.join(" / "))
    };
    format!(
        "no layer has the role \"{role}\"{why}; declare one as {{\"layer\": <GDS number>, \"role\": \"{role}\"}} (schema_version 1.1.0){inferred}"
    )
}

/// Reports each role of `roles` that no layer of the rule set has.
pub(crate) fn check_required_roles(rule_set: &DrcRuleSet, roles: &[&str], sink: &mut IssueSink) {
    debug_assert!(
        roles
            .iter()
            .all(|role| REQUIRED_ROLES.contains(role) || is_known_role(role))
    );
    for role in roles {
        if rule_set.layer_for_role(role).is_none() {
            sink.push("/layers", role_missing_message(role, ""));
        }
    }
}
