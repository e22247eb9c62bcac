//! One word's source text, read with bash's quoting rules: quote removal, and what stays
//! unknown until the word is expanded at run time (`$NAME`, globs, a leading `~`). Any
//! other expansion, and any character the grammar and bash might read differently, makes
//! the word not plain, with the reason.

use super::parse::Word;

/// Lexes one word's source text with bash's rules: quote removal, and what stays unknown
/// until it runs. Returns the word and, if it is not plain, why.
pub(super) fn lex_word(text: &str) -> (Word, Option<String>) {
    let chars: Vec<char> = text.chars().collect();
    // Both looked up once per word, so a word of 100 000 `{` or `[` costs no more than
    // one of 100 000 letters.
    let expands = brace_expansions(&chars);
    let last_close = chars.iter().rposition(|&c| c == ']');
    let mut lex = WordLex::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => match chars.get(i + 1) {
                Some('\n') => i += 2,
                Some(&next) => {
                    lex.value.push(next);
                    i += 2;
                }
                None => {
                    lex.note("ends with a lone backslash");
                    i += 1;
                }
            },
            '\'' => {
                let Some(len) = chars[i + 1..].iter().position(|&c| c == '\'') else {
                    lex.note("has an unterminated quote");
                    break;
                };
                lex.value.extend(&chars[i + 1..i + 1 + len]);
                i += len + 2;
            }
            '"' => i = lex.double_quoted(&chars, i + 1),
            '$' => {
                i += lex.expansion(&chars[i..], true);
            }
            '`' => {
                lex.note("uses a command substitution `..`");
                lex.value.push(c);
                i += 1;
            }
            '*' | '?' => {
                lex.expands_at_run_time(c, true);
                i += 1;
            }
            '[' if last_close.is_some_and(|close| close > i) => {
                lex.expands_at_run_time(c, true);
                i += 1;
            }
            '~' if i == 0 => {
                lex.expands_at_run_time(c, false);
                i += 1;
            }
            '{' if expands[i] => {
                lex.note("uses a brace expansion {a,b}");
                lex.value.push(c);
                i += 1;
            }
            '#' if i == 0 => {
                lex.note("has a word the parser and bash may read differently (#)");
                lex.value.push(c);
                i += 1;
            }
            ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => {
                lex.note("has a word the parser and bash may split differently");
                lex.value.push(c);
                i += 1;
            }
            other => {
                lex.value.push(other);
                i += 1;
            }
        }
    }
    lex.finish(text)
}

/// What lexing a word has found so far.
#[derive(Default)]
struct WordLex {
    /// The word with its quotes removed.
    value: String,
    /// A part is only known at run time.
    runtime: bool,
    /// That part may split into several words.
    splits: bool,
    /// The first reason the word is not plain.
    unclear: Option<String>,
}

impl WordLex {
    /// The word is not plain for `reason` (only the first reason is kept).
    fn note(&mut self, reason: &str) {
        if self.unclear.is_none() {
            self.unclear = Some(reason.to_owned());
        }
    }

    /// `c` expands when the word runs (a glob, a leading `~`), into several words if
    /// `splits`.
    fn expands_at_run_time(&mut self, c: char, splits: bool) {
        self.runtime = true;
        self.splits |= splits;
        self.value.push(c);
    }

    /// At a `$` (`chars` starts there): takes the expansion, which splits when unquoted.
    /// Returns how many characters it took.
    fn expansion(&mut self, chars: &[char], unquoted: bool) -> usize {
        let (len, reason) = expansion(chars);
        match reason {
            Some(reason) => self.note(reason),
            None => {
                self.runtime = true;
                self.splits |= unquoted;
            }
        }
        self.value.extend(&chars[..len]);
        len
    }

    /// Inside double quotes from `i` (just after the opening quote): returns where the
    /// word goes on, after the closing quote.
    fn double_quoted(&mut self, chars: &[char], mut i: usize) -> usize {
        while i < chars.len() {
            match chars[i] {
                '"' => return i + 1,
                '\\' => match chars.get(i + 1) {
                    Some('\n') => i += 2,
                    Some(&next @ ('$' | '`' | '"' | '\\')) => {
                        self.value.push(next);
                        i += 2;
                    }
                    _ => {
                        self.value.push('\\');
                        i += 1;
                    }
                },
                '$' => i += self.expansion(&chars[i..], false),
                '`' => {
                    self.note("uses a command substitution `..`");
                    self.value.push('`');
                    i += 1;
                }
                other => {
                    self.value.push(other);
                    i += 1;
                }
            }
        }
        self.note("has an unterminated quote");
        i
    }

    /// The word, and why it is not plain if it is not.
    fn finish(self, text: &str) -> (Word, Option<String>) {
        let word = if self.runtime || self.unclear.is_some() {
            Word::Runtime {
                text: text.to_owned(),
                splits: self.splits || self.unclear.is_some(),
            }
        } else {
            Word::Literal(self.value)
        };
        (word, self.unclear)
    }
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

/// For each `{` of a word: whether bash would expand it (`{a,b}`, `{1..3}`), on the side
/// of caution: a quote, `$` or backslash between it and its `}` (or the end) counts as
/// expanding. One pass for the whole word (a scan per `{` was quadratic).
fn brace_expansions(chars: &[char]) -> Vec<bool> {
    let n = chars.len();
    // The first quote, `$` or backslash at or after each index.
    let mut next_special = vec![n; n + 1];
    for k in (0..n).rev() {
        next_special[k] = if matches!(chars[k], '\\' | '\'' | '"' | '$') {
            k
        } else {
            next_special[k + 1]
        };
    }
    // Commas before each index, and `..` starting before each index.
    let mut commas = vec![0usize; n + 1];
    let mut dots = vec![0usize; n + 1];
    for k in 0..n {
        commas[k + 1] = commas[k] + usize::from(chars[k] == ',');
        dots[k + 1] = dots[k] + usize::from(chars[k] == '.' && chars.get(k + 1) == Some(&'.'));
    }
    let mut closing = vec![None; n];
    let mut open = Vec::new();
    for (k, &c) in chars.iter().enumerate() {
        match c {
            '{' => open.push(k),
            '}' => {
                if let Some(start) = open.pop() {
                    closing[start] = Some(k);
                }
            }
            _ => {}
        }
    }
    (0..n)
        .map(|i| {
            if chars[i] != '{' {
                return false;
            }
            match closing[i] {
                _ if next_special[i] < closing[i].unwrap_or(n) => true,
                None => false,
                Some(end) => {
                    commas[end] > commas[i + 1]
                        || (end >= 1 && dots[end - 1] > dots[(i + 1).min(end - 1)])
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan per `{` that `brace_expansions` replaced (quadratic on `{{{{..`).
    fn expands_at(chars: &[char]) -> bool {
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

    #[test]
    fn brace_expansions_agree_with_a_scan_per_brace() {
        let alphabet = ['{', '}', ',', '.', 'a', '$', '\'', '\\', '"'];
        let mut rng = agentd_testkit::rng::Rng(0xb7ace_u64);
        for _ in 0..20_000 {
            let len = rng.below(12);
            let chars: Vec<char> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len())])
                .collect();
            let fast = brace_expansions(&chars);
            for (i, &c) in chars.iter().enumerate() {
                if c == '{' {
                    let text: String = chars.iter().collect();
                    assert_eq!(fast[i], expands_at(&chars[i..]), "{text:?} at {i}");
                }
            }
        }
        let cases = [
            ("{a,b}", true),
            ("{1..3}", true),
            ("{}", false),
            ("{a}", false),
        ];
        for (word, expands) in cases {
            let chars: Vec<char> = word.chars().collect();
            assert_eq!(brace_expansions(&chars)[0], expands, "{word}");
        }
    }
}
