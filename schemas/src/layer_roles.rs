//! Layer roles: what the layout generator draws with each layer of a rule set.
//! An explicit `role` (schema 1.1.0) wins; otherwise the role is inferred from
//! common foundry layer names (docs/contracts.md §1).

/// Roles the layout generator cannot do without.
pub const REQUIRED_ROLES: [&str; 6] = ["active", "poly", "contact", "metal1", "via1", "metal2"];

/// Layer names (case-insensitive) from which a role is inferred.
const INFERRED_NAMES: [(&str, &[&str]); 9] = [
    ("active", &["activ", "comp", "diff", "od", "rx"]),
    ("poly", &["gatpoly", "poly2", "poly", "po", "pc"]),
    ("contact", &["cont", "contact", "co", "ca", "licon"]),
    ("metal1", &["metal1", "met1", "m1"]),
    ("via1", &["via1", "v1"]),
    ("metal2", &["metal2", "met2", "m2"]),
    ("nwell", &["nwell", "nw"]),
    ("nplus", &["nsd", "nplus", "np", "nsdm"]),
    ("pplus", &["psd", "pplus", "pp", "psdm"]),
];

const PLAIN_ROLES: [&str; 10] = [
    "active",
    "tap",
    "poly",
    "contact",
    "nwell",
    "pwell",
    "nplus",
    "pplus",
    "poly_contact_marker",
    "poly_res",
];
const MAX_METAL_LEVEL: u32 = 9;

/// The role inferred from a layer's name, if it is one of the common foundry names.
pub fn inferred_role(layer_name: &str) -> Option<&'static str> {
    let lower = layer_name.to_ascii_lowercase();
    INFERRED_NAMES
        .iter()
        .find(|(_, names)| names.contains(&lower.as_str()))
        .map(|(role, _)| *role)
}

/// The names from which `role` would be inferred, for messages.
pub fn names_for_role(role: &str) -> &'static [&'static str] {
    const DISPLAY: [(&str, &[&str]); 9] = [
        ("active", &["Activ", "COMP", "diff", "OD", "RX"]),
        ("poly", &["GatPoly", "Poly2", "poly", "PO", "PC"]),
        ("contact", &["Cont", "Contact", "CO", "CA", "licon"]),
        ("metal1", &["Metal1", "met1", "M1"]),
        ("via1", &["Via1", "V1"]),
        ("metal2", &["Metal2", "met2", "M2"]),
        ("nwell", &["NWell", "Nwell", "NW"]),
        ("nplus", &["nSD", "Nplus", "NP", "nsdm"]),
        ("pplus", &["pSD", "Pplus", "PP", "psdm"]),
    ];
    DISPLAY
        .iter()
        .find(|(known, _)| *known == role)
        .map_or(&[], |(_, names)| names)
}

fn metal_level(role: &str) -> Option<u32> {
    let level: u32 = role.strip_prefix("metal")?.parse().ok()?;
    (1..=MAX_METAL_LEVEL).contains(&level).then_some(level)
}

fn via_level(role: &str) -> Option<u32> {
    let level: u32 = role.strip_prefix("via")?.parse().ok()?;
    (1..MAX_METAL_LEVEL).contains(&level).then_some(level)
}

/// True for a role Centroid knows: the plain roles, metal1…metal9, via1…via8, `mim`,
/// and `<metal role>_label` / `<metal role>_pin` for net labels and pins.
pub fn is_known_role(role: &str) -> bool {
    if PLAIN_ROLES.contains(&role)
        || role == "mim"
        || metal_level(role).is_some()
        || via_level(role).is_some()
    {
        return true;
    }
    for suffix in ["_label", "_pin"] {
        if let Some(base) = role.strip_suffix(suffix) {
            return metal_level(base).is_some() || base == "poly";
        }
    }
    false
}

/// A short description of the valid roles, for messages.
pub fn valid_roles_text() -> String {
    format!(
        "{}, mim, metal1…metal{MAX_METAL_LEVEL}, via1…via{}, or <metalN|poly>_label / _pin",
        PLAIN_ROLES.join(", "),
        MAX_METAL_LEVEL - 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_inferred_from_foundry_names() {
        assert_eq!(inferred_role("Activ"), Some("active"));
        assert_eq!(inferred_role("GatPoly"), Some("poly"));
        assert_eq!(inferred_role("licon"), Some("contact"));
        assert_eq!(inferred_role("nsdm"), Some("nplus"));
        assert_eq!(inferred_role("pSD"), Some("pplus"));
        assert_eq!(inferred_role("Metal3"), None);
        assert_eq!(inferred_role("TopMetal1"), None);
    }

    #[test]
    fn known_roles() {
        for role in [
            "active",
            "tap",
            "metal5",
            "via4",
            "metal1_label",
            "metal2_pin",
            "poly_label",
            "mim",
        ] {
            assert!(is_known_role(role), "{role}");
        }
        for role in ["metal0", "metal10", "via9", "gate", "metal1_text", "label"] {
            assert!(!is_known_role(role), "{role}");
        }
    }
}
