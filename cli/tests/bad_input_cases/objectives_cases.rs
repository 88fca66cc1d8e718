//! Bad objectives.

use serde_json::json;

use super::{Case, File, edit};

pub(super) fn cases() -> Vec<Case> {
    use File::*;
    vec![
        // --- objectives ---
        edit(
            "unknown objective",
            Objectives,
            "expected one of: area_min, matching_max, performance_max, cost_min",
            |o| {
                o["objectives"][0]["name"] = json!("speed_max");
                "/objectives/0/name".into()
            },
        ),
        edit("weight above 1", Objectives, "maximum", |o| {
            o["objectives"][1]["weight"] = json!(5);
            "/objectives/1/weight".into()
        }),
        edit("no objectives", Objectives, "no objectives", |o| {
            o["objectives"] = json!([]);
            "/objectives".into()
        }),
        edit(
            "max_area in square metres by mistake",
            Objectives,
            "must be greater than 0",
            |o| {
                o["constraints"]["max_area"] = json!(-4e-10);
                "/constraints/max_area".into()
            },
        ),
        edit("absurd max_area", Objectives, "absurdly large", |o| {
            o["constraints"]["max_area"] = json!(4e12);
            "/constraints/max_area".into()
        }),
        edit("zero iterations", Objectives, "minimum", |o| {
            o["constraints"]["max_iterations"] = json!(0);
            "/constraints/max_iterations".into()
        }),
    ]
}
