//! Series stacks: MOS segments in series under one gate net are one transistor; a
//! cascode (its own gate), a node something else touches or a port of the top cell
//! separates them.

use centroid_schemas::{ModuleType, SeriesStacks};

mod support;
use support::spice;

/// A three-segment stack biased from `g` (internal nets `i1`, `i2` in each instance).
const STACK: &str = ".subckt stack3 d g s b\n\
                     m1 d g i1 b nmos w=1u l=0.5u\n\
                     m2 i1 g i2 b nmos w=1u l=0.5u\n\
                     m3 i2 g s b nmos w=1u l=0.5u\n\
                     .ends\n";

#[test]
fn the_segments_of_each_stack_instance_are_one_stack_of_their_own() {
    let circuit = spice(&format!(
        "{STACK}.subckt top o1 o2 vb vss\n\
         xa o1 vb vss vss stack3\n\
         xb o2 vb vss vss stack3\n\
         mp vb vbp vdd vdd pmos w=1u l=0.5u\n\
         .ends\n"
    ));
    let stacks = SeriesStacks::of(&circuit);
    assert_eq!(
        stacks.stacks(),
        [
            vec!["xa/m1".to_owned(), "xa/m2".into(), "xa/m3".into()],
            vec!["xb/m1".to_owned(), "xb/m2".into(), "xb/m3".into()],
        ],
        "{stacks:?}"
    );
    assert_eq!(
        stacks.others("xa/m3").collect::<Vec<_>>(),
        ["xa/m1", "xa/m2"]
    );
    assert_eq!(stacks.others("mp").count(), 0);
    // the bottom segments are the matched current sources; each stands for its stack
    let sources = circuit
        .modules
        .iter()
        .find(|module| module.module_type == ModuleType::MatchedCurrentSources)
        .unwrap_or_else(|| panic!("{:#?}", circuit.modules));
    let members: Vec<&str> = sources
        .members()
        .map(|member| member.device_id.as_str())
        .collect();
    assert_eq!(members, ["xa/m3", "xb/m3"]);
}

#[test]
fn a_cascode_a_tapped_node_or_a_port_separates_segments() {
    let circuit = spice(
        ".subckt top out vb vc vss tap\n\
         mc out vc n1 vss nmos w=1u l=0.5u\n\
         m1 n1 vb n2 vss nmos w=1u l=0.5u\n\
         m2 n2 vb tap vss nmos w=1u l=0.5u\n\
         m3 tap vb n3 vss nmos w=1u l=0.5u\n\
         m4 n3 vb n4 vss nmos w=1u l=0.5u\n\
         m5 n4 vb n5 vss nmos w=1u l=0.5u\n\
         m6 n5 vb vss vss nmos w=1u l=0.5u\n\
         cx n4 vss c w=2u l=2u\n\
         .ends\n",
    );
    let stacks = SeriesStacks::of(&circuit);
    // mc has its own gate (a cascode); `tap` is a port; a capacitor touches n4
    assert_eq!(
        stacks.stacks(),
        [
            vec!["m1".to_owned(), "m2".into()],
            vec!["m3".to_owned(), "m4".into()],
            vec!["m5".to_owned(), "m6".into()],
        ],
        "{stacks:?}"
    );
}
