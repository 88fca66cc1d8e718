//! The user's `testbench.sp` as far as Centroid reads it before anything runs: its
//! `.meas` names (the measures), the instance of the circuit under test (`X… <circuit>`,
//! whose nodes map testbench nodes to the circuit's ports) and the nodes its `.meas`
//! statements name. ngspice reads the rest; a broken testbench fails the simulation
//! with the file and line ngspice names (`sim.run`).

use serde::{Deserialize, Serialize};

use crate::issue::{InputErrors, InputIssue, TextLocation};
use crate::json_inputs::InputFile;

/// The file name a circuit folder holds its testbench under, and the name it has in
/// a candidate's scratch directory.
pub const TESTBENCH_FILE: &str = "testbench.sp";

/// The largest testbench read (bytes).
pub const MAX_TESTBENCH_BYTES: usize = 1 << 20;

/// One `.meas` statement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasureLine {
    /// lower case, as ngspice prints it
    pub name: String,
    pub line: u32,
    /// the testbench nodes its `v(…)`, `vdb(…)`, `vp(…)` … name
    pub nodes: Vec<String>,
}

/// The instance of the circuit under test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DutInstance {
    pub line: u32,
    /// its nodes, in the order of the circuit's ports
    pub nodes: Vec<String>,
}

/// What Centroid reads of a user testbench.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserTestbench {
    pub label: String,
    pub measures: Vec<MeasureLine>,
    pub dut: Option<DutInstance>,
}

/// One logical line (continuations joined, comments dropped) and where it starts.
fn logical_lines(text: &str) -> Vec<(u32, String)> {
    let mut lines: Vec<(u32, String)> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index as u32 + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('*') {
            continue;
        }
        // inline comments: `$ ` and `;` (ngspice's)
        let body = trimmed
            .split(" $")
            .next()
            .unwrap_or_default()
            .split(';')
            .next()
            .unwrap_or_default()
            .trim();
        if let Some(rest) = body.strip_prefix('+') {
            if let Some((_, last)) = lines.last_mut() {
                last.push(' ');
                last.push_str(rest.trim());
            }
            continue;
        }
        if !body.is_empty() {
            lines.push((number, body.to_owned()));
        }
    }
    lines
}

/// The nodes of `v(a)`, `v(a,b)`, `vdb(a)`, `vp(a)`, `vm(a)`, `vr(a)`, `vi(a)` in `text`.
fn voltage_nodes(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    let mut nodes = Vec::new();
    let bytes = lower.as_bytes();
    let mut start = 0;
    while let Some(found) = lower[start..].find('(') {
        let open = start + found;
        let before = &lower[..open];
        let function = before
            .rsplit(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .next()
            .unwrap_or_default();
        let is_voltage = matches!(function, "v" | "vdb" | "vp" | "vm" | "vr" | "vi" | "vph");
        let close = lower[open..].find(')').map(|offset| open + offset);
        if let (true, Some(close)) = (is_voltage, close) {
            for node in text[open + 1..close].split(',') {
                let node = node.trim();
                if !node.is_empty()
                    && !nodes
                        .iter()
                        .any(|known: &String| known.eq_ignore_ascii_case(node))
                {
                    nodes.push(node.to_owned());
                }
            }
        }
        start = open + 1;
        if start >= bytes.len() {
            break;
        }
    }
    nodes
}

impl UserTestbench {
    /// Reads `file` for the circuit `circuit_name`.
    pub fn read(file: &InputFile, circuit_name: &str) -> Result<UserTestbench, InputErrors> {
        if file.bytes.len() > MAX_TESTBENCH_BYTES {
            return Err(InputErrors::single(
                &file.label,
                "",
                format!(
                    "the testbench is {} bytes; at most {MAX_TESTBENCH_BYTES} are read",
                    file.bytes.len()
                ),
            ));
        }
        let text = std::str::from_utf8(&file.bytes).map_err(|error| {
            InputErrors::single(
                &file.label,
                "",
                format!("the testbench is not UTF-8 text: {error}"),
            )
        })?;
        let mut measures = Vec::new();
        let mut dut = None;
        for (line, body) in logical_lines(text) {
            let tokens: Vec<&str> = body.split_whitespace().collect();
            let first = tokens[0].to_ascii_lowercase();
            if (first == ".meas" || first == ".measure") && tokens.len() >= 3 {
                measures.push(MeasureLine {
                    name: tokens[2].to_ascii_lowercase(),
                    line,
                    nodes: voltage_nodes(&body),
                });
            } else if first.starts_with('x') && dut.is_none() {
                let positional: Vec<&str> = tokens[1..]
                    .iter()
                    .take_while(|token| !token.contains('='))
                    .copied()
                    .collect();
                if let Some((subckt, nodes)) = positional.split_last()
                    && subckt.eq_ignore_ascii_case(circuit_name)
                {
                    dut = Some(DutInstance {
                        line,
                        nodes: nodes.iter().map(|node| (*node).to_owned()).collect(),
                    });
                }
            }
        }
        Ok(UserTestbench {
            label: file.label.clone(),
            measures,
            dut,
        })
    }

    /// The measure names, in file order.
    pub fn measure_names(&self) -> Vec<&str> {
        self.measures
            .iter()
            .map(|measure| measure.name.as_str())
            .collect()
    }

    /// The port of the circuit (of `ports`, in order) a testbench node is wired to.
    pub fn port_of<'a>(&self, ports: &'a [String], node: &str) -> Option<&'a str> {
        let dut = self.dut.as_ref()?;
        dut.nodes
            .iter()
            .position(|wired| wired.eq_ignore_ascii_case(node))
            .and_then(|index| ports.get(index))
            .map(String::as_str)
    }

    /// The testbench node wired to `port` (of `ports`).
    pub fn node_of(&self, ports: &[String], port: &str) -> Option<&str> {
        let index = ports.iter().position(|known| known == port)?;
        self.dut.as_ref()?.nodes.get(index).map(String::as_str)
    }

    /// The ports whose nodes a `.meas` statement names.
    pub fn measured_ports<'a>(&self, ports: &'a [String]) -> Vec<&'a str> {
        let mut found: Vec<&str> = Vec::new();
        for node in self.measures.iter().flat_map(|measure| &measure.nodes) {
            if let Some(port) = self.port_of(ports, node)
                && !found.contains(&port)
            {
                found.push(port);
            }
        }
        found
    }

    /// An issue at `line` of the testbench.
    pub fn issue_at(&self, line: u32, message: impl Into<String>) -> InputIssue {
        InputIssue {
            file: self.label.clone(),
            pointer: String::new(),
            message: message.into(),
            location: Some(TextLocation { line, column: 1 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> UserTestbench {
        let file = InputFile {
            label: "tb/testbench.sp".into(),
            bytes: text.as_bytes().to_vec(),
        };
        UserTestbench::read(&file, "ota5").unwrap()
    }

    #[test]
    fn measures_dut_and_nodes() {
        let testbench = read(
            "* a testbench\nVdd vdd 0 1.8\nXdut a b\n+ o vb vdd 0 OTA5 m=1\n.ac dec 10 1 1e9\n\
             .meas ac gain_db find vdb(o) at=1 $ low-frequency gain\n.MEASURE AC UGBW_HZ when vdb(o)=0\n\
             .meas ac x param='gain_db*2'\n.end\n",
        );
        assert_eq!(testbench.measure_names(), ["gain_db", "ugbw_hz", "x"]);
        assert_eq!(testbench.measures[1].line, 7);
        let dut = testbench.dut.clone().unwrap();
        assert_eq!((dut.line, dut.nodes.len()), (3, 6));
        let ports: Vec<String> = ["inp", "inn", "out", "vbias", "vdd", "vss"]
            .map(String::from)
            .to_vec();
        assert_eq!(testbench.port_of(&ports, "o"), Some("out"));
        assert_eq!(testbench.node_of(&ports, "vss"), Some("0"));
        assert_eq!(testbench.measured_ports(&ports), ["out"]);
    }

    #[test]
    fn a_testbench_without_the_circuit_has_no_dut() {
        let testbench = read("Xdut a b other\n.meas tran t find v(a) at=1n\n");
        assert!(testbench.dut.is_none());
        assert_eq!(testbench.measures[0].nodes, ["a"]);
    }
}
