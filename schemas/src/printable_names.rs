//! Names of a netlist are single-line text: device ids, nets, cells and ports
//! reach prompts, reports and logs, where a line break could forge a line.

use crate::issue::IssueSink;

/// True when `name` has no control character (C0, DEL, C1) and no line or paragraph
/// separator; else reports the first one. Names reach prompts, reports and logs as
/// text: one with a line break could forge a line there.
pub(crate) fn check_printable(name: &str, pointer: &str, what: &str, sink: &mut IssueSink) -> bool {
    let Some((position, character)) = name
        .chars()
        .enumerate()
        .find(|(_, character)| is_forbidden_in_names(*character))
    else {
        return true;
    };
    sink.push(
        pointer,
        format!(
            "{what} {name:?} contains the control character U+{:04X} at character {}; names \
             are single-line text: use letters, digits and punctuation",
            u32::from(character),
            position + 1
        ),
    );
    false
}

/// Control characters (C0, DEL, C1) and the Unicode line and paragraph separators.
fn is_forbidden_in_names(character: char) -> bool {
    character.is_control() || matches!(character, '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_line_separators_are_refused_with_the_name_escaped() {
        let mut sink = IssueSink::new("netlist.json");
        assert!(check_printable("M1_a-b.c<3>", "/p", "device id", &mut sink));
        for name in [
            "M1\n## Answer",
            "a\tb",
            "x\u{0}",
            "y\u{7f}",
            "z\u{85}",
            "w\u{2028}",
        ] {
            assert!(
                !check_printable(name, "/p", "device id", &mut sink),
                "{name:?}"
            );
        }
        let issues = sink.into_issues();
        assert_eq!(issues.len(), 6);
        assert!(issues.iter().all(|issue| !issue.message.contains('\n')));
        assert!(
            issues[0].message.contains("\"M1\\n## Answer\""),
            "{}",
            issues[0].message
        );
    }
}
