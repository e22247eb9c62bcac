//! What one simple command runs: past its assignments and wrappers (`env`, `timeout`,
//! `nice`, `ionice`, `setsid`, `flock`, `systemd-run`, ...: `tables::WRAPPERS`, each with
//! its option syntax) to the program, the signature a grant is keyed by (`git status`,
//! `cargo test`, `python -m pytest`), the commands it starts on its own (`sudo X`, `xargs
//! X`, `find -exec X ;`, `gdb --args X`, `runuser -u U X`, `watch -x X`) or from a string
//! for a shell (`bash -c STR`, `su -c STR`, `script -c STR`, `flock F -c STR`, `watch STR`,
//! `ssh HOST STR`, `sg G STR`, `parallel STR ::: ..`), the files it writes through its
//! options, and why it is not plain when it is not.
//!
//! Fail closed: a wrapper option this module does not know, a wrapper that does more than
//! schedule or limit the command (a session, namespaces, a lock file, a service, a
//! tracer), a program named by a path, a shell builtin that can run code or change how
//! later commands run, a shell started with options, a variable not known to be harmless,
//! `env -i` or `env -u PATH`, or a word that decides the program or its subcommand but is
//! only known at run time: each makes the command not plain. A program this module does
//! not unwrap may still run its arguments: `risk.rs` and `blocked.rs` look through them.

use super::parse::Word;
use super::sed::{SedProgram, sed_effects, sed_program};
use super::tables::*;

/// `NAME=value` (or `NAME+=value`).
pub(super) fn is_assignment(word: &str) -> bool {
    assignment_name(word).is_some()
}

/// The name of `NAME=value` / `NAME+=value`.
pub(super) fn assignment_name(word: &str) -> Option<&str> {
    let (name, _) = word.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    let valid = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some(name)
}

fn harmless_variable(name: &str) -> bool {
    HARMLESS_VARIABLES.contains(&name) || name.starts_with("LC_")
}

/// The program a word names: the basename of a path.
pub(super) fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Index of the first word that is not a global option: the subcommand.
fn subcommand_index(program: &str, args: &[String]) -> Option<usize> {
    let value_options = global_value_options(program);
    let mut j = 0;
    while let Some(arg) = args.get(j) {
        if arg == "--" {
            return (j + 1 < args.len()).then_some(j + 1);
        }
        if (arg.starts_with('-') || arg.starts_with('+')) && arg.len() > 1 {
            let numeric_next = args.get(j + 1).is_some_and(|n| n.parse::<f64>().is_ok());
            let takes_value = value_options.contains(&arg.as_str())
                || (program == "make" && matches!(arg.as_str(), "-j" | "-l") && numeric_next);
            j += if takes_value { 2 } else { 1 };
            continue;
        }
        if program == "make" && is_assignment(arg) {
            j += 1;
            continue;
        }
        return Some(j);
    }
    None
}

pub(super) fn is_python(program: &str) -> bool {
    program
        .strip_prefix("python")
        .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Index (in `args`) of the module of `python -m MODULE`, and the module.
fn python_module(args: &[String]) -> Option<(usize, &str)> {
    let mut j = 0;
    while let Some(arg) = args.get(j) {
        if arg == "--" || arg == "-" || !arg.starts_with('-') {
            return None;
        }
        if arg.starts_with("--") {
            j += 1;
            continue;
        }
        let flags = &arg[1..];
        if let Some(k) = flags.find(['m', 'c', 'W', 'X']) {
            let rest = &flags[k + 1..];
            match flags[k..].chars().next() {
                Some('m') if rest.is_empty() => {
                    return args.get(j + 1).map(|m| (j + 1, m.as_str()));
                }
                Some('m') => return Some((j, rest)),
                Some('c') => return None,
                _ => j += if rest.is_empty() { 2 } else { 1 },
            }
            continue;
        }
        j += 1;
    }
    None
}

/// A command another command starts on its own.
#[derive(Debug, Clone)]
pub(super) enum Spawned {
    /// Words (`sudo X`, `xargs X`, `find -exec X ;`).
    Command(Vec<Word>),
    /// A script for a shell (`bash -c STR`, `su -c STR`, `env -S STR`). Scripts for other
    /// shells are read with bash's grammar too, for their parts; the command that starts
    /// them is not plain.
    Script(String),
}

/// What one simple command is, to the policy.
#[derive(Debug, Clone, Default)]
pub(super) struct Examined {
    /// The key of a grant (`git status`); `NAME=` for a bare assignment; empty when the
    /// command is transparent (`bash -c STR`: its script's commands are the parts).
    pub signature: String,
    /// The program (basename), if one runs.
    pub program: Option<String>,
    /// The words from the program on (wrappers and assignments skipped).
    pub command: Vec<Word>,
    pub spawned: Vec<Spawned>,
    /// Why the command is not plain.
    pub unclear: Vec<String>,
    /// The words before the program, for the assignment risk.
    pub assignments: Vec<String>,
    /// Files the command writes through its own options (`sort -o FILE`, `find -fprint
    /// FILE`, sed's `w FILE`): checked like output redirections.
    pub writes: Vec<Word>,
}

impl Examined {
    fn unclear(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        if !self.unclear.contains(&reason) {
            self.unclear.push(reason);
        }
    }
}

/// Examines one simple command's words.
pub(super) fn examine(words: &[Word]) -> Examined {
    let mut out = Examined::default();
    let shown: Vec<String> = words.iter().map(|w| w.shown().to_owned()).collect();
    let i = skip_prefix(words, &shown, &mut out);
    out.assignments = shown[..i.min(shown.len())]
        .iter()
        .filter(|w| is_assignment(w))
        .cloned()
        .collect();
    let Some(word) = words.get(i) else {
        // Only assignments (or a wrapper that ran nothing, which skip_prefix made the
        // program): `X=1`.
        out.signature = shown
            .first()
            .and_then(|w| assignment_name(w))
            .map(|name| format!("{name}="))
            .unwrap_or_default();
        return out;
    };
    out.command = words[i..].to_vec();
    let Some(literal) = word.literal() else {
        out.unclear(format!(
            "the program is only known at run time ({})",
            word.shown()
        ));
        out.signature = word.shown().to_owned();
        return out;
    };
    let program = program_name(literal).to_owned();
    program_reasons(literal, &program, &mut out);
    let args = &words[i + 1..];
    let arg_strings = &shown[i + 1..];
    out.signature = signature(&program, args, arg_strings, &mut out);
    if (ARGUMENT_SENSITIVE.contains(&program.as_str()) || SHELLS.contains(&program.as_str()))
        && let Some(runtime) = args.iter().find(|w| w.is_runtime())
    {
        out.unclear(format!(
            "{program}'s arguments are only known at run time ({})",
            runtime.shown()
        ));
    }
    if let Some(reason) = builtin_reason(&program, arg_strings) {
        out.unclear(reason);
    }
    spawned(&program, args, arg_strings, &mut out);
    out.writes = written_files(&program, args, arg_strings);
    out.program = Some(program);
    out
}

/// The files a command writes through its own options, as written: `sort -o FILE`
/// (`--output`), `find -fprint FILE` (`-fprint0`, `-fprintf`, `-fls`), sed's `w FILE`,
/// `W FILE` and `s///w FILE`.
fn written_files(program: &str, args: &[Word], strings: &[String]) -> Vec<Word> {
    let mut files = Vec::new();
    match program {
        "sort" => {
            let mut i = 0;
            while let Some(arg) = strings.get(i) {
                i += 1;
                if arg == "--" {
                    break;
                }
                if let Some(long) = arg.strip_prefix("--") {
                    let (name, inline) = match long.split_once('=') {
                        Some((name, value)) => (name, Some(value)),
                        None => (long, None),
                    };
                    let takes_value = [
                        "key",
                        "buffer-size",
                        "field-separator",
                        "temporary-directory",
                        "parallel",
                        "batch-size",
                        "random-source",
                        "files0-from",
                        "sort",
                        "compress-program",
                    ]
                    .iter()
                    .any(|o| !name.is_empty() && o.starts_with(name));
                    if !name.is_empty() && "output".starts_with(name) {
                        match inline {
                            Some(file) => files.push(Word::Literal(file.to_owned())),
                            None => files.extend(args.get(i).cloned()),
                        }
                    }
                    if inline.is_none() && (takes_value || "output".starts_with(name)) {
                        i += 1;
                    }
                    continue;
                }
                let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
                    continue;
                };
                // sort's short options with a value: -k -o -S -t -T -y.
                if let Some(k) = cluster.find(['k', 'o', 'S', 't', 'T', 'y']) {
                    let rest = &cluster[k + 1..];
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned()
                    } else {
                        Some(Word::Literal(rest.to_owned()))
                    };
                    if cluster[k..].starts_with('o') {
                        files.extend(value);
                    }
                }
            }
        }
        "find" => {
            for (k, arg) in strings.iter().enumerate() {
                if matches!(arg.as_str(), "-fprint" | "-fprint0" | "-fprintf" | "-fls") {
                    files.extend(args.get(k + 1).cloned());
                }
            }
        }
        "sed" => {
            if let SedProgram::Script(script) = sed_program(strings) {
                files.extend(sed_effects(&script).writes.into_iter().map(Word::Literal));
            }
        }
        _ => {}
    }
    files
}

/// Whether a command is known to use the network ([`NETWORK_COMMANDS`]), from its
/// signature and its words from the program on.
pub(super) fn uses_network(signature: &str, words: &[Word]) -> bool {
    let shown: Vec<&str> = words.iter().map(Word::shown).collect();
    let Some(&first) = shown.first() else {
        return false;
    };
    // Every Python is `python` here: `python3.12 -m pip install`.
    let signature = match signature.split_once(' ') {
        Some((program, rest))
            if is_python(program_name(first)) && program == program_name(first) =>
        {
            format!("python {rest}")
        }
        _ => signature.to_owned(),
    };
    if signature == "rsync" {
        return shown[1..].iter().any(|a| {
            !a.starts_with('-')
                && (a.starts_with("rsync://")
                    || a.split_once(':')
                        .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/')))
        });
    }
    let after = signature.split(' ').count();
    NETWORK_COMMANDS.iter().any(|(key, next)| {
        let matches = match key.strip_suffix(" *") {
            Some(program) => signature == program || signature.starts_with(&format!("{program} ")),
            None => signature == *key,
        };
        matches && (next.is_empty() || shown.iter().skip(after).any(|w| next.contains(w)))
    })
}

/// Skips leading assignments and wrappers; returns the index of the program word.
fn skip_prefix(words: &[Word], shown: &[String], out: &mut Examined) -> usize {
    let mut i = 0;
    loop {
        while let Some(name) = shown.get(i).and_then(|w| assignment_name(w)) {
            if !harmless_variable(name) {
                out.unclear(format!(
                    "sets {name}, which can change what the command runs"
                ));
            }
            i += 1;
        }
        let Some(word) = words.get(i) else {
            return i;
        };
        let Some(literal) = word.literal() else {
            return i;
        };
        let name = program_name(literal);
        let next = match wrapper_end(name, &words[i + 1..], &shown[i + 1..], out) {
            Wrapper::NotOne => return i,
            Wrapper::Alone => return i,
            Wrapper::Unclear(reason) => {
                out.unclear(reason);
                return i;
            }
            Wrapper::Runs(n) => i + 1 + n,
        };
        if literal.contains('/') {
            out.unclear(format!("names a program by a path ({literal})"));
        }
        i = next;
    }
}

enum Wrapper {
    NotOne,
    /// The wrapper with nothing to run: it is the program (`env`, `command -v x`).
    Alone,
    Unclear(String),
    /// The wrapped command starts this many words after the wrapper.
    Runs(usize),
}

/// A wrapper's options (exactly as known, see [`wrapper_syntax`]) and where its command
/// starts.
fn wrapper_end(name: &str, args: &[Word], shown: &[String], out: &mut Examined) -> Wrapper {
    let Some(syntax) = wrapper_syntax(name) else {
        return Wrapper::NotOne;
    };
    let mut j = 0;
    while let Some(arg) = shown.get(j) {
        if args[j].is_runtime() {
            return Wrapper::Unclear(format!(
                "{name}'s arguments are only known at run time ({arg})"
            ));
        }
        if arg == "--" {
            j += 1;
            break;
        }
        if name == "command" && (arg == "-v" || arg == "-V") {
            return Wrapper::Alone;
        }
        if name == "env" && is_assignment(arg) {
            // Checked like leading assignments by the caller's next round.
            break;
        }
        let option = (arg.starts_with('-') && arg.len() > 1) || (name == "env" && arg == "-");
        if !option {
            break;
        }
        if name == "env" {
            env_option_reason(arg, shown.get(j + 1), out);
        }
        if name == "nice" && arg[1..].parse::<i32>().is_ok() {
            j += 1;
            continue;
        }
        match option_words(&syntax, arg) {
            Some(Taken::Words(n)) => j += n,
            Some(Taken::Alone) => return Wrapper::Alone,
            None if syntax.any_option => j += 1,
            None => {
                return Wrapper::Unclear(format!(
                    "runs {name} with an option the checker does not know ({arg})"
                ));
            }
        }
    }
    for _ in 0..syntax.positional {
        // timeout DURATION COMMAND, taskset MASK COMMAND, flock FILE COMMAND
        let Some(word) = args.get(j) else {
            return Wrapper::Alone;
        };
        if word.is_runtime() {
            return Wrapper::Unclear(format!(
                "{name}'s arguments are only known at run time ({})",
                word.shown()
            ));
        }
        j += 1;
    }
    if name == "flock" && shown.get(j).is_some_and(|a| a == "-c" || a == "--command") {
        // flock FILE -c STRING: a script, read by `spawned`.
        return Wrapper::Alone;
    }
    if j >= shown.len() {
        return if name == "exec" {
            Wrapper::Unclear("uses exec without a command (changes the shell itself)".into())
        } else {
            Wrapper::Alone
        };
    }
    if let Some(reason) = syntax.unclear {
        out.unclear(reason);
    }
    Wrapper::Runs(j)
}

/// What one option word of a wrapper takes.
enum Taken {
    /// This many words, itself included.
    Words(usize),
    /// It runs no command after this option.
    Alone,
}

/// How many words an option takes in `syntax`; `None` if it is not one of its options.
fn option_words(syntax: &WrapperSyntax, arg: &str) -> Option<Taken> {
    if arg.starts_with("--") || arg == "-" {
        let (option, inline) = match arg.split_once('=') {
            Some((option, _)) => (option, true),
            None => (arg, false),
        };
        let known = |list: &[&str]| list.contains(&option);
        return if known(syntax.alone) {
            Some(Taken::Alone)
        } else if known(syntax.flags) || known(syntax.attached) {
            Some(Taken::Words(1))
        } else if known(syntax.valued) {
            Some(Taken::Words(if inline { 1 } else { 2 }))
        } else if known(syntax.valued2) && !inline {
            Some(Taken::Words(3))
        } else {
            None
        };
    }
    // A bundle of short options: `-fw`, `-n5`, `-c3 -n7`, `-mFILE`.
    let cluster = arg.strip_prefix('-')?;
    for (k, c) in cluster.char_indices() {
        let short = format!("-{c}");
        let known = |list: &[&str]| list.contains(&short.as_str());
        let rest = &cluster[k + c.len_utf8()..];
        if known(syntax.alone) {
            return Some(Taken::Alone);
        } else if known(syntax.flags) {
            continue;
        } else if known(syntax.attached) {
            return Some(Taken::Words(1));
        } else if known(syntax.valued) {
            return Some(Taken::Words(if rest.is_empty() { 2 } else { 1 }));
        } else if known(syntax.valued2) && rest.is_empty() {
            return Some(Taken::Words(3));
        } else {
            return None;
        }
    }
    Some(Taken::Words(1))
}

/// Why an option of `env` makes the command not plain: clearing the environment or
/// unsetting `PATH` or a `GIT_*` variable drops what the daemon gives every command on
/// purpose (a `PATH` of absolute folders only, git told to run no repository hook or
/// fsmonitor; see `tools/env.rs`), and bash's own default `PATH` ends in `.`.
fn env_option_reason(arg: &str, next: Option<&String>, out: &mut Examined) {
    if matches!(arg, "-i" | "--ignore-environment" | "-") {
        out.unclear(
            "clears the environment (env -i), dropping the PATH and git settings every \
             command gets",
        );
        return;
    }
    let unset = match arg {
        "-u" | "--unset" => next.map(String::as_str),
        _ => arg
            .strip_prefix("--unset=")
            .or_else(|| arg.strip_prefix("-u").filter(|n| !n.is_empty())),
    };
    if let Some(name) = unset
        && (name == "PATH" || name.starts_with("GIT_"))
    {
        out.unclear(format!(
            "unsets {name}, which every command gets on purpose (env -u)"
        ));
    }
}

/// Why the program itself makes the command not plain.
fn program_reasons(literal: &str, program: &str, out: &mut Examined) {
    if literal.contains('/') {
        out.unclear(format!("names a program by a path ({literal})"));
    } else if RESERVED_WORDS.contains(&program) {
        out.unclear(format!("uses the shell keyword {program}"));
    } else if program == "command" {
        // Reached only as `command -v NAME` (a lookup) or alone: its wrapper form is
        // skipped like `env`.
    } else if BUILTINS.contains(&program) && !SAFE_BUILTINS.contains(&program) {
        out.unclear(format!(
            "uses the shell builtin {program}, which can run code or change how later commands run"
        ));
    } else if program.is_empty()
        || program.starts_with('-')
        || !program
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '['))
    {
        out.unclear(format!("runs a program with an unusual name ({program})"));
    }
}

/// The grant key of a command (see [`Examined::signature`]); notes words that decide it
/// but are only known at run time.
fn signature(program: &str, args: &[Word], strings: &[String], out: &mut Examined) -> String {
    let decided_by = |end: usize, out: &mut Examined| {
        if let Some(w) = args[..end.min(args.len())].iter().find(|w| w.is_runtime()) {
            out.unclear(format!(
                "the subcommand of {program} is only known at run time ({})",
                w.shown()
            ));
        }
    };
    if is_python(program) {
        return match python_module(strings) {
            Some((j, module)) => {
                decided_by(j + 1, out);
                format!("{program} -m {module}")
            }
            None => {
                // Options and the script (or module) name decide what runs.
                decided_by(
                    strings.iter().take_while(|a| a.starts_with('-')).count() + 1,
                    out,
                );
                program.to_owned()
            }
        };
    }
    if SUBCOMMAND_PROGRAMS.contains(&program) {
        return match subcommand_index(program, strings) {
            Some(j) => {
                decided_by(j + 1, out);
                format!("{program} {}", strings[j])
            }
            None => {
                decided_by(strings.len(), out);
                program.to_owned()
            }
        };
    }
    program.to_owned()
}

/// Builtins that are plain only with some arguments: `test -v` and `printf -v` evaluate
/// array subscripts, which can run commands.
fn builtin_reason(program: &str, args: &[String]) -> Option<String> {
    match program {
        "test" | "[" if args.iter().any(|a| a == "-v" || a == "-R") => {
            Some(format!("uses {program} -v, which can evaluate code"))
        }
        "printf" if args.iter().any(|a| a.starts_with("-v")) => {
            Some("uses printf -v, which can evaluate code".into())
        }
        _ => None,
    }
}

/// Index (in `args`) of the command `sudo`/`doas`/`pkexec` runs, after its options.
pub(super) fn privileged_command(args: &[String]) -> Option<usize> {
    const VALUE_OPTIONS: &[&str] = &[
        "-u",
        "-g",
        "-C",
        "-D",
        "-h",
        "-p",
        "-r",
        "-t",
        "-T",
        "-U",
        "-R",
        "--user",
        "--group",
        "--chdir",
        "--host",
        "--prompt",
        "--role",
        "--type",
        "--other-user",
        "--close-from",
        "--chroot",
        "--command-timeout",
    ];
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if arg.starts_with('-') && arg.len() > 1 {
            i += if VALUE_OPTIONS.contains(&arg.as_str()) {
                2
            } else {
                1
            };
        } else if is_assignment(arg) {
            i += 1;
        } else {
            break;
        }
    }
    (i < args.len()).then_some(i)
}

/// Where `xargs`' command starts, or why it is not plain.
fn xargs_command(args: &[String]) -> Result<Option<usize>, String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "--" {
            i += 1;
            break;
        }
        if !(arg.starts_with('-') && arg.len() > 1) {
            break;
        }
        let option = arg.split_once('=').map_or(arg.as_str(), |(o, _)| o);
        if XARGS_FLAGS.contains(&option) {
            i += 1;
        } else if XARGS_VALUED.contains(&option) {
            i += if arg.contains('=') { 1 } else { 2 };
        } else if arg.len() > 2
            && arg
                .get(..2)
                .is_some_and(|short| XARGS_VALUED.contains(&short))
        {
            i += 1;
        } else {
            return Err(format!(
                "runs xargs with an option the checker does not know ({arg})"
            ));
        }
    }
    Ok((i < args.len()).then_some(i))
}

/// The commands of `find ... -exec CMD ;` (also `-execdir`, `-ok`, `-okdir`, `+`).
pub(super) fn find_exec_commands(args: &[String]) -> Vec<std::ops::Range<usize>> {
    let mut commands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if matches!(args[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && args[end] != ";" && args[end] != "+" {
                end += 1;
            }
            if end > start {
                commands.push(start..end);
            }
            i = end + 1;
        } else {
            i += 1;
        }
    }
    commands
}

/// The script of a shell's `-c`, if it is the only option: `Ok(Some)` for `bash -c STR`,
/// `Err` (with the script if one is found) for anything else with options.
fn shell_script(args: &[Word], strings: &[String]) -> Result<Option<String>, Option<String>> {
    if args.is_empty() || !strings[0].starts_with(['-', '+']) {
        return Ok(None);
    }
    if let ([c, _], [Word::Literal(flag), Word::Literal(source)]) = (strings, args)
        && c == "-c"
        && flag == "-c"
    {
        return Ok(Some(source.clone()));
    }
    let script = strings
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
        .and_then(|k| {
            args[k + 1..]
                .iter()
                .find(|a| !a.shown().starts_with('-'))
                .and_then(Word::literal)
        })
        .map(str::to_owned);
    Err(script)
}

/// Every value of option `-C` / `--long` among `args`: `-C V`, `-CV`, `-xC V` (a bundle),
/// `--long V`, `--long=V`. A guess on the side of more: a bundle's other letters are taken
/// for flags.
fn option_values(args: &[String], short: char, longs: &[&str]) -> Vec<String> {
    let mut values = Vec::new();
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        k += 1;
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            if longs.iter().any(|l| l.strip_prefix("--") == Some(name)) {
                match inline {
                    Some(value) => values.push(value.to_owned()),
                    None => values.extend(args.get(k).cloned()),
                }
            }
        } else if let Some(cluster) = arg.strip_prefix('-')
            && let Some(at) = cluster.find(short)
        {
            let rest = &cluster[at + short.len_utf8()..];
            if rest.is_empty() {
                values.extend(args.get(k).cloned());
            } else {
                values.push(rest.to_owned());
            }
        }
    }
    values
}

/// Index of the command of `runuser -u USER [--] COMMAND...`.
fn runuser_command(args: &[String]) -> Option<usize> {
    const VALUED: &str = "cgGsuw";
    let mut user = false;
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        if arg == "--" {
            k += 1;
            break;
        }
        if arg.starts_with("--") {
            user |= arg == "--user" || arg.starts_with("--user=");
            let valued = [
                "--command",
                "--group",
                "--supp-group",
                "--shell",
                "--user",
                "--whitelist-environment",
            ];
            k += if valued.contains(&arg.as_str()) { 2 } else { 1 };
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        k += 1;
        for (at, c) in cluster.char_indices() {
            if VALUED.contains(c) {
                user |= c == 'u';
                if at + c.len_utf8() == cluster.len() {
                    k += 1;
                }
                break;
            }
        }
    }
    (user && k < args.len()).then_some(k)
}

/// Where `watch`'s command starts, and whether it runs it as words (`-x`) rather than
/// through `sh -c` with the words joined.
fn watch_command(args: &[String]) -> Option<(usize, bool)> {
    let mut exec = false;
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        if arg == "--" {
            k += 1;
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            exec |= long == "exec";
            let valued = ["interval", "equexit"];
            k += if valued.contains(&long) { 2 } else { 1 };
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        k += 1;
        for (at, c) in cluster.char_indices() {
            exec |= c == 'x';
            if matches!(c, 'n' | 'q') {
                if at + 1 == cluster.len() {
                    k += 1;
                }
                break;
            }
        }
    }
    (k < args.len()).then_some((k, exec))
}

/// Index of the remote command of `ssh [OPTIONS] HOST COMMAND...`.
fn ssh_remote_command(args: &[String]) -> Option<usize> {
    const VALUED: &str = "BbcDEeFIiJLlmOoPpQRSWw";
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        if arg == "--" {
            k += 1;
            break;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            break;
        };
        k += 1;
        for (at, c) in cluster.char_indices() {
            if VALUED.contains(c) {
                if at + 1 == cluster.len() {
                    k += 1;
                }
                break;
            }
        }
    }
    // The host, then the command.
    (k + 1 < args.len()).then_some(k + 1)
}

/// The command words of `parallel [OPTIONS] COMMAND ::: ARGS`.
fn parallel_command(args: &[String]) -> Option<std::ops::Range<usize>> {
    const VALUED: &[&str] = &[
        "-j",
        "--jobs",
        "-P",
        "--max-procs",
        "-S",
        "--sshlogin",
        "-a",
        "--arg-file",
        "-d",
        "--delimiter",
        "-E",
        "-I",
        "-n",
        "--max-args",
        "-N",
        "--max-replace-args",
        "--colsep",
        "-C",
        "--joblog",
        "--results",
        "--tmpdir",
        "--workdir",
        "--env",
        "--timeout",
        "--retries",
        "--delay",
        "--memfree",
        "--load",
        "--halt",
        "-L",
        "--max-lines",
        "-s",
        "--max-chars",
        "--basefile",
        "--return",
        "--transfer-file",
    ];
    let mut k = 0;
    while let Some(arg) = args.get(k) {
        if arg == "--" {
            k += 1;
            break;
        }
        if !arg.starts_with('-') || arg == "-" {
            break;
        }
        k += if VALUED.contains(&arg.as_str()) { 2 } else { 1 };
    }
    let end = args[k.min(args.len())..]
        .iter()
        .position(|a| a.starts_with(":::"))
        .map_or(args.len(), |p| k + p);
    (k < end).then_some(k..end)
}

/// What a shell (`SHELLS`) runs: bash's script is the line's own parts; another shell's
/// grammar differs, and options the checker does not know make it unclear.
fn shell_spawned(shell: &str, args: &[Word], strings: &[String], out: &mut Examined) {
    match shell_script(args, strings) {
        Ok(Some(source)) if shell == "bash" => {
            out.signature.clear();
            out.spawned.push(Spawned::Script(source));
        }
        Ok(Some(source)) => {
            out.unclear(format!(
                "runs a script with {shell}, whose grammar differs from bash"
            ));
            out.spawned.push(Spawned::Script(source));
        }
        Ok(None) => {}
        Err(script) => {
            out.unclear(format!("runs {shell} with options"));
            if let Some(source) = script {
                out.spawned.push(Spawned::Script(source));
            }
        }
    }
}

/// `sg [-] GROUP [-c] COMMAND`: the command, a string for `sh -c`.
fn sg_command(strings: &[String]) -> Option<String> {
    let words: Vec<&str> = strings
        .iter()
        .skip_while(|a| *a == "-")
        .skip(1)
        .filter(|a| *a != "-c")
        .map(String::as_str)
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The string `env -S` (`--split-string`) splits into a command.
fn env_split_string(strings: &[String]) -> Option<String> {
    strings
        .iter()
        .enumerate()
        .find_map(|(k, a)| match a.as_str() {
            "-S" | "--split-string" => strings.get(k + 1).cloned(),
            _ => a
                .strip_prefix("--split-string=")
                .or_else(|| a.strip_prefix("-S").filter(|s| !s.is_empty()))
                .map(str::to_owned),
        })
}

/// The commands started by `program` with `args`, and reasons they make it not plain.
fn spawned(program: &str, args: &[Word], strings: &[String], out: &mut Examined) {
    match program {
        p if PRIVILEGE_TOOLS.contains(&p) => {
            if let Some(i) = privileged_command(strings) {
                out.spawned.push(Spawned::Command(args[i..].to_vec()));
            }
        }
        p if SHELLS.contains(&p) => shell_spawned(p, args, strings, out),
        "su" | "runuser" => {
            out.unclear(format!("runs a command as another user ({program})"));
            for source in option_values(strings, 'c', &["--command"]) {
                out.spawned.push(Spawned::Script(source));
            }
            if program == "runuser"
                && let Some(i) = runuser_command(strings)
            {
                out.spawned.push(Spawned::Command(args[i..].to_vec()));
            }
        }
        "flock" | "script" => {
            out.unclear(match program {
                "flock" => "runs a command holding a lock on a file it may create (flock)",
                _ => "runs a shell that records what it does into a file (script)",
            });
            for source in option_values(strings, 'c', &["--command"]) {
                out.spawned.push(Spawned::Script(source));
            }
        }
        "watch" => {
            out.unclear("runs a command again and again (watch)");
            if let Some((i, exec)) = watch_command(strings) {
                out.spawned.push(if exec {
                    Spawned::Command(args[i..].to_vec())
                } else {
                    Spawned::Script(strings[i..].join(" "))
                });
            }
        }
        "ssh" => {
            if let Some(i) = ssh_remote_command(strings) {
                out.unclear("runs a command on another host (ssh)");
                out.spawned.push(Spawned::Script(strings[i..].join(" ")));
            }
        }
        "sg" => {
            out.unclear("runs a command with another group (sg)");
            if let Some(source) = sg_command(strings) {
                out.spawned.push(Spawned::Script(source));
            }
        }
        "newgrp" => out.unclear("starts a shell with another group (newgrp)"),
        "parallel" => {
            out.unclear("runs commands through GNU parallel");
            if let Some(range) = parallel_command(strings) {
                out.spawned.push(Spawned::Script(strings[range].join(" ")));
            }
        }
        "gdb" => {
            out.unclear("runs a program under a debugger (gdb)");
            if let Some(k) = strings.iter().position(|a| a == "--args" || a == "-args") {
                out.spawned.push(Spawned::Command(args[k + 1..].to_vec()));
            }
        }
        "env" => {
            // Reached only when env is the program: with -S (or an option env does not
            // know, already reported), or alone.
            if let Some(source) = env_split_string(strings) {
                out.unclear("runs env -S, which splits a string into a command");
                out.spawned.push(Spawned::Script(source));
            }
        }
        "xargs" => match xargs_command(strings) {
            Ok(Some(i)) => {
                // The items read from input become more arguments.
                let mut words = args[i..].to_vec();
                words.push(Word::Runtime {
                    text: "<input>".into(),
                    splits: true,
                });
                out.spawned.push(Spawned::Command(words));
            }
            Ok(None) => {}
            Err(reason) => out.unclear(reason),
        },
        "find" => {
            for range in find_exec_commands(strings) {
                out.spawned.push(Spawned::Command(args[range].to_vec()));
            }
        }
        _ => {}
    }
}
