//! Shell command analysis for the permission policy.
//!
//! The bash tool runs every command with bash (`bash --noprofile --norc -c`), and this
//! module reads the command with bash's grammar (tree-sitter-bash) to tell the policy:
//! - the *parts* that will run: every simple command, also inside substitutions, `bash -c`
//!   scripts, `sudo`, `xargs`, `find -exec`, known wrappers (`timeout`, `ionice`, `setsid`,
//!   `flock`, ...) and the strings `su -c`, `script -c`, `watch`, `ssh HOST` give a shell,
//!   every redirection that writes, every file
//!   a command writes through its own options (`sort -o`, `find -fprint`, sed's `w`, checked
//!   like a redirection), and every read the target check refuses; each with the signature
//!   a grant is keyed by (`git status`, `cargo test`, `ls`, `>` for a write, `<` for a
//!   read);
//! - whether the line is *plain*: words and quoted strings, with no expansion but `$NAME`,
//!   `${NAME}`, globs and a leading `~`, joined by `|`, `&&`, `||`, `;` and newlines, with
//!   redirections that write only inside the workspace and read only where the caller's
//!   check allows (see `redirect.rs`: no `/dev/tcp`, no `/dev/fd/N` of a descriptor the
//!   line opened, no `>&WORD` that bash would expand twice, no named descriptor
//!   `{NAME}>`). Only a plain line can be covered by a grant or by an `allow` level;
//!   anything else (substitutions, arithmetic, heredocs, groups, loops, functions, `eval`,
//!   `source`, shells with options, programs named by a path, control characters, what the
//!   grammar cannot parse, a line longer than [`MAX_PLAIN_BYTES`], ...) is asked every time
//!   and never remembered, with the reasons shown in the prompt;
//! - the risks: commands always asked (`rm -r`, `sudo`, `curl | sh`, `git push --force`,
//!   fork bombs, programs told to run a command through their own syntax: sed's `e`,
//!   awk's `system`, `tar -I`, `zip -TT`, `git grep -O`, ...; files a program names itself
//!   where the checker cannot bound them, as awk's `print > expr`; a risky command among
//!   the arguments of a program that may run them, `frobnicate rm -rf /`), and the
//!   `blocked_commands` patterns that match anywhere in such arguments, counting a word
//!   only known at run time as matching;
//! - the parts known to use the network (`curl`, `git fetch`, `npm install`, `/dev/tcp`,
//!   ...: `tables::NETWORK_COMMANDS`), for the caller's network permission. Advisory:
//!   false positives only ask more, and a command not listed runs without network.
//!
//! Layout: `parse.rs` (the grammar's tree to simple commands and words), `lex.rs` (one
//! word), `programs.rs` (wrappers, signatures, spawned commands, builtins), `redirect.rs`
//! (what a redirection reads, writes or opens), `risk.rs`, `sed.rs` (what a sed script
//! runs and writes), `blocked.rs`, `tables.rs` (the
//! program tables), and `display.rs` (escaping what a prompt shows). Pure: it runs nothing
//! and reads no file; the caller says which redirection targets may be read or written
//! ([`TargetCheck`]). It decides nothing either: `permission.rs` turns an analysis into
//! allow, ask or deny.

mod blocked;
pub mod display;
mod lex;
mod parse;
mod programs;
mod redirect;
mod risk;
mod sed;
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

/// One command that will run, or one redirection (a write, or a read the check refused).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandPart {
    /// The command as written (for one started by another, its words).
    pub text: String,
    /// The words from the program on (assignments and wrappers such as `env`, `timeout`
    /// skipped). For a redirection: the operator and the target.
    pub words: Vec<Word>,
    /// The key of a remembered grant: `git status`, `cargo test`, `python -m pytest`, `ls`;
    /// `>` for a redirection that writes, `<` for one that reads; `NAME=` for a bare
    /// assignment.
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
    /// The parts known to use the network (`curl`, `git fetch`, `npm install`, a
    /// redirection to `/dev/tcp/..`): their signatures, or the redirection's target.
    /// Advisory, for the network permission: a command not known here may still use it.
    pub network: Vec<String>,
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

/// Whether a redirection reads its target or writes it (`<>` writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetUse {
    Read,
    Write,
}

/// Where a redirection may read or write: `None` when `target` (a literal path as
/// written, relative to the workspace) may be used so, else why not.
pub type TargetCheck<'a> = &'a dyn Fn(&str, TargetUse) -> Option<String>;

/// What the loop over a line's commands found, in reading order: a command's part, or a
/// redirection judged once the whole line is known (which descriptors it opens).
enum Slot {
    Part(CommandPart),
    Redirect(RawCommand),
    /// A file a command writes through its options (`sort -o FILE`): the command's text
    /// and the file.
    Written(String, Word),
}

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
            network: Vec::new(),
            parse_error: true,
        };
    }
    analyze_unbounded(command, target_check)
}

/// [`analyze`] without the length cap. By phase: parse, examine every command (unfolding
/// what it starts), judge the redirections once the whole line is known, then what holds
/// for the line (its risk, what is unclear, what uses the network).
fn analyze_unbounded(command: &str, target_check: TargetCheck) -> CommandAnalysis {
    let mut script = Script::default();
    parse::parse_into(&mut script, command, 0, 0);
    let examined = examine_commands(&mut script);
    let mut parts = resolve_slots(examined.slots, target_check);
    let mut seen = std::collections::HashSet::new();
    parts.retain(|p| seen.insert((p.text.clone(), p.words.clone(), p.redirect)));
    let stages: Vec<risk::Stage> = examined
        .stages
        .iter()
        .map(|stage| risk::Stage {
            program: stage.program.as_deref(),
            computed: stage.computed,
            pipes: &stage.pipes,
            depth: stage.depth,
        })
        .collect();
    let whole = if script.fork_bomb {
        Some(FORK_BOMB.to_owned())
    } else {
        risk::download_risk(&stages)
    };
    let risk = whole
        .or(examined.transparent_risk)
        .or_else(|| parts.iter().find_map(|p| p.risk.clone()));
    let unclear = unclear_of_line(std::mem::take(&mut script.unclear), &parts);
    let network = network_of_line(&parts);
    CommandAnalysis {
        command: command.to_owned(),
        parts,
        risk,
        unclear,
        network,
        parse_error: script.parse_error,
    }
}

/// One command of a line as the download rule needs it (see [`risk::Stage`]).
struct StageFound {
    program: Option<String>,
    computed: bool,
    pipes: Vec<(usize, usize)>,
    depth: usize,
}

/// What examining a line's commands found.
struct Examined {
    /// The parts and redirections, in reading order.
    slots: Vec<Slot>,
    stages: Vec<StageFound>,
    /// What a transparent command (`bash -c STR`) says of itself that holds for the line.
    transparent_risk: Option<String>,
}

/// Examines the script's commands in order, adding what each starts on its own to the
/// script as it goes (at most [`MAX_COMMANDS`]).
fn examine_commands(script: &mut Script) -> Examined {
    let mut found = Examined {
        slots: Vec::new(),
        stages: Vec::new(),
        transparent_risk: None,
    };
    let mut k = 0;
    while k < script.commands.len() {
        if k >= MAX_COMMANDS {
            script.unclear("unfolds into too many commands");
            break;
        }
        let raw = script.commands[k].clone();
        k += 1;
        if raw.redirect.is_some() {
            found.slots.push(Slot::Redirect(raw));
            continue;
        }
        let examined = examine(&raw.words);
        found.stages.push(StageFound {
            program: examined.program.clone(),
            computed: examined.command.first().is_some_and(Word::is_runtime)
                && examined.program.is_none(),
            pipes: raw.pipes.clone(),
            depth: raw.depth,
        });
        for spawned in &examined.spawned {
            unfold(script, &raw, spawned);
        }
        if examined.signature.is_empty() {
            // Transparent (`bash -c STR`): its script's commands are the parts, and what
            // it says of itself (`PATH=. bash -c ls`, `env -u PATH bash -c ls`) holds for
            // the line.
            for reason in examined.unclear {
                script.unclear(reason);
            }
            if found.transparent_risk.is_none() {
                found.transparent_risk = risk::assignment_risk(&examined.assignments);
            }
            continue;
        }
        let shown: Vec<String> = examined
            .command
            .iter()
            .map(|w| w.shown().to_owned())
            .collect();
        let risk = risk::assignment_risk(&examined.assignments)
            .or_else(|| risk::command_risk(&shown))
            .or_else(|| risk::hidden_risk(&shown, &examined.signature));
        let words = if examined.command.is_empty() {
            raw.words.clone()
        } else {
            examined.command
        };
        let written: Vec<Slot> = examined
            .writes
            .into_iter()
            .map(|file| Slot::Written(raw.text.clone(), file))
            .collect();
        found.slots.push(Slot::Part(CommandPart {
            text: raw.text,
            words,
            signature: examined.signature,
            redirect: false,
            risk,
            unclear: examined.unclear,
        }));
        found.slots.extend(written);
    }
    found
}

/// The line's parts: its commands' parts, and its redirections and written files judged
/// now that the line is known (which descriptors it opens, whether it changes directory).
fn resolve_slots(slots: Vec<Slot>, target_check: TargetCheck) -> Vec<CommandPart> {
    let opened = redirect::OpenedFds::of(slots.iter().filter_map(|slot| match slot {
        Slot::Redirect(raw) => Some(raw),
        Slot::Part(_) | Slot::Written(..) => None,
    }));
    let context = redirect::Context {
        opened: &opened,
        changes_dir: slots.iter().any(|slot| {
            matches!(slot, Slot::Part(p) if matches!(p.signature.as_str(), "cd" | "pushd" | "popd"))
        }),
        check: target_check,
    };
    slots
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Part(part) => Some(part),
            Slot::Redirect(raw) => redirect::redirect_part(&raw, &context),
            Slot::Written(text, file) => redirect::written_part(&text, &file, &context),
        })
        .collect()
}

/// What is unclear about the line: the script's reasons, then its parts', each once.
fn unclear_of_line(mut unclear: Vec<String>, parts: &[CommandPart]) -> Vec<String> {
    let mut seen: std::collections::HashSet<String> = unclear.iter().cloned().collect();
    for reason in parts.iter().flat_map(|p| p.unclear.iter()) {
        if seen.insert(reason.clone()) {
            unclear.push(reason.clone());
        }
    }
    unclear
}

/// What on the line uses the network, each once: programs that do, and redirections to a
/// network device (`/dev/tcp/..`).
fn network_of_line(parts: &[CommandPart]) -> Vec<String> {
    let mut network: Vec<String> = Vec::new();
    for part in parts {
        let uses = if part.redirect {
            part.words
                .get(1)
                .map(Word::shown)
                .filter(|t| redirect::is_network_device(t))
                .map(str::to_owned)
        } else {
            programs::uses_network(&part.signature, &part.words).then(|| part.signature.clone())
        };
        if let Some(uses) = uses
            && !network.contains(&uses)
        {
            network.push(uses);
        }
    }
    network
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
                redirect: None,
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

#[cfg(test)]
mod tests;

#[cfg(test)]
mod shell_property;
