//! `check.electrical`'s `gate_only_nets`: a circuit whose clocks the netlist leaves
//! internal (a switched-capacitor stage: the phases reach only the switches' gates) has
//! that many floating gates by design; the planner counts them and tells workers whose
//! check takes the count (a block's nets carry no label, so the layout shows them too).
//! Likewise `circuit_dummies`: the fingers of the circuit's own devices shorted (D = G = S)
//! on a net off the rails.

use serde_json::{Value, json};

use centroid_planner::heuristic::HeuristicPlanner;
use centroid_planner::planner::Planner;

mod support;
use support::{load, netlist, skills, steps};

/// Four switches on two internal phases, a capacitor between them; a two-finger device
/// shorted on the internal net `a` and one shorted on the ground.
fn switched_capacitor() -> Value {
    let switch = |id: &str, d: &str, g: &str, s: &str| {
        json!({"id": id, "type": "nmos", "w": 1e-6, "l": 5e-7, "nf": 1,
               "terminals": {"d": d, "g": g, "s": s, "b": "vss"}})
    };
    let mut netlist = netlist();
    let cells = netlist["cells"].as_array_mut().unwrap();
    cells[0] = json!({"name": "sc", "ports": ["vin", "vout", "vss"],
        "devices": [
            switch("S1", "vin", "phi1", "a"),
            switch("S2", "a", "phi2", "vss"),
            switch("S3", "b", "phi1", "vss"),
            switch("S4", "b", "phi2", "vout"),
            {"id": "C1", "type": "capacitor", "w": 5e-6, "l": 5e-6,
             "terminals": {"p": "a", "n": "b"}},
            {"id": "MD", "type": "nmos", "w": 1e-6, "l": 5e-7, "nf": 2,
             "terminals": {"d": "a", "g": "a", "s": "a", "b": "vss"}},
            {"id": "MG", "type": "nmos", "w": 1e-6, "l": 5e-7, "nf": 1,
             "terminals": {"d": "vss", "g": "vss", "s": "vss", "b": "vss"}}]});
    cells.truncate(1);
    netlist["top"] = json!("sc");
    netlist
}

fn electrical_arguments(with_schema: bool) -> Option<Value> {
    let (context, raw) = load(&switched_capacitor());
    let planner = HeuristicPlanner::new(raw).with_route_pitch(Some(0.5));
    let mut catalog = skills(false);
    let schema = if with_schema {
        json!({"type": "object", "properties": {"gate_only_nets": {"type": "integer"},
                                                "circuit_dummies": {"type": "integer"}}})
    } else {
        Value::Null
    };
    catalog.insert("check.electrical".into(), schema);
    let space = planner.design_space(&context, &catalog);
    let plan = planner
        .plan(&context, &space.default_point(), &catalog)
        .unwrap();
    steps(&plan, "check.electrical")
        .first()
        .map(|step| (*step).clone())
}

#[test]
fn the_circuits_gate_only_nets_are_counted_for_the_electrical_check() {
    let arguments = electrical_arguments(true).expect("a check.electrical step");
    // phi1 and phi2: internal, gates only; a and b reach sources and drains and the plate
    assert_eq!(arguments["gate_only_nets"], 2, "{arguments}");
    // MD's two fingers on `a`; MG is shorted on the ground, a rail
    assert_eq!(arguments["circuit_dummies"], 2, "{arguments}");
}

#[test]
fn a_worker_whose_check_does_not_take_the_count_gets_none() {
    let arguments = electrical_arguments(false).expect("a check.electrical step");
    assert!(arguments.get("gate_only_nets").is_none(), "{arguments}");
    assert!(arguments.get("circuit_dummies").is_none(), "{arguments}");
}
