//! `blocked_commands`: patterns denied without asking.
//!
//! A pattern is a space-separated list of words, each a literal or `*` (any one word). It
//! matches a command when its words appear in the command's words from the program on, at
//! any place (assignments and known wrappers skipped; the first word of the pattern also
//! matches a program's basename, so `rm` matches `/bin/rm`): a program the checker does not
//! know may run its arguments as a command (`frobnicate rm -rf /`, `anywrapper -x rm -rf
//! /`). Only the programs known never to
//! run a command from their arguments (`tables::INERT_PROGRAMS`: `echo`, `grep`, `ls`, ...)
//! are matched from their first word alone, so `grep -rn docker .` is not `docker`.
//! Commands started by others (`sudo X`, `bash -c STR`, `$(..)`, `xargs X`, `find -exec X
//! ;`) are commands of their own, so they are matched too. The pattern `>` matches every output redirection, and `<` every input redirection that is
//! a part (one the target check refused: reading in the workspace is no part).
//!
//! Fail closed: a word only known at run time may be any word (or, unquoted, any number of
//! words), so it matches whatever the pattern has there; a command that is not plain is
//! tried from every word, even an inert one's; and when bash's grammar could not parse the
//! line (or it was too long to read), a pattern whose words all appear in it counts as
//! matched.

use super::parse::Word;
use super::programs::program_name;
use super::tables::INERT_PROGRAMS;
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
    let inert = part
        .words
        .first()
        .and_then(Word::literal)
        .is_some_and(|w| INERT_PROGRAMS.contains(&program_name(w)));
    if inert && part.unclear.is_empty() {
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
