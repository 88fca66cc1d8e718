//! A PDK finger (MOM) capacitor's line — `cfmom_2t nr=210 lr=13u w=70n s=70n stm=3 spm=6` —
//! read as the capacitance its comb would have (`crate::mom_capacitance`), so that it is
//! drawn as the plate capacitor of that value, said in a warning; an error names what
//! the line or the rule set lacks.

use crate::issue::TextLocation;
use crate::mom_capacitance::{Fingers, finger_capacitance};
use crate::spice::build::Builder;
use crate::spice::error::SpiceError;
use crate::spice::parser::Element;
use crate::spice::sizes::engineering;

/// A finger capacitor's parameters Centroid reads (`ftip`, the fingers' tip gap, is
/// read and left aside).
pub(super) const FINGER_KEYS: [&str; 6] = ["nr", "lr", "s", "stm", "spm", "ftip"];

/// The finger parameters written on one capacitor line.
#[derive(Default)]
pub(super) struct FingerParams {
    /// where `nr` is written (`count`: its value, `None` when it could not be read)
    pub at: Option<TextLocation>,
    pub count: Option<f64>,
    pub length: Option<f64>,
    pub spacing: Option<f64>,
    pub lowest: Option<f64>,
    pub highest: Option<f64>,
}

impl FingerParams {
    /// Notes `key` (one of [`FINGER_KEYS`]) = `number` (`None`: not readable), at `at`.
    pub(super) fn note(&mut self, key: &str, number: Option<f64>, at: TextLocation) {
        match key {
            "nr" => {
                self.at = Some(at);
                self.count = number;
            }
            "lr" => self.length = number,
            "s" => self.spacing = number,
            "stm" => self.lowest = number,
            "spm" => self.highest = number,
            _ => {}
        }
    }
}

impl Builder<'_, '_> {
    /// The capacitance (F) of a finger capacitor's line and where its `nr` is, with a
    /// warning saying how it will be drawn; `None` after an error (or when `nr` could not
    /// be read, which was reported then). The lengths written are scaled by the
    /// reading's scale (`.option scale`).
    pub(super) fn finger_capacitor(
        &mut self,
        element: &Element,
        params: &FingerParams,
    ) -> Option<(f64, TextLocation)> {
        let scale = self.scale;
        let at = params.at?;
        // an unreadable nr was reported where it was read
        let count = params.count?;
        let fingers = count.to_string();
        let refuse = |why: String| SpiceError::FingerCapacitor {
            element: element.name.text.clone(),
            fingers: fingers.clone(),
            why,
        };
        let Some(rules) = self.rules else {
            let why = "its value derives from the rule set, which did not load".to_owned();
            self.problems.error(element.name.at, refuse(why));
            return None;
        };
        let metal = |value: Option<f64>, default: u32| {
            value.map_or(default, |number| number.round().max(1.0) as u32)
        };
        let lowest = metal(params.lowest, 1);
        let geometry = Fingers {
            count,
            length: params.length.map_or(0.0, |length| length * scale),
            spacing: params.spacing.map(|spacing| spacing * scale),
            metals: (lowest, metal(params.highest, lowest)),
        };
        match finger_capacitance(rules, geometry) {
            Ok((farads, metals)) => {
                let warning = SpiceError::FingerCapacitorValue {
                    element: element.name.text.clone(),
                    fingers,
                    value: engineering(farads, "F"),
                    metals,
                };
                self.problems.warning(at, warning);
                Some((farads, at))
            }
            Err(why) => {
                self.problems.error(element.name.at, refuse(why));
                None
            }
        }
    }
}
