//! Text put into HTML (the report page) and XML (the `.lyp` layer properties):
//! the five characters with a meaning in markup replaced by their entities, so
//! the text reads the same in an element and in a quoted attribute of either.

/// `text` with `&`, `<`, `>`, `"` and `'` escaped.
pub(crate) fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_markup_character_is_an_entity_and_the_rest_is_kept() {
        assert_eq!(
            escape(r#"M1 & M2 <"a" 'b'> µm²"#),
            "M1 &amp; M2 &lt;&quot;a&quot; &#39;b&#39;&gt; µm²"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;", "escaped once more, not kept");
    }
}
