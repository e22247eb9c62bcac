//! File redirections: what each one reads, writes or opens, which of them are parts of
//! their own (with the signature `>` or `<`), and why one is not plain.
//!
//! - Every target a redirection opens goes through the caller's target check, for reading
//!   (`<`, `N<`) or for writing (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, which opens for
//!   writing too). A target only known at run time is not plain, and so is
//!   `/dev/tcp/HOST/PORT` or `/dev/udp/..` in any direction: bash opens a connection.
//! - A read that the check allows is no part at all: reading in the workspace (or the
//!   agent's own folder) is allowed by default, as for the read tools, so `sort < in.txt`
//!   needs a grant of `sort` only. Any other read is a part with the signature `<`; a write
//!   is a part with the signature `>`, which a grant may name.
//! - The null device, `/dev/tty` and the standard streams (`/dev/stdin`, `/dev/stdout`,
//!   `/dev/stderr`, `/dev/fd/N`) are no part, but a stream is only harmless while it is
//!   what bash was given: once a redirection anywhere in the line opens descriptor N on a
//!   file (or copies one such onto N), `/dev/fd/N` reopens that file, so a redirection to it
//!   is not plain (`echo x 3<f >>/dev/fd/3` appends to `f`). The line is looked at as a
//!   whole, in no order: a plain line has no group or `exec` to carry a descriptor from one
//!   command to the next, so this only ever refuses more than bash would do.
//! - `>&WORD` and `<&WORD` copy a descriptor when WORD is a number (or `-`, or a number and
//!   `-`); any other WORD is expanded a second time by bash (`ls >&'$(touch P)'` runs
//!   `touch`), so it is not plain.
//! - After `cd`, `pushd` or `popd`, a relative target is not where the check looked.
//!
//! Pure: the caller's check reads the file system, this module does not.

use std::collections::{HashMap, HashSet};

use super::parse::{Descriptor, RawCommand, Word};
use super::{CommandPart, TargetCheck, TargetUse, risk};

/// How a redirection opens its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
    /// `<>`: both.
    ReadWrite,
}

/// What one redirection does, from its operator, descriptor and target.
#[derive(Debug, Clone, Copy)]
enum Effect {
    /// Opens its target on these descriptors (`None`: a descriptor the checker could
    /// not read).
    Open {
        access: Access,
        fds: Option<[Option<u32>; 2]>,
    },
    /// Makes `fd` a copy of `from` (`2>&1`, moves like `3>&4-`).
    Copy { fd: Option<u32>, from: u32 },
    /// Closes a descriptor (`2>&-`).
    Close,
}

fn effect(redirect: Descriptor, operator: &str, target: Option<&Word>) -> Effect {
    let own = |default: u32| match redirect {
        Descriptor::Default => Some([Some(default), None]),
        Descriptor::Number(n) => Some([Some(n), None]),
        Descriptor::Unknown => None,
    };
    let open = |access, fds| Effect::Open { access, fds };
    match operator {
        "<" => open(Access::Read, own(0)),
        "<>" => open(Access::ReadWrite, own(0)),
        "&>" | "&>>" => open(Access::Write, Some([Some(1), Some(2)])),
        "<&-" | ">&-" => Effect::Close,
        "<&" | ">&" => {
            let default = if operator == "<&" { 0 } else { 1 };
            match target.and_then(Word::literal).and_then(descriptor_copy) {
                Some(None) => Effect::Close,
                Some(Some(from)) => Effect::Copy {
                    fd: own(default).and_then(|fds| fds[0]),
                    from,
                },
                // `>&FILE` sends stdout and stderr to FILE.
                None if operator == ">&" && redirect == Descriptor::Default => {
                    open(Access::Write, Some([Some(1), Some(2)]))
                }
                None => open(Access::Write, own(default)),
            }
        }
        // `>`, `>>`, `>|`, and operators the walk already reported.
        _ => open(Access::Write, own(1)),
    }
}

/// The target of `>&WORD` / `<&WORD` as a copy: `Some(Some(n))` for `n` or `n-`,
/// `Some(None)` for `-` (close), `None` when WORD is no descriptor.
fn descriptor_copy(word: &str) -> Option<Option<u32>> {
    if word == "-" {
        return Some(None);
    }
    let digits = word.strip_suffix('-').unwrap_or(word);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Some(digits.parse().unwrap_or(u32::MAX)))
}

/// The descriptors some redirection of the line opens on a file, directly or by copy.
#[derive(Debug, Default)]
pub(super) struct OpenedFds {
    fds: HashSet<u32>,
    /// A redirection opens a descriptor the checker could not read: any may be open.
    any: bool,
}

impl OpenedFds {
    /// From every redirection of the line.
    pub(super) fn of<'a>(redirections: impl Iterator<Item = &'a RawCommand>) -> OpenedFds {
        let mut opened = OpenedFds::default();
        let mut copies: HashMap<u32, Vec<u32>> = HashMap::new();
        for raw in redirections {
            let Some(descriptor) = raw.redirect else {
                continue;
            };
            let operator = raw.words.first().map_or("", Word::shown);
            let target = raw.words.get(1).and_then(Word::literal);
            match effect(descriptor, operator, raw.words.get(1)) {
                // The devices that are no file, and the streams: reopening a stream is a
                // copy of its descriptor.
                Effect::Open { .. } if target.is_some_and(is_device) => {}
                Effect::Open { fds: Some(fds), .. } if target.and_then(stream_fd).is_some() => {
                    let from = target.and_then(stream_fd).unwrap_or(u32::MAX);
                    for fd in fds.into_iter().flatten() {
                        copies.entry(from).or_default().push(fd);
                    }
                }
                Effect::Open { fds: Some(fds), .. } => opened.fds.extend(fds.into_iter().flatten()),
                Effect::Open { fds: None, .. } | Effect::Copy { fd: None, .. } => {
                    opened.any = true;
                }
                Effect::Copy { fd: Some(fd), from } => copies.entry(from).or_default().push(fd),
                Effect::Close => {}
            }
        }
        // Copies of an opened descriptor are opened too, whatever their order.
        let mut pending: Vec<u32> = opened.fds.iter().copied().collect();
        while let Some(from) = pending.pop() {
            for &to in copies.get(&from).map_or(&[][..], Vec::as_slice) {
                if opened.fds.insert(to) {
                    pending.push(to);
                }
            }
        }
        opened
    }

    fn contains(&self, fd: u32) -> bool {
        self.any || self.fds.contains(&fd)
    }
}

/// The descriptor a stream device names: `/dev/stdin` is 0, `/dev/fd/3` is 3.
fn stream_fd(target: &str) -> Option<u32> {
    match target {
        "/dev/stdin" => Some(0),
        "/dev/stdout" => Some(1),
        "/dev/stderr" => Some(2),
        _ => target
            .strip_prefix("/dev/fd/")
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|n| n.parse().unwrap_or(u32::MAX)),
    }
}

/// The devices that are no file and no stream: nothing to read from or write to.
fn is_device(target: &str) -> bool {
    matches!(
        target,
        "/dev/null" | "/dev/tty" | "/dev/zero" | "/dev/urandom" | "/dev/random"
    )
}

/// Whether bash opens a network connection for `target` (`/dev/tcp/HOST/PORT`).
pub(super) fn is_network_device(target: &str) -> bool {
    target.starts_with("/dev/tcp/") || target.starts_with("/dev/udp/")
}

/// The context a target is judged in.
pub(super) struct Context<'a> {
    pub opened: &'a OpenedFds,
    /// A command of the line changes directory.
    pub changes_dir: bool,
    pub check: TargetCheck<'a>,
}

/// The part of a redirection, if it is one: none for a copy or a close, for a target that
/// cannot hurt, or for a read the check allows.
pub(super) fn redirect_part(raw: &RawCommand, context: &Context) -> Option<CommandPart> {
    let descriptor = raw.redirect?;
    let operator = raw.words.first().map_or("", Word::shown);
    let target = raw.words.get(1);
    let mut unclear = Vec::new();
    let access = match effect(descriptor, operator, target) {
        Effect::Copy { .. } | Effect::Close => return None,
        Effect::Open { access, .. } => access,
    };
    if matches!(operator, "<&" | ">&") {
        unclear.push(format!(
            "uses {operator} with a word that is not a descriptor number ({}), which bash \
             expands a second time",
            target.map_or("", Word::shown)
        ));
    }
    target_part(
        raw.text.clone(),
        raw.words.clone(),
        access,
        target,
        unclear,
        context,
    )
}

/// The part of a file a command writes through its own options (`sort -o FILE`, `find
/// -fprint FILE`, sed's `w FILE`), checked as an output redirection.
pub(super) fn written_part(text: &str, target: &Word, context: &Context) -> Option<CommandPart> {
    let words = vec![Word::Literal(">".into()), target.clone()];
    target_part(
        text.to_owned(),
        words,
        Access::Write,
        Some(target),
        Vec::new(),
        context,
    )
}

fn target_part(
    text: String,
    words: Vec<Word>,
    access: Access,
    target: Option<&Word>,
    mut unclear: Vec<String>,
    context: &Context,
) -> Option<CommandPart> {
    let mut risk = None;
    let reads = access == Access::Read;
    let (verb, file) = if reads {
        ("reads", "reads a file")
    } else {
        ("writes to", "redirects to a file")
    };
    match target {
        None => unclear.push("has a redirection without a target".into()),
        Some(word) if is_network_device(word.shown()) => {
            unclear.push(format!("opens a network connection ({})", word.shown()))
        }
        Some(Word::Runtime { text, .. }) => {
            unclear.push(format!("{file} only known at run time ({text})"));
        }
        Some(Word::Literal(target)) => {
            let stream = stream_fd(target);
            if let Some(fd) = stream.filter(|&fd| context.opened.contains(fd)) {
                unclear.push(format!(
                    "{verb} {target}, which is descriptor {fd} that a redirection of the line \
                     opens on a file"
                ));
            } else if stream.is_some()
                || matches!(target.as_str(), "/dev/null" | "/dev/tty")
                || (reads && is_device(target))
            {
                return None;
            } else {
                if !reads {
                    risk = risk::write_risk(target);
                }
                let usage = if reads {
                    TargetUse::Read
                } else {
                    TargetUse::Write
                };
                unclear.extend((context.check)(target, usage));
                if context.changes_dir && !target.starts_with('/') {
                    unclear.push(format!(
                        "{verb} a relative path in a command that changes directory"
                    ));
                }
            }
        }
    }
    if reads && unclear.is_empty() {
        return None;
    }
    Some(CommandPart {
        text,
        words,
        signature: if reads { "<" } else { ">" }.into(),
        redirect: true,
        risk,
        unclear,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(descriptor: Descriptor, operator: &str, target: &str) -> RawCommand {
        RawCommand {
            text: format!("{operator}{target}"),
            words: vec![Word::Literal(operator.into()), Word::Literal(target.into())],
            redirect: Some(descriptor),
            depth: 0,
            pipes: Vec::new(),
            nesting: 0,
        }
    }

    #[test]
    fn descriptors_opened_on_files_directly_or_by_copy() {
        use Descriptor::{Default, Number, Unknown};
        // (redirections, descriptors opened on a file, any descriptor may be open)
        type Redirections<'a> = &'a [(Descriptor, &'a str, &'a str)];
        let cases: &[(Redirections, &[u32], bool)] = &[
            (&[(Default, ">", "f")], &[1], false),
            (&[(Number(3), "<", "f")], &[3], false),
            (&[(Default, "<", "f")], &[0], false),
            (&[(Default, "&>", "f")], &[1, 2], false),
            (&[(Number(2), ">&", "1")], &[], false),
            (
                &[(Number(2), ">&", "1"), (Default, ">", "f")],
                &[1, 2],
                false,
            ),
            (
                &[(Number(4), "<&", "3-"), (Number(3), "<", "f")],
                &[3, 4],
                false,
            ),
            (&[(Number(3), ">&", "-")], &[], false),
            (&[(Unknown, ">", "f")], &[], true),
            (&[(Default, ">&", "file")], &[1, 2], false),
            (&[(Default, "<", "/dev/stdin")], &[], false),
            (
                &[(Default, ">", "/dev/null"), (Number(2), "<", "/dev/zero")],
                &[],
                false,
            ),
            (
                &[(Default, "<", "/dev/fd/3"), (Number(3), "<", "f")],
                &[0, 3],
                false,
            ),
        ];
        for (redirections, fds, any) in cases {
            let raws: Vec<RawCommand> =
                redirections.iter().map(|(d, o, t)| raw(*d, o, t)).collect();
            let opened = OpenedFds::of(raws.iter());
            let mut got: Vec<u32> = opened.fds.iter().copied().collect();
            got.sort_unstable();
            assert_eq!(
                (got.as_slice(), opened.any),
                (*fds, *any),
                "{redirections:?}"
            );
        }
    }

    #[test]
    fn copies_and_closes_are_descriptors_only() {
        let cases = [
            ("1", Some(Some(1))),
            ("12", Some(Some(12))),
            ("3-", Some(Some(3))),
            ("-", Some(None)),
            ("", None),
            ("--", None),
            ("1a", None),
            ("$(x)", None),
            ("-1", None),
        ];
        for (word, copy) in cases {
            assert_eq!(descriptor_copy(word), copy, "{word:?}");
        }
    }
}
