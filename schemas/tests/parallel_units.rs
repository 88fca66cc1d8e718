//! Parallel units are one device for module recognition: the copies of an `m=k`
//! subcircuit instance (a stack with internal nets of its own in each copy) and devices
//! written out one by one on the same nets form no matched group among themselves, and
//! a mirror whose output is k such units has two members, of ratio k.

use centroid_schemas::{Circuit, CircuitModule, ModuleType, ParallelUnits};

mod support;
use support::spice;

fn matched(circuit: &Circuit) -> Vec<&CircuitModule> {
    circuit
        .modules
        .iter()
        .filter(|module| module.module_type.is_matched())
        .collect()
}

/// A two-device stack (internal net `mid` in each copy) biased from `vb`.
const STACK: &str = ".subckt stack d g s b\n\
                     ma d g mid b nmos w=1u l=0.5u\n\
                     mb mid g s b nmos w=1u l=0.5u\n\
                     .ends\n";

#[test]
fn copies_of_an_m_instance_form_no_matched_group_among_themselves() {
    let circuit = spice(&format!(
        "{STACK}.subckt top out vb vss\n\
         xs out vb vss vss stack m=10\n\
         mbias vb vb2 vss vss pmos w=1u l=0.5u\n\
         .ends\n"
    ));
    let units = ParallelUnits::of(&circuit);
    assert_eq!(units.sets().len(), 2, "{:?}", units.sets());
    let (first, others) = units.sets().iter().next().unwrap();
    assert_eq!(others.len(), 9, "{first}: {others:?}");
    assert!(matched(&circuit).is_empty(), "{:#?}", circuit.modules);
}

#[test]
fn devices_written_out_on_the_same_nets_are_one_member() {
    let circuit = spice(
        ".subckt top o1 o2 vb vss\n\
         m1 o1 vb vss vss nmos w=1u l=0.5u\n\
         m2 o1 vb vss vss nmos w=1u l=0.5u\n\
         m3 o1 vb vss vss nmos w=1u l=0.5u\n\
         mp vb vbp vdd vdd pmos w=1u l=0.5u\n\
         .ends\n",
    );
    assert!(matched(&circuit).is_empty(), "{:#?}", circuit.modules);
    // a second output on its own net is a second member: matched sources, ratio 3:1
    let circuit = spice(
        ".subckt top o1 o2 vb vss\n\
         m1 o1 vb vss vss nmos w=1u l=0.5u\n\
         m2 o1 vb vss vss nmos w=1u l=0.5u\n\
         m3 o1 vb vss vss nmos w=1u l=0.5u\n\
         m4 o2 vb vss vss nmos w=1u l=0.5u\n\
         mp vb vbp vdd vdd pmos w=1u l=0.5u\n\
         .ends\n",
    );
    let found = matched(&circuit);
    assert_eq!(found.len(), 1, "{:#?}", circuit.modules);
    assert_eq!(found[0].module_type, ModuleType::MatchedCurrentSources);
    assert_eq!(found[0].members().count(), 2);
    assert_eq!(
        found[0].properties["ratio"],
        "1:0.333",
        "{}",
        found[0].describe()
    );
}

#[test]
fn a_mirror_whose_output_is_four_copies_has_two_members_of_ratio_four() {
    let circuit = spice(
        ".subckt unit d g s b\n\
         mu d g s b nmos w=1u l=0.5u\n\
         .ends\n\
         .subckt top iref out vss\n\
         mref iref iref vss vss nmos w=1u l=0.5u\n\
         xo out iref vss vss unit m=4\n\
         .ends\n",
    );
    let found = matched(&circuit);
    assert_eq!(found.len(), 1, "{:#?}", circuit.modules);
    let mirror = found[0];
    assert_eq!(mirror.module_type, ModuleType::CurrentMirror);
    let members: Vec<(&str, &str)> = mirror
        .members()
        .map(|member| (member.device_id.as_str(), member.role.as_str()))
        .collect();
    assert_eq!(members.len(), 2, "{}", mirror.describe());
    assert_eq!(members[0], ("mref", "reference"));
    assert_eq!(members[1].1, "output");
    assert_eq!(mirror.properties["ratio"], "1:4", "{}", mirror.describe());
    // every copy is still drawn: the output member and its three other units
    assert_eq!(mirror.devices.len(), 5);
    assert_eq!(mirror.units_of(members[1].0).count(), 3);
}

#[test]
fn copies_wired_to_different_nets_are_not_units() {
    // two instances of one stack on different outputs: a matched pair of sources
    let circuit = spice(&format!(
        "{STACK}.subckt top o1 o2 vb vss\n\
         x1 o1 vb vss vss stack\n\
         x2 o2 vb vss vss stack\n\
         mbias vb vb2 vss vss pmos w=1u l=0.5u\n\
         .ends\n"
    ));
    assert!(ParallelUnits::of(&circuit).sets().is_empty());
    let found = matched(&circuit);
    assert_eq!(found.len(), 1, "{:#?}", circuit.modules);
    assert_eq!(found[0].members().count(), 2);
}
