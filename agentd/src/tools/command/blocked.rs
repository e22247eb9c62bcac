//! `blocked_commands`: patterns denied without asking.
//!
//! A pattern is a space-separated list of words, each a literal or `*` (any one word). It
//! matches a command when its words equal the command's first words from the program on
//! (assignments and wrappers skipped; the first word also matches the program's basename,
//! so `rm` matches `/bin/rm`). Commands started by others (`sudo X`, `bash -c STR`,
//! `$(..)`, `xargs X`, `find -exec X ;`) are commands of their own, so they are matched
//! too. The pattern `>` matches every output redirection, and `<` every input redirection that is
//! a part (one the target check refused: reading in the workspace is no part).
//!
//! Fail closed: a word only known at run time may be any word (or, unquoted, any number of
//! words), so it matches whatever the pattern has there; a command that is not plain is
//! tried from every word; and when bash's grammar could not parse the line, a pattern
//! whose words all appear in it counts as matched.

use super::parse::Word;
use super::programs::program_name;
use super::{CommandAnalysis, CommandPart};

/// The first pattern that matches (or may match) any command of the line, if any.
pub fn blocked_by<'a>(analysis: &CommandAnalysis, patterns: &'a [String]) -> Option<&'a str> {
    patterns
        .iter()
        .find(|pattern| {
            let words: Vec<&str> = pattern.split_whitespace().collect();
            !words.is_empty()
                && (analysis.parts.iter().any(|part| part_matches(&words, part))
                    || (analysis.parse_error && loosely_matches(&words, &analysis.command)))
        })
        .map(String::as_str)
}

fn part_matches(pattern: &[&str], part: &CommandPart) -> bool {
    if part.redirect {
        return pattern == [part.signature.as_str()];
    }
    if part.unclear.is_empty() {
        return matches_at(pattern, &part.words, true);
    }
    (0..part.words.len()).any(|start| matches_at(pattern, &part.words[start..], true))
}

/// Whether `pattern` matches the first words of `words`.
fn matches_at(pattern: &[&str], words: &[Word], first: bool) -> bool {
    let Some((p, rest)) = pattern.split_first() else {
        return true;
    };
    let Some((w, more)) = words.split_first() else {
        return false;
    };
    match w {
        Word::Literal(value) => {
            let equal = *p == "*" || p == value || (first && *p == program_name(value));
            equal && matches_at(rest, more, false)
        }
        Word::Runtime { splits: false, .. } => matches_at(rest, more, false),
        // Any number of words: none, or it takes some of the pattern's words.
        Word::Runtime { splits: true, .. } => {
            (0..=pattern.len()).any(|k| matches_at(&pattern[k..], more, first && k == 0))
        }
    }
}

/// For a line bash's grammar could not parse: every literal word of the pattern appears
/// among its tokens (quotes and backslashes removed).
fn loosely_matches(pattern: &[&str], command: &str) -> bool {
    let cleaned: String = command
        .chars()
        .filter(|c| !matches!(c, '\'' | '"' | '\\'))
        .map(|c| {
            if matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '`' | '$' | '{' | '}') {
                ' '
            } else {
                c
            }
        })
        .collect();
    let tokens: Vec<&str> = cleaned.split_whitespace().collect();
    pattern.iter().filter(|p| **p != "*").all(|p| {
        tokens
            .iter()
            .any(|t| t == p || program_name(t) == *p || (*p == ">" && t.contains('>')))
    })
}
