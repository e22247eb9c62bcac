//! Risky commands: what is always asked (never covered by a remembered grant) because a
//! mistake is expensive, with a reason a person can read. Rules read a command's words
//! from its program on; the checker makes commands whose risk rules need arguments only
//! known at run time not plain, so a rule never passes a word it could not read.

use super::programs::{find_exec_commands, is_assignment, is_python, program_name};
use super::tables::SHELLS;

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
        "sudo" | "su" | "doas" | "pkexec" => format!("runs a command as another user ({program})"),
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
            if has_flag(
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
        "sed" if sed_runs_commands(args) => "the sed script can run commands (e)".to_owned(),
        "awk" | "gawk" | "mawk" | "nawk" if awk_runs_commands(args) => {
            format!("the {program} program can run commands (system, pipes)")
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

/// The scripts of a sed command: `-e`/`--expression` values, else the first operand;
/// `None` if a script comes from a file (unknown).
fn sed_scripts(args: &[String]) -> Option<Vec<&str>> {
    let mut scripts = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg == "-f" || arg.starts_with("--file") || (arg.starts_with("-f") && arg.len() > 2) {
            return None;
        }
        if arg == "-e" || arg == "--expression" {
            scripts.push(args.get(i + 1).map_or("", String::as_str));
            i += 2;
            continue;
        }
        if let Some(s) = arg.strip_prefix("--expression=") {
            scripts.push(s);
        } else if let Some(s) = arg.strip_prefix("-e").filter(|s| !s.is_empty()) {
            scripts.push(s);
        } else if !arg.starts_with('-') {
            operands.push(arg.as_str());
        }
        i += 1;
    }
    if scripts.is_empty()
        && let Some(first) = operands.first()
    {
        scripts.push(first);
    }
    Some(scripts)
}

/// Whether a sed script may use GNU sed's `e` (execute) command or `s///e` flag. A guess
/// on the side of caution: an `e` where a command or a flag may stand counts.
fn sed_runs_commands(args: &[String]) -> bool {
    let Some(scripts) = sed_scripts(args) else {
        return true;
    };
    scripts.iter().any(|script| {
        let chars: Vec<char> = script.chars().collect();
        chars.iter().enumerate().any(|(k, &c)| {
            c == 'e' && {
                let before = chars[..k].iter().rev().find(|c| !c.is_whitespace());
                let after = chars.get(k + 1);
                let command_start = matches!(
                    before,
                    None | Some(';' | '\n' | '{' | '}' | '/' | '$' | '!' | '0'..='9')
                );
                let flag = matches!(before, Some(c) if c.is_ascii_alphanumeric() || *c == '/');
                (command_start || flag)
                    && after.is_none_or(|c| {
                        c.is_whitespace()
                            || matches!(
                                c,
                                ';' | '}' | 'g' | 'p' | 'i' | 'I' | 'w' | 'm' | 'M' | '0'..='9'
                            )
                    })
            }
        })
    })
}

/// Whether an awk program can start commands (`system()`, `| "cmd"`, `"cmd" | getline`).
fn awk_runs_commands(args: &[String]) -> bool {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.as_str() {
            "-f" | "--file" | "-E" | "--exec" | "-i" | "--include" | "-l" | "--load" => {
                return true;
            }
            "-v" | "-F" | "--assign" | "--field-separator" => i += 2,
            a if a.starts_with('-') && a.len() > 1 => i += 1,
            program => {
                return program.contains("system") || program.contains('|');
            }
        }
    }
    false
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
