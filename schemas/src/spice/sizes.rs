//! The sizes of one device line: `w`, `l` (× `.option scale`), `nf`, the multiplicity
//! (`m`, else `mult`, else `multi`: [`Multipliers`]; Spectre/PDK `mf` when none of them is
//! given; × a resistor's `para`) and an R or C
//! value. PDK resistor cells' names are read too: `lr`/`wr` are the bar's `l`/`w`,
//! `series=N` segments in series are one bar N times as long, `para=N` segments in
//! parallel are N units; a capacitor with `nr` fingers (a MOM capacitor) is read as the
//! value of its comb (`finger_capacitors.rs`). A resistor or capacitor given by its value without `w` and `l` is sized from the
//! rule set (`crate::passive_sizing`), with a warning saying how it will be drawn; an
//! error names what the rule set lacks to size it.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::circuit::DeviceType;
use crate::issue::TextLocation;
use crate::passive_sizing::{size_capacitor, size_resistor};
use crate::rule_lookup::{RuleLookup, micrometres};
use crate::spice::build::Builder;
use crate::spice::error::SpiceError;
use crate::spice::finger_capacitors::{FINGER_KEYS, FingerParams};
use crate::spice::instances::{MULTIPLIERS, Multipliers};
use crate::spice::model_widths::width_in_model_name;
use crate::spice::parser::Element;
use crate::spice::scope::Scope;

/// Device parameters Centroid does not use but netlists routinely carry (extraction
/// areas and perimeters, stress distances, temperature): ignored without a word.
const QUIETLY_IGNORED: [&str; 20] = [
    "ad", "as", "pd", "ps", "nrd", "nrs", "sa", "sb", "sd", "sca", "scb", "scc", "geo", "sub",
    "temp", "dtemp", "tc1", "tc2", "delvto", "mulu0",
];

/// What the parameters of one line said.
#[derive(Default)]
struct Read {
    sound: bool,
    /// w, l, nf: the value and where it was written.
    fields: HashMap<&'static str, (f64, TextLocation)>,
    /// w and l written on the line, readable or not.
    written: HashSet<&'static str>,
    multipliers: Multipliers,
    /// a resistor's `para=N`: N segments in parallel
    para: Option<(f64, TextLocation)>,
    mf: Option<(f64, TextLocation)>,
    value: Option<(f64, TextLocation)>,
    nfin: Option<String>,
    /// a resistor's `series=N`: N segments in series
    series: Option<(f64, TextLocation)>,
    /// a capacitor's `nr=…`, `lr=…`, …: a finger (MOM) capacitor
    fingers: FingerParams,
}

/// A PDK cell's name for a size Centroid reads under another: a resistor's `lr`/`wr`, a
/// transistor's `ng`.
fn canonical_key(device_type: DeviceType, key: &str) -> &str {
    match (device_type, key) {
        (DeviceType::Resistor, "lr") => "l",
        (DeviceType::Resistor, "wr") => "w",
        // IHP SG13G2's transistors count their gate fingers as `ng` (w is the total width)
        (DeviceType::Nmos | DeviceType::Pmos, "ng") => "nf",
        _ => key,
    }
}

impl Builder<'_, '_> {
    /// w, l, nf, m and an R or C value into `device`; false when one is missing or bad.
    pub(super) fn sizes(
        &mut self,
        element: &Element,
        device_type: DeviceType,
        scope: &Scope<'_>,
        pointer: &str,
        device: &mut Map<String, Value>,
    ) -> bool {
        let mut read = self.read_params(element, device_type, scope);
        self.width_from_model_name(element, device_type, &mut read);
        self.series_segments(element, &mut read);
        if read.fingers.at.is_some() && read.value.is_none() {
            // its w is a finger's: the plates of its value are sized from the rule set
            let Some(value) = self.finger_capacitor(element, &read.fingers) else {
                return false;
            };
            read.value = Some(value);
            for field in ["w", "l"] {
                read.fields.remove(field);
                read.written.remove(field);
            }
        }
        if let Some((value, at)) = read.value
            && !device_type.is_mos()
            && value <= 0.0
        {
            // an extraction's parasitic (magic writes negative coupling capacitors), not a part
            let (quantity, unit) = match device_type {
                DeviceType::Resistor => ("resistance", "Ω"),
                _ => ("capacitance", "F"),
            };
            let error = SpiceError::NoPart {
                element: element.name.text.clone(),
                value: if value == 0.0 {
                    format!("0 {unit}")
                } else {
                    engineering(value, unit)
                },
                quantity,
            };
            self.problems.error(at, error);
            return false;
        }
        if let Some((value, at)) = read.value {
            device.insert("value".to_owned(), json!(tidy(value)));
            self.locations.insert(format!("{pointer}/value"), at);
        }
        for (at, warning) in read.multipliers.not_counted(&element.name.text) {
            self.problems.warning(at, warning);
        }
        let multiplicity = match (read.multipliers.count().or(read.mf), read.para) {
            (Some((m, at)), Some((para, _))) => Some((m * para, at)),
            (counted, para) => counted.or(para),
        };
        if let Some((m, at)) = multiplicity {
            device.insert("m".to_owned(), whole_or_float(m));
            self.locations.insert(format!("{pointer}/m"), at);
        }
        let given = |field: &str| read.fields.get(field).map(|(value, _)| *value);
        let passive = !device_type.is_mos();
        if passive
            && (!read.written.contains("w") || !read.written.contains("l"))
            && read.sound
            && let Some((value, _)) = read.value
        {
            self.size_passive(
                element,
                device_type,
                value,
                (given("w"), given("l")),
                &mut read,
            );
        }
        if device_type.is_mos() {
            self.fold_wide_device(element, &mut read.fields);
        }
        for field in ["w", "l", "nf"] {
            if let Some((value, at)) = read.fields.get(field) {
                device.insert(field.to_owned(), whole_or_float(*value));
                self.locations.insert(format!("{pointer}/{field}"), *at);
            }
        }
        let mut sound = read.sound;
        for (field, meaning, example) in size_fields(device_type) {
            // (a value was sized from the rule set, or why not was said)
            let sized = passive && read.value.is_some();
            if read.fields.contains_key(field) || read.written.contains(field) || sized {
                continue;
            }
            let error = match (&read.nfin, field) {
                (Some(nfin), "w") => SpiceError::FinCount {
                    element: element.name.text.clone(),
                    nfin: nfin.clone(),
                },
                _ => SpiceError::MissingSize {
                    element: element.name.text.clone(),
                    field,
                    meaning,
                    example: example.to_owned(),
                },
            };
            self.problems.error(element.name.at, error);
            sound = false;
        }
        sound
    }

    fn read_params(
        &mut self,
        element: &Element,
        device_type: DeviceType,
        scope: &Scope<'_>,
    ) -> Read {
        let mut read = Read {
            sound: true,
            ..Read::default()
        };
        let value_keys: &[&str] = match device_type {
            DeviceType::Resistor => &["r", "resistance", "value"],
            DeviceType::Capacitor => &["c", "capacitance", "value"],
            _ => &[],
        };
        if let Some(value) = &element.value
            && let Some(number) = self.number(scope, value, "the value")
        {
            read.value = Some((number, value.at));
        }
        for param in &element.params {
            let key = canonical_key(device_type, &param.name.key()).to_owned();
            let pdk_key = match device_type {
                DeviceType::Resistor => matches!(key.as_str(), "series" | "para"),
                DeviceType::Capacitor => FINGER_KEYS.contains(&key.as_str()),
                _ => false,
            };
            let known = matches!(key.as_str(), "w" | "l" | "nf" | "mf" | "nfin")
                || pdk_key
                || MULTIPLIERS.contains(&key.as_str())
                || value_keys.contains(&key.as_str());
            if !known {
                if !QUIETLY_IGNORED.contains(&key.as_str()) {
                    let known = match device_type {
                        DeviceType::Nmos | DeviceType::Pmos => "w, l, nf and m",
                        DeviceType::Resistor => "w (wr), l (lr), m, series, para and the value",
                        DeviceType::Capacitor => "w, l, m and the value",
                    };
                    self.problems.warning(
                        param.name.at,
                        SpiceError::IgnoredParam {
                            name: param.name.text.clone(),
                            element: element.name.text.clone(),
                            known,
                        },
                    );
                }
                continue;
            }
            match key.as_str() {
                "w" => read.written.insert("w"),
                "l" => read.written.insert("l"),
                _ => false,
            };
            let Some(value) = &param.value else {
                read.sound = false;
                continue;
            };
            if device_type == DeviceType::Capacitor && FINGER_KEYS.contains(&key.as_str()) {
                let number = self.number(scope, value, &param.name.text);
                read.fingers.note(&key, number, value.at);
                continue;
            }
            if key == "nfin" {
                read.nfin = Some(
                    self.number(scope, value, &param.name.text)
                        .map_or_else(|| "…".to_owned(), |nfin| nfin.to_string()),
                );
                continue;
            }
            let Some(number) = self.number(scope, value, &param.name.text) else {
                read.sound = false;
                continue;
            };
            if matches!(key.as_str(), "w" | "l") {
                self.lengths.push((number, value.at));
            }
            match key.as_str() {
                "w" => read.fields.insert("w", (number * self.scale, value.at)),
                "l" => read.fields.insert("l", (number * self.scale, value.at)),
                "nf" => read.fields.insert("nf", (number, value.at)),
                "mf" => read.mf.replace((number, value.at)),
                "series" => read.series.replace((number, value.at)),
                "para" => read.para.replace((number, value.at)),
                key if MULTIPLIERS.contains(&key) => {
                    read.multipliers.note(key, number, value.at);
                    None
                }
                _ => read.value.replace((number, value.at)),
            };
        }
        read
    }

    /// A resistor without `w` or a value whose cell's name says its width (SKY130's
    /// fixed-width poly resistors): that width, said in a warning (once per cell name).
    fn width_from_model_name(
        &mut self,
        element: &Element,
        device_type: DeviceType,
        read: &mut Read,
    ) {
        if device_type != DeviceType::Resistor || read.written.contains("w") || read.value.is_some()
        {
            return;
        }
        let Some(model) = &element.target else {
            return;
        };
        let Some(width) = width_in_model_name(&model.text) else {
            return;
        };
        read.fields.insert("w", (width, model.at));
        read.written.insert("w");
        if !self.widths_from_names.insert(model.key()) {
            return;
        }
        let warning = SpiceError::WidthFromModelName {
            element: element.name.text.clone(),
            model: model.text.clone(),
            width: format!("{} µm", micrometres((width * 1e9).round() as i64)),
        };
        self.problems.warning(model.at, warning);
    }

    /// A resistor's `series=N` segments (N ≥ 1, whole): one bar N times as long, said in
    /// a warning; anything else is an error.
    fn series_segments(&mut self, element: &Element, read: &mut Read) {
        let Some((segments, at)) = read.series else {
            return;
        };
        if segments < 1.0 || segments.fract() != 0.0 {
            let error = SpiceError::SeriesSegments {
                element: element.name.text.clone(),
                series: segments.to_string(),
            };
            self.problems.error(at, error);
            read.sound = false;
            return;
        }
        if segments == 1.0 {
            return;
        }
        if let Some((l, l_at)) = read.fields.get("l").copied() {
            let drawn = format!(
                "one bar {} µm long ({segments} × {} µm)",
                micrometres(RuleLookup::nm(l * segments)),
                micrometres(RuleLookup::nm(l))
            );
            let warning = SpiceError::SeriesDrawnAsOneBar {
                element: element.name.text.clone(),
                series: segments.to_string(),
                drawn,
            };
            self.problems.warning(at, warning);
            read.fields.insert("l", (l * segments, l_at));
        }
    }

    /// w and l of a resistor or capacitor from its value and the rule set.
    fn size_passive(
        &mut self,
        element: &Element,
        device_type: DeviceType,
        value: f64,
        (w, l): (Option<f64>, Option<f64>),
        read: &mut Read,
    ) {
        let (unit, drawn) = match device_type {
            DeviceType::Resistor => ("Ω", "a poly bar"),
            _ => ("F", "metal-1 and metal-2 plates"),
        };
        let value_text = engineering(value, unit);
        let sized = match self.rules {
            None => Err("its size derives from the rule set, which did not load".to_owned()),
            Some(rules) if device_type == DeviceType::Resistor => size_resistor(rules, value, w, l),
            Some(rules) => size_capacitor(rules, value, w, l),
        };
        match sized {
            Ok((w, l)) => {
                let how = "sized from the rule set";
                let drawn = format!(
                    "{drawn} {} × {} µm",
                    micrometres(RuleLookup::nm(w)),
                    micrometres(RuleLookup::nm(l))
                );
                let warning = SpiceError::PassiveSized {
                    element: element.name.text.clone(),
                    value: value_text,
                    drawn,
                    how,
                };
                self.problems.warning(element.name.at, warning);
                read.fields.insert("w", (w, element.name.at));
                read.fields.insert("l", (l, element.name.at));
            }
            Err(why) => {
                let error = SpiceError::PassiveUnsized {
                    element: element.name.text.clone(),
                    value: value_text,
                    why,
                };
                self.problems.error(element.name.at, error);
                read.sound = false;
            }
        }
    }
}

/// The sizes a device needs, what they mean, and an example.
fn size_fields(device_type: DeviceType) -> [(&'static str, &'static str, &'static str); 2] {
    match device_type {
        DeviceType::Nmos | DeviceType::Pmos => [
            (
                "w",
                "the total gate width of one instance, over its nf fingers",
                "w=4u",
            ),
            ("l", "the gate length", "l=500n"),
        ],
        DeviceType::Resistor => [
            (
                "w",
                "the drawn width of the resistor bar, or the resistance to size it from the rule set",
                "w=1u",
            ),
            ("l", "the drawn length of the resistor bar", "l=10u"),
        ],
        DeviceType::Capacitor => [
            (
                "w",
                "the drawn plate width, or the capacitance to size it from the rule set",
                "w=10u",
            ),
            ("l", "the drawn plate length", "l=10u"),
        ],
    }
}

/// `10 kΩ`, `60 fF`, `1.5 pF`.
pub(super) fn engineering(value: f64, unit: &str) -> String {
    const PREFIXES: [(f64, &str); 9] = [
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
        (1e-12, "p"),
    ];
    let magnitude = value.abs();
    let (scale, prefix) = PREFIXES
        .iter()
        .find(|(scale, _)| magnitude >= *scale * 0.999_999)
        .copied()
        .unwrap_or(if magnitude >= 1e-15 * 0.999_999 {
            (1e-15, "f")
        } else {
            (1e-18, "a")
        });
    let text = format!("{:.4}", value / scale);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} {prefix}{unit}")
}

/// Whole numbers as JSON integers (the schema wants integers for nf and m); others
/// rounded to 12 significant digits, so that 500n is 5e-7 and not 5.000000000000001e-7.
fn whole_or_float(number: f64) -> Value {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        return json!(number as i64);
    }
    json!(tidy(number))
}

fn tidy(number: f64) -> f64 {
    format!("{number:.11e}").parse().unwrap_or(number)
}

#[cfg(test)]
mod tests {
    use super::engineering;

    #[test]
    fn values_in_engineering_notation() {
        assert_eq!(engineering(10e3, "Ω"), "10 kΩ");
        assert_eq!(engineering(60e-15, "F"), "60 fF");
        assert_eq!(engineering(1.5e-12, "F"), "1.5 pF");
        assert_eq!(engineering(300e3, "Ω"), "300 kΩ");
        assert_eq!(engineering(400.0, "Ω"), "400 Ω");
    }
}
