//! What can be wrong in a SPICE/CDL netlist, each message saying what was expected.
//! Every problem carries the line and column it was found at; [`Problems`] collects them
//! all so that one run reports the whole file.

use crate::issue::{InputIssue, TextLocation};

/// One problem of a SPICE netlist (an error unless pushed as a warning).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpiceError {
    // ---- characters and lines ----
    #[error("file is {size_mib:.1} MiB; an input file may be at most {limit_mib} MiB")]
    TooLarge { size_mib: f64, limit_mib: u64 },
    #[error("not UTF-8: byte 0x{byte:02x}; save the netlist as UTF-8 (or ASCII)")]
    NotUtf8 { byte: u8 },
    #[error("a '+' continuation line must follow the statement it continues")]
    ContinuationWithoutStatement,
    #[error(
        "unterminated {open}: expected a closing {close} on this line or its '+' continuation lines"
    )]
    Unterminated {
        open: &'static str,
        close: &'static str,
    },
    #[error("unexpected '}}' without an opening '{{'")]
    UnmatchedBrace,

    // ---- statements ----
    #[error("expected an element (M, R, C or X) or a dot statement, found \"{found}\"")]
    NotAStatement { found: String },
    #[error(
        "unsupported element \"{name}\" ({what}): Centroid lays out M (MOS), R, C and X (subcircuit) lines{hint}"
    )]
    UnsupportedElement {
        name: String,
        what: &'static str,
        hint: &'static str,
    },
    #[error(
        "{name} ({what}{between}) is not laid out: a source belongs to a testbench; what it supplies comes in through a port of the circuit"
    )]
    SourceIgnored {
        name: String,
        what: &'static str,
        between: String,
    },
    #[error(
        "{name} is read as an instance of subcircuit {subckt}: an instance line starts with X (X{name} …)"
    )]
    InstanceWithoutX { name: String, subckt: String },
    #[error("expected {what} after {element}, found {found}")]
    ExpectedItems {
        what: String,
        element: String,
        found: String,
    },
    #[error("unexpected \"{found}\" in {element}: {why}")]
    Unexpected {
        found: String,
        element: String,
        why: String,
    },
    #[error("expected a value for {name} after '='")]
    MissingValue { name: String },
    #[error("unexpected '=': expected name=value")]
    StrayEquals,
    #[error("expected name=value after the parameters of {element}, found \"{found}\"")]
    PositionalAfterParams { element: String, found: String },
    #[error("{name} is given twice on {element}")]
    RepeatedParam { name: String, element: String },

    // ---- values and expressions ----
    #[error("expected a value for {name}, found \"{found}\"")]
    BadValue { name: String, found: String },
    #[error("expected {expected} in the value of {name}, found {found}")]
    BadExpression {
        name: String,
        expected: &'static str,
        found: String,
    },
    #[error(
        "unknown parameter \"{param}\" in the value of {name}; define it with .param {param}=…"
    )]
    UnknownParam { param: String, name: String },
    #[error("parameter \"{param}\" depends on itself: {cycle}")]
    ParamCycle { param: String, cycle: String },
    #[error("{what}")]
    TooDeep { what: &'static str },
    #[error("division by zero in the value of {name}")]
    DivisionByZero { name: String },
    #[error("the value of {name} is not a finite number")]
    NotFinite { name: String },

    // ---- dot statements ----
    #[error(".subckt needs a name: .subckt NAME PORT…")]
    SubcktWithoutName,
    #[error(
        ".subckt {name} inside .subckt {outer}: expected .ends before a new .subckt (nested definitions are not supported)"
    )]
    NestedSubckt { name: String, outer: String },
    #[error(".ends without an open .subckt")]
    EndsWithoutSubckt,
    #[error(
        ".ends {found} ends subcircuit {expected}, the one open (a name after .ends should repeat it)"
    )]
    EndsNameMismatch { expected: String, found: String },
    #[error("subcircuit \"{name}\" is not closed: expected .ends before the end of the file")]
    UnclosedSubckt { name: String },
    #[error(
        "subcircuit \"{name}\" is defined twice (first at line {first_line}); subcircuit names are case-insensitive"
    )]
    DuplicateSubckt { name: String, first_line: u32 },
    #[error("port \"{port}\" is listed twice on .subckt {subckt}")]
    DuplicatePort { port: String, subckt: String },
    #[error("expected name=value after .param, found {found}")]
    EmptyParam { found: String },
    #[error("{statement} needs {what}")]
    EmptyStatement {
        statement: String,
        what: &'static str,
    },
    #[error(
        ".{name} is ignored: Centroid reads .subckt, .ends, .param, .global, .model, .option scale and .end"
    )]
    IgnoredDirective { name: String },
    #[error(
        ".{name} {target} is skipped: Centroid reads this one file (model names are mapped to device types, no model file is read); subcircuits and parameters the skipped file defines must be written here"
    )]
    NotFollowed { name: String, target: String },

    // ---- instances and the hierarchy ----
    #[error(
        "duplicate name \"{name}\" in {scope} (first at line {first_line}); names are case-insensitive"
    )]
    DuplicateName {
        name: String,
        scope: String,
        first_line: u32,
    },
    #[error(
        "{element} connects {found} node{plural} but subcircuit {subckt} has {expected} port{ports_plural} ({ports})"
    )]
    PortCount {
        element: String,
        found: usize,
        plural: &'static str,
        subckt: String,
        expected: usize,
        ports_plural: &'static str,
        ports: String,
    },
    #[error(
        "unknown subcircuit \"{name}\" for {element}; defined subcircuits: {defined}. A device model called as X needs a mapping (the rule set's \"models\" table, schema_version 1.3.0, or --model-map FILE); Centroid draws MOS transistors, resistors and capacitors, so a cell defined elsewhere (a standard cell, a diode, a bipolar transistor, an inductor) cannot be laid out"
    )]
    UnknownSubckt {
        name: String,
        element: String,
        defined: String,
    },
    #[error(
        "{element} calls {subckt} with {found}, but this file does not define {subckt} and its name reads as a {device}, which takes {expected}: a cell defined elsewhere (a standard cell, a PDK cell with more terminals) cannot be laid out; define it in this file, or map its name (--model-map) to the device it is"
    )]
    NotThatDevice {
        element: String,
        subckt: String,
        device: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error(
        "{element} = {value}: a {quantity} of zero or less is no part that can be drawn (an extracted netlist's parasitic, e.g. magic's negative coupling capacitors): lay out the schematic's netlist, or extract without parasitics (magic: ext2spice cthresh infinite rthresh infinite)"
    )]
    NoPart {
        element: String,
        value: String,
        quantity: &'static str,
    },
    #[error(
        "{name} (a Spectre {kind} statement) is skipped: analyses and options belong to a testbench"
    )]
    AnalysisIgnored { name: String, kind: String },
    #[error("subcircuit {subckt} has no parameter \"{param}\"; its parameters: {known}")]
    UnknownInstanceParam {
        subckt: String,
        param: String,
        known: String,
    },
    #[error(
        "{element}: m={m} on a subcircuit instance must be a whole number of parallel copies from 1 to {max}"
    )]
    SubcktMultiplicity {
        element: String,
        m: String,
        max: u32,
    },
    #[error("subcircuit {subckt} contains itself: {cycle}")]
    HierarchyCycle { subckt: String, cycle: String },
    #[error("no subcircuit named \"{name}\" (--top); subcircuits: {defined}")]
    UnknownTop { name: String, defined: String },
    #[error("the netlist has no .subckt and no M, R, C or X line: nothing to lay out")]
    NothingToLayOut,
    #[error("--top {name} names a subcircuit, but the netlist defines none")]
    TopWithoutSubckts { name: String },
    #[error(
        "lines outside .subckt are ignored (e.g. a testbench): the layout is of subcircuit {top}"
    )]
    TopLevelIgnored { top: String },

    // ---- devices ----
    #[error("{element}: expected {field}=… ({meaning}), e.g. {example}")]
    MissingSize {
        element: String,
        field: &'static str,
        meaning: &'static str,
        example: String,
    },
    #[error(
        "{element}: nfin={nfin} sizes a FinFET, which a planar rule set does not draw; give w=… (the total gate width of one instance over its nf fingers), e.g. w=1u"
    )]
    FinCount { element: String, nfin: String },
    #[error(
        "{element} has no bulk node: its bulk is connected to {net}, {why}; write the bulk as the fourth node to choose another"
    )]
    BulkDefaulted {
        element: String,
        net: String,
        why: &'static str,
    },
    #[error("{element} = {value} is drawn as {drawn} ({how})")]
    PassiveSized {
        element: String,
        value: String,
        drawn: String,
        how: &'static str,
    },
    #[error("{element} = {value} is given by its value only: {why}")]
    PassiveUnsized {
        element: String,
        value: String,
        why: String,
    },
    #[error(
        "{element}: nr={fingers} describes a finger (MOM) capacitor, drawn as the metal-1 and metal-2 plates of its value: {why}"
    )]
    FingerCapacitor {
        element: String,
        fingers: String,
        why: String,
    },
    #[error(
        "{element}: the nr={fingers} finger capacitor is {value} by the rule set's same-layer coupling of {metals} (neighbouring fingers only: a lower bound), drawn as metal-1 and metal-2 plates of that value"
    )]
    FingerCapacitorValue {
        element: String,
        fingers: String,
        value: String,
        metals: String,
    },
    #[error("{element}: series={series} must be a whole number of resistor segments, 1 or more")]
    SeriesSegments { element: String, series: String },
    #[error("{element}: series={series} segments in series are drawn as {drawn}")]
    SeriesDrawnAsOneBar {
        element: String,
        series: String,
        drawn: String,
    },
    #[error(
        "{element}: {name}={value} is not counted: m={m} is the instance's multiplicity ({name} is the model's own parameter, as SKY130's mismatch factor that xschem writes beside m)"
    )]
    MultiplierBesideM {
        element: String,
        name: String,
        value: String,
        m: String,
    },
    #[error(
        "{element}: no w given: the bar is {width} wide, as its cell's name {model} says — so is every line of {model} without w (write w=… to say otherwise)"
    )]
    WidthFromModelName {
        element: String,
        model: String,
        width: String,
    },
    #[error(
        "{element}: w = {width} over nf = {nf} would be fingers wider than 1 mm: drawn as nf = {folded} fingers of {finger} (the same total width)"
    )]
    FoldedIntoFingers {
        element: String,
        width: String,
        nf: String,
        folded: u32,
        finger: String,
    },
    #[error("parameter {name} of {element} is ignored: Centroid reads {known}")]
    IgnoredParam {
        name: String,
        element: String,
        known: &'static str,
    },
    #[error("{element}: {why}")]
    Model { element: String, why: String },
    #[error(
        "every w and l is written without a scale ({range}), which in metres no device measures: read as micrometres, as with the SKY130 models' .option scale=1e-6 (write .option scale=1e-6, or units such as 1u, to say so)"
    )]
    LengthsInMicrometres { range: String },
}

/// Problems collected while a netlist is read, in the order found.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    pub errors: Vec<(Option<TextLocation>, SpiceError)>,
    pub warnings: Vec<(Option<TextLocation>, SpiceError)>,
    /// An earlier stage found errors (kept elsewhere).
    earlier_errors: bool,
}

impl Problems {
    /// Problems of a later stage, knowing whether the earlier ones had errors.
    pub fn after(earlier: &Problems) -> Self {
        Self {
            earlier_errors: earlier.has_errors(),
            ..Self::default()
        }
    }

    pub fn error(&mut self, at: TextLocation, error: SpiceError) {
        self.errors.push((Some(at), error));
    }

    /// A problem of the whole file (no line to point at).
    pub fn file_error(&mut self, error: SpiceError) {
        self.errors.push((None, error));
    }

    pub fn warning(&mut self, at: TextLocation, warning: SpiceError) {
        self.warnings.push((Some(at), warning));
    }

    /// The problems of a later stage, after these.
    pub fn absorb(&mut self, other: Problems) {
        self.errors.extend(other.errors);
        self.warnings.extend(other.warnings);
    }

    pub fn has_errors(&self) -> bool {
        self.earlier_errors || !self.errors.is_empty()
    }

    /// The problems as input issues of `file`, sorted by position, each reported once.
    pub fn into_issues(self, file: &str) -> (Vec<InputIssue>, Vec<InputIssue>) {
        (issues(file, self.errors), issues(file, self.warnings))
    }
}

fn issues(file: &str, problems: Vec<(Option<TextLocation>, SpiceError)>) -> Vec<InputIssue> {
    let mut issues: Vec<InputIssue> = problems
        .into_iter()
        .map(|(location, problem)| InputIssue {
            file: file.to_owned(),
            pointer: String::new(),
            message: problem.to_string(),
            location,
        })
        .collect();
    sort_and_dedup(&mut issues);
    issues
}

/// File-level issues first, then by line and column; the same message at the same place once
/// (a subcircuit instantiated with several parameter sets is checked once per set).
pub(crate) fn sort_and_dedup(issues: &mut Vec<InputIssue>) {
    issues.sort_by_key(|issue| issue.location);
    let mut seen = std::collections::HashSet::new();
    issues.retain(|issue| {
        seen.insert((issue.location, issue.pointer.clone(), issue.message.clone()))
    });
}
