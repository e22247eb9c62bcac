//! Shell command analysis for the permission policy: which programs a command line runs
//! (every part of a compound command, including `$(..)`, backticks and `sh -c` strings),
//! the signature each part is granted by (`git status`, `cargo test`, `ls`), output
//! redirections (a part of their own, signature `>`), and what makes a command risky.
//!
//! Pure and conservative: it tokenizes like a POSIX shell as far as safety needs (quotes,
//! escapes, operators, substitutions, redirections); input it cannot parse is one part
//! marked risky, so it is always asked about.

/// One simple command of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPart {
    pub text: String,
    /// Its words, after leading `VAR=value` assignments and wrappers (`env`, `time`, ...).
    pub words: Vec<String>,
    pub signature: String,
    pub risk: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAnalysis {
    pub parts: Vec<CommandPart>,
    /// The first risk of any part, or of the whole command (e.g. `curl .. | sh`).
    pub risk: Option<String>,
}

/// Programs whose first non-option argument names what they do.
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git", "cargo", "npm", "pnpm", "yarn", "npx", "docker", "podman", "kubectl", "go", "pip",
    "pip3", "uv", "poetry", "apt", "apt-get", "brew", "systemctl", "rustup", "gh", "make",
    "dotnet", "helm", "terraform", "conda", "bun", "deno",
];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch"];
const AS_OTHER_USER: &[&str] = &["sudo", "su", "doas", "pkexec"];
/// Recursion limit for `sh -c` and substitutions.
const MAX_NESTING: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    /// `;`, `&&`, `||`, `|`, `|&`, `&`, a newline, `(`, `)`.
    Op(&'static str),
    /// An output redirection to a file (not /dev/null, not an fd duplication).
    WriteTo(String),
}

struct Scan {
    tokens: Vec<Token>,
    /// Commands inside `$(..)` and backticks.
    nested: Vec<String>,
}

/// Tokenizes one command line.
fn scan(input: &str) -> Result<Scan, String> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut nested = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut i = 0;
    let flush = |word: &mut String, in_word: &mut bool, tokens: &mut Vec<Token>| {
        if *in_word {
            tokens.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => {
                flush(&mut word, &mut in_word, &mut tokens);
                i += 1;
            }
            '\n' | ';' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Op(if c == '\n' { "\n" } else { ";" }));
                i += 1;
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '&' | '|' => {
                flush(&mut word, &mut in_word, &mut tokens);
                let next = chars.get(i + 1).copied();
                let op = match (c, next) {
                    ('&', Some('&')) => "&&",
                    ('|', Some('|')) => "||",
                    ('|', Some('&')) => "|&",
                    ('&', Some('>')) => {
                        // &> and &>>: stdout and stderr to a file.
                        i += 2;
                        if chars.get(i) == Some(&'>') {
                            i += 1;
                        }
                        let target = read_target(&chars, &mut i, &mut nested)?;
                        push_redirect(&mut tokens, target, false);
                        continue;
                    }
                    ('&', _) => "&",
                    _ => "|",
                };
                i += op.len();
                tokens.push(Token::Op(op));
            }
            '(' | ')' => {
                flush(&mut word, &mut in_word, &mut tokens);
                tokens.push(Token::Op(if c == '(' { "(" } else { ")" }));
                i += 1;
            }
            '>' | '<' => {
                // An fd number right before it belongs to the redirection (2>, 1>>).
                let fd_prefix = in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit());
                if fd_prefix {
                    word.clear();
                    in_word = false;
                } else {
                    flush(&mut word, &mut in_word, &mut tokens);
                }
                let output = c == '>';
                i += 1;
                while i < chars.len() && matches!(chars[i], '>' | '<' | '|') {
                    i += 1;
                }
                let duplication = chars.get(i) == Some(&'&');
                if duplication {
                    i += 1;
                }
                let target = read_target(&chars, &mut i, &mut nested)?;
                if output {
                    push_redirect(&mut tokens, target, duplication);
                }
            }
            _ => {
                in_word = true;
                read_word_piece(&chars, &mut i, &mut word, &mut nested)?;
            }
        }
    }
    flush(&mut word, &mut in_word, &mut tokens);
    Ok(Scan { tokens, nested })
}

fn push_redirect(tokens: &mut Vec<Token>, target: String, duplication: bool) {
    let to_fd = duplication && (target.chars().all(|d| d.is_ascii_digit()) || target == "-");
    if !to_fd && target != "/dev/null" {
        tokens.push(Token::WriteTo(target));
    }
}

/// Reads the word after a redirection operator.
fn read_target(chars: &[char], i: &mut usize, nested: &mut Vec<String>) -> Result<String, String> {
    while *i < chars.len() && matches!(chars[*i], ' ' | '\t') {
        *i += 1;
    }
    let mut target = String::new();
    while *i < chars.len() && !matches!(chars[*i], ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>') {
        read_word_piece(chars, i, &mut target, nested)?;
    }
    if target.is_empty() {
        return Err("a redirection without a target".into());
    }
    Ok(target)
}

/// Reads one piece of a word (a quoted string, an escape, a substitution, a plain char).
fn read_word_piece(chars: &[char], i: &mut usize, word: &mut String, nested: &mut Vec<String>) -> Result<(), String> {
    let c = chars[*i];
    match c {
        '\'' => {
            let end = chars[*i + 1..]
                .iter()
                .position(|&d| d == '\'')
                .ok_or("an unterminated single quote")?;
            word.extend(&chars[*i + 1..*i + 1 + end]);
            *i += end + 2;
        }
        '"' => {
            *i += 1;
            loop {
                let Some(&d) = chars.get(*i) else {
                    return Err("an unterminated double quote".into());
                };
                match d {
                    '"' => {
                        *i += 1;
                        break;
                    }
                    '\\' => {
                        if let Some(&e) = chars.get(*i + 1) {
                            word.push(e);
                        }
                        *i += 2;
                    }
                    '$' | '`' => read_word_piece(chars, i, word, nested)?,
                    _ => {
                        word.push(d);
                        *i += 1;
                    }
                }
            }
        }
        '\\' => {
            if let Some(&e) = chars.get(*i + 1)
                && e != '\n'
            {
                word.push(e);
            }
            *i += 2;
        }
        '`' => {
            let end = chars[*i + 1..]
                .iter()
                .position(|&d| d == '`')
                .ok_or("an unterminated backtick")?;
            let inner: String = chars[*i + 1..*i + 1 + end].iter().collect();
            word.push_str(&format!("`{inner}`"));
            nested.push(inner);
            *i += end + 2;
        }
        '$' if chars.get(*i + 1) == Some(&'(') => {
            let arithmetic = chars.get(*i + 2) == Some(&'(');
            let start = *i + 2;
            let end = matching_paren(chars, start)?;
            let inner: String = chars[start..end].iter().collect();
            word.push_str(&format!("$({inner})"));
            if !arithmetic {
                nested.push(inner);
            }
            *i = end + 1;
        }
        '$' if chars.get(*i + 1) == Some(&'{') => {
            let end = chars[*i..]
                .iter()
                .position(|&d| d == '}')
                .ok_or("an unterminated ${")?;
            word.extend(&chars[*i..=*i + end]);
            *i += end + 1;
        }
        _ => {
            word.push(c);
            *i += 1;
        }
    }
    Ok(())
}

/// The index of the `)` closing a `$(` whose content starts at `start`.
fn matching_paren(chars: &[char], start: usize) -> Result<usize, String> {
    let mut depth = 1;
    let mut j = start;
    let mut quote: Option<char> = None;
    while j < chars.len() {
        let c = chars[j];
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) if c == '\\' => j += 1,
            Some(_) => {}
            None => match c {
                '\'' | '"' => quote = Some(c),
                '\\' => j += 1,
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(j);
                    }
                }
                _ => {}
            },
        }
        j += 1;
    }
    Err("an unterminated $(".into())
}

/// Skips `VAR=value` assignments and wrapper programs; the rest is the real command.
fn effective(words: &[String]) -> &[String] {
    let mut rest = words;
    loop {
        let before = rest.len();
        while rest.first().is_some_and(|w| is_assignment(w)) {
            rest = &rest[1..];
        }
        let Some(first) = rest.first() else { return rest };
        match basename(first) {
            "env" => {
                rest = &rest[1..];
                while let Some(w) = rest.first() {
                    if is_assignment(w) || w.starts_with('-') {
                        let takes_value = matches!(w.as_str(), "-u" | "--unset" | "-C" | "--chdir");
                        rest = &rest[if takes_value { 2.min(rest.len()) } else { 1 }..];
                    } else {
                        break;
                    }
                }
            }
            "time" | "nohup" | "command" | "exec" | "builtin" => {
                rest = &rest[1..];
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest = &rest[1..];
                }
            }
            "nice" => {
                rest = &rest[1..];
                while let Some(w) = rest.first() {
                    if w == "-n" {
                        rest = &rest[2.min(rest.len())..];
                    } else if w.starts_with('-') {
                        rest = &rest[1..];
                    } else {
                        break;
                    }
                }
            }
            "timeout" => {
                rest = &rest[1..];
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    let takes_value = matches!(rest[0].as_str(), "-s" | "--signal" | "-k" | "--kill-after");
                    rest = &rest[if takes_value { 2.min(rest.len()) } else { 1 }..];
                }
                // the duration
                if !rest.is_empty() {
                    rest = &rest[1..];
                }
            }
            _ => {}
        }
        if rest.len() == before {
            return rest;
        }
    }
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The words after `sudo`-like programs and their options.
fn after_elevation(words: &[String]) -> Option<&[String]> {
    let first = words.first()?;
    if !AS_OTHER_USER.contains(&basename(first)) {
        return None;
    }
    let mut rest = &words[1..];
    while let Some(w) = rest.first() {
        if w.starts_with('-') {
            let takes_value = matches!(w.as_str(), "-u" | "-g" | "-C" | "-p" | "-h" | "-U");
            rest = &rest[if takes_value { 2.min(rest.len()) } else { 1 }..];
        } else {
            break;
        }
    }
    Some(rest)
}

fn signature(words: &[String]) -> String {
    let Some(first) = words.first() else {
        return String::new();
    };
    let program = basename(first);
    if matches!(program, "python" | "python3") && words.get(1).is_some_and(|w| w == "-m") {
        if let Some(module) = words.get(2) {
            return format!("{program} -m {module}");
        }
    }
    if !SUBCOMMAND_PROGRAMS.contains(&program) {
        return program.to_owned();
    }
    let mut rest = words[1..].iter();
    while let Some(w) = rest.next() {
        if program == "git" && matches!(w.as_str(), "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace") {
            rest.next();
            continue;
        }
        if w.starts_with('-') || w.starts_with('+') {
            continue;
        }
        return format!("{program} {w}");
    }
    program.to_owned()
}

fn short_flags(words: &[String]) -> impl Iterator<Item = &str> {
    words
        .iter()
        .skip(1)
        .take_while(|w| *w != "--")
        .map(String::as_str)
        .filter(|w| w.starts_with('-') && !w.starts_with("--") && w.len() > 1)
}

fn has_long(words: &[String], flags: &[&str]) -> bool {
    words.iter().skip(1).any(|w| flags.contains(&w.as_str()))
}

fn has_short(words: &[String], letters: &[char]) -> bool {
    short_flags(words).any(|f| f.chars().skip(1).any(|c| letters.contains(&c)))
}

/// Why running these words is risky, if it is.
fn risk_of(words: &[String]) -> Option<String> {
    let first = words.first()?;
    let program = basename(first);
    let risk = match program {
        "rm" if has_short(words, &['r', 'R']) || has_long(words, &["--recursive"]) => "recursive delete",
        "sudo" | "su" | "doas" | "pkexec" => "runs as another user",
        "chmod" | "chown" | "chgrp" if has_short(words, &['R']) || has_long(words, &["--recursive"]) => {
            "recursive permission change"
        }
        "dd" => "raw disk copy (dd)",
        p if p.starts_with("mkfs") => "formats a disk",
        "fdisk" | "sfdisk" | "parted" | "wipefs" => "partitions or wipes a disk",
        "shutdown" | "reboot" | "halt" | "poweroff" => "shuts the machine down",
        "init" if words.get(1).is_some_and(|w| w == "0" || w == "6") => "shuts the machine down",
        "eval" => "evaluates generated code (eval)",
        "killall" | "pkill" => "kills processes by name",
        "kill" if words.iter().any(|w| w == "-1") => "kills every process",
        "truncate" | "shred" => "destroys file contents",
        "xargs" if words.iter().skip(1).any(|w| basename(w) == "rm") => "deletes files (xargs rm)",
        "find" if words.iter().any(|w| w == "-delete")
            || words
                .windows(2)
                .any(|p| matches!(p[0].as_str(), "-exec" | "-execdir" | "-ok") && basename(&p[1]) == "rm") =>
        {
            "deletes files (find)"
        }
        "git" => match signature(words).as_str() {
            "git push"
                if has_long(words, &["--force", "--force-with-lease", "--mirror", "--delete"])
                    || has_short(words, &['f', 'd'])
                    || words.iter().skip(2).any(|w| w.starts_with('+')) =>
            {
                "force push"
            }
            "git reset" if has_long(words, &["--hard"]) => "discards local changes (git reset --hard)",
            "git clean" if has_short(words, &['f']) || has_long(words, &["--force"]) => "deletes untracked files",
            _ => return None,
        },
        _ => return None,
    };
    Some(risk.to_owned())
}

/// Risk of a redirection target.
fn redirect_risk(target: &str) -> Option<String> {
    let disk = ["/dev/sd", "/dev/nvme", "/dev/hd", "/dev/vd", "/dev/mmcblk"];
    if disk.iter().any(|d| target.starts_with(d)) {
        return Some("writes to a disk device".into());
    }
    if target.starts_with("/etc/") || target.starts_with("/boot/") {
        return Some(format!("overwrites a system file ({target})"));
    }
    None
}

/// A function definition calling itself in a pipe in the background: `:(){ :|:& };:`.
fn fork_bomb(command: &str) -> bool {
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    let mut from = 0;
    while let Some(at) = compact[from..].find("(){") {
        let def = from + at;
        let name_start = compact[..def]
            .rfind(|c: char| matches!(c, ';' | '&' | '|' | '\n' | '('))
            .map_or(0, |p| p + 1);
        let name = compact[name_start..def].trim_start_matches("function");
        let body_start = def + 3;
        let body = compact[body_start..].split('}').next().unwrap_or("");
        if !name.is_empty() && body.contains(&format!("{name}|{name}")) && body.contains('&') {
            return true;
        }
        from = body_start;
    }
    false
}

/// Analyzes a command line.
pub fn analyze(command: &str) -> CommandAnalysis {
    let mut parts = Vec::new();
    let mut risk = None;
    if fork_bomb(command) {
        risk = Some("fork bomb".to_owned());
    }
    collect(command, 0, &mut parts, &mut risk);
    let risk = risk.or_else(|| parts.iter().find_map(|p| p.risk.clone()));
    CommandAnalysis { parts, risk }
}

fn unparsable(command: &str, why: &str) -> CommandPart {
    CommandPart {
        text: command.to_owned(),
        words: command.split_whitespace().map(str::to_owned).collect(),
        signature: command.split_whitespace().next().map(basename).unwrap_or("").to_owned(),
        risk: Some(format!("could not parse the command ({why})")),
    }
}

fn collect(command: &str, depth: usize, parts: &mut Vec<CommandPart>, whole_risk: &mut Option<String>) {
    if depth > MAX_NESTING {
        parts.push(unparsable(command, "nested too deeply"));
        return;
    }
    let scan = match scan(command) {
        Ok(scan) => scan,
        Err(why) => {
            parts.push(unparsable(command, &why));
            return;
        }
    };
    // Split into simple commands, remembering the operator after each.
    let mut simple: Vec<(Vec<String>, &'static str)> = Vec::new();
    let mut words: Vec<String> = Vec::new();
    for token in scan.tokens {
        match token {
            Token::Word(w) if words.is_empty() && (w == "{" || w == "}") => {}
            Token::Word(w) => words.push(w),
            Token::Op(op) => simple.push((std::mem::take(&mut words), op)),
            Token::WriteTo(target) => parts.push(CommandPart {
                text: format!("> {target}"),
                words: vec![">".into(), target.clone()],
                signature: ">".into(),
                risk: redirect_risk(&target),
            }),
        }
    }
    simple.push((words, ""));
    // `} ` closing a group may end a word list: drop a trailing lone brace.
    for (words, _) in &mut simple {
        if words.last().is_some_and(|w| w == "}") {
            words.pop();
        }
    }
    let simple: Vec<(Vec<String>, &str)> = simple.into_iter().filter(|(w, _)| !w.is_empty()).collect();
    for (index, (words, op)) in simple.iter().enumerate() {
        let real = effective(words);
        if real.is_empty() {
            continue;
        }
        // A downloaded script piped into an interpreter.
        if *op == "|" || *op == "|&" {
            let next = simple.get(index + 1).map(|(w, _)| effective(w));
            let program = basename(&real[0]);
            let interpreter = next.and_then(|n| n.first()).map(|w| basename(w)).is_some_and(|p| {
                SHELLS.contains(&p) || p.starts_with("python") || matches!(p, "perl" | "ruby" | "node")
            });
            if DOWNLOADERS.contains(&program) && interpreter && whole_risk.is_none() {
                *whole_risk = Some("runs a downloaded script".into());
            }
        }
        let program = basename(&real[0]);
        if SHELLS.contains(&program) {
            if let Some(pos) = real.iter().position(|w| w == "-c")
                && let Some(inner) = real.get(pos + 1)
            {
                collect(inner, depth + 1, parts, whole_risk);
                continue;
            }
        }
        let inner = after_elevation(real);
        parts.push(CommandPart {
            text: words.join(" "),
            words: real.to_vec(),
            signature: signature(real),
            risk: risk_of(real).or_else(|| inner.and_then(risk_of)),
        });
    }
    for inner in scan.nested {
        collect(&inner, depth + 1, parts, whole_risk);
    }
}

/// The first `blocked_commands` pattern that matches any part, if any.
///
/// A pattern is space-separated words, each a literal or `*` (any one word). It matches a
/// part when its words equal the part's first words, taken after `VAR=value` assignments
/// and wrappers (`env`, `time`, `nohup`, `nice`, `timeout`, ...) and, for `sudo`/`doas`,
/// also after the elevation and its options. So `rm -rf /` matches `rm -rf /`,
/// `FOO=1 rm -rf / --x` and `sudo rm -rf /`, but not `rm -rf /tmp`.
pub fn blocked_by<'a>(analysis: &CommandAnalysis, patterns: &'a [String]) -> Option<&'a str> {
    patterns.iter().map(String::as_str).find(|pattern| {
        let want: Vec<&str> = pattern.split_whitespace().collect();
        if want.is_empty() {
            return false;
        }
        analysis.parts.iter().any(|part| {
            let candidates = std::iter::once(part.words.as_slice()).chain(after_elevation(&part.words));
            candidates.into_iter().any(|words| {
                words.len() >= want.len()
                    && want.iter().zip(words).all(|(w, got)| *w == "*" || *w == got)
            })
        })
    })
}

#[cfg(test)]
mod tests;
