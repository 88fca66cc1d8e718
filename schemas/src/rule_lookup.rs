//! The rule set read as the layout generators read it (`worker/skills/centroid_skills/
//! tech.py`), so that the load pipeline can tell what a generator would refuse before
//! anything runs: rules looked up by type and layer role, a rule on a derived layer
//! counting for every role the layer is built from (`a and b`, `a or b` → both, `a not b`
//! → a's), rules on layers that cannot hold shapes in the drawing context skipped (the
//! resistor-body and MIM markers only count for resistors and capacitors), the largest
//! `min` winning. Lengths are whole nanometres (the generators' database unit), on the
//! grid.

use std::collections::{BTreeSet, HashMap};

use crate::drc_rules::{DerivedLayer, DerivedOp, DrcRule, DrcRuleSet, LayerDef, RuleType};

/// Roles drawn only by special devices: rules on layers built from them do not constrain
/// transistors and wiring.
const EXOTIC_ROLES: [&str; 2] = ["poly_res", "mim"];

/// The roles a poly resistor is drawn with (`tech.RESISTOR_CONTEXT`).
pub const RESISTOR_CONTEXT: &[&str] = &[
    "poly",
    "poly_res",
    "contact",
    "metal1",
    "via1",
    "metal2",
    "poly_contact_marker",
];

/// Which layers may hold shapes while a device is drawn.
#[derive(Debug, Clone, Copy)]
pub enum Context {
    /// Every role except the exotic markers (transistors, wiring, plate capacitors).
    Default,
    /// Only these roles.
    Roles(&'static [&'static str]),
}

/// A minimum found in the rule set: its value (nm, snapped up to the grid) and the rule.
#[derive(Debug, Clone, Copy)]
pub struct Minimum<'a> {
    pub nm: i64,
    pub rule: &'a DrcRule,
}

/// Rule lookup over one rule set.
pub struct RuleLookup<'a> {
    rules: &'a DrcRuleSet,
    layers: HashMap<&'a str, &'a LayerDef>,
    derived: HashMap<&'a str, &'a DerivedLayer>,
    grid_nm: i64,
}

impl<'a> RuleLookup<'a> {
    pub fn new(rules: &'a DrcRuleSet) -> Self {
        Self {
            rules,
            layers: rules
                .layers
                .iter()
                .map(|layer| (layer.name.as_str(), layer))
                .collect(),
            derived: rules
                .derived_layers
                .iter()
                .map(|layer| (layer.name.as_str(), layer))
                .collect(),
            grid_nm: grid_in_nm(rules.grid),
        }
    }

    pub fn rule_set(&self) -> &'a DrcRuleSet {
        self.rules
    }

    /// The grid in whole nanometres (a 2.5 nm grid is 5: coordinates are whole nm).
    pub fn grid_nm(&self) -> i64 {
        self.grid_nm
    }

    /// Metres → whole nanometres (halves to even, as Python's `round`).
    pub fn nm(metres: f64) -> i64 {
        (metres * 1e9).round_ties_even() as i64
    }

    /// To the nearest grid point (halves to even, as Python's `round`).
    pub fn snap(&self, nm: f64) -> i64 {
        (nm / self.grid_nm as f64).round_ties_even() as i64 * self.grid_nm
    }

    pub fn snap_up(&self, nm: f64) -> i64 {
        (nm / self.grid_nm as f64 - 1e-9).ceil() as i64 * self.grid_nm
    }

    pub fn snap_down(&self, nm: f64) -> i64 {
        (nm / self.grid_nm as f64 + 1e-9).floor() as i64 * self.grid_nm
    }

    /// The layer with this role.
    pub fn layer_for(&self, role: &str) -> Option<&'a LayerDef> {
        self.rules.layer_for_role(role)
    }

    /// The roles a layer or derived layer stands for.
    fn roles_of(&self, name: &str, depth: usize) -> BTreeSet<&'a str> {
        if let Some(layer) = self.layers.get(name) {
            return layer.role.as_deref().into_iter().collect();
        }
        // Derived layers form no cycle (refused when the rule set loads); the depth only
        // bounds a pathological chain.
        let Some(derived) = self.derived.get(name).filter(|_| depth < 64) else {
            return BTreeSet::new();
        };
        let mut roles = self.roles_of(&derived.a, depth + 1);
        if derived.op != DerivedOp::Not {
            roles.extend(self.roles_of(&derived.b, depth + 1));
        }
        roles
    }

    /// Whether a layer or derived layer can hold shapes in `context`.
    fn can_exist(&self, name: &str, context: Context, depth: usize) -> bool {
        if let Some(layer) = self.layers.get(name) {
            return match (&layer.role, context) {
                (None, _) => false,
                (Some(role), Context::Default) => !EXOTIC_ROLES.contains(&role.as_str()),
                (Some(role), Context::Roles(roles)) => roles.contains(&role.as_str()),
            };
        }
        let Some(derived) = self.derived.get(name).filter(|_| depth < 64) else {
            return false;
        };
        let a = self.can_exist(&derived.a, context, depth + 1);
        match derived.op {
            DerivedOp::And => a && self.can_exist(&derived.b, context, depth + 1),
            DerivedOp::Or => a || self.can_exist(&derived.b, context, depth + 1),
            DerivedOp::Not => a,
        }
    }

    /// Rules of `rule_type` on `role` (and `role2`) that apply in `context`.
    pub fn rules_for(
        &self,
        rule_type: RuleType,
        role: &str,
        role2: Option<&str>,
        context: Context,
    ) -> Vec<&'a DrcRule> {
        let rules: &'a [DrcRule] = &self.rules.rules;
        rules
            .iter()
            .filter(|rule| rule.rule_type == rule_type)
            .filter(|rule| {
                self.can_exist(&rule.layer, context, 0)
                    && rule
                        .layer2
                        .as_deref()
                        .is_none_or(|layer2| self.can_exist(layer2, context, 0))
            })
            .filter(|rule| {
                let first = self.roles_of(&rule.layer, 0);
                let second = rule
                    .layer2
                    .as_deref()
                    .map(|layer2| self.roles_of(layer2, 0));
                match (role2, second) {
                    (None, None) => first.contains(role),
                    (None, Some(_)) | (Some(_), None) => false,
                    (Some(role2), Some(second)) => {
                        (first.contains(role) && second.contains(role2))
                            || (matches!(rule_type, RuleType::Spacing | RuleType::Overlap)
                                && first.contains(role2)
                                && second.contains(role))
                    }
                }
            })
            .collect()
    }

    /// The largest `min` of the matching rules (wide-metal spacings aside), snapped up to
    /// the grid, with the rule it comes from.
    pub fn minimum(
        &self,
        rule_type: RuleType,
        role: &str,
        role2: Option<&str>,
        context: Context,
    ) -> Option<Minimum<'a>> {
        self.rules_for(rule_type, role, role2, context)
            .into_iter()
            .filter(|rule| rule.width_over.is_none())
            .filter_map(|rule| Some((Self::nm(rule.min?), rule)))
            // the largest; of equal ones the first written
            .fold(
                None,
                |best: Option<(i64, &DrcRule)>, (nm, rule)| match best {
                    Some((largest, _)) if largest >= nm => best,
                    _ => Some((nm, rule)),
                },
            )
            .map(|(nm, rule)| Minimum {
                nm: self.snap_up(nm as f64),
                rule,
            })
    }

    /// The minimum as a number (0 when no rule), as the generators use it.
    pub fn min_nm(
        &self,
        rule_type: RuleType,
        role: &str,
        role2: Option<&str>,
        context: Context,
    ) -> i64 {
        self.minimum(rule_type, role, role2, context)
            .map_or(0, |minimum| minimum.nm)
    }

    /// The minimum width of `role` (0 when no rule).
    pub fn width(&self, role: &str, context: Context) -> i64 {
        self.min_nm(RuleType::Width, role, None, context)
    }

    /// How far `outer` must cover `inner`: enclosure or extension, the larger.
    pub fn cover(&self, outer: &str, inner: &str) -> i64 {
        let enclosure = self.min_nm(RuleType::Enclosure, outer, Some(inner), Context::Default);
        let extension = self.min_nm(RuleType::Extension, outer, Some(inner), Context::Default);
        enclosure.max(extension)
    }

    /// The size of a square cut (`tech.cut_size`): `min == max` of its width rule, else
    /// its minimum width, else the width of the layers it connects, else one grid step.
    pub fn cut_size(&self, role: &str) -> i64 {
        let low = self.width(role, Context::Default);
        let high = self
            .rules_for(RuleType::Width, role, None, Context::Default)
            .into_iter()
            .filter_map(|rule| rule.max)
            .map(Self::nm)
            .min()
            .map(|nm| self.snap_down(nm as f64));
        match high {
            Some(high) if high >= low => {
                if low == 0 {
                    high
                } else {
                    low
                }
            }
            _ if low > 0 => low,
            _ => self
                .grid_nm
                .max(self.width("metal1", Context::Default))
                .max(self.width("poly", Context::Default)),
        }
    }

    /// The lowest maximum density of `role`, when a rule sets one.
    pub fn max_density(&self, role: &str) -> Option<f64> {
        self.rules_for(RuleType::Density, role, None, Context::Default)
            .into_iter()
            .filter_map(|rule| rule.max)
            .min_by(f64::total_cmp)
    }
}

/// The smallest whole number of nanometres that is a multiple of the grid (`tech.grid_in_dbu`).
fn grid_in_nm(grid_m: f64) -> i64 {
    let grid = grid_m * 1e9;
    for multiple in 1..=1000 {
        let value = multiple as f64 * grid;
        if (value - value.round()).abs() < 1e-6 * value.max(1.0) {
            return (value.round() as i64).max(1);
        }
    }
    (grid.ceil() as i64).max(1)
}

/// Nanometres as micrometres for messages (`0.15`, `1.2`).
pub fn micrometres(nm: i64) -> String {
    let text = format!("{:.3}", nm as f64 / 1000.0);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_in_whole_nanometres() {
        assert_eq!(grid_in_nm(5e-9), 5);
        assert_eq!(grid_in_nm(2.5e-9), 5);
        assert_eq!(grid_in_nm(1e-9), 1);
        assert_eq!(grid_in_nm(1e-8), 10);
    }

    #[test]
    fn micrometre_text() {
        assert_eq!(micrometres(150), "0.15");
        assert_eq!(micrometres(1200), "1.2");
        assert_eq!(micrometres(20), "0.02");
        assert_eq!(micrometres(5000), "5");
    }
}
