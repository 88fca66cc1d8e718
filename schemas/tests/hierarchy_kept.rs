//! The hierarchy the flattening walks is kept in the circuit: per subcircuit instance
//! its path, the subcircuit's name and each port's flat net — from SPICE (`.subckt`, X
//! lines, `m=k` copies) and from netlist.json alike; a flat netlist keeps none.

use centroid_schemas::{Circuit, InputFile, load_netlist};

mod support;
use serde_json::json;
use support::spice;

/// (path, subcircuit, "port=net" sorted) of every instance.
fn instances(circuit: &Circuit) -> Vec<String> {
    circuit
        .instances
        .iter()
        .map(|instance| {
            let ports: Vec<String> = instance
                .ports
                .iter()
                .map(|(port, net)| format!("{port}={net}"))
                .collect();
            format!(
                "{} {} {}",
                instance.path,
                instance.subcircuit,
                ports.join(" ")
            )
        })
        .collect()
}

#[test]
fn spice_subcircuits_and_m_copies_are_kept_as_instances() {
    let circuit = spice(
        ".subckt inv a y vdd vss\n\
         mp y a vdd vdd pmos w=2u l=0.5u\n\
         mn y a vss vss nmos w=1u l=0.5u\n\
         .ends\n\
         .subckt buf in out vdd vss\n\
         X1 in mid vdd vss inv\n\
         .ends\n\
         .subckt top in out vdd vss\n\
         XB in x vdd vss buf\n\
         XI x out vdd vss inv m=2\n\
         .ends\n",
    );
    assert_eq!(
        instances(&circuit),
        [
            "XB buf in=in out=x vdd=vdd vss=vss",
            "XB/X1 inv a=in vdd=vdd vss=vss y=XB/mid",
            "XI.m1 inv a=x vdd=vdd vss=vss y=out",
            "XI.m2 inv a=x vdd=vdd vss=vss y=out",
        ]
    );
    let nested = circuit.instance("XB/X1").unwrap();
    assert_eq!(nested.parent_path(), Some("XB"));
    assert_eq!(nested.local_name(), "X1");
    assert_eq!(nested.prefix(), "XB/X1/");
    assert!(circuit.device("XB/X1/mp").is_some());
    assert!(circuit.device("XI.m2/mn").is_some());
    // each subcircuit flattened on its own once: local ids, port names as nets
    let names: Vec<&str> = circuit
        .subcircuits
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(names, ["buf", "inv"]);
    let buf = circuit.subcircuit("buf").unwrap();
    assert_eq!(buf.ports, ["in", "out", "vdd", "vss"]);
    let ids: Vec<&str> = buf.devices.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["X1/mp", "X1/mn"]);
    assert_eq!(buf.devices[0].terminals["d"], "mid");
    assert_eq!(buf.devices[0].terminals["g"], "in");
    assert_eq!(buf.instances[0].path, "X1");
    let inv = circuit.subcircuit("inv").unwrap();
    assert_eq!(inv.devices[1].terminals["d"], "y");
}

#[test]
fn a_subcircuit_keeps_ports_its_instance_joins() {
    // a unity buffer joins two ports to one net: the subcircuit keeps them apart
    let circuit = spice(
        ".subckt amp inp inn out vss
         m1 out inp vss vss nmos w=1u l=0.5u
         m2 out inn vss vss nmos w=1u l=0.5u
         .ends
         .subckt top in out vss
         X1 in out out vss amp
         .ends
",
    );
    assert_eq!(circuit.device("X1/m2").unwrap().terminals["g"], "out");
    let amp = circuit.subcircuit("amp").unwrap();
    assert_eq!(amp.devices[1].terminals["g"], "inn");
    assert_eq!(amp.devices[1].terminals["d"], "out");
}

#[test]
fn json_subcells_are_kept_as_instances_and_a_flat_netlist_has_none() {
    let file = |value: &serde_json::Value| InputFile {
        label: "n.json".to_owned(),
        bytes: serde_json::to_vec(value).unwrap(),
    };
    let netlist = json!({
        "schema_version": "1.1.0",
        "top": "top",
        "cells": [
            {"name": "top", "devices": [], "nets": ["a", "b", "vss"],
             "subcells": [
                {"name": "X1", "cell": "stage", "connections": {"in": "a", "out": "mid", "gnd": "vss"}},
                {"name": "X2", "cell": "stage", "connections": {"in": "mid", "out": "b", "gnd": "vss"}}]},
            {"name": "stage", "ports": ["in", "out", "gnd"], "devices": [
                {"id": "M1", "type": "nmos", "w": 1e-6, "l": 1.5e-7, "terminals": {"g": "in", "d": "out", "s": "gnd", "b": "gnd"}}]}
        ]
    });
    let circuit = load_netlist(&file(&netlist)).unwrap().value;
    assert_eq!(
        instances(&circuit),
        [
            "X1 stage gnd=vss in=a out=mid",
            "X2 stage gnd=vss in=mid out=b",
        ]
    );
    // stored records without the field still load, and a flat circuit writes none
    let mut stored = serde_json::to_value(&circuit).unwrap();
    stored.as_object_mut().unwrap().remove("instances");
    stored.as_object_mut().unwrap().remove("subcircuits");
    let reloaded: Circuit = serde_json::from_value(stored).unwrap();
    assert!(reloaded.instances.is_empty() && reloaded.subcircuits.is_empty());
    assert_eq!(circuit.subcircuit("stage").unwrap().devices.len(), 1);
    let flat = json!({"schema_version": "1.1.0", "top": "amp", "cells": [{"name": "amp", "devices": [
        {"id": "M1", "type": "nmos", "w": 1e-6, "l": 1.5e-7, "terminals": {"g": "a", "d": "b", "s": "c", "b": "c"}}]}]});
    let flat = load_netlist(&file(&flat)).unwrap().value;
    assert!(flat.instances.is_empty());
    assert!(
        serde_json::to_value(&flat)
            .unwrap()
            .get("instances")
            .is_none()
    );
}
