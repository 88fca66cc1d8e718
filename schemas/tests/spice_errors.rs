//! Broken SPICE netlists: each is refused with the exact `file:line:column: message` of
//! every problem in it (the whole file at once), and nothing else is reported.

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{InputFile, SpiceOptions};

/// Every problem of `bytes` read as netlist.sp, as the CLI prints them (after "error: ").
fn problems_with(bytes: &[u8], options: &SpiceOptions<'_>) -> Vec<String> {
    let file = InputFile {
        label: "netlist.sp".to_owned(),
        bytes: bytes.to_vec(),
    };
    match load_spice_netlist(&file, options) {
        Ok(_) => panic!("accepted:\n{}", String::from_utf8_lossy(bytes)),
        Err(errors) => errors.issues.iter().map(ToString::to_string).collect(),
    }
}

fn problems(text: &str) -> Vec<String> {
    problems_with(text.as_bytes(), &SpiceOptions::default())
}

/// (netlist, the problems it must give, in order).
const CASES: &[(&str, &[&str])] = &[
    // bad_suffix
    (
        "* bad suffix\n.subckt a d g s b\nM1 d g s b nmos\n+ w=4x l=1u\n.ends\n",
        &["netlist.sp:4:5: expected a value for w, found \"4x\""],
    ),
    // unterminated_brace
    (
        "M1 d g s b nmos w={2*wn l=1u\n",
        &[
            "netlist.sp:1:19: unterminated brace '{': expected a closing '}' on this line or its '+' continuation lines",
        ],
    ),
    // unterminated_quote
    (
        "M1 d g s b nmos w='2u l=1u\n",
        &[
            "netlist.sp:1:19: unterminated quote \"'\": expected a closing \"'\" on this line or its '+' continuation lines",
        ],
    ),
    // leading_plus
    (
        "\n+ w=1u\nM1 d g s b nmos w=1u l=1u\n",
        &["netlist.sp:2:1: a '+' continuation line must follow the statement it continues"],
    ),
    // ends_without_subckt
    (
        "M1 d g s b nmos w=1u l=1u\n.ends\n",
        &["netlist.sp:2:1: .ends without an open .subckt"],
    ),
    // unclosed
    (
        ".subckt amp a\nM1 a a a a nmos w=1u l=1u\n",
        &[
            "netlist.sp:1:9: subcircuit \"amp\" is not closed: expected .ends before the end of the file",
        ],
    ),
    // nested
    (
        ".subckt a x\n.subckt b y\nM1 y y y y nmos w=1u l=1u\n.ends\n",
        &[
            "netlist.sp:2:1: .subckt b inside .subckt a: expected .ends before a new .subckt (nested definitions are not supported)",
        ],
    ),
    // duplicate_subckt
    (
        ".subckt a x\nM1 x x x x nmos w=1u l=1u\n.ends\n.SUBCKT A x\n.ends\n",
        &[
            "netlist.sp:4:9: subcircuit \"A\" is defined twice (first at line 1); subcircuit names are case-insensitive",
        ],
    ),
    // duplicate_name
    (
        "M1 d g s b nmos w=1u l=1u\nm1 d g s b nmos w=1u l=1u\n",
        &[
            "netlist.sp:2:1: duplicate name \"m1\" in the top level (first at line 1); names are case-insensitive",
        ],
    ),
    // two_nodes
    (
        "M1 d g nmos w=1u l=1u\n",
        &[
            "netlist.sp:1:1: expected drain, gate, source and bulk nodes and a model (or drain, gate, source and a model) after M1, found \"d g nmos\"",
        ],
    ),
    // unknown_model
    (
        "M1 d g s b xyz w=1u l=1u\n",
        &[
            "netlist.sp:1:12: M1: unknown model \"xyz\": cannot tell nmos from pmos; map it in the rule set (\"models\": {\"xyz\": \"nmos\"}, schema_version 1.3.0) or with --model-map FILE",
        ],
    ),
    // ambiguous_model
    (
        "M1 d g s b nch_pch w=1u l=1u\n",
        &[
            "netlist.sp:1:12: M1: ambiguous model \"nch_pch\": its name suggests both nmos and pmos; map it in the rule set (\"models\": {\"nch_pch\": \"nmos\"}, schema_version 1.3.0) or with --model-map FILE",
        ],
    ),
    // model_against_letter
    (
        ".model rp c\nR1 a b rp w=1u l=10u\n",
        &[
            "netlist.sp:2:8: R1: model \"rp\" is a capacitor by its .model card, but this is a resistor (R) line",
        ],
    ),
    // missing_w
    (
        "M1 d g s b nmos l=1u\n",
        &[
            "netlist.sp:1:1: M1: expected w=… (the total gate width of one instance, over its nf fingers), e.g. w=4u",
        ],
    ),
    // unknown_param
    (
        "M1 d g s b nmos w=wn l=1u\n",
        &[
            "netlist.sp:1:19: unknown parameter \"wn\" in the value of w; define it with .param wn=…",
        ],
    ),
    // param_cycle
    (
        ".param a=b b='a*2'\nM1 d g s b nmos w=a l=1u\n",
        &["netlist.sp:1:15: parameter \"a\" depends on itself: a → b → a"],
    ),
    // division_by_zero
    (
        ".param z=0\nM1 d g s b nmos w={1u/z} l=1u\n",
        &["netlist.sp:2:19: division by zero in the value of w"],
    ),
    // port_count
    (
        ".subckt inv a y\nM1 y a y y nmos w=1u l=1u\n.ends\n.subckt top p\nX1 p inv\n.ends\n",
        &["netlist.sp:5:1: X1 connects 1 node but subcircuit inv has 2 ports (a, y)"],
    ),
    // unknown_subckt
    (
        ".subckt top p q\nX1 p q nand2\n.ends\n",
        &[
            "netlist.sp:2:8: unknown subcircuit \"nand2\" for X1; defined subcircuits: top. A device model called as X needs a mapping (the rule set's \"models\" table, schema_version 1.3.0, or --model-map FILE); Centroid draws MOS transistors, resistors and capacitors, so a cell defined elsewhere (a standard cell, a diode, a bipolar transistor, an inductor) cannot be laid out",
        ],
    ),
    // not_that_device: a standard cell whose name reads as a capacitor
    (
        ".subckt top vss vdd
x5[1] vss vss vdd vdd sky130_fd_sc_hvl__decap_4
.ends
",
        &[
            "netlist.sp:2:1: x5[1] calls sky130_fd_sc_hvl__decap_4 with 4 nodes, but this file does not define sky130_fd_sc_hvl__decap_4 and its name reads as a capacitor, which takes two nodes (and an optional body node): a cell defined elsewhere (a standard cell, a PDK cell with more terminals) cannot be laid out; define it in this file, or map its name (--model-map) to the device it is",
        ],
    ),
    // unknown_instance_param
    (
        ".subckt inv a w=1u\nM1 a a a a nmos w=w l=1u\n.ends\n.subckt top p\nX1 p inv wx=2u\n.ends\n",
        &["netlist.sp:5:10: subcircuit inv has no parameter \"wx\"; its parameters: w"],
    ),
    // hierarchy_cycle
    (
        ".subckt a p\nX1 p b\n.ends\n.subckt b p\nX1 p a\n.ends\n",
        &["netlist.sp:2:1: subcircuit b contains itself: b → a → b"],
    ),
    // unsupported_element
    (
        ".subckt a p\nD1 p 0 dmod\nM1 p p p p nmos w=1u l=1u\nB1 p 0 v=1\n.ends\n",
        &[
            "netlist.sp:2:1: unsupported element \"D1\" (a diode): Centroid lays out M (MOS), R, C and X (subcircuit) lines; Centroid has no generator for it: lay it out apart and bring its nodes out as ports",
        ],
    ),
    // unknown_letter
    (
        ".subckt a p\nA1 p 0 foo\nM1 p p p p nmos w=1u l=1u\n.ends\n",
        &[
            "netlist.sp:2:1: unsupported element \"A1\" (an element kind SPICE does not define): Centroid lays out M (MOS), R, C and X (subcircuit) lines; an instance of a subcircuit is written X<name> node… <subcircuit>",
        ],
    ),
    // spectre: read, its problems at the file's line and column
    (
        "subckt amp a b\nM1 (a b 0 0) nch w=1u\nends amp\n",
        &["netlist.sp:2:1: M1: expected l=… (the gate length), e.g. l=500n"],
    ),
    // bad_expression
    (
        "M1 d g s b nmos w={2*} l=1u\n",
        &[
            "netlist.sp:1:22: expected a number, a parameter name or '(' in the value of w, found the end of the value",
        ],
    ),
    // param_without_value
    (
        ".param a=\nM1 d g s b nmos w=1u l=1u\n",
        &["netlist.sp:1:9: expected a value for a after '='"],
    ),
    // absurd_w
    (
        "M1 d g s b nmos w=4 l=1u\n",
        &[
            "netlist.sp:1:19: w = 4 m is absurdly large; lengths are in metres (4 µm would be 4e-6), valid range 1e-9..1e-2",
        ],
    ),
    // nf_on_resistor
    (
        "R1 a b 1k w=1u l=10u nf=2\n",
        &[
            "netlist.sp:1:25: nf applies to MOS devices only; a resistor has nf 1 (use m for parallel copies)",
        ],
    ),
    // subckt_multiplicity
    (
        ".subckt inv a\nM1 a a a a nmos w=1u l=1u\n.ends\n.subckt top p\nX1 p inv m=2.5\nX2 p inv mult=0\n.ends\n",
        &[
            "netlist.sp:5:10: X1: m=2.5 on a subcircuit instance must be a whole number of parallel copies from 1 to 10000",
            "netlist.sp:6:10: X2: m=0 on a subcircuit instance must be a whole number of parallel copies from 1 to 10000",
        ],
    ),
    // equals_without_name
    (
        "M1 d g s b nmos w=1u = 2u l=1u\n",
        &["netlist.sp:1:22: unexpected '=': expected name=value"],
    ),
    // not_a_statement
    (
        "1M d g s b nmos w=1u l=1u\n",
        &["netlist.sp:1:1: expected an element (M, R, C or X) or a dot statement, found \"1M\""],
    ),
    // repeated_param
    (
        "M1 d g s b nmos w=1u l=1u W=2u\n",
        &["netlist.sp:1:27: W is given twice on M1"],
    ),
    // nf_fraction
    (
        "M1 d g s b nmos w=1u l=1u nf=2.5\n",
        &["netlist.sp:1:30: 2.5 is not of type \"integer\""],
    ),
    // many_at_once
    (
        ".subckt amp in out\nM1 out in 0 0 nmos w=4x l=1u\nM2 out in 0 0 foo w=1u l=1u\nM3 out nmos w=1u l=1u\nC1 out 0 1p\nC2 out 0\n.ends\n",
        &[
            "netlist.sp:2:22: expected a value for w, found \"4x\"",
            "netlist.sp:3:15: M2: unknown model \"foo\": cannot tell nmos from pmos; map it in the rule set (\"models\": {\"foo\": \"nmos\"}, schema_version 1.3.0) or with --model-map FILE",
            "netlist.sp:4:1: expected drain, gate, source and bulk nodes and a model (or drain, gate, source and a model) after M3, found \"out nmos\"",
            "netlist.sp:5:1: C1 = 1 pF is given by its value only: its size derives from the rule set, which did not load",
            "netlist.sp:6:1: C2: expected w=… (the drawn plate width, or the capacitance to size it from the rule set), e.g. w=10u",
            "netlist.sp:6:1: C2: expected l=… (the drawn plate length), e.g. l=10u",
        ],
    ),
    // empty
    (
        "* nothing\n",
        &[
            "netlist.sp: (document): the netlist has no .subckt and no M, R, C or X line: nothing to lay out",
        ],
    ),
    // cdl_bad_slash
    (
        "X1 a b / c d\n",
        &[
            "netlist.sp:1:1: expected nodes, '/' and one subcircuit name after X1, found \"a b / c d\"",
        ],
    ),
];

#[test]
fn every_broken_netlist_gives_its_exact_problems() {
    assert!(CASES.len() >= 30, "{} cases", CASES.len());
    for (text, expected) in CASES {
        assert_eq!(problems(text), *expected, "netlist:\n{text}");
    }
}

#[test]
fn a_byte_that_is_not_utf8_is_located() {
    let mut bytes = b"M1 d g s b nmos w=1u l=1u\nM2 d g s b n".to_vec();
    bytes.push(0xff);
    bytes.extend_from_slice(b"mos w=1u l=1u\n");
    assert_eq!(
        problems_with(&bytes, &SpiceOptions::default()),
        ["netlist.sp:2:13: not UTF-8: byte 0xff; save the netlist as UTF-8 (or ASCII)"]
    );
}

#[test]
fn an_unknown_top_names_the_subcircuits() {
    let options = SpiceOptions {
        top: Some("b"),
        ..SpiceOptions::default()
    };
    assert_eq!(
        problems_with(b".subckt a p\nM1 p p p p nmos w=1u l=1u\n.ends\n", &options),
        ["netlist.sp: (document): no subcircuit named \"b\" (--top); subcircuits: a"]
    );
}

#[test]
fn the_brief_s_example_line_12_column_5() {
    let mut text = String::from("* twelve lines: the bad value is on the last\n");
    for index in 1..=9 {
        text.push_str(&format!("M{index} d g s b nmos w=1u l=1u\n"));
    }
    text.push_str("M10 d g s b nmos l=1u\n+ w=4x\n");
    assert_eq!(
        problems(&text),
        ["netlist.sp:12:5: expected a value for w, found \"4x\""]
    );
}
