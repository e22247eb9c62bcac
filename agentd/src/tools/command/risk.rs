//! Risky commands: what is always asked (never covered by a remembered grant) because a
//! mistake is expensive, with a reason a person can read. That includes a program told to
//! run a command through its own syntax (sed's `e`, awk's `system` and pipes, `tar -I` or
//! `tar cIf`, `sort --compress-program`, `zip -TT`, `git grep -O`, `git -c`, ...), and a
//! file written where the checker cannot bound it (awk's `print > expr`); a file named
//! exactly (`sort -o FILE`, sed's `w FILE`) is a part of its own instead, checked like an
//! output redirection. Rules read a command's words
//! from its program on; the checker makes commands whose risk rules need arguments only
//! known at run time not plain, so a rule never passes a word it could not read.

use super::programs::{find_exec_commands, is_assignment, is_python, program_name};
use super::sed::{SedProgram, sed_effects, sed_program};
use super::tables::{INERT_PROGRAMS, SHELLS};

/// The risk of a function that spawns copies of itself.
pub const FORK_BOMB: &str = "fork bomb (a function that spawns copies of itself)";

/// The risk of a download fed to a shell or an interpreter.
pub(super) const DOWNLOAD_EXECUTED: &str = "runs downloaded code (curl | sh)";

const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch"];

/// Variables that change which code a command runs.
const DANGEROUS_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "IFS",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXEC_PATH",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_TEMPLATE_DIR",
    "GIT_PROXY_COMMAND",
    "GIT_ASKPASS",
    "GIT_SEQUENCE_EDITOR",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "NODE_OPTIONS",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PERL5OPT",
    "RUBYOPT",
    "RUSTC_WRAPPER",
];

/// The risk of assignments (`LD_PRELOAD=x ls`, `export PATH=..`).
pub(super) fn assignment_risk(words: &[String]) -> Option<String> {
    words.iter().filter(|w| is_assignment(w)).find_map(|w| {
        let name = w
            .split_once('=')
            .map_or("", |(n, _)| n.trim_end_matches('+'));
        // `GIT_CONFIG`, `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_0`, `GIT_CONFIG_PARAMETERS`,
        // ...: git config with the precedence of `git -c`, which can name a program
        // (core.fsmonitor, core.hooksPath) and undo the overrides every command gets.
        let dangerous = DANGEROUS_VARIABLES.contains(&name)
            || name.starts_with("GIT_CONFIG")
            || name.starts_with("LD_")
            || name.starts_with("DYLD_")
            || name.starts_with("BASH_FUNC_");
        dangerous.then(|| format!("sets {name}, which changes what programs run"))
    })
}

/// Whether writing to `path` is risky.
pub(super) fn write_risk(path: &str) -> Option<String> {
    const DISKS: &[&str] = &[
        "/dev/sd",
        "/dev/nvme",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/mmcblk",
        "/dev/disk",
    ];
    if path == "/etc" || path.starts_with("/etc/") {
        return Some(format!("writes to {path}"));
    }
    if DISKS.iter().any(|d| path.starts_with(d)) {
        return Some(format!("writes to a disk device ({path})"));
    }
    None
}

/// Whether an option among `args` (before `--`) is one of `longs` (`--x`, `--x=..`, or an
/// abbreviation getopt would accept, `--recur`) or a short-option cluster containing one of
/// `shorts` (`-rf`).
fn has_flag(args: &[String], shorts: &[char], longs: &[&str]) -> bool {
    for arg in args {
        if arg == "--" {
            break;
        }
        if let Some(name) = arg.strip_prefix("--") {
            let name = name.split_once('=').map_or(name, |(n, _)| n);
            if !name.is_empty()
                && longs
                    .iter()
                    .any(|l| l.strip_prefix("--").is_some_and(|l| l.starts_with(name)))
            {
                return true;
            }
        } else if let Some(cluster) = arg.strip_prefix('-')
            && cluster.chars().any(|c| shorts.contains(&c))
        {
            return true;
        }
    }
    false
}

fn non_options(args: &[String]) -> impl Iterator<Item = &String> {
    args.iter().filter(|a| !a.starts_with('-'))
}

/// The risk of one command, given its words from the program on.
pub(super) fn command_risk(words: &[String]) -> Option<String> {
    let program = program_name(words.first()?);
    let args = &words[1..];
    let reason = match program {
        "rm" if has_flag(args, &['r', 'R'], &["--recursive"]) => {
            "recursive delete (rm -r)".to_owned()
        }
        "sudo" | "su" | "doas" | "pkexec" | "runuser" => {
            format!("runs a command as another user ({program})")
        }
        "gdb" if gdb_runs_commands(args) => {
            "gdb runs commands given in its options (-ex, -x)".to_owned()
        }
        "chmod" | "chown" | "chgrp" if has_flag(args, &['R'], &["--recursive"]) => {
            format!("recursive {program} -R")
        }
        "dd" => "raw copy to or from a device (dd)".to_owned(),
        "fdisk" | "sfdisk" | "cfdisk" | "parted" | "wipefs" => {
            format!("changes disk partitions ({program})")
        }
        p if p.starts_with("mkfs") => format!("formats a filesystem ({p})"),
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            format!("shuts down the machine ({program})")
        }
        "init" | "telinit" if matches!(args.first().map(String::as_str), Some("0" | "6")) => {
            format!("shuts down the machine ({program} {})", args[0])
        }
        "systemctl"
            if non_options(args).next().is_some_and(|a| {
                matches!(a.as_str(), "poweroff" | "reboot" | "halt" | "kexec")
            }) =>
        {
            "shuts down the machine (systemctl)".to_owned()
        }
        "eval" => "eval runs arbitrary code".to_owned(),
        "git" => return git_risk(args),
        "find" if args.iter().any(|a| a == "-delete") => "deletes files (find -delete)".to_owned(),
        "find"
            if find_exec_commands(args)
                .into_iter()
                .any(|c| program_name(&args[c.start]) == "rm") =>
        {
            "deletes files (find -exec rm)".to_owned()
        }
        "kill" if kills_everything(args) => "kills every process (kill -1)".to_owned(),
        "killall" | "pkill" => format!("kills processes by name ({program})"),
        "truncate" => "truncates files".to_owned(),
        "shred" => "destroys file contents (shred)".to_owned(),
        "tee" => return non_options(args).find_map(|a| write_risk(a)),
        "cp" | "mv" | "install" => return non_options(args).last().and_then(|a| write_risk(a)),
        "export" | "declare" | "typeset" | "local" | "readonly" => return assignment_risk(args),
        "tar"
            if old_style_tar_runs(args)
                || has_flag(
                    args,
                    &['I', 'F'],
                    &[
                        "--to-command",
                        "--use-compress-program",
                        "--checkpoint-action",
                        "--info-script",
                        "--new-volume-script",
                        "--rsh-command",
                        "--rmt-command",
                    ],
                ) =>
        {
            "tar runs a command given in its options".to_owned()
        }
        "rsync" if has_flag(args, &['e'], &["--rsh", "--rsync-path"]) => {
            "rsync runs a command given in its options (-e, --rsync-path)".to_owned()
        }
        "ssh" | "scp" | "sftp" if has_flag(args, &['o', 'F', 'S'], &[]) => {
            format!("{program} with options that can run local commands (-o, -F, -S)")
        }
        "sed" => return sed_risk(args),
        "awk" | "gawk" | "mawk" | "nawk" => return awk_risk(program, args),
        "sort" if has_flag(args, &[], &["--compress-program"]) => {
            "sort runs a command given in its options (--compress-program)".to_owned()
        }
        "zip"
            if has_flag(args, &[], &["--unzip-command"])
                || args
                    .iter()
                    .take_while(|a| *a != "--")
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains("TT")) =>
        {
            "zip runs a command given in its options (-TT, --unzip-command)".to_owned()
        }
        _ => return None,
    };
    Some(reason)
}

fn git_risk(args: &[String]) -> Option<String> {
    let mut sub = None;
    let mut j = 0;
    while let Some(arg) = args.get(j) {
        if !arg.starts_with('-') {
            sub = Some(j);
            break;
        }
        if has_flag(
            std::slice::from_ref(arg),
            &['c'],
            &["--config-env", "--exec-path"],
        ) {
            return Some(
                "overrides git configuration, which can run any command (git -c)".to_owned(),
            );
        }
        j += if matches!(
            arg.as_str(),
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
        ) {
            2
        } else {
            1
        };
    }
    let j = sub?;
    let rest = &args[j + 1..];
    let reason = match args[j].as_str() {
        "push"
            if has_flag(
                rest,
                &['f'],
                &["--force", "--force-with-lease", "--force-if-includes"],
            ) || non_options(rest).any(|a| a.starts_with('+')) =>
        {
            "force push (git push --force)"
        }
        "reset" if rest.iter().any(|a| a == "--hard") => {
            "discards uncommitted changes (git reset --hard)"
        }
        "clean" if has_flag(rest, &['f'], &["--force"]) => "deletes untracked files (git clean -f)",
        "rebase" if has_flag(rest, &['x'], &["--exec"]) => "runs a command (git rebase --exec)",
        "bisect" if rest.first().is_some_and(|a| a == "run") => "runs a command (git bisect run)",
        "submodule" if rest.iter().any(|a| a == "foreach") => {
            "runs a command (git submodule foreach)"
        }
        "filter-branch" | "filter-repo" => "rewrites history with commands (git filter-branch)",
        "difftool" | "mergetool" if has_flag(rest, &['x', 't'], &["--extcmd", "--tool"]) => {
            "runs a command (git difftool -x)"
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" | "push"
            if has_flag(rest, &['u'], &["--upload-pack", "--receive-pack", "--exec"])
                && (args[j] != "push" || has_flag(rest, &[], &["--receive-pack", "--exec"])) =>
        {
            "runs a command on the way (--upload-pack, --receive-pack, --exec)"
        }
        "grep" if has_flag(rest, &['O'], &["--open-files-in-pager"]) => {
            "runs a command on the files found (git grep -O)"
        }
        "config" if non_options(rest).count() >= 2 || has_flag(rest, &[], &["--add", "--edit"]) => {
            "changes git configuration, which can make git run commands (git config)"
        }
        _ => return None,
    };
    Some(reason.to_owned())
}

/// `kill [-SIGNAL] -1`: signals every process the user may signal.
fn kills_everything(args: &[String]) -> bool {
    let mut j = match args.first().map(String::as_str) {
        Some("-s" | "-n") => 2,
        Some(a) if a.starts_with('-') && a != "--" => 1,
        _ => 0,
    };
    if args.get(j).is_some_and(|a| a == "--") {
        j += 1;
    }
    args.iter().skip(j).any(|a| a == "-1")
}

/// How many words after a program name a risk rule is given when it is looked for in
/// another program's arguments (enough for `rm -rf DIR`, and a bound on the cost).
const HIDDEN_WINDOW: usize = 32;

/// A risky command among the arguments of a program that may run its arguments as a
/// command (`frobnicate rm -rf /`, `setsid -x rm -rf /`): any program but the inert ones
/// (`tables::INERT_PROGRAMS`), from after its subcommand for a program that has one
/// (`git rm -r` is git's own, `docker run IMAGE rm -rf /` is not).
pub(super) fn hidden_risk(words: &[String], signature: &str) -> Option<String> {
    let program = program_name(words.first()?);
    if INERT_PROGRAMS.contains(&program) {
        return None;
    }
    let start = match signature.split_once(' ') {
        Some((_, sub)) => words.iter().position(|w| w == sub).map_or(1, |k| k + 1),
        None => 1,
    };
    (start..words.len()).find_map(|k| {
        let window = &words[k..words.len().min(k + HIDDEN_WINDOW)];
        let inner = command_risk(window)?;
        let shown: Vec<&str> = window
            .iter()
            .take(
                1 + window[1..]
                    .iter()
                    .take_while(|w| w.starts_with('-'))
                    .count(),
            )
            .map(String::as_str)
            .collect();
        Some(format!(
            "runs `{}` through {program}: {inner}",
            shown.join(" ")
        ))
    })
}

/// `gdb -ex CMD`, `-x FILE`, `--eval-command=CMD`, ...: gdb commands, which can run
/// shell commands.
fn gdb_runs_commands(args: &[String]) -> bool {
    args.iter().any(|arg| {
        let name = arg.trim_start_matches('-');
        let name = name.split_once('=').map_or(name, |(n, _)| n);
        arg.starts_with('-')
            && matches!(
                name,
                "ex" | "x"
                    | "iex"
                    | "ix"
                    | "eval-command"
                    | "command"
                    | "init-command"
                    | "init-eval-command"
            )
    })
}

/// `tar cIf CMD a.tar`: a first argument without a dash is a bundle of short options
/// (old style), and `I` (compress program) or `F` (volume script) take a command.
fn old_style_tar_runs(args: &[String]) -> bool {
    args.first()
        .is_some_and(|bundle| !bundle.starts_with('-') && bundle.contains(['I', 'F']))
}

/// The risk of a sed command: a script that runs commands, or one the checker cannot
/// read. The files its script writes are parts of their own (see `programs.rs`).
fn sed_risk(args: &[String]) -> Option<String> {
    let reason = match sed_program(args) {
        SedProgram::FromFile => "the sed script comes from a file, which may run commands (-f)",
        SedProgram::UnknownOption(option) => {
            return Some(format!(
                "runs sed with an option the checker does not know ({option})"
            ));
        }
        SedProgram::Script(script) => {
            let effects = sed_effects(&script);
            if effects.runs {
                "the sed script can run commands (e)"
            } else if effects.unreadable {
                "the checker cannot read the sed script, which may run commands (e)"
            } else {
                return None;
            }
        }
    };
    Some(reason.to_owned())
}

/// The risk of an awk program: one that can start commands (`system()`, `| "cmd"`, `"cmd"
/// | getline`, gawk's indirect calls `@f()`), or write files (`print > "f"`, `>>`), whose
/// names are awk expressions the checker cannot bound; a program from a file, an
/// extension, or an option that writes a file is as risky. A guess on the side of caution:
/// any `>` after the first `print` counts as an output redirection.
fn awk_risk(program: &str, args: &[String]) -> Option<String> {
    let runs = || format!("the {program} program can run commands (system, pipes)");
    let mut texts: Vec<&str> = Vec::new();
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
            let is = |option: &str| !name.is_empty() && option.starts_with(name);
            if ["file", "exec", "include", "load", "debug"]
                .iter()
                .any(|o| is(o))
            {
                return Some(runs());
            }
            if ["dump-variables", "pretty-print", "profile"]
                .iter()
                .any(|o| is(o))
            {
                return Some(format!(
                    "{program} writes a file given in its options ({arg})"
                ));
            }
            if is("source") {
                texts.push(inline.unwrap_or_else(|| {
                    i += 1;
                    args.get(i - 1).map_or("", String::as_str)
                }));
            } else if (is("assign") || is("field-separator")) && inline.is_none() {
                i += 1;
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
                'f' | 'E' | 'i' | 'l' | 'D' => return Some(runs()),
                'd' | 'o' | 'p' => {
                    return Some(format!(
                        "{program} writes a file given in its options ({arg})"
                    ));
                }
                // mawk's `-W version`; its other `-W` options (`exec`, `dump`, ...) are
                // not read.
                'W' => {
                    if !value().starts_with('v') {
                        return Some(runs());
                    }
                }
                'v' | 'F' => {
                    value();
                }
                'e' => texts.push(value()),
                _ => continue,
            }
            break;
        }
    }
    if texts.is_empty() {
        texts.extend(operands.first());
    }
    let text = texts.join("\n");
    if text.contains("system") || text.contains('|') || text.contains('@') {
        return Some(runs());
    }
    if text
        .find("print")
        .is_some_and(|at| text[at..].contains('>'))
    {
        return Some(format!(
            "the {program} program writes files it names itself (print >)"
        ));
    }
    None
}

fn is_interpreter(program: &str) -> bool {
    SHELLS.contains(&program)
        || is_python(program)
        || matches!(
            program,
            "perl" | "ruby" | "node" | "php" | "lua" | "source" | "." | "eval"
        )
}

/// One command of a line, as the download rule sees it.
pub(super) struct Stage<'a> {
    /// The program after wrappers, if known.
    pub program: Option<&'a str>,
    /// The program is computed by a substitution (`$(curl ..)`).
    pub computed: bool,
    pub pipes: &'a [(usize, usize)],
    pub depth: usize,
}

/// A download piped into a shell or interpreter (`curl .. | sh`), or run through a
/// substitution (`bash -c "$(curl ..)"`, `sh <(wget ..)`).
pub(super) fn download_risk(stages: &[Stage]) -> Option<String> {
    let runs_code = |s: &Stage| s.computed || s.program.is_some_and(is_interpreter);
    for download in stages
        .iter()
        .filter(|s| s.program.is_some_and(|p| DOWNLOADERS.contains(&p)))
    {
        let piped = download.pipes.iter().any(|&(id, stage)| {
            stages
                .iter()
                .any(|s| runs_code(s) && s.pipes.iter().any(|&(i, k)| i == id && k > stage))
        });
        let substituted = download.depth > 0
            && stages
                .iter()
                .any(|s| s.depth < download.depth && runs_code(s));
        if piped || substituted {
            return Some(DOWNLOAD_EXECUTED.to_owned());
        }
    }
    None
}
