//! Bad rule sets.

use serde_json::json;

use super::{Case, File, edit, push_rule};

pub(super) fn cases() -> Vec<Case> {
    use File::*;
    vec![
        // --- rules ---
        edit(
            "rule on an unknown layer",
            Rules,
            "names layer \"Metal9\", which is not declared",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.1", "type": "width", "layer": "Metal9", "min": 2e-7}),
                ) + "/layer"
            },
        ),
        edit(
            "rule on an unknown layer2",
            Rules,
            "names layer \"Poly9\"",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.2", "type": "spacing", "layer": "Metal1", "layer2": "Poly9", "min": 2e-7}),
                ) + "/layer2"
            },
        ),
        edit("min greater than max", Rules, "is greater than max", |r| {
            push_rule(
                r,
                json!({"id": "X.3", "type": "width", "layer": "Metal1", "min": 2e-7, "max": 1e-7}),
            ) + "/min"
        }),
        edit(
            "density as a percentage",
            Rules,
            "must be a fraction within [0, 1]",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.4", "type": "density", "layer": "Metal1", "max": 35}),
                ) + "/max"
            },
        ),
        edit("negative spacing", Rules, "must not be negative", |r| {
            push_rule(
                r,
                json!({"id": "X.5", "type": "spacing", "layer": "Metal1", "min": -1e-7}),
            ) + "/min"
        }),
        edit("enclosure without layer2", Rules, "add \"layer2\"", |r| {
            push_rule(
                r,
                json!({"id": "X.6", "type": "enclosure", "layer": "Metal1", "min": 1e-8}),
            )
        }),
        edit(
            "rule value in micrometres by mistake",
            Rules,
            "absurdly large",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.7", "type": "spacing", "layer": "Metal1", "min": 0.18}),
                ) + "/min"
            },
        ),
        edit("duplicate rule id", Rules, "duplicate rule id", |r| {
            let first = r["rules"][0].clone();
            push_rule(r, first) + "/id"
        }),
        edit(
            "unknown rule type",
            Rules,
            "expected one of: width, spacing, enclosure, extension, overlap, density, area",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.8", "type": "angle", "layer": "Metal1", "min": 1e-13}),
                ) + "/type"
            },
        ),
        edit(
            "line-end enclosure without end_width",
            Rules,
            "\"end_min\" needs \"end_width\"",
            |r| {
                let rule = json!({"id": "X.10", "type": "enclosure", "layer": "Metal1",
                                  "layer2": "Cont", "end_min": 6e-8});
                push_rule(r, rule) + "/end_min"
            },
        ),
        edit(
            "adjacent enclosure without adjacent_min",
            Rules,
            "\"adjacent_below\" needs \"adjacent_min\"",
            |r| {
                let rule = json!({"id": "X.11", "type": "enclosure", "layer": "Metal1",
                                  "layer2": "Cont", "min": 0, "adjacent_below": 4e-8});
                push_rule(r, rule) + "/adjacent_below"
            },
        ),
        edit(
            "area rule without min",
            Rules,
            "an area rule needs \"min\"",
            |r| push_rule(r, json!({"id": "X.12", "type": "area", "layer": "Metal1"})),
        ),
        edit(
            "area in square micrometres by mistake",
            Rules,
            "areas are in square metres",
            |r| {
                push_rule(
                    r,
                    json!({"id": "X.13", "type": "area", "layer": "Metal1", "min": 0.09}),
                ) + "/min"
            },
        ),
        edit(
            "width_over on a two-layer spacing",
            Rules,
            "remove \"layer2\" or \"width_over\"",
            |r| {
                let rule = json!({"id": "X.14", "type": "spacing", "layer": "Metal1",
                                  "layer2": "Metal2", "min": 3e-7, "width_over": 1e-5});
                push_rule(r, rule) + "/width_over"
            },
        ),
        edit(
            "line-end field on a width rule",
            Rules,
            "belongs to enclosure rules",
            |r| {
                let rule = json!({"id": "X.15", "type": "width", "layer": "Metal1", "min": 1.6e-7,
                                  "end_min": 6e-8, "end_width": 3.4e-7});
                push_rule(r, rule) + "/end_min"
            },
        ),
        edit(
            "GDS layer out of range",
            Rules,
            "GDS layer 70000 is out of range",
            |r| {
                r["layers"]["Activ"]["layer"] = json!(70000);
                "/layers/Activ/layer".into()
            },
        ),
        edit(
            "unknown layer role",
            Rules,
            "unknown role \"metal10\"",
            |r| {
                r["layers"]["Metal1"]["role"] = json!("metal10");
                "/layers/Metal1/role".into()
            },
        ),
        edit(
            "a role the generator needs is missing",
            Rules,
            "no layer has the role \"via1\"",
            |r| {
                r["layers"]["Via1"]["role"] = json!("via4");
                r["layers"]["Via4"].as_object_mut().unwrap().remove("role");
                "/layers".into()
            },
        ),
        edit(
            "1.1.0 layer objects under schema 1.0.0",
            Rules,
            "needs schema_version 1.1.0 or later, and this file is read as 1.0.0",
            |r| {
                r["schema_version"] = json!("1.0.0");
                "/layers/Activ".into()
            },
        ),
        edit(
            "pmos circuit without an nwell layer",
            Rules,
            "no layer has the role \"nwell\"",
            |r| {
                r["layers"]["NWell"].as_object_mut().unwrap().remove("role");
                r["layers"]["NWell"]["description"] = json!("renamed role away");
                let nwell = r["layers"]
                    .as_object_mut()
                    .unwrap()
                    .remove("NWell")
                    .unwrap();
                r["layers"]["WellN"] = nwell;
                for rule in r["rules"].as_array_mut().unwrap() {
                    for key in ["layer", "layer2"] {
                        if rule[key] == "NWell" {
                            rule[key] = json!("WellN");
                        }
                    }
                }
                for derived in r["derived_layers"].as_object_mut().unwrap().values_mut() {
                    for key in ["a", "b"] {
                        if derived[key] == "NWell" {
                            derived[key] = json!("WellN");
                        }
                    }
                }
                "/layers".into()
            },
        ),
    ]
}
