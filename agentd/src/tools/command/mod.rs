//! Shell command analysis for the permission policy.
//!
//! The bash tool runs every command with bash (`bash --noprofile --norc -c`), and this
//! module reads the command with bash's grammar (tree-sitter-bash) to tell the policy:
//! - the *parts* that will run: every simple command, also inside substitutions, `bash -c`
//!   scripts, `sudo`, `xargs` and `find -exec`, and every output redirection; each with the
//!   signature a grant is keyed by (`git status`, `cargo test`, `ls`, `>`);
//! - whether the line is *plain*: words and quoted strings, with no expansion but `$NAME`,
//!   `${NAME}`, globs and a leading `~`, joined by `|`, `&&`, `||`, `;` and newlines, with
//!   redirections only to files inside the workspace. Only a plain line can be covered by a
//!   grant or by an `allow` level; anything else (substitutions, arithmetic, heredocs,
//!   groups, loops, functions, `eval`, `source`, shells with options, programs named by a
//!   path, control characters, what the grammar cannot parse, ...) is asked every time and
//!   never remembered, with the reasons shown in the prompt;
//! - the risks: commands always asked (`rm -r`, `sudo`, `curl | sh`, `git push --force`,
//!   fork bombs, ...), and the `blocked_commands` patterns that match, counting a word only
//!   known at run time as matching.
//!
//! Layout: `parse.rs` (the grammar's tree to simple commands and words), `programs.rs`
//! (wrappers, signatures, spawned commands, builtins), `risk.rs`, `blocked.rs`, and
//! `display.rs` (escaping what a prompt shows). Pure: it runs nothing and reads no file; the
//! caller says which redirection targets are inside the workspace. It decides nothing
//! either: `permission.rs` turns an analysis into allow, ask or deny.

mod blocked;
pub mod display;
mod lex;
mod parse;
mod programs;
mod risk;
mod tables;

pub use blocked::blocked_by;
pub use parse::Word;
pub use risk::FORK_BOMB;

use parse::{RawCommand, Script};
use programs::{Spawned, examine};

/// The most commands one line may unfold into before the rest is not followed.
const MAX_COMMANDS: usize = 4096;

/// The longest line the checker reads: a longer one is not plain and is not parsed at
/// all (its blocked patterns match as for a line bash's grammar could not parse), so no
/// line can make the checker, and every client waiting on it, slow.
pub const MAX_PLAIN_BYTES: usize = 64 * 1024;

/// One command that will run, or one output redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPart {
    /// The command as written (for one started by another, its words).
    pub text: String,
    /// The words from the program on (assignments and wrappers such as `env`, `timeout`
    /// skipped). For an output redirection: the operator and the target.
    pub words: Vec<Word>,
    /// The key of a remembered grant: `git status`, `cargo test`, `python -m pytest`, `ls`;
    /// `>` for an output redirection; `NAME=` for a bare assignment.
    pub signature: String,
    pub redirect: bool,
    /// Why this part must always be asked, if it is risky.
    pub risk: Option<String>,
    /// Why this part is not plain.
    pub unclear: Vec<String>,
}

/// A command line as the permission policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAnalysis {
    /// The line as given.
    pub command: String,
    /// Every part that runs, in reading order, without duplicates.
    pub parts: Vec<CommandPart>,
    /// The whole-line risk (fork bomb, a download fed to a shell) if any, else the first
    /// risk of a part. A risky command is never covered by a remembered grant.
    pub risk: Option<String>,
    /// Why the line is not plain (empty: plain). Not plain: asked every time.
    pub unclear: Vec<String>,
    /// bash's grammar could not parse (part of) the line, or the line is longer than
    /// [`MAX_PLAIN_BYTES`] and was not parsed: blocked patterns match loosely.
    pub parse_error: bool,
}

impl CommandAnalysis {
    /// Whether a grant or an `allow` level may cover the line.
    pub fn plain(&self) -> bool {
        self.unclear.is_empty()
    }

    /// The distinct signatures of the parts, in order.
    pub fn signatures(&self) -> Vec<String> {
        let mut signatures: Vec<String> = Vec::new();
        for part in &self.parts {
            if !signatures.contains(&part.signature) {
                signatures.push(part.signature.clone());
            }
        }
        signatures
    }
}

/// Where an output redirection may write: `None` when `target` (a literal path as
/// written, relative to the workspace) is inside the workspace, else why not.
pub type TargetCheck<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Analyzes `command`; `target_check` says which redirection targets are inside the
/// workspace.
pub fn analyze(command: &str, target_check: TargetCheck) -> CommandAnalysis {
    if command.len() > MAX_PLAIN_BYTES {
        return CommandAnalysis {
            command: command.to_owned(),
            parts: Vec::new(),
            risk: None,
            unclear: vec![format!(
                "is longer than {} KiB, so the checker does not read it",
                MAX_PLAIN_BYTES / 1024
            )],
            parse_error: true,
        };
    }
    analyze_unbounded(command, target_check)
}

/// [`analyze`] without the length cap.
fn analyze_unbounded(command: &str, target_check: TargetCheck) -> CommandAnalysis {
    let mut script = Script::default();
    parse::parse_into(&mut script, command, 0, 0);
    let mut parts: Vec<CommandPart> = Vec::new();
    let mut stages = Vec::new();
    let mut k = 0;
    while k < script.commands.len() {
        if k >= MAX_COMMANDS {
            script.unclear("unfolds into too many commands");
            break;
        }
        let raw = script.commands[k].clone();
        k += 1;
        if raw.redirect {
            parts.extend(redirect_part(&raw, target_check));
            continue;
        }
        let examined = examine(&raw.words);
        stages.push((
            examined.program.clone(),
            examined.command.first().is_some_and(Word::is_runtime) && examined.program.is_none(),
            raw.pipes.clone(),
            raw.depth,
        ));
        for spawned in &examined.spawned {
            unfold(&mut script, &raw, spawned);
        }
        if examined.signature.is_empty() {
            // Transparent (`bash -c STR`): its script's commands are the parts.
            continue;
        }
        let shown: Vec<String> = examined
            .command
            .iter()
            .map(|w| w.shown().to_owned())
            .collect();
        let risk =
            risk::assignment_risk(&examined.assignments).or_else(|| risk::command_risk(&shown));
        let words = if examined.command.is_empty() {
            raw.words.clone()
        } else {
            examined.command
        };
        parts.push(CommandPart {
            text: raw.text,
            words,
            signature: examined.signature,
            redirect: false,
            risk,
            unclear: examined.unclear,
        });
    }
    relative_targets_after_cd(&mut parts);
    let stage_views: Vec<risk::Stage> = stages
        .iter()
        .map(|(program, computed, pipes, depth)| risk::Stage {
            program: program.as_deref(),
            computed: *computed,
            pipes,
            depth: *depth,
        })
        .collect();
    let whole = if script.fork_bomb {
        Some(FORK_BOMB.to_owned())
    } else {
        risk::download_risk(&stage_views)
    };
    let mut seen = std::collections::HashSet::new();
    parts.retain(|p| seen.insert((p.text.clone(), p.words.clone(), p.redirect)));
    let risk = whole.or_else(|| parts.iter().find_map(|p| p.risk.clone()));
    let mut unclear = script.unclear;
    let mut seen: std::collections::HashSet<&str> = unclear.iter().map(String::as_str).collect();
    let mut more = Vec::new();
    for reason in parts.iter().flat_map(|p| p.unclear.iter()) {
        if seen.insert(reason) {
            more.push(reason.clone());
        }
    }
    unclear.extend(more);
    CommandAnalysis {
        command: command.to_owned(),
        parts,
        risk,
        unclear,
        parse_error: script.parse_error,
    }
}

/// Adds the commands a command starts on its own to the script, in its pipelines.
fn unfold(script: &mut Script, raw: &RawCommand, spawned: &Spawned) {
    if raw.nesting >= parse::MAX_NESTING {
        script.unclear("is nested too deeply");
        return;
    }
    match spawned {
        Spawned::Command(words) => {
            let text = words.iter().map(Word::shown).collect::<Vec<_>>().join(" ");
            script.commands.push(RawCommand {
                text,
                words: words.clone(),
                redirect: false,
                depth: raw.depth,
                pipes: raw.pipes.clone(),
                nesting: raw.nesting + 1,
            });
        }
        Spawned::Script(source) => {
            let first = script.commands.len();
            parse::parse_into(script, source, raw.depth, raw.nesting + 1);
            for command in &mut script.commands[first..] {
                command.pipes.extend(raw.pipes.iter().copied());
            }
        }
    }
}

/// Targets that cannot hurt: the null device and the standard streams.
fn harmless_target(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || target
        .strip_prefix("/dev/fd/")
        .is_some_and(|fd| !fd.is_empty() && fd.bytes().all(|b| b.is_ascii_digit()))
}

/// The part of an output redirection; none for one to the null device or a stream.
fn redirect_part(raw: &RawCommand, target_check: TargetCheck) -> Option<CommandPart> {
    let mut unclear = Vec::new();
    let mut risk = None;
    match raw.words.get(1) {
        Some(Word::Literal(target)) if harmless_target(target) => return None,
        Some(Word::Literal(target)) => {
            risk = risk::write_risk(target);
            if let Some(reason) = target_check(target) {
                unclear.push(reason);
            }
        }
        Some(word) => unclear.push(format!(
            "redirects to a file only known at run time ({})",
            word.shown()
        )),
        None => unclear.push("has a redirection without a target".into()),
    }
    Some(CommandPart {
        text: raw.text.clone(),
        words: raw.words.clone(),
        signature: ">".into(),
        redirect: true,
        risk,
        unclear,
    })
}

/// After `cd`, `pushd` or `popd`, a relative target is not where the check looked.
fn relative_targets_after_cd(parts: &mut [CommandPart]) {
    let changes_dir = parts
        .iter()
        .any(|p| !p.redirect && matches!(p.signature.as_str(), "cd" | "pushd" | "popd"));
    if !changes_dir {
        return;
    }
    for part in parts.iter_mut().filter(|p| p.redirect) {
        let relative = part
            .words
            .get(1)
            .and_then(Word::literal)
            .is_some_and(|t| !t.starts_with('/'));
        if relative {
            part.unclear
                .push("redirects to a relative path in a command that changes directory".into());
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod shell_property;
