//! Property: whatever the policy lets run on the strength of a grant, runs only programs
//! the grant names.
//!
//! Commands are generated from a grammar of shell constructs (quoting, substitutions,
//! arithmetic, parameter expansions, heredocs, control characters, groups, loops,
//! functions, wrappers, `bash -c` with and without options, programs named by a path,
//! assignments, redirections). Every one the policy allows (with session grants for a few
//! harmless programs) is then run for real by bash, as the bash tool runs it, with a `PATH`
//! of logging shims: each program that runs writes its name to a log. The log must hold
//! only granted programs, no file may appear outside the workspace, and the payload
//! (`touch P` by any route) must never have run.
//!
//! The lines also run as the bash tool runs them: inside the OS sandbox (workspace-write,
//! no network), through the daemon's own binary as the sandbox launcher, found beside the
//! test executable (`target/debug/agentd`, which `cargo test --workspace` builds before
//! any test runs; a missing one fails under CI and is reported otherwise). Nothing may
//! appear outside the workspace then either: the checker and the wall both hold.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_proto::{PermissionLevel, PermissionRules};
use agentd_testkit::rng::Rng;

use crate::store::{Grant, GrantScope};
use crate::tools::builtin::bash::analyze_in;
use crate::tools::permission::{Decision, Policy};
use crate::tools::sandbox::Sandbox;

/// Signatures granted for the session.
const GRANTED: &[&str] = &[
    "ls",
    "cat",
    "grep",
    "wc",
    "head",
    "sort",
    "echo",
    "printf",
    "pwd",
    "true",
    "false",
    "cd",
    "test",
    "[",
    "git status",
    "find",
    "xargs",
    ">",
];

/// Programs the shims may log: what the grants name.
const MAY_RUN: &[&str] = &[
    "ls", "cat", "grep", "wc", "head", "sort", "git", "find", "xargs",
];

/// Programs that are logging shims on the test's PATH.
const SHIMS: &[&str] = &[
    "ls", "cat", "grep", "wc", "head", "sort", "git", "touch", "rm", "curl", "sh", "dash",
    "python3", "man", "tee",
];

/// Real programs on the test's PATH (wrappers that start the shims, and bash itself for
/// `bash -c`); they run, and what they start is logged.
const REAL: &[&str] = &[
    "bash", "env", "timeout", "nice", "nohup", "stdbuf", "xargs", "find",
];

const PROGRAMS: &[&str] = &[
    "ls",
    "cat",
    "grep x",
    "wc -l",
    "head -n1",
    "sort",
    "echo",
    "printf '%s'",
    "pwd",
    "true",
    "cd .",
    "test -e x",
    "[ -f x ]",
    "git status",
    "git log",
    "touch P",
    "rm P",
    "./bin/ls",
    "/usr/bin/touch P",
    "l\\s",
    "'ls'",
    "l''s",
    "\"l\"s",
    "$P",
    "${P}",
    "ec$'h'o",
    "\\touch P",
    "eval 'touch P'",
    "source ./evil.sh",
    ". ./evil.sh",
    "exec ls",
    "command ls",
    "builtin echo",
    "alias ls=touch",
    "hash -p ./bin/ls ls",
    "trap 'touch P' EXIT",
    "printf -v 'a[$(touch P)]' x",
    "[ -v 'a[$(touch P)]' ]",
    "man ls",
    "tee f",
    "python3 -c 1",
    "curl http://x",
    "sh -c 'touch P'",
];

const ARGS: &[&str] = &[
    "-la",
    "x",
    "'a b'",
    "\"a b\"",
    "\"$HOME\"",
    "$HOME",
    "${HOME}",
    "*",
    "~",
    "$(touch P)",
    "`touch P`",
    "$((1+2))",
    "$(( $(touch P) ))",
    "${X:-$(touch P)}",
    "${X:-\"$(touch P)\"}",
    "$'a\\x27b'",
    "$'\\x27; touch P'",
    "<(touch P)",
    "{a,b}",
    "\\;",
    "{}",
    "a#b",
    "#c",
    "'$(touch P)'",
    "\"a$(touch P)\"",
    "\"$(touch P)\"",
    "$1",
    "\"$@\"",
    "a\\\nb",
    "\\\n",
    "'it'\\''s'",
    "--",
    "-exec touch P \\;",
];

const REDIRECTS: &[&str] = &[
    "> out.txt",
    "> ../escape.txt",
    "2>&1",
    "< /dev/null",
    "> /dev/null",
    ">> log.txt",
    "<<EOF\n$(touch P)\nEOF\n",
    "<<'EOF'\nx\nEOF\n",
    "<<< $(touch P)",
    ">> $F",
    "&> all.log",
    "> $(touch P)",
    ">| f",
    "2> /tmp/../escape.txt",
    "{a[_]}>/dev/null",
    "{a[_]}>out.txt",
    ">&'$(touch P)'",
    "2>&'$(touch P)'",
    "<&'$(touch P)'",
    "< x",
    "3<x >>/dev/fd/3",
];

const PREFIXES: &[&str] = &[
    "LANG=C ",
    "PATH=./bin:$PATH ",
    "X=1 ",
    "BASH_ENV=./evil.sh ",
    "IFS=/ ",
    "RUST_LOG=x ",
    "GIT_PAGER='touch P' ",
];

const JOINERS: &[&str] = &[
    " | ", " && ", " || ", "; ", "\n", " & ", " |& ", ";", "\r\n",
];

const CONTROLS: &[&str] = &["\r", "\u{b}", "\u{c}", "\u{1b}", "\u{85}", "\u{202e}", "\0"];

fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[rng.below(from.len())]
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Plain programs and words, so that enough lines are allowed for the property to say
/// something.
const PLAIN_PROGRAMS: &[&str] = &["ls", "cat", "grep x", "wc -l", "echo", "git status", "sort"];
const PLAIN_ARGS: &[&str] = &[
    "-la",
    "x",
    "'a b'",
    "\"$HOME\"",
    "*",
    "~",
    "'$(touch P)'",
    "'a[$(touch P)]'",
];

fn simple(rng: &mut Rng) -> String {
    let mut command = String::new();
    if rng.below(5) == 0 {
        command.push_str(pick(rng, PREFIXES));
    }
    let plain = rng.below(2) == 0;
    command.push_str(pick(rng, if plain { PLAIN_PROGRAMS } else { PROGRAMS }));
    for _ in 0..rng.below(3) {
        command.push(' ');
        command.push_str(pick(rng, if plain { PLAIN_ARGS } else { ARGS }));
    }
    if rng.below(4) == 0 {
        command.push(' ');
        command.push_str(pick(rng, REDIRECTS));
    }
    command
}

fn line(rng: &mut Rng, depth: usize) -> String {
    if depth >= 3 {
        return simple(rng);
    }
    let x = line(rng, depth + 1);
    match rng.below(24) {
        0..=7 => simple(rng),
        8..=11 => format!("{x}{}{}", pick(rng, JOINERS), line(rng, depth + 1)),
        12 => format!("( {x} )"),
        13 => format!("{{ {x}; }}"),
        14 => format!("echo $( {x} )"),
        15 => format!("bash -c {}", quoted(&x)),
        16 => format!(
            "{} -c {}",
            pick(
                rng,
                &[
                    "sh",
                    "bash -i",
                    "bash --rcfile ./evil.sh",
                    "bash -x",
                    "dash"
                ]
            ),
            quoted(&x)
        ),
        17 => format!(
            "{} {x}",
            pick(
                rng,
                &[
                    "env",
                    "timeout 5",
                    "nice",
                    "nohup",
                    "xargs",
                    "exec",
                    "command",
                    "time",
                    "env -S",
                    "env --split-string=",
                    "stdbuf -oL",
                    "!"
                ]
            )
        ),
        18 => format!("find . -maxdepth 0 -exec {x} \\;"),
        19 => format!("if {x}; then {}; fi", line(rng, depth + 1)),
        20 => format!("for i in a; do {x}; done"),
        21 => format!("f() {{ {x}; }}; f"),
        22 => format!("eval {}", quoted(&x)),
        _ => {
            // A control character somewhere.
            let mut chars: Vec<char> = x.chars().collect();
            let at = rng.below(chars.len() + 1);
            let control: Vec<char> = pick(rng, CONTROLS).chars().collect();
            chars.splice(at..at, control);
            chars.into_iter().collect()
        }
    }
}

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    shims: PathBuf,
    log: PathBuf,
    sandbox: Sandbox,
    bash: PathBuf,
    /// The daemon's binary, to run the lines in the sandbox with (`None`: not built).
    launcher: Option<PathBuf>,
}

/// The daemon's binary beside the test executable (`target/debug/agentd`).
fn daemon_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("agentd");
    binary.is_file().then_some(binary)
}

fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn which(program: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

fn world() -> Option<World> {
    let bash = which("bash")?;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let shims = root.join("shims");
    let log = root.join("logs/log");
    std::fs::create_dir_all(root.join("logs")).unwrap();
    std::fs::create_dir_all(ws.join("bin")).unwrap();
    std::fs::create_dir_all(&shims).unwrap();
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::write(ws.join("x"), "x\n").unwrap();
    for name in SHIMS {
        write_script(
            &shims.join(name),
            "printf '%s\\n' \"${0##*/}\" >> \"$SHIM_LOG\"",
        );
    }
    for name in REAL {
        let real = which(name)?;
        let _ = std::fs::remove_file(shims.join(name));
        std::os::unix::fs::symlink(real, shims.join(name)).unwrap();
    }
    // Programs the agent could have written into its workspace.
    write_script(
        &ws.join("bin/ls"),
        "printf 'workspace-program\\n' >> \"$SHIM_LOG\"",
    );
    write_script(
        &ws.join("evil.sh"),
        "printf 'sourced-script\\n' >> \"$SHIM_LOG\"",
    );
    let sandbox = Sandbox::new(&ws, &root.join("data"), "agent").unwrap();
    Some(World {
        _dir: dir,
        root,
        ws,
        shims,
        log,
        sandbox,
        bash,
        launcher: daemon_binary(),
    })
}

/// Every path under the test's root outside the workspace and the shims' log folder.
fn entries_outside(world: &World) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![world.root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path == world.ws || path == world.root.join("logs") {
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            out.push(path);
        }
    }
    out.sort();
    out
}

/// Runs `command` as the bash tool does (in the sandbox when `confined`); returns the
/// programs the shims logged.
fn run(world: &World, command: &str, confined: bool) -> Vec<String> {
    let _ = std::fs::remove_file(&world.log);
    if command.contains('\0') {
        // No process can be given it; that the policy let it through is the failure.
        return vec!["a command with a NUL byte".into()];
    }
    let mut launch = match (&world.launcher, confined) {
        (Some(launcher), true) => {
            let spec = crate::process::Confinement {
                writable: vec![world.ws.clone(), world.root.join("logs")],
                ..Default::default()
            };
            let mut launch = Command::new(launcher);
            launch
                .arg(crate::process::confine::SANDBOX_ARG)
                .arg(serde_json::to_string(&spec).unwrap())
                .arg(&world.bash);
            launch
        }
        _ => Command::new(&world.bash),
    };
    let mut child = launch
        .args(["--noprofile", "--norc", "-c", command])
        .current_dir(&world.ws)
        .env_clear()
        .env("PATH", &world.shims)
        .env("HOME", world.root.join("home"))
        .env("SHIM_LOG", &world.log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::fs::read_to_string(&world.log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn commands_a_grant_lets_run_start_only_granted_programs() {
    let Some(world) = world() else {
        eprintln!("skipped: bash or a wrapper (env, timeout, ...) is not installed");
        return;
    };
    if world.launcher.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "the daemon's binary is not beside the tests: cargo build -p agentd"
        );
        eprintln!("the lines run without the sandbox: build the daemon (cargo build -p agentd)");
    }
    let before = entries_outside(&world);
    let grants: Vec<Grant> = GRANTED
        .iter()
        .map(|key| Grant {
            scope: GrantScope::Session,
            level: PermissionLevel::Execute,
            key: (*key).to_owned(),
        })
        .collect();
    let policy = Policy {
        rules: PermissionRules::default(),
        blocked_commands: &[],
        grants: &grants,
    };
    let mut rng = Rng(0x5eed_ba5e_u64);
    let (mut allowed, mut asked) = (0, 0);
    let mut failures = Vec::new();
    for case in 0..2000 {
        let command = line(&mut rng, 0);
        let analysis = analyze_in(&command, &world.sandbox);
        let access = crate::tools::CommandAccess::plain(
            analysis,
            crate::tools::wall::WallState::Enforced(agent_proto::SandboxMode::WorkspaceWrite),
        );
        match policy.decide("bash", &crate::tools::Access::Command(access)) {
            Decision::Allow => {}
            Decision::Ask(ask) => {
                assert!(
                    ask.grant_keys.is_empty() || ask.risk.is_none(),
                    "case {case}: {command:?}"
                );
                asked += 1;
                continue;
            }
            Decision::Deny(_) => continue,
        }
        allowed += 1;
        let ran = run(&world, &command, false);
        let strays: Vec<&String> = ran
            .iter()
            .filter(|p| !MAY_RUN.contains(&p.as_str()))
            .collect();
        if !strays.is_empty() {
            failures.push(format!("case {case}: {command:?} ran {strays:?}"));
        }
        for escaped in ["escape.txt", "ws/P"] {
            if world.root.join(escaped).exists() {
                failures.push(format!("case {case}: {command:?} wrote {escaped}"));
                let _ = std::fs::remove_file(world.root.join(escaped));
            }
        }
        // Again inside the wall: the same programs run, nothing is written outside.
        if world.launcher.is_some() {
            let confined = run(&world, &command, true);
            if confined != ran {
                failures.push(format!(
                    "case {case}: {command:?} ran {confined:?} confined, {ran:?} not"
                ));
            }
            let now = entries_outside(&world);
            if now != before {
                failures.push(format!(
                    "case {case}: {command:?} confined changed what is outside the workspace: \
                     {now:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The grammar must exercise both sides, or the property says nothing.
    assert!(allowed >= 300, "only {allowed} commands were allowed");
    assert!(asked >= 800, "only {asked} commands were asked");
    let how = if world.launcher.is_some() {
        "run, and run again in the sandbox"
    } else {
        "run"
    };
    eprintln!("{allowed} allowed and {how}, {asked} asked");
}
