//! Model names → device types, in this order: the rule set's `models` table (schema 1.3.0),
//! the user's `--model-map FILE`, the netlist's own `.model NAME TYPE` cards, then the usual
//! names. An M line's model must come out nmos or pmos; an R or C line is a resistor or a
//! capacitor by its letter (a model that names another type is an error); an X line whose
//! subcircuit the netlist does not define is a device when its name maps (without the
//! one-letter guess, so that an undefined `nand2` is not taken for an nmos).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::circuit::DeviceType;
use crate::issue::InputErrors;
use crate::source::parse_json_document;

/// Model name (lower case) → device type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelMap {
    entries: BTreeMap<String, DeviceType>,
}

impl ModelMap {
    /// From pairs as written; names are case-insensitive, as in SPICE.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, DeviceType)>) -> Self {
        Self {
            entries: pairs
                .into_iter()
                .map(|(name, device_type)| (name.to_lowercase(), device_type))
                .collect(),
        }
    }

    /// Reads a `--model-map` file: a JSON object `{"model": "nmos" | "pmos" | "resistor" | "capacitor"}`.
    pub fn from_json(label: &str, bytes: &[u8]) -> Result<Self, InputErrors> {
        let document = parse_json_document(label, bytes)?;
        let mut issues = Vec::new();
        let mut entries = BTreeMap::new();
        for (name, value) in document.as_object().into_iter().flatten() {
            let pointer = crate::issue::pointer_join("", name);
            match value.as_str().and_then(device_type_named) {
                Some(device_type) => {
                    if let Some(previous) = entries.insert(name.to_lowercase(), device_type)
                        && previous != device_type
                    {
                        issues.push((pointer, format!("model \"{name}\" is mapped twice with different types (model names are case-insensitive)")));
                    }
                }
                None => issues.push((
                    pointer,
                    format!(
                        "expected \"nmos\", \"pmos\", \"resistor\" or \"capacitor\", found {}",
                        short(value)
                    ),
                )),
            }
        }
        if issues.is_empty() {
            return Ok(Self { entries });
        }
        Err(InputErrors {
            issues: issues
                .into_iter()
                .map(|(pointer, message)| crate::issue::InputIssue {
                    file: label.to_owned(),
                    pointer,
                    message,
                    location: None,
                })
                .collect(),
        })
    }

    pub fn get(&self, model: &str) -> Option<DeviceType> {
        self.entries.get(&model.to_lowercase()).copied()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 40 {
        text.chars().take(40).collect::<String>() + "…"
    } else {
        text
    }
}

pub fn device_type_named(name: &str) -> Option<DeviceType> {
    match name {
        "nmos" => Some(DeviceType::Nmos),
        "pmos" => Some(DeviceType::Pmos),
        "resistor" => Some(DeviceType::Resistor),
        "capacitor" => Some(DeviceType::Capacitor),
        _ => None,
    }
}

/// What kind of line names the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Usage {
    Mos,
    Resistor,
    Capacitor,
    /// An X line calling a subcircuit the netlist does not define.
    Instance,
}

/// The mapping sources of one conversion.
#[derive(Debug, Default)]
pub(crate) struct ModelResolver<'a> {
    pub rule_set: Option<&'a ModelMap>,
    pub user: Option<&'a ModelMap>,
    pub cards: ModelMap,
}

const HOW_TO_MAP: &str = "map it in the rule set (\"models\": {\"NAME\": \"nmos\"}, schema_version 1.3.0) or with --model-map FILE";

impl ModelResolver<'_> {
    /// The device type of `model` used on a line of kind `usage`, or why there is none.
    /// `Ok(None)` for an X line whose name does not look like a device (an unknown subcircuit).
    pub fn resolve(&self, model: Option<&str>, usage: Usage) -> Result<Option<DeviceType>, String> {
        let by_letter = match usage {
            Usage::Resistor => Some(DeviceType::Resistor),
            Usage::Capacitor => Some(DeviceType::Capacitor),
            Usage::Mos | Usage::Instance => None,
        };
        let Some(model) = model else {
            return Ok(by_letter);
        };
        let explicit = [
            (self.rule_set, "the rule set's models table"),
            (self.user, "--model-map"),
            (Some(&self.cards), "its .model card"),
        ];
        let found = explicit
            .into_iter()
            .find_map(|(map, source)| Some((map?.get(model)?, source)));
        let (device_type, source) = match found {
            Some(found) => found,
            None => match usual_name(model, usage == Usage::Mos) {
                Guess::Type(device_type) => (device_type, "its name"),
                Guess::Ambiguous(types) => {
                    if let Some(device_type) = by_letter {
                        return Ok(Some(device_type));
                    }
                    return Err(format!(
                        "ambiguous model \"{model}\": its name suggests both {} and {}; {}",
                        types[0].as_str(),
                        types[1].as_str(),
                        HOW_TO_MAP.replace("NAME", model)
                    ));
                }
                Guess::Unknown => {
                    return match usage {
                        Usage::Mos => Err(format!(
                            "unknown model \"{model}\": cannot tell nmos from pmos; {}",
                            HOW_TO_MAP.replace("NAME", model)
                        )),
                        Usage::Instance => Ok(None),
                        Usage::Resistor | Usage::Capacitor => Ok(by_letter),
                    };
                }
            },
        };
        let fits = match usage {
            Usage::Mos => device_type.is_mos(),
            Usage::Resistor | Usage::Capacitor => Some(device_type) == by_letter,
            Usage::Instance => true,
        };
        if fits {
            return Ok(Some(device_type));
        }
        if source == "its name" && by_letter.is_some() {
            // A name guess never overrides what the letter says for certain.
            return Ok(by_letter);
        }
        let line_kind = match usage {
            Usage::Mos => "a MOS (M) line",
            Usage::Resistor => "a resistor (R) line",
            Usage::Capacitor => "a capacitor (C) line",
            Usage::Instance => "an X line",
        };
        Err(format!(
            "model \"{model}\" is a {} by {source}, but this is {line_kind}",
            device_type.as_str()
        ))
    }
}

enum Guess {
    Type(DeviceType),
    Ambiguous([DeviceType; 2]),
    Unknown,
}

/// The usual names: `nmos`/`pmos`, `*nfet*`/`*pfet*`, `*nch*`/`*pch*` and `*nmos*`/`*pmos*`;
/// `res*`/`*_res*`, `r*poly*` and `*ppolyf*`/`*npolyf*` (PDK poly resistors such as
/// `rppolywo_m`, `ppolyf_u`), `*cap*`, `*mom*` and `*mim*`; with `first_letter`, `n*`/`p*`
/// as the last resort.
fn usual_name(model: &str, first_letter: bool) -> Guess {
    let name = model.to_lowercase();
    let contains_any = |patterns: &[&str]| patterns.iter().any(|pattern| name.contains(pattern));
    let candidates = [
        (DeviceType::Nmos, contains_any(&["nmos", "nfet", "nch"])),
        (DeviceType::Pmos, contains_any(&["pmos", "pfet", "pch"])),
        (
            DeviceType::Resistor,
            name.starts_with("res")
                || contains_any(&["_res", "resistor", "ppolyf", "npolyf"])
                || (name.starts_with('r') && name.contains("poly")),
        ),
        (DeviceType::Capacitor, contains_any(&["cap", "mom", "mim"])),
    ];
    let matching: Vec<DeviceType> = candidates
        .iter()
        .filter(|(_, hit)| *hit)
        .map(|(device_type, _)| *device_type)
        .collect();
    match matching.as_slice() {
        [device_type] => Guess::Type(*device_type),
        [first, second, ..] => Guess::Ambiguous([*first, *second]),
        [] if first_letter && name.starts_with('n') => Guess::Type(DeviceType::Nmos),
        [] if first_letter && name.starts_with('p') => Guess::Type(DeviceType::Pmos),
        [] => Guess::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mos(model: &str) -> Result<Option<DeviceType>, String> {
        ModelResolver::default().resolve(Some(model), Usage::Mos)
    }

    #[test]
    fn usual_names() {
        for (model, expected) in [
            ("nmos", DeviceType::Nmos),
            ("PMOS", DeviceType::Pmos),
            ("nfet_03v3", DeviceType::Nmos),
            ("pfet_05v0", DeviceType::Pmos),
            ("sky130_fd_pr__nfet_01v8", DeviceType::Nmos),
            ("sg13_lv_pmos", DeviceType::Pmos),
            ("nch_lvt", DeviceType::Nmos),
            ("pch", DeviceType::Pmos),
            ("n18", DeviceType::Nmos),
            ("p33", DeviceType::Pmos),
        ] {
            assert_eq!(mos(model), Ok(Some(expected)), "{model}");
        }
        assert!(
            mos("xyz")
                .unwrap_err()
                .starts_with("unknown model \"xyz\": cannot tell nmos from pmos")
        );
        assert!(
            mos("nch_pch")
                .unwrap_err()
                .starts_with("ambiguous model \"nch_pch\"")
        );
        assert!(mos("rppd").unwrap_err().starts_with("unknown model"));
        assert!(
            mos("res_poly")
                .unwrap_err()
                .contains("is a resistor by its name, but this is a MOS (M) line")
        );
    }

    #[test]
    fn tables_come_first_and_letters_decide_passives() {
        let rules = ModelMap::new([("weird", DeviceType::Pmos)]);
        let user = ModelMap::new([("weird", DeviceType::Nmos), ("odd", DeviceType::Nmos)]);
        let resolver = ModelResolver {
            rule_set: Some(&rules),
            user: Some(&user),
            cards: ModelMap::default(),
        };
        assert_eq!(
            resolver.resolve(Some("WEIRD"), Usage::Mos),
            Ok(Some(DeviceType::Pmos))
        );
        assert_eq!(
            resolver.resolve(Some("odd"), Usage::Mos),
            Ok(Some(DeviceType::Nmos))
        );
        assert_eq!(
            resolver.resolve(Some("rppd"), Usage::Resistor),
            Ok(Some(DeviceType::Resistor))
        );
        assert_eq!(
            resolver.resolve(None, Usage::Capacitor),
            Ok(Some(DeviceType::Capacitor))
        );
        assert!(
            resolver
                .resolve(Some("odd"), Usage::Capacitor)
                .unwrap_err()
                .contains("is a nmos by --model-map")
        );
        assert_eq!(resolver.resolve(Some("nand2"), Usage::Instance), Ok(None));
        assert_eq!(
            resolver.resolve(Some("sky130_fd_pr__cap_mim_m3_1"), Usage::Instance),
            Ok(Some(DeviceType::Capacitor))
        );
        for (model, expected) in [
            ("rppolywo_m", DeviceType::Resistor),
            ("rnpolywo", DeviceType::Resistor),
            ("ppolyf_u_1k", DeviceType::Resistor),
            ("cfmom_2t", DeviceType::Capacitor),
            ("mimcap_1p0", DeviceType::Capacitor),
        ] {
            assert_eq!(
                resolver.resolve(Some(model), Usage::Instance),
                Ok(Some(expected)),
                "{model}"
            );
        }
    }
}
