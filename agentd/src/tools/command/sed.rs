//! sed programs, read the way GNU sed reads them: the options that carry the script, and
//! in the script the commands that run a program (`e COMMAND`, the `e` flag of `s`) and
//! the files it writes (`w FILE`, `W FILE`, the `w FILE` flag of `s`), whatever the
//! delimiters (`s,x,y,e`, `\,re,e`), addresses (`1e`, `/re/I,+3e`) or joins (`;`, newlines,
//! several `-e`).
//!
//! Fail closed: a script from a file (`-f`), an option this module does not know, or a
//! script it cannot read to the end is reported as such, never taken as harmless.

/// Where a sed command's script comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SedProgram {
    /// The script, its `-e` parts joined by newlines as sed joins them.
    Script(String),
    /// `-f FILE`: a file the checker cannot read.
    FromFile,
    /// An option this module does not know.
    UnknownOption(String),
}

/// GNU sed's long options and whether they take a value (`Some(true)`: required,
/// `Some(false)`: only attached with `=`).
const LONG_OPTIONS: &[(&str, Option<bool>)] = &[
    ("expression", Some(true)),
    ("file", Some(true)),
    ("line-length", Some(true)),
    ("in-place", Some(false)),
    ("quiet", None),
    ("silent", None),
    ("debug", None),
    ("posix", None),
    ("sandbox", None),
    ("follow-symlinks", None),
    ("separate", None),
    ("unbuffered", None),
    ("null-data", None),
    ("zero-terminated", None),
    ("regexp-extended", None),
    ("binary", None),
    ("help", None),
    ("version", None),
];

/// The script of a sed command, from its arguments (`-e`, `--expression`, else the first
/// operand; options may follow operands, as getopt permutes them).
pub(super) fn sed_program(args: &[String]) -> SedProgram {
    let mut scripts: Vec<&str> = Vec::new();
    let mut operands: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        if arg == "--" {
            operands.extend(args[i..].iter().map(String::as_str));
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let exact = LONG_OPTIONS.iter().find(|(option, _)| *option == name);
            let mut prefixed = LONG_OPTIONS
                .iter()
                .filter(|(option, _)| !name.is_empty() && option.starts_with(name));
            let Some(&(option, value)) =
                exact.or_else(|| match (prefixed.next(), prefixed.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                })
            else {
                return SedProgram::UnknownOption(arg.clone());
            };
            let value = match (value, inline) {
                (Some(true), None) => {
                    i += 1;
                    args.get(i - 1).map(String::as_str)
                }
                (_, inline) => inline,
            };
            match option {
                "expression" => scripts.push(value.unwrap_or("")),
                "file" => return SedProgram::FromFile,
                _ => {}
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            operands.push(arg);
            continue;
        };
        for (k, flag) in cluster.char_indices() {
            let rest = &cluster[k + flag.len_utf8()..];
            let mut value = || {
                if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).map_or("", String::as_str)
                } else {
                    rest
                }
            };
            match flag {
                'n' | 'r' | 'E' | 's' | 'u' | 'z' | 'b' => continue,
                'e' => scripts.push(value()),
                'f' => return SedProgram::FromFile,
                'l' => {
                    value();
                }
                // `-i[SUFFIX]`: the suffix is attached or absent.
                'i' => {}
                _ => return SedProgram::UnknownOption(arg.clone()),
            }
            break;
        }
    }
    if scripts.is_empty() {
        scripts.extend(operands.first());
    }
    SedProgram::Script(scripts.join("\n"))
}

/// What a sed script does that matters to the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SedEffects {
    /// An `e` command or an `s///e` flag: runs a command.
    pub runs: bool,
    /// The files `w`, `W` and `s///w` write, as written.
    pub writes: Vec<String>,
    /// The script could not be read to its end (sed would likely refuse it, but the
    /// checker does not guess).
    pub unreadable: bool,
}

/// Reads a sed script.
pub(super) fn sed_effects(script: &str) -> SedEffects {
    let mut reader = Reader {
        chars: script.chars().collect(),
        at: 0,
        effects: SedEffects::default(),
    };
    if reader.commands().is_none() {
        reader.effects.unreadable = true;
    }
    reader.effects
}

struct Reader {
    chars: Vec<char>,
    at: usize,
    effects: SedEffects,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    fn skip_digits(&mut self) -> bool {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        self.at > start
    }

    /// The rest of the line (a file name, a command for `e`), without leading blanks.
    fn rest_of_line(&mut self) -> String {
        self.skip_blanks();
        let start = self.at;
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }

    /// Text up to the first newline not escaped by a backslash (`a`, `i`, `c`).
    fn skip_text(&mut self) {
        while let Some(c) = self.peek() {
            match c {
                '\n' => break,
                '\\' => self.at += 2,
                _ => self.at += 1,
            }
        }
        self.at = self.at.min(self.chars.len());
    }

    /// From just past a delimiter, to just past the next one not escaped; `None` at the
    /// end or at a newline that is not escaped (sed refuses both).
    fn delimited(&mut self, delimiter: char) -> Option<()> {
        loop {
            match self.peek()? {
                '\\' => self.at += 2,
                '\n' => return None,
                c if c == delimiter => {
                    self.at += 1;
                    return Some(());
                }
                _ => self.at += 1,
            }
        }
    }

    /// A delimiter: any ASCII character but a newline or a backslash (a character of
    /// several bytes is not read: sed may take its first byte for the delimiter).
    fn delimiter(&mut self) -> Option<char> {
        let c = self
            .peek()
            .filter(|c| c.is_ascii() && !matches!(c, '\n' | '\\'))?;
        self.at += 1;
        Some(c)
    }

    /// An address, if one starts here: `N`, `first~step`, `$`, `/re/`, `\cREc` (with `I`
    /// and `M` flags).
    fn address(&mut self) -> Option<bool> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                self.skip_digits();
                if self.peek() == Some('~') {
                    self.at += 1;
                    self.skip_digits();
                }
            }
            Some('$') => self.at += 1,
            Some('/') => {
                self.at += 1;
                self.delimited('/')?;
                self.regex_flags();
            }
            Some('\\') => {
                self.at += 1;
                let delimiter = self.delimiter()?;
                self.delimited(delimiter)?;
                self.regex_flags();
            }
            _ => return Some(false),
        }
        Some(true)
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    /// Commands to the end of the script; `None` where it cannot be read.
    fn commands(&mut self) -> Option<()> {
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.at += 1;
            }
            let Some(c) = self.peek() else {
                return Some(());
            };
            if c == '#' {
                self.rest_of_line();
                continue;
            }
            if self.address()? {
                self.skip_blanks();
                if self.peek() == Some(',') {
                    self.at += 1;
                    self.skip_blanks();
                    if matches!(self.peek(), Some('+' | '~')) {
                        self.at += 1;
                        self.skip_digits().then_some(())?;
                    } else {
                        self.address()?.then_some(())?;
                    }
                }
            }
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.at += 1;
                self.skip_blanks();
            }
            let command = self.peek()?;
            self.at += 1;
            match command {
                '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P'
                | 'x' | 'z' | 'F' => {}
                'l' | 'L' | 'q' | 'Q' => {
                    self.skip_blanks();
                    self.skip_digits();
                }
                'a' | 'i' | 'c' => self.skip_text(),
                ':' | 'b' | 't' | 'T' | 'v' => {
                    self.skip_blanks();
                    while self
                        .peek()
                        .is_some_and(|c| !matches!(c, '\n' | ';' | ' ' | '\t'))
                    {
                        self.at += 1;
                    }
                }
                'r' | 'R' => {
                    self.rest_of_line();
                }
                'w' | 'W' => {
                    let file = self.rest_of_line();
                    self.effects.writes.push(file);
                }
                'e' => {
                    self.effects.runs = true;
                    self.rest_of_line();
                }
                's' => {
                    let delimiter = self.delimiter()?;
                    self.delimited(delimiter)?;
                    self.delimited(delimiter)?;
                    self.substitution_flags()?;
                }
                'y' => {
                    let delimiter = self.delimiter()?;
                    self.delimited(delimiter)?;
                    self.delimited(delimiter)?;
                }
                _ => return None,
            }
        }
    }

    fn substitution_flags(&mut self) -> Option<()> {
        loop {
            match self.peek() {
                Some('g' | 'p' | 'i' | 'I' | 'm' | 'M') => self.at += 1,
                Some(c) if c.is_ascii_digit() => self.at += 1,
                Some('e') => {
                    self.effects.runs = true;
                    self.at += 1;
                }
                Some('w') => {
                    self.at += 1;
                    let file = self.rest_of_line();
                    self.effects.writes.push(file);
                    return Some(());
                }
                None | Some(' ' | '\t' | '\n' | ';' | '}' | '#') => return Some(()),
                Some(_) => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn scripts_come_from_options_or_the_first_operand() {
        let script = |s: &str| SedProgram::Script(s.to_owned());
        let cases: &[(&[&str], SedProgram)] = &[
            (&["s/a/b/", "f"], script("s/a/b/")),
            (&["-n", "p", "f"], script("p")),
            (&["-e", "p", "-e", "e ls", "f"], script("p\ne ls")),
            (&["-ne", "p", "f"], script("p")),
            (&["-nep", "f"], script("p")),
            (&["--expression=1e ls", "f"], script("1e ls")),
            (&["--expression", "1e ls", "f"], script("1e ls")),
            (&["--expr", "1e ls", "f"], script("1e ls")),
            (&["s/a/b/", "f", "-e", "e ls"], script("e ls")),
            (&["-l", "5", "e ls"], script("e ls")),
            (&["-i.bak", "s/a/b/", "f"], script("s/a/b/")),
            (&["--", "e ls", "f"], script("e ls")),
            (&["-f", "x.sed", "f"], SedProgram::FromFile),
            (&["-nf", "x.sed"], SedProgram::FromFile),
            (&["--file=x.sed"], SedProgram::FromFile),
            (&["--fi", "x.sed"], SedProgram::FromFile),
            (&["-X", "p"], SedProgram::UnknownOption("-X".into())),
            (&["--s", "p"], SedProgram::UnknownOption("--s".into())),
            (&["-é", "p"], SedProgram::UnknownOption("-é".into())),
        ];
        for (args, expected) in cases {
            assert_eq!(sed_program(&strings(args)), *expected, "{args:?}");
        }
    }

    #[test]
    fn what_scripts_run_and_write() {
        // (script, runs, writes, unreadable)
        let cases: &[(&str, bool, &[&str], bool)] = &[
            ("s/a/b/g", false, &[], false),
            ("s/a/b/e", true, &[], false),
            ("s,x,touch P,e", true, &[], false),
            ("s|a|b|e", true, &[], false),
            ("s/a/b/3ge", true, &[], false),
            ("s/a\\/e/b/", false, &[], false),
            ("s/e/e/", false, &[], false),
            ("\\,re,e touch P", true, &[], false),
            ("\\,re,Ie touch P", true, &[], false),
            ("1e touch P", true, &[], false),
            ("$e", true, &[], false),
            ("/x/,+2 e ls", true, &[], false),
            ("0,/re/ !e", true, &[], false),
            ("p;e ls", true, &[], false),
            ("p\ne ls", true, &[], false),
            ("/x/{p;e ls\n}", true, &[], false),
            ("a hello e\np", false, &[], false),
            ("a\\\ntext e\np", false, &[], false),
            ("y/abc/xyz/", false, &[], false),
            (":a;N;$!ba;s/\\n/ /g", false, &[], false),
            ("/start/,/end/d", false, &[], false),
            ("1~3d", false, &[], false),
            ("#n\np", false, &[], false),
            ("w out.txt", false, &["out.txt"], false),
            ("1W /etc/x", false, &["/etc/x"], false),
            ("s/a/b/w /etc/x", false, &["/etc/x"], false),
            ("s/a/b/gw out; e ls", false, &["out; e ls"], false),
            ("s/a/b/ew x", true, &["x"], false),
            ("r /etc/passwd", false, &[], false),
            ("s/a/b", false, &[], true),
            ("s/a/b/k", false, &[], true),
            ("k", false, &[], true),
            ("s\u{e9}a\u{e9}b\u{e9}e", false, &[], true),
            ("1,", false, &[], true),
        ];
        for (script, runs, writes, unreadable) in cases {
            let effects = sed_effects(script);
            assert_eq!(
                (effects.runs, effects.writes.as_slice(), effects.unreadable),
                (
                    *runs,
                    &writes.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>()[..],
                    *unreadable
                ),
                "{script:?}"
            );
        }
    }
}
