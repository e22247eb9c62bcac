//! The display form of text a person approves: what a terminal would hide or move is shown
//! as an escape, so a prompt cannot look like another command.
//!
//! Control characters (`\r`, ESC, backspace, ...), C1 controls, bidirectional overrides and
//! zero-width characters become `\r`, `\x1b`, `\u{202e}`; newlines and tabs stay, since
//! multi-line commands are shown as written.

/// Whether `c` is invisible or reorders text on a display (beyond the control characters).
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{061c}'
            | '\u{feff}'
            | '\u{00ad}'
    )
}

/// One character as an escape (for characters that must not be shown raw).
pub fn escape_char(c: char) -> String {
    match c {
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        '\n' => "\\n".to_owned(),
        '\0' => "\\0".to_owned(),
        c if (c as u32) < 0x100 => format!("\\x{:02x}", c as u32),
        c => format!("\\u{{{:x}}}", c as u32),
    }
}

/// `text` with every control or invisible character (but newline and tab) escaped, and
/// backslashes that would make an escape ambiguous left as they are.
pub fn display_form(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && c != '\n' && c != '\t') || is_invisible(c) {
            shown.push_str(&escape_char(c));
        } else {
            shown.push(c);
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_characters_are_shown_as_escapes() {
        let cases: &[(&str, &str)] = &[
            ("ls -la", "ls -la"),
            ("ls \r# ; touch P", "ls \\r# ; touch P"),
            ("echo \u{1b}[2Kok", "echo \\x1b[2Kok"),
            ("a\u{8}\u{8}rm", "a\\x08\\x08rm"),
            ("echo \u{202e}txt.exe", "echo \\u{202e}txt.exe"),
            ("x\u{200b}y", "x\\u{200b}y"),
            ("line1\nline2\tend", "line1\nline2\tend"),
            ("\u{85}next", "\\x85next"),
            ("caf\u{e9} \u{4e2d}", "caf\u{e9} \u{4e2d}"),
        ];
        for (raw, shown) in cases {
            assert_eq!(display_form(raw), *shown, "{raw:?}");
        }
    }
}
