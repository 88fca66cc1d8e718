//! `centroid plan --point FILE`: the plan of one design point, checked against the
//! job's design space like a model's answer — a point that gives one matched module
//! its own dummies is planned so; a point outside the space is refused, naming what
//! is wrong and what would be valid.

mod support;

use serde_json::{Value, json};
use support::{centroid, repository};

fn plan_point(point: &Value) -> std::process::Output {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), point.to_string()).unwrap();
    centroid()
        .args(["plan", "--json", "--point"])
        .arg(file.path())
        .arg(repository().join("examples/ota5"))
        .output()
        .unwrap()
}

#[test]
fn a_point_is_planned_as_given_and_one_outside_the_space_is_refused() {
    let output = plan_point(&json!({"dummies": 2, "module_dummies": {"dp1": 0}}));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let candidates = document["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 1);
    let steps = candidates[0]["plan"]["steps"].as_array().unwrap();
    let dummies: Vec<(&str, u64)> = steps
        .iter()
        .filter(|step| step["skill"] == "layout.add_dummies")
        .map(|step| {
            let arguments = &step["arguments"];
            (
                arguments["cell"].as_str().unwrap(),
                arguments["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        dummies,
        [("mod_cm1", 2)],
        "none at the pair, two at the mirror"
    );

    let refused = plan_point(&json!({"dummies": 7, "module_dummies": {"nosuch": 0}}));
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for said in [
        "dummies: 7 is not one of [0, 1, 2]",
        "module_dummies.nosuch",
        "\"dp1\"",
    ] {
        assert!(stderr.contains(said), "{said} not in: {stderr}");
    }
}
