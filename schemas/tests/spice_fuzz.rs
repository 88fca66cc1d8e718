//! The SPICE reader never panics: random bytes, valid netlists mutated at random (bytes
//! deleted, SPICE punctuation and keywords inserted, lines repeated), and pathological
//! nesting all come back as a result, never a crash or a stack overflow.

use std::sync::LazyLock;

use centroid_schemas::spice::load_spice_netlist;
use centroid_schemas::{DeviceType, DrcRuleSet, InputFile, ModelMap, SpiceOptions, load_drc_rules};
use proptest::prelude::*;

/// The SKY130 rule set: R and C given by value are sized from it.
static SKY130: LazyLock<DrcRuleSet> = LazyLock::new(|| {
    let file = InputFile {
        label: "sky130.json".to_owned(),
        bytes: include_bytes!("../../examples/pdk/sky130.json").to_vec(),
    };
    load_drc_rules(&file).unwrap().value
});

const CORPUS: &[&str] = &[
    include_str!("../../examples/ota5_spice/netlist.sp"),
    ".global vdd vss\n.param w0=1u\n.subckt inv a y params: w=1u\nmp y a vdd vdd pmos w={2*w} l=0.5u\nmn y a vss vss nmos w=w l=0.5u\n.ends\n.subckt buf in out\nX1 in mid inv w=w0\nX2 mid out / inv\n.ends buf\n.end\n",
    "R1 a b 10k $[rppd] $W=1u $L=10u\nC1 a b 1p cap w=10u l=10u\n+ m=2 ; a comment\n* c\nXM1 d g s s sky130_fd_pr__nfet_01v8 L=0.15u W=1u nf=2 mult=1\n",
    ".subckt a p q\nM1 p q 0 0 nch w='1u*(2+1)' l=.5u nf=2 m=1\nX1 p q b\n.ends\n.subckt b p q\nM1 p q 0 0 pch w=1u l=1u\n.ends\n",
    "// a netlist as found\n.subckt stage in out vdd vss \\\n  wn=1u\n.param k=2\nM1 out in vss nmos w={wn*k} l=0.5u\nM2 out in vdd pmos w=2u l=0.5u\nR1 out in 10k\nC1 out vss 50f\nI1 vdd out 10u\n.ends\n.subckt top a b vdd vss\nX1 a b vdd vss stage m=3 k=4\nI2 b a vdd vss stage\n.ends\n",
];

/// Pieces a mutation inserts: what a SPICE reader finds hard.
const PIECES: &[&str] = &[
    "{",
    "}",
    "'",
    "=",
    "+",
    "\n+",
    "\n",
    " ",
    "$",
    "$[",
    ";",
    "*",
    "/",
    "(",
    ")",
    ".subckt",
    ".ends",
    ".param a=a",
    ".param",
    ".global",
    ".end",
    ".control",
    "X1 ",
    "M9 ",
    "params:",
    "1e",
    "meg",
    "--",
    "0",
    "\u{ff}",
    "ö",
    "\t",
    "\r",
    "4x",
    "{{{{",
    "a=b b=a",
    "nf=0",
    "m=1e9",
    "w=-1",
    "m=3",
    " \\\n",
    "//",
    "I1 a 0 1u\n",
    "D1 a b dmod\n",
    "R2 a b 1k\n",
    "C2 a b 1p\n",
    "M9 a b c nmos w=1u l=1u\n",
];

fn read(bytes: &[u8], options: &SpiceOptions<'_>) {
    let file = InputFile {
        label: "fuzz.sp".to_owned(),
        bytes: bytes.to_vec(),
    };
    // Any result is fine; a panic fails the test. A success must be a consistent model.
    if let Ok((loaded, json)) = load_spice_netlist(&file, options) {
        assert!(!loaded.value.devices.is_empty());
        assert!(serde_json::from_slice::<serde_json::Value>(&json.bytes).is_ok());
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete { at: usize, length: usize },
    Insert { at: usize, piece: usize },
    RepeatLine { at: usize },
    Byte { at: usize, byte: u8 },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..12usize).prop_map(|(at, length)| Mutation::Delete { at, length }),
        (any::<usize>(), 0..PIECES.len()).prop_map(|(at, piece)| Mutation::Insert { at, piece }),
        any::<usize>().prop_map(|at| Mutation::RepeatLine { at }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Byte { at, byte }),
    ]
}

fn mutate(text: &str, mutations: &[Mutation]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for mutation in mutations {
        let length = bytes.len().max(1);
        match *mutation {
            Mutation::Delete { at, length: count } => {
                let start = at % length;
                let end = (start + count).min(bytes.len());
                bytes.drain(start.min(end)..end);
            }
            Mutation::Insert { at, piece } => {
                let at = at % (bytes.len() + 1);
                bytes.splice(at..at, PIECES[piece].bytes());
            }
            Mutation::RepeatLine { at } => {
                let text = String::from_utf8_lossy(&bytes).into_owned();
                let lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let line = lines[at % lines.len()];
                    bytes.extend_from_slice(format!("\n{line}\n").as_bytes());
                }
            }
            Mutation::Byte { at, byte } => {
                if !bytes.is_empty() {
                    let index = at % bytes.len();
                    bytes[index] = byte;
                }
            }
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        read(&bytes, &SpiceOptions::default());
    }

    #[test]
    fn random_printable_text_never_panics(text in proptest::collection::vec(
        prop_oneof![Just(' '), Just('\n'), Just('+'), Just('='), Just('{'), Just('}'), Just('\''),
                    Just('.'), Just('*'), Just('$'), Just('/'), proptest::char::range('0', 'z')],
        0..400,
    )) {
        let text: String = text.into_iter().collect();
        read(text.as_bytes(), &SpiceOptions::default());
    }

    #[test]
    fn mutated_valid_netlists_never_panic(
        index in 0..CORPUS.len(),
        mutations in proptest::collection::vec(mutation(), 1..8),
        top in proptest::option::of(prop_oneof![Just("ota5"), Just("inv"), Just("b"), Just("")]),
    ) {
        let models = ModelMap::new([("rppd", DeviceType::Capacitor), ("nch", DeviceType::Pmos)]);
        let options = SpiceOptions {
            top,
            rules: Some(&SKY130),
            rule_set_models: Some(&models),
            model_map: None,
        };
        read(&mutate(CORPUS[index], &mutations), &options);
    }
}

#[test]
fn the_corpus_itself_reads() {
    for text in CORPUS {
        let file = InputFile {
            label: "corpus.sp".to_owned(),
            bytes: text.as_bytes().to_vec(),
        };
        let options = SpiceOptions {
            rules: Some(&SKY130),
            ..SpiceOptions::default()
        };
        if let Err(errors) = load_spice_netlist(&file, &options) {
            panic!("{text}\n{errors}");
        }
    }
}

#[test]
fn pathological_nesting_is_an_error_not_a_stack_overflow() {
    let deep_parentheses = format!(
        "M1 d g s b nmos w={{{}1u{}}} l=1u\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let long_sum = format!("M1 d g s b nmos w={{{}1u}} l=1u\n", "1u+".repeat(20000));
    let mut param_chain = String::new();
    for index in 0..5000 {
        param_chain.push_str(&format!(".param p{index}='p{}+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u+1u'\n", index + 1));
    }
    param_chain.push_str(".param p5000=1u\nM1 d g s b nmos w=p0 l=1u\n");
    let mut hierarchy = String::new();
    for index in 0..5000 {
        hierarchy.push_str(&format!(".subckt c{index} a\nX1 a c{}\n.ends\n", index + 1));
    }
    hierarchy.push_str(".subckt c5000 a\nM1 a a a a nmos w=1u l=1u\n.ends\n");
    hierarchy.push_str(".subckt top a\nX1 a c0\n.ends\n");
    for text in [deep_parentheses, long_sum, param_chain, hierarchy] {
        let file = InputFile {
            label: "deep.sp".to_owned(),
            bytes: text.into_bytes(),
        };
        let errors = load_spice_netlist(&file, &SpiceOptions::default()).unwrap_err();
        assert!(!errors.issues.is_empty());
    }
}
