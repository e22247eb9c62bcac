//! One word's source text, read with bash's quoting rules: quote removal, and what stays
//! unknown until the word is expanded at run time (`$NAME`, globs, a leading `~`). Any
//! other expansion, and any character the grammar and bash might read differently, makes
//! the word not plain, with the reason.

use super::parse::Word;

/// Lexes one word's source text with bash's rules: quote removal, and what stays unknown
/// until it runs. Returns the word and, if it is not plain, why.
pub(super) fn lex_word(text: &str) -> (Word, Option<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut value = String::new();
    let mut runtime = false;
    let mut splits = false;
    let mut unclear: Option<String> = None;
    let note = |reason: &str, unclear: &mut Option<String>| {
        if unclear.is_none() {
            *unclear = Some(reason.to_owned());
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => match chars.get(i + 1) {
                Some('\n') => i += 2,
                Some(&next) => {
                    value.push(next);
                    i += 2;
                }
                None => {
                    note("ends with a lone backslash", &mut unclear);
                    i += 1;
                }
            },
            '\'' => {
                let Some(len) = chars[i + 1..].iter().position(|&c| c == '\'') else {
                    note("has an unterminated quote", &mut unclear);
                    break;
                };
                value.extend(&chars[i + 1..i + 1 + len]);
                i += len + 2;
            }
            '"' => {
                i += 1;
                let mut closed = false;
                while i < chars.len() {
                    match chars[i] {
                        '"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        '\\' => match chars.get(i + 1) {
                            Some('\n') => i += 2,
                            Some(&next @ ('$' | '`' | '"' | '\\')) => {
                                value.push(next);
                                i += 2;
                            }
                            _ => {
                                value.push('\\');
                                i += 1;
                            }
                        },
                        '$' => {
                            let (len, reason) = expansion(&chars[i..]);
                            match reason {
                                Some(reason) => note(reason, &mut unclear),
                                None => runtime = true,
                            }
                            value.extend(&chars[i..i + len]);
                            i += len;
                        }
                        '`' => {
                            note("uses a command substitution `..`", &mut unclear);
                            value.push('`');
                            i += 1;
                        }
                        other => {
                            value.push(other);
                            i += 1;
                        }
                    }
                }
                if !closed {
                    note("has an unterminated quote", &mut unclear);
                }
            }
            '$' => {
                let (len, reason) = expansion(&chars[i..]);
                match reason {
                    Some(reason) => note(reason, &mut unclear),
                    None => {
                        runtime = true;
                        splits = true;
                    }
                }
                value.extend(&chars[i..i + len]);
                i += len;
            }
            '`' => {
                note("uses a command substitution `..`", &mut unclear);
                value.push(c);
                i += 1;
            }
            '*' | '?' => {
                runtime = true;
                splits = true;
                value.push(c);
                i += 1;
            }
            '[' if chars[i + 1..].contains(&']') => {
                runtime = true;
                splits = true;
                value.push(c);
                i += 1;
            }
            '~' if i == 0 => {
                runtime = true;
                value.push(c);
                i += 1;
            }
            '{' if brace_expansion(&chars[i..]) => {
                note("uses a brace expansion {a,b}", &mut unclear);
                value.push(c);
                i += 1;
            }
            '#' if i == 0 => {
                note(
                    "has a word the parser and bash may read differently (#)",
                    &mut unclear,
                );
                value.push(c);
                i += 1;
            }
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => {
                note(
                    "has a word the parser and bash may split differently",
                    &mut unclear,
                );
                value.push(c);
                i += 1;
            }
            other => {
                value.push(other);
                i += 1;
            }
        }
    }
    let word = if runtime || unclear.is_some() {
        Word::Runtime {
            text: text.to_owned(),
            splits: splits || unclear.is_some(),
        }
    } else {
        Word::Literal(value)
    };
    (word, unclear)
}

/// At a `$`: how many characters the expansion takes, and why it is not plain if it is
/// not `$NAME` or `${NAME}`.
fn expansion(chars: &[char]) -> (usize, Option<&'static str>) {
    let is_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    match chars.get(1) {
        Some(&c) if is_start(c) => {
            let len = 1 + chars[1..].iter().take_while(|&&c| is_name(c)).count();
            (len, None)
        }
        Some('{') => {
            let body: Vec<char> = chars[2..]
                .iter()
                .take_while(|&&c| c != '}')
                .copied()
                .collect();
            let closed = chars.get(2 + body.len()) == Some(&'}');
            let plain = closed
                && body.first().is_some_and(|&c| is_start(c))
                && body.iter().all(|&c| is_name(c));
            let len = (2 + body.len() + usize::from(closed)).min(chars.len());
            if plain {
                (len, None)
            } else {
                (
                    len,
                    Some("uses a parameter expansion with an operator ${..}"),
                )
            }
        }
        Some('(') if chars.get(2) == Some(&'(') => (1, Some("uses arithmetic $(( .. ))")),
        Some('(') => (1, Some("uses a command substitution $(..)")),
        Some('\'') => (1, Some("uses ANSI-C quoting $'..'")),
        Some('"') => (1, Some("uses locale quoting $\"..\"")),
        Some('[') => (1, Some("uses arithmetic $[ .. ]")),
        Some(_) => (
            2.min(chars.len()),
            Some("uses a special parameter ($1, $@, $?, ...)"),
        ),
        None => (1, Some("ends with a lone $")),
    }
}

/// At an unquoted `{`: whether bash would expand it (`{a,b}`, `{1..3}`).
fn brace_expansion(chars: &[char]) -> bool {
    let mut depth = 0usize;
    for (k, &c) in chars.iter().enumerate() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let body: String = chars[1..k].iter().collect();
                    return body.contains(',') || body.contains("..");
                }
            }
            '\\' | '\'' | '"' | '$' => return true,
            _ => {}
        }
    }
    false
}
