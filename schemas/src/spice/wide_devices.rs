//! A transistor whose fingers would be wider than a finger may be (`w / nf` above
//! [`MAX_LENGTH_M`]) — a schematic's LDO pass device `w=8000u nf=1` — is folded into
//! fingers, as a layout engineer draws it: about as many fingers as the square root of
//! `w / l` (fingers about as wide as the row of them is long), at least enough for each to
//! be at most a millimetre, at most what one device cell holds. A warning says so; the
//! layout and LVS both take the folded count (the electrical device is the same width).

use std::collections::HashMap;

use crate::device_sizes::MAX_CELL_NF;
use crate::issue::TextLocation;
use crate::netlist::{MAX_LENGTH_M, MAX_MOS_WIDTH_M};
use crate::spice::build::Builder;
use crate::spice::error::SpiceError;
use crate::spice::parser::Element;

/// The fingers a MOS of total width `w` and gate length `l` is folded into, when its
/// `nf` fingers would each be wider than a finger may be; `None` when they are not, or
/// when no count would do (the checks report it).
pub(super) fn folded_fingers(w: f64, l: f64, nf: f64) -> Option<u32> {
    if !(w.is_finite() && l.is_finite() && l > 0.0 && nf >= 1.0)
        || w / nf <= MAX_LENGTH_M
        || w > MAX_MOS_WIDTH_M
    {
        return None;
    }
    let fewest = (w / MAX_LENGTH_M).ceil();
    let square = (w / l).sqrt().round();
    let folded = fewest.max(square).min(f64::from(MAX_CELL_NF));
    (folded >= fewest).then_some(folded as u32)
}

impl Builder<'_, '_> {
    /// Folds a MOS line's `nf` in `fields` (w, l, nf read) when its fingers are too wide.
    pub(super) fn fold_wide_device(
        &mut self,
        element: &Element,
        fields: &mut HashMap<&'static str, (f64, TextLocation)>,
    ) {
        let (Some(&(w, at)), Some(&(l, _))) = (fields.get("w"), fields.get("l")) else {
            return;
        };
        let nf = fields.get("nf").map_or(1.0, |(nf, _)| *nf);
        let Some(folded) = folded_fingers(w, l, nf) else {
            return;
        };
        fields.insert("nf", (f64::from(folded), at));
        let warning = SpiceError::FoldedIntoFingers {
            element: element.name.text.clone(),
            width: format!("{} µm", (w * 1e6 * 1000.0).round() / 1000.0),
            nf: nf.to_string(),
            folded,
            finger: format!(
                "{} µm",
                (w / f64::from(folded) * 1e6 * 1000.0).round() / 1000.0
            ),
        };
        self.problems.warning(at, warning);
    }
}

#[cfg(test)]
mod tests {
    use super::folded_fingers;

    #[test]
    fn a_wide_finger_is_folded_about_square_and_within_the_bounds() {
        // 8 mm over one finger, l = 0.5 µm: √16000 ≈ 126 fingers of 63.5 µm
        assert_eq!(folded_fingers(8e-3, 0.5e-6, 1.0), Some(126));
        // a long gate: at least enough fingers for each to be at most 1 mm
        assert_eq!(folded_fingers(8e-3, 1e-3, 1.0), Some(8));
        // fingers already narrow enough, or a width the checks refuse: untouched
        assert_eq!(folded_fingers(8e-3, 0.5e-6, 16.0), None);
        assert_eq!(folded_fingers(5e-4, 0.5e-6, 1.0), None);
        assert_eq!(folded_fingers(2e-2, 0.5e-6, 1.0), None);
        // never more than one cell holds
        assert_eq!(folded_fingers(9.9e-3, 1e-9, 1.0), Some(1024));
    }
}
