//! Lines of element kinds Centroid does not lay out, inside the circuit laid out. Sources
//! (V, I, and the controlled and behavioural sources E, F, G, H, B) are stimuli of a
//! testbench, not parts of a layout: they are left out with a warning naming their nodes
//! (a bias they supply comes in through a port). Devices Centroid has no generator for
//! (diodes, bipolar transistors, JFETs, MESFETs, inductors, transmission lines, switches,
//! …) would leave the layout short of what LVS compares it with: they are refused, naming
//! the element and its line. (A line of another letter that calls a subcircuit of the
//! file is read as an instance, by the parser.)

use crate::spice::build::Builder;
use crate::spice::error::SpiceError;
use crate::spice::parser::Foreign;

/// What a line of this letter is, and whether it is a source.
fn kind_of(letter: char) -> (&'static str, bool) {
    match letter {
        'v' => ("a voltage source", true),
        'i' => ("a current source", true),
        'e' | 'f' | 'g' | 'h' => ("a controlled source", true),
        'b' => ("a behavioural source", true),
        'd' => ("a diode", false),
        'q' => ("a bipolar transistor", false),
        'j' => ("a JFET", false),
        'z' => ("a MESFET", false),
        'l' => ("an inductor", false),
        'k' => ("coupled inductors", false),
        't' | 'o' | 'u' | 'y' => ("a transmission line", false),
        's' | 'w' => ("a switch", false),
        _ => ("an element kind SPICE does not define", false),
    }
}

impl Builder<'_, '_> {
    pub(super) fn foreign(&mut self, foreign: &Foreign) {
        let letter = foreign
            .name
            .text
            .chars()
            .next()
            .map_or(' ', |letter| letter.to_ascii_lowercase());
        let (what, source) = kind_of(letter);
        if source {
            let between = match foreign.words.as_slice() {
                [] => String::new(),
                [node] => format!(" at {}", node.text),
                [first, second, ..] => format!(" between {} and {}", first.text, second.text),
            };
            let warning = SpiceError::SourceIgnored {
                name: foreign.name.text.clone(),
                what,
                between,
            };
            self.problems.warning(foreign.name.at, warning);
            return;
        }
        let hint = match letter {
            'd' | 'q' | 'j' | 'z' | 'l' | 'k' | 't' | 'o' | 'u' | 'y' | 's' | 'w' => {
                "; Centroid has no generator for it: lay it out apart and bring its nodes out as ports"
            }
            _ => "; an instance of a subcircuit is written X<name> node… <subcircuit>",
        };
        let error = SpiceError::UnsupportedElement {
            name: foreign.name.text.clone(),
            what,
            hint,
        };
        self.problems.error(foreign.name.at, error);
    }
}
