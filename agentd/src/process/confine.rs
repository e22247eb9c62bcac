//! The wall: the OS sandbox a `bash` command runs in. The permission checker decides what
//! to ask; this decides what a command can do at all, whatever it is.
//!
//! A [`Confinement`] says what a command may write, what it may not read and whether it
//! may use the network. It is applied by the sandbox launcher: the daemon's own binary run
//! as `agentd __agentd-sandbox SPEC PROGRAM ARGS...` by the child guard (`guard.rs`), which
//! confines itself and then `exec`s the program, so everything the program starts is
//! confined too and nothing can lift it (`no_new_privs`). The guard itself stays outside,
//! so a confined command can neither signal nor trace it, nor the daemon.
//!
//! What applying a confinement does:
//! - Landlock (ABI 6 at least, every right of that ABI handled, a hard requirement: a
//!   kernel that lacks one fails the whole setup): reads everywhere except the hidden
//!   paths (grants are additive, so a folder that holds a hidden path is granted only its
//!   listing, and each of its other entries on its own; symbolic links are never granted,
//!   what they lead to is checked by its own place), writes only beneath the writable
//!   folders and to `/dev/null`, `/dev/zero`, `/dev/full`; no TCP bind or connect without
//!   the network; signals and abstract Unix sockets scoped to the sandbox; tracing a
//!   process outside it is refused by Landlock itself (so no `/proc/<daemon>/environ`).
//!   The block devices the process could read are hidden too (a raw disk holds the data
//!   dir).
//! - Every capability is dropped, the bounding set included: a daemon run as root would
//!   otherwise hand its commands `CAP_SYS_PTRACE` (which Landlock honours for tracing),
//!   `CAP_SYS_MODULE` and the rest.
//! - Without the network, a seccomp filter refuses `socket(2)` for every family (TCP,
//!   UDP and DNS, and the user's local services on Unix sockets: the daemon's own socket,
//!   D-Bus, ssh-agent) and io_uring (which could open sockets past the filter); socket
//!   pairs stay. Other architectures' system calls kill the process.
//!
//! What it does not do: hide names (a folder holding a hidden path can be listed, so the
//! names in the data dir show, never the contents), limit CPU or memory, or stop reads of
//! what the user can read elsewhere. This module only confines; `permission.rs` decides.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use serde::{Deserialize, Serialize};

/// The hidden first argument that makes `agentd` the sandbox launcher.
pub const SANDBOX_ARG: &str = "__agentd-sandbox";

/// The argument of the launcher that only checks the sandbox can be set up.
const PROBE_ARG: &str = "--probe";

/// The Landlock ABI every right of which must be enforced: 3 brings truncation, 4 TCP,
/// 5 device ioctls, 6 the scopes (signals, abstract Unix sockets).
const REQUIRED_ABI: ABI = ABI::V6;

/// Exit code of the launcher when the sandbox cannot be set up (the program never ran).
pub const SETUP_FAILED: i32 = 125;

/// Devices any command may write (and read).
const DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// What a confined command may do.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// Folders (and files) it may read and change: create, write, delete, rename within.
    pub writable: Vec<PathBuf>,
    /// Paths it may not read (nor change), unless granted again below or as writable.
    pub hidden: Vec<PathBuf>,
    /// Paths inside hidden ones it may read all the same (the agent's own offloads).
    pub readable: Vec<PathBuf>,
    /// TCP, UDP and sockets of any kind.
    pub network: bool,
}

/// What a rule grants beneath its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Read files, list folders, run programs.
    Read,
    /// Everything: read, write, create, delete, rename.
    ReadWrite,
    /// List the folder (it holds a hidden path, so its entries have their own rules).
    ListOnly,
    /// Read and write a device file.
    Device,
}

/// What kind of thing a rule's path is (file rights only apply to non-folders).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Symlink,
}

/// One Landlock rule: a path and what it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub path: PathBuf,
    pub grant: Grant,
    pub kind: Kind,
}

/// The rules of a confinement, with `list` giving a folder's entries (name and kind; an
/// unreadable folder gives none, so nothing beneath it is granted). Pure but for `list`.
pub fn rules(
    confinement: &Confinement,
    list: &mut dyn FnMut(&Path) -> Vec<(OsString, Kind)>,
) -> Vec<Rule> {
    let hidden = &confinement.hidden;
    let mut out = Vec::new();
    cover(
        Path::new("/"),
        Kind::Dir,
        Grant::Read,
        hidden,
        list,
        &mut out,
    );
    for path in &confinement.readable {
        cover(path, Kind::Dir, Grant::Read, hidden, list, &mut out);
    }
    for path in &confinement.writable {
        cover(path, Kind::Dir, Grant::ReadWrite, hidden, list, &mut out);
    }
    for device in DEVICES {
        out.push(Rule {
            path: PathBuf::from(device),
            grant: Grant::Device,
            kind: Kind::File,
        });
    }
    out
}

/// Grants `grant` beneath `path`, less the hidden paths in it: a folder that holds one is
/// only listed, and each of its entries is covered on its own.
fn cover(
    path: &Path,
    kind: Kind,
    grant: Grant,
    hidden: &[PathBuf],
    list: &mut dyn FnMut(&Path) -> Vec<(OsString, Kind)>,
    out: &mut Vec<Rule>,
) {
    if kind == Kind::Symlink || hidden.iter().any(|h| h == path) {
        return;
    }
    let holds_hidden = kind == Kind::Dir && hidden.iter().any(|h| h.starts_with(path));
    if !holds_hidden {
        out.push(Rule {
            path: path.to_owned(),
            grant,
            kind,
        });
        return;
    }
    out.push(Rule {
        path: path.to_owned(),
        grant: Grant::ListOnly,
        kind,
    });
    for (name, kind) in list(path) {
        cover(&path.join(name), kind, grant, hidden, list, out);
    }
}

/// A folder's entries, not following links; an unreadable folder has none.
fn list_dir(path: &Path) -> Vec<(OsString, Kind)> {
    let Ok(entries) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let kind = match e.file_type().ok()? {
                t if t.is_symlink() => Kind::Symlink,
                t if t.is_dir() => Kind::Dir,
                _ => Kind::File,
            };
            Some((e.file_name(), kind))
        })
        .collect()
}

/// The Landlock rights of a grant on a path of `kind`.
fn rights(grant: Grant, kind: Kind) -> BitFlags<AccessFs> {
    let all = match grant {
        Grant::Read => AccessFs::from_read(REQUIRED_ABI),
        Grant::ReadWrite => AccessFs::from_all(REQUIRED_ABI),
        Grant::ListOnly => AccessFs::ReadDir.into(),
        Grant::Device => AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
    };
    match kind {
        Kind::Dir => all,
        Kind::File | Kind::Symlink => {
            all & (AccessFs::Execute
                | AccessFs::ReadFile
                | AccessFs::WriteFile
                | AccessFs::Truncate
                | AccessFs::IoctlDev)
        }
    }
}

/// Confines the calling process (and all it will start) as `confinement` says. Returns
/// the kernel's Landlock ABI. Only ever called in the sandbox launcher, which then runs the
/// program or exits.
fn apply(confinement: &Confinement) -> Result<u32, String> {
    let failed = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(REQUIRED_ABI))
        .map_err(|e| failed("Landlock cannot handle the filesystem rights of ABI 6", &e))?
        .scope(Scope::from_all(REQUIRED_ABI))
        .map_err(|e| failed("Landlock cannot scope signals and abstract sockets", &e))?;
    if !confinement.network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(REQUIRED_ABI))
            .map_err(|e| failed("Landlock cannot handle TCP", &e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| failed("cannot create a Landlock ruleset", &e))?;
    let mut confinement = confinement.clone();
    confinement.hidden.extend(readable_block_devices());
    for rule in rules(&confinement, &mut list_dir) {
        // A path that vanished since it was listed (or never existed) grants nothing.
        let Ok(fd) = PathFd::new(&rule.path) else {
            continue;
        };
        let kind = match std::fs::metadata(&rule.path) {
            Ok(m) if m.is_dir() => Kind::Dir,
            Ok(_) => Kind::File,
            Err(_) => continue,
        };
        created = created
            .add_rule(PathBeneath::new(fd, rights(rule.grant, kind)))
            .map_err(|e| failed(&format!("cannot grant {}", rule.path.display()), &e))?;
    }
    let status = created
        .restrict_self()
        .map_err(|e| failed("cannot enforce the Landlock ruleset", &e))?;
    if status.ruleset != RulesetStatus::FullyEnforced || !status.no_new_privs {
        return Err(format!(
            "the kernel enforces the Landlock ruleset only partly ({:?})",
            status.ruleset
        ));
    }
    let abi = match status.landlock {
        LandlockStatus::Available {
            effective_abi,
            kernel_abi,
        } => kernel_abi
            .and_then(|v| u32::try_from(v).ok())
            .or_else(|| effective_abi.to_string().parse().ok())
            .unwrap_or(0),
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => 0,
    };
    drop_capabilities()?;
    if !confinement.network {
        no_sockets()?;
    }
    Ok(abi)
}

/// Gives up every capability, for good: a daemon run as root would otherwise hand its
/// commands `CAP_SYS_PTRACE` (its environment and memory through /proc despite its
/// non-dumpable flag), `CAP_SYS_MODULE`, `CAP_SYS_RAWIO` and the rest. The bounding set is
/// emptied too, so what the command runs as root gets none back. Nothing to do for a
/// process without capabilities (a daemon run as a user).
fn drop_capabilities() -> Result<(), String> {
    use rustix::thread::{CapabilitySet, CapabilitySets};
    let current = rustix::thread::capabilities(None)
        .map_err(|e| format!("cannot read the capabilities: {e}"))?;
    if current.permitted.is_empty() && current.effective.is_empty() {
        return Ok(());
    }
    for bit in 0..64 {
        // EINVAL for numbers the kernel has no capability for: nothing to drop.
        let _ = rustix::thread::remove_capability_from_bounding_set(
            CapabilitySet::from_bits_retain(1 << bit),
        );
    }
    rustix::thread::clear_ambient_capability_set()
        .map_err(|e| format!("cannot clear the ambient capabilities: {e}"))?;
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none)
        .map_err(|e| format!("cannot drop the capabilities: {e}"))
}

/// The block devices under /dev this process could read (a raw disk holds the data dir
/// too): hidden like it.
fn readable_block_devices() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir("/dev") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        .map(|e| e.path())
        .filter(|p| nix::unistd::access(p, nix::unistd::AccessFlags::R_OK).is_ok())
        .collect()
}

/// The seccomp filter of a command without the network: `socket(2)` and io_uring fail
/// with `EPERM`; a system call of another architecture (32-bit x86 on x86_64, ...) kills
/// the process, and on x86_64 the x32 numbers are refused as well.
fn no_sockets() -> Result<(), String> {
    use nix::libc;
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
    let mut refused: Vec<i64> = vec![
        libc::SYS_socket,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ];
    if arch == TargetArch::x86_64 {
        const X32: i64 = 0x4000_0000;
        refused.extend(refused.clone().into_iter().map(|n| n | X32));
    }
    let rules = refused.into_iter().map(|n| (n, Vec::new())).collect();
    let errno = u32::try_from(libc::EPERM).unwrap_or(1);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno),
        arch,
    )
    .map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e| format!("cannot compile the seccomp filter: {e}"))?;
    seccompiler::apply_filter(&program).map_err(|e| format!("cannot apply the seccomp filter: {e}"))
}

/// What the daemon learnt of the sandbox at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSupport {
    /// A probe process confined itself fully.
    pub available: bool,
    /// The kernel's Landlock ABI, when it has one.
    pub abi: Option<u32>,
    /// Why not, when not available.
    pub reason: Option<String>,
}

impl SandboxSupport {
    /// No sandbox (unit tests, whose binary cannot be the launcher).
    pub fn unavailable(reason: impl Into<String>) -> SandboxSupport {
        SandboxSupport {
            available: false,
            abi: None,
            reason: Some(reason.into()),
        }
    }
}

/// Runs the launcher `binary` as a probe: it confines itself as a command without network
/// would be and reports. Blocking (a few milliseconds, once at start-up).
pub fn probe(binary: &Path) -> SandboxSupport {
    use std::os::unix::process::CommandExt;
    let output = std::process::Command::new(binary)
        .arg0("agentd")
        .arg(SANDBOX_ARG)
        .arg(PROBE_ARG)
        .stdin(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(e) => return SandboxSupport::unavailable(format!("cannot run the probe: {e}")),
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let abi = text
        .trim()
        .strip_prefix("abi ")
        .and_then(|n| n.parse::<u32>().ok());
    match (output.status.success(), abi) {
        (true, Some(abi)) => SandboxSupport {
            available: true,
            abi: Some(abi),
            reason: None,
        },
        _ => {
            let err = String::from_utf8_lossy(&output.stderr);
            let reason = err.trim().trim_start_matches("agentd: ").to_owned();
            SandboxSupport {
                available: false,
                abi: None,
                reason: Some(if reason.is_empty() {
                    format!("the probe ended with {}", output.status)
                } else {
                    reason
                }),
            }
        }
    }
}

/// The sandbox launcher's entry: when the process was started as the launcher (`agentd
/// __agentd-sandbox SPEC PROGRAM ARGS...`, or `--probe`), confines itself and runs the
/// program (or reports), never returning; otherwise returns at once. `main` calls this
/// first, before anything else starts.
pub fn run_sandbox_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SANDBOX_ARG)) {
        return;
    }
    std::process::exit(launch(args));
}

/// The launcher. Returns the exit code when the program could not be run.
fn launch(mut args: impl Iterator<Item = OsString>) -> i32 {
    use std::os::unix::process::CommandExt;
    let Some(spec) = args.next() else {
        eprintln!("agentd: {SANDBOX_ARG} is internal: agentd {SANDBOX_ARG} SPEC PROGRAM ARGS...");
        return 2;
    };
    if spec == PROBE_ARG {
        return match apply(&Confinement::default()) {
            Ok(abi) => {
                println!("abi {abi}");
                0
            }
            Err(e) => {
                eprintln!("agentd: {e}");
                SETUP_FAILED
            }
        };
    }
    let confinement: Confinement = match spec
        .to_str()
        .ok_or_else(|| "the sandbox spec is not UTF-8".to_owned())
        .and_then(|s| serde_json::from_str(s).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agentd: invalid sandbox spec: {e}");
            return 2;
        }
    };
    let Some(program) = args.next() else {
        eprintln!("agentd: {SANDBOX_ARG}: no program to run");
        return 2;
    };
    if let Err(e) = apply(&confinement) {
        eprintln!("agentd: the sandbox could not be set up, so nothing was run: {e}");
        return SETUP_FAILED;
    }
    let e = std::process::Command::new(&program).args(args).exec();
    eprintln!("agentd: cannot run {program:?}: {e}");
    127
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake tree: every folder's entries, by path.
    fn tree(entries: &[(&str, &[(&str, Kind)])]) -> impl FnMut(&Path) -> Vec<(OsString, Kind)> {
        let entries: Vec<(PathBuf, Vec<(OsString, Kind)>)> = entries
            .iter()
            .map(|(dir, list)| {
                (
                    PathBuf::from(dir),
                    list.iter().map(|(n, k)| (OsString::from(n), *k)).collect(),
                )
            })
            .collect();
        move |path: &Path| {
            entries
                .iter()
                .find(|(dir, _)| dir == path)
                .map(|(_, list)| list.clone())
                .unwrap_or_default()
        }
    }

    fn shown(rules: &[Rule]) -> Vec<String> {
        rules
            .iter()
            .map(|r| format!("{} {:?}", r.path.display(), r.grant))
            .collect()
    }

    #[test]
    fn hidden_paths_are_cut_out_of_the_grants_around_them() {
        use Kind::*;
        let mut list = tree(&[
            ("/", &[("home", Dir), ("usr", Dir), ("vmlinuz", Symlink)]),
            ("/home", &[("u", Dir), ("other", Dir)]),
            (
                "/home/u",
                &[
                    ("data", Dir),
                    ("ws", Dir),
                    (".bashrc", File),
                    ("link", Symlink),
                ],
            ),
            ("/home/u/data", &[("agentd.db", File), ("workspaces", Dir)]),
            ("/home/u/ws", &[("src", Dir), ("secret", File)]),
        ]);
        let confinement = Confinement {
            writable: vec!["/home/u/ws".into(), "/home/u/data/tmp/a".into()],
            hidden: vec!["/home/u/data".into(), "/home/u/ws/secret".into()],
            readable: vec!["/home/u/data/sessions/a".into()],
            network: false,
        };
        assert_eq!(
            shown(&rules(&confinement, &mut list)),
            [
                "/ ListOnly",
                "/home ListOnly",
                "/home/u ListOnly",
                // /home/u/data is hidden: no rule; links are never granted.
                "/home/u/ws ListOnly",
                "/home/u/ws/src Read",
                "/home/u/.bashrc Read",
                "/home/other Read",
                "/usr Read",
                "/home/u/data/sessions/a Read",
                // The workspace holds a hidden file: its other entries are writable.
                "/home/u/ws ListOnly",
                "/home/u/ws/src ReadWrite",
                "/home/u/data/tmp/a ReadWrite",
                "/dev/null Device",
                "/dev/zero Device",
                "/dev/full Device",
            ]
        );
    }

    #[test]
    fn without_hidden_paths_the_grants_are_whole() {
        let confinement = Confinement {
            writable: vec!["/ws".into()],
            ..Confinement::default()
        };
        let mut list = tree(&[]);
        assert_eq!(
            shown(&rules(&confinement, &mut list))[..2],
            ["/ Read", "/ws ReadWrite"]
        );
    }

    #[test]
    fn rights_of_files_are_file_rights() {
        assert_eq!(
            rights(Grant::ReadWrite, Kind::File),
            AccessFs::Execute
                | AccessFs::ReadFile
                | AccessFs::WriteFile
                | AccessFs::Truncate
                | AccessFs::IoctlDev
        );
        assert_eq!(
            rights(Grant::Read, Kind::File),
            AccessFs::Execute | AccessFs::ReadFile
        );
        assert!(!rights(Grant::Read, Kind::Dir).contains(AccessFs::WriteFile));
        assert_eq!(rights(Grant::ListOnly, Kind::Dir), AccessFs::ReadDir);
    }

    #[test]
    fn a_spec_round_trips_through_its_argument() {
        let confinement = Confinement {
            writable: vec!["/ws".into()],
            hidden: vec!["/data".into()],
            readable: vec![],
            network: true,
        };
        let text = serde_json::to_string(&confinement).unwrap();
        assert_eq!(
            serde_json::from_str::<Confinement>(&text).unwrap(),
            confinement
        );
    }
}
