//! The functions a value may call, as netlist writers emit them: xschem's SKY130 and GF180
//! transistor symbols write `ad='int((nf+1)/2) * W/nf * 0.29'`, sized designs write
//! `w='max(wmin, 2*wunit)'`. The set is the one ngspice's and HSPICE's parameter expressions
//! share: `int` (toward zero), `nint` (nearest), `floor`, `ceil`, `abs`, `sgn`, `sqrt`,
//! `exp`, `ln`, `log` (natural, as in both simulators), `log10`, `min`, `max`, `pow`.

/// A function a value may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Function {
    Int,
    Nint,
    Floor,
    Ceil,
    Abs,
    Sgn,
    Sqrt,
    Exp,
    Ln,
    Log10,
    Min,
    Max,
    Pow,
}

/// Every function by name (lower case), for lookup and for the message naming them.
const FUNCTIONS: [(&str, Function); 15] = [
    ("int", Function::Int),
    ("nint", Function::Nint),
    ("floor", Function::Floor),
    ("ceil", Function::Ceil),
    ("abs", Function::Abs),
    ("sgn", Function::Sgn),
    ("sqrt", Function::Sqrt),
    ("exp", Function::Exp),
    ("ln", Function::Ln),
    ("log", Function::Ln),
    ("log10", Function::Log10),
    ("min", Function::Min),
    ("max", Function::Max),
    ("pow", Function::Pow),
    ("pwr", Function::Pow),
];

/// What an unknown function's message lists.
pub(crate) const FUNCTION_NAMES: &str =
    "a known function (int nint floor ceil abs sgn sqrt exp ln log log10 min max pow pwr)";

impl Function {
    /// The function called `name` (any case); None when it is not one.
    pub(crate) fn named(name: &str) -> Option<Function> {
        let name = name.to_ascii_lowercase();
        FUNCTIONS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, function)| *function)
    }

    /// How many arguments it takes.
    pub(crate) fn arity(self) -> usize {
        match self {
            Function::Min | Function::Max | Function::Pow => 2,
            _ => 1,
        }
    }

    /// Its value at `args` (as many as `arity`); a result that is not finite (the root of a
    /// negative number, the logarithm of zero) is the caller's to report.
    pub(crate) fn apply(self, args: &[f64]) -> f64 {
        let x = args[0];
        match self {
            Function::Int => x.trunc(),
            Function::Nint => x.round(),
            Function::Floor => x.floor(),
            Function::Ceil => x.ceil(),
            Function::Abs => x.abs(),
            Function::Sgn if x == 0.0 => 0.0,
            Function::Sgn => x.signum(),
            Function::Sqrt => x.sqrt(),
            Function::Exp => x.exp(),
            Function::Ln => x.ln(),
            Function::Log10 => x.log10(),
            Function::Min => x.min(args[1]),
            Function::Max => x.max(args[1]),
            Function::Pow => x.powf(args[1]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let cases = [
            ("int", vec![2.7], 2.0),
            ("INT", vec![-2.7], -2.0),
            ("nint", vec![2.5], 3.0),
            ("floor", vec![-2.5], -3.0),
            ("ceil", vec![2.1], 3.0),
            ("abs", vec![-4.0], 4.0),
            ("sgn", vec![-4.0], -1.0),
            ("sgn", vec![0.0], 0.0),
            ("sqrt", vec![9.0], 3.0),
            ("log10", vec![1000.0], 3.0),
            ("min", vec![1.0, 2.0], 1.0),
            ("max", vec![1.0, 2.0], 2.0),
            ("pow", vec![2.0, 10.0], 1024.0),
        ];
        for (name, args, expected) in cases {
            let function = Function::named(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(function.arity(), args.len(), "{name}");
            assert!((function.apply(&args) - expected).abs() < 1e-12, "{name}");
        }
        assert_eq!(Function::named("foo"), None);
    }

    #[test]
    fn the_message_names_every_function_of_the_table() {
        let names: Vec<&str> = FUNCTIONS.iter().map(|(name, _)| *name).collect();
        assert!(
            FUNCTION_NAMES.ends_with(&format!("({})", names.join(" "))),
            "{FUNCTION_NAMES}"
        );
    }
}
