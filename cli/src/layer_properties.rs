//! `best.lyp`: a KLayout layer-properties file made from the job's rule set, so
//! `klayout best.gds -l best.lyp` shows every layer under its rule-set name, in a
//! colour that says what it is (diffusion green, poly red, metals blue to purple,
//! cuts dark, wells and implants as outlines).

use serde_json::Value;

use crate::markup::escape;

/// One drawn layer of the rule set.
#[derive(Debug, Clone, PartialEq)]
struct Layer {
    name: String,
    layer: i64,
    datatype: i64,
    role: String,
}

/// The layers of a rule set (`layers`: name → number or `{layer, datatype?, role?}`),
/// sorted by GDS number.
fn layers_of(rules: &Value) -> Vec<Layer> {
    let mut layers: Vec<Layer> = rules
        .get("layers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, spec)| {
            let (layer, datatype, role) = match spec {
                Value::Number(number) => (number.as_i64()?, 0, String::new()),
                Value::Object(fields) => (
                    fields.get("layer")?.as_i64()?,
                    fields.get("datatype").and_then(Value::as_i64).unwrap_or(0),
                    fields
                        .get("role")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                ),
                _ => return None,
            };
            let role = if role.is_empty() {
                inferred_role(name)
            } else {
                role
            };
            Some(Layer {
                name: name.clone(),
                layer,
                datatype,
                role,
            })
        })
        .collect();
    layers.sort_by_key(|layer| (layer.layer, layer.datatype));
    layers
}

/// The role a layer's name implies (as `docs/contracts.md` §1 infers it), for colour only.
fn inferred_role(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let role = match lower.as_str() {
        "activ" | "comp" | "diff" | "od" | "rx" | "tap" => "active",
        "gatpoly" | "poly2" | "poly" | "po" | "pc" => "poly",
        "cont" | "contact" | "co" | "ca" | "licon" | "licon1" => "contact",
        "nwell" | "nw" => "nwell",
        "nsd" | "nplus" | "np" | "nsdm" => "nplus",
        "psd" | "pplus" | "pp" | "psdm" => "pplus",
        _ if lower.starts_with("metal") || lower.starts_with("met") || lower == "li1" => "metal",
        _ if lower.starts_with("via") || lower == "mcon" => "via",
        _ => "",
    };
    role.to_string()
}

/// (frame colour, fill colour, dither pattern) for a role.
fn style(role: &str, index: usize) -> (&'static str, &'static str, &'static str) {
    const METALS: [&str; 6] = [
        "#3f6fd8", "#9b4fd1", "#d14fa8", "#d1864f", "#4fb8d1", "#7fa04f",
    ];
    match role {
        "active" | "tap" => ("#2f9e44", "#2f9e44", "I5"),
        "poly" => ("#e03131", "#e03131", "I9"),
        "contact" | "via1" | "via2" | "via3" | "via4" | "via" => ("#212529", "#495057", "I0"),
        "nwell" | "pwell" => ("#868e96", "#868e96", "I1"),
        "nplus" | "pplus" | "poly_contact_marker" | "poly_res" | "mim" => {
            ("#f08c00", "#f08c00", "I1")
        }
        role if role.ends_with("_label") || role.ends_with("_pin") => ("#000000", "#000000", "I1"),
        role if role.starts_with("metal") => {
            let level: usize = role.trim_start_matches("metal").parse().unwrap_or(index);
            let colour = METALS[level.saturating_sub(1) % METALS.len()];
            (colour, colour, "I3")
        }
        role if role.starts_with("via") => ("#212529", "#495057", "I0"),
        _ => {
            let colour = METALS[index % METALS.len()];
            (colour, colour, "I1")
        }
    }
}

/// The `.lyp` document for a rule set; `None` when it declares no layer.
pub fn layer_properties(rules: &Value) -> Option<String> {
    let layers = layers_of(rules);
    if layers.is_empty() {
        return None;
    }
    let mut document =
        String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<layer-properties>\n");
    for (index, layer) in layers.iter().enumerate() {
        let (frame, fill, dither) = style(&layer.role, index);
        let role = if layer.role.is_empty() {
            String::new()
        } else {
            format!(" ({})", layer.role)
        };
        document.push_str(&format!(
            " <properties>\n  <frame-color>{frame}</frame-color>\n  <fill-color>{fill}</fill-color>\n  \
             <frame-brightness>0</frame-brightness>\n  <fill-brightness>0</fill-brightness>\n  \
             <dither-pattern>{dither}</dither-pattern>\n  <valid>true</valid>\n  <visible>true</visible>\n  \
             <transparent>false</transparent>\n  <width>1</width>\n  <marked>false</marked>\n  \
             <animation>0</animation>\n  <name>{name} {number}/{datatype}{role}</name>\n  \
             <source>{number}/{datatype}@1</source>\n </properties>\n",
            name = escape(&layer.name),
            number = layer.layer,
            datatype = layer.datatype,
            role = escape(&role),
        ));
    }
    document.push_str("</layer-properties>\n");
    Some(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_layer_gets_its_name_number_and_a_style_by_role() {
        let rules = json!({"layers": {
            "Metal1": {"layer": 8, "datatype": 0, "role": "metal1"},
            "Activ": 1,
            "Metal1.text": {"layer": 8, "datatype": 25, "role": "metal1_label"},
            "GatPoly": 5
        }});
        let document = layer_properties(&rules).unwrap();
        let names: Vec<&str> = document
            .lines()
            .filter_map(|line| line.trim().strip_prefix("<name>")?.strip_suffix("</name>"))
            .collect();
        assert_eq!(
            names,
            vec![
                "Activ 1/0 (active)",
                "GatPoly 5/0 (poly)",
                "Metal1 8/0 (metal1)",
                "Metal1.text 8/25 (metal1_label)"
            ]
        );
        assert!(document.contains("<source>8/25@1</source>"));
        assert!(document.contains("#2f9e44"), "diffusion is green");
        assert!(layer_properties(&json!({"layers": {}})).is_none());
    }
}
