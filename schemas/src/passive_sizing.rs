//! Resistors and capacitors given by their value only (`R1 a b 10k`, `C1 a b 1p`) sized
//! from the rule set, as the generators draw them (`worker/skills/centroid_skills/
//! passives.py`):
//!
//! - a resistor is a poly bar between two contact heads: width the narrowest its width
//!   rules allow where a resistor is drawn (poly and the resistor-body marker), length
//!   `R · w / R□` on the grid, `R□` the sheet resistance of the resistor-body layer
//!   (`poly_res` role, else `poly`: the layers' `sheet_resistance`, else the 1.4.0
//!   `parasitics` section's poly coefficient). A width given on the line is kept; a
//!   length alone gives the width;
//! - a capacitor is a metal-1 plate under a metal-2 plate: area `C / C□`, `C□` the
//!   capacitance per area between the two plates (the `parasitics` overlap of the metal-2
//!   layer over the metal-1 layer, else the metal-2 or metal-1 layer's
//!   `area_capacitance`, as the generator reports it). Where a maximum-density rule makes
//!   the generator draw both plates as combs of stripes, the plate grows by the stripes'
//!   share so that the drawn value is the one asked for. The plate is square unless a
//!   side is given.
//!
//! What the rule set lacks to size a device is named in the error.

use crate::drc_rules::{DrcRuleSet, RuleType};
use crate::netlist::{MAX_LENGTH_M, MAX_RESISTOR_LENGTH_M};
use crate::rule_lookup::{Context, RESISTOR_CONTEXT, RuleLookup, micrometres};

/// Sizes (m) a value asks for, or why the rule set cannot tell them.
pub type Sized = Result<(f64, f64), String>;

/// aF/µm² → F/m².
const AF_PER_UM2: f64 = 1e-6;

fn metres(nm: i64) -> f64 {
    nm as f64 * 1e-9
}

/// The sheet resistance (Ω/□) of the resistor body and where it was found.
fn sheet_resistance(rules: &DrcRuleSet) -> Option<(f64, String)> {
    let layers = [
        rules.layer_for_role("poly_res"),
        rules.layer_for_role("poly"),
    ];
    if let Some((layer, ohms)) = layers
        .into_iter()
        .flatten()
        .find_map(|layer| Some((layer, layer.sheet_resistance.filter(|ohms| *ohms > 0.0)?)))
    {
        return Some((ohms, format!("layer \"{}\"", layer.name)));
    }
    let poly = rules.layer_for_role("poly")?;
    let coefficient = rules.parasitics.as_ref()?.layers.get(&poly.name)?;
    (coefficient.sheet_resistance_ohm > 0.0).then(|| {
        (
            coefficient.sheet_resistance_ohm,
            format!("parasitics of layer \"{}\"", poly.name),
        )
    })
}

/// The bar of a resistor of `ohms`, keeping a width or length given on the line.
pub fn size_resistor(
    rules: &DrcRuleSet,
    ohms: f64,
    given_w: Option<f64>,
    given_l: Option<f64>,
) -> Sized {
    let lookup = RuleLookup::new(rules);
    let Some((sheet, source)) = sheet_resistance(rules) else {
        let marker = rules
            .layer_for_role("poly_res")
            .or_else(|| rules.layer_for_role("poly"))
            .map_or_else(
                || "the poly layer".to_owned(),
                |layer| format!("layer \"{}\"", layer.name),
            );
        return Err(format!(
            "sizing it from its value needs the sheet resistance of the resistor body: give \"sheet_resistance\" (Ω/□) on {marker} of the rule set, or w= and l= on the line"
        ));
    };
    let context = Context::Roles(RESISTOR_CONTEXT);
    let min_width = lookup
        .width("poly", context)
        .max(if lookup.layer_for("poly_res").is_some() {
            lookup.width("poly_res", context)
        } else {
            0
        });
    let (w_nm, l_nm) = match (given_w, given_l) {
        (Some(w), _) => {
            let w_nm = lookup.snap(RuleLookup::nm(w) as f64);
            (w_nm, lookup.snap(ohms * w_nm as f64 / sheet))
        }
        (None, Some(l)) => {
            let l_nm = lookup.snap(RuleLookup::nm(l) as f64);
            (lookup.snap(l_nm as f64 * sheet / ohms), l_nm)
        }
        (None, None) if min_width == 0 => {
            return Err(
                "sizing it from its value needs the narrowest resistor bar: the rule set has no width rule on the poly layer; give w= and l= on the line".to_owned(),
            );
        }
        (None, None) => (min_width, lookup.snap(ohms * min_width as f64 / sheet)),
    };
    let (w_nm, l_nm) = (w_nm.max(lookup.grid_nm()), l_nm.max(lookup.grid_nm()));
    if metres(l_nm) > MAX_RESISTOR_LENGTH_M || metres(w_nm) > MAX_LENGTH_M {
        return Err(format!(
            "at {sheet} Ω/□ ({source}) a bar {} µm wide is {} µm long, more than the 1 cm a resistor may measure; give w= and l= on the line, or split it into resistors in series",
            micrometres(w_nm),
            micrometres(l_nm)
        ));
    }
    Ok((metres(w_nm), metres(l_nm)))
}

/// The capacitance per area (F/m²) between the plates and where it was found.
fn plate_capacitance(rules: &DrcRuleSet) -> Option<(f64, String)> {
    let bottom = rules.layer_for_role("metal1")?;
    let top = rules.layer_for_role("metal2")?;
    if let Some(overlap) = rules.parasitics.as_ref().and_then(|parasitics| {
        parasitics.overlaps.iter().find(|overlap| {
            (overlap.layer == top.name && overlap.layer2 == bottom.name)
                || (overlap.layer == bottom.name && overlap.layer2 == top.name)
        })
    }) && overlap.area_cap_af_um2 > 0.0
    {
        return Some((
            overlap.area_cap_af_um2 * AF_PER_UM2,
            format!(
                "the parasitics overlap of \"{}\" over \"{}\"",
                top.name, bottom.name
            ),
        ));
    }
    [top, bottom].into_iter().find_map(|layer| {
        let farads = layer.area_capacitance.filter(|value| *value > 0.0)?;
        Some((farads, format!("layer \"{}\"", layer.name)))
    })
}

/// The stripes a maximum-density rule makes of the plates (`passives._draw_capacitor_once`):
/// (stripe width, gap) in nm, or None for a full plate.
fn stripes(lookup: &RuleLookup<'_>, metal_width: i64) -> Option<(i64, i64)> {
    let density = [lookup.max_density("metal1"), lookup.max_density("metal2")]
        .into_iter()
        .flatten()
        .min_by(f64::total_cmp)?;
    if density >= 1.0 {
        return None;
    }
    let spacing = |role: &str| {
        lookup
            .min_nm(RuleType::Spacing, role, None, Context::Default)
            .max(lookup.grid_nm())
    };
    let space = spacing("metal1").max(spacing("metal2"));
    let target = 0.8 * density;
    let stripe = lookup
        .snap_down(space as f64 * target / (1.0 - target))
        .max(lookup.snap_up(metal_width as f64));
    let gap = lookup
        .snap_up(stripe as f64 * (1.0 - target) / target)
        .max(space);
    Some((stripe, gap))
}

/// The plates of a capacitor of `farads`, keeping a side given on the line.
pub fn size_capacitor(
    rules: &DrcRuleSet,
    farads: f64,
    given_w: Option<f64>,
    given_l: Option<f64>,
) -> Sized {
    let lookup = RuleLookup::new(rules);
    let Some((per_area, _)) = plate_capacitance(rules) else {
        let names = |role: &str| {
            rules
                .layer_for_role(role)
                .map_or_else(|| role.to_owned(), |layer| format!("\"{}\"", layer.name))
        };
        return Err(format!(
            "sizing it from its value needs the capacitance per area between the plates ({} over {}): give a \"parasitics\" overlap of the two layers (rule set 1.4.0) or \"area_capacitance\" (F/m²) on {}, or w= and l= on the line",
            names("metal2"),
            names("metal1"),
            names("metal2")
        ));
    };
    let metal_width = crate::device_sizes::plate_metal_width(&lookup);
    let area_nm2 = farads / per_area * 1e18;
    let stripes = stripes(&lookup, metal_width);
    // The drawn plate area of a plate w nm wide and l long.
    let drawn = |w: i64| -> f64 {
        match stripes {
            None => w as f64,
            Some((stripe, gap)) => (((w + gap) / (stripe + gap)).max(1) * stripe) as f64,
        }
    };
    let square_side = |share: f64| lookup.snap_up((area_nm2 / share).sqrt()).max(metal_width);
    let (w_nm, l_nm) = match (given_w, given_l) {
        (Some(w), _) => {
            let w_nm = lookup.snap(RuleLookup::nm(w) as f64);
            (w_nm, lookup.snap_up(area_nm2 / drawn(w_nm)))
        }
        (None, Some(l)) => {
            let l_nm = lookup.snap(RuleLookup::nm(l) as f64);
            if l_nm <= 0 {
                return Err(format!(
                    "l = {l} m is shorter than the grid ({} nm): give a plate length of at least one grid step, or w= instead",
                    lookup.grid_nm()
                ));
            }
            let least = area_nm2 / l_nm as f64;
            if least > MAX_LENGTH_M * 1e9 {
                return Err(format!(
                    "with l = {l} m the plate would be {:.3e} m wide: give a longer l, or w= instead",
                    least * 1e-9
                ));
            }
            let w_nm = lookup.snap_up(least).max(metal_width);
            // the narrowest plate at least w_nm wide whose stripes hold the area: n stripes
            // of a plate n·(stripe + gap) − gap wide (computed, not stepped: a tiny l would
            // step for ever)
            let w_nm = match stripes {
                None => w_nm,
                Some((stripe, gap)) => {
                    let holds = |n: f64| n * stripe as f64 * l_nm as f64 >= area_nm2;
                    let mut count = (area_nm2 / (stripe as f64 * l_nm as f64)).ceil().max(1.0);
                    while !holds(count) {
                        count += 1.0;
                    }
                    while count > 1.0 && holds(count - 1.0) {
                        count -= 1.0;
                    }
                    let wide = count * (stripe + gap) as f64 - gap as f64;
                    if wide > MAX_LENGTH_M * 1e9 {
                        return Err(format!(
                            "with l = {l} m the plate would be {:.3e} m wide: give a longer l, or w= instead",
                            wide * 1e-9
                        ));
                    }
                    w_nm.max(wide as i64)
                }
            };
            (w_nm, l_nm)
        }
        (None, None) => {
            let share = stripes.map_or(1.0, |(stripe, gap)| stripe as f64 / (stripe + gap) as f64);
            let w_nm = match stripes {
                // whole stripes: w = n·(stripe + gap) − gap
                Some((stripe, gap)) => {
                    let count = ((square_side(share) + gap) as f64 / (stripe + gap) as f64)
                        .ceil()
                        .max(1.0) as i64;
                    count * (stripe + gap) - gap
                }
                None => square_side(1.0),
            };
            (w_nm, lookup.snap_up(area_nm2 / drawn(w_nm)))
        }
    };
    let l_nm = l_nm.max(metal_width);
    if metres(l_nm) > MAX_LENGTH_M || metres(w_nm) > MAX_LENGTH_M {
        return Err(format!(
            "its plates would measure {} × {} µm, more than the 1 mm a device may measure; give w= and l= on the line, or split it into capacitors in parallel",
            micrometres(w_nm),
            micrometres(l_nm)
        ));
    }
    Ok((metres(w_nm), metres(l_nm)))
}
