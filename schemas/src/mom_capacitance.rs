//! A finger (MOM) capacitor's value from its fingers and the rule set's lateral coupling.
//!
//! PDK finger capacitors (`cfmom_2t nr=210 lr=13u w=70n s=70n stm=3 spm=6`) are combs of
//! `nr` fingers `lr` long on the metals `stm` to `spm`. Centroid draws no comb; it reads the
//! capacitance the comb would have and draws that value as the plate capacitor
//! (`crate::passive_sizing`): between two neighbouring fingers of one metal, the rule set's
//! same-layer coupling of that metal (`parasitics.layers.<metal>.coupling_af_um`, aF/µm at
//! `coupling_spacing_m`, scaled to the spacing `s` as `(spacing + offset) / (s + offset)`),
//! over `nr − 1` gaps of `lr`, on every metal of the range the rule set has. A spacing
//! below a metal's coupling reference (a finer process's comb) is taken at that reference.
//! Coupling between the metals of the stack and to the substrate is left out: the value is
//! a lower bound, said in the warning.

use crate::drc_rules::DrcRuleSet;

/// A finger capacitor's geometry as written: fingers, finger length and spacing (m), the
/// lowest and highest metal (1 = the rule set's `metal1`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fingers {
    pub count: f64,
    pub length: f64,
    pub spacing: Option<f64>,
    pub metals: (u32, u32),
}

/// The capacitance (F) and the metals it was counted on, or why the rule set cannot tell.
pub fn finger_capacitance(rules: &DrcRuleSet, fingers: Fingers) -> Result<(f64, String), String> {
    let Fingers {
        count,
        length,
        spacing,
        metals: (lowest, highest),
    } = fingers;
    if count < 2.0 || count.fract() != 0.0 {
        return Err(format!(
            "nr={count}: a finger capacitor has a whole number of fingers, at least 2"
        ));
    }
    if length.is_nan() || length <= 0.0 {
        return Err(
            "a finger capacitor needs its finger length, a positive lr=…, e.g. lr=10u".to_owned(),
        );
    }
    let (lowest, highest) = (lowest.min(highest).max(1), highest.max(lowest));
    let parasitics = rules.parasitics.as_ref();
    let mut per_um_af = 0.0;
    let mut counted = Vec::new();
    let mut missing = Vec::new();
    for metal in lowest..=highest {
        let Some(layer) = rules.layer_for_role(&format!("metal{metal}")) else {
            continue; // the process has fewer metals: the comb stops at its top metal
        };
        let coupling = parasitics
            .and_then(|parasitics| parasitics.layers.get(&layer.name))
            .and_then(|coefficients| {
                let value = coefficients.coupling_af_um.filter(|value| *value > 0.0)?;
                let reference = coefficients.coupling_spacing_m.filter(|s| *s > 0.0)?;
                let offset = coefficients.coupling_offset_m.unwrap_or(0.0).max(0.0);
                let s = spacing.unwrap_or(reference).max(reference);
                Some(value * (reference + offset) / (s + offset))
            });
        match coupling {
            Some(af_um) => {
                per_um_af += af_um;
                counted.push(layer.name.clone());
            }
            None => missing.push(layer.name.clone()),
        }
    }
    if !missing.is_empty() || counted.is_empty() {
        let names = if missing.is_empty() {
            format!("metal{lowest} to metal{highest}")
        } else {
            missing.join(", ")
        };
        return Err(format!(
            "reading its value from its fingers needs the rule set's same-layer coupling of {names} (parasitics.layers.<layer>.coupling_af_um and coupling_spacing_m, rule set 1.4.0); or give its capacitance c=…"
        ));
    }
    let farads = per_um_af * 1e-18 * (count - 1.0) * length * 1e6;
    Ok((farads, counted.join(", ")))
}
