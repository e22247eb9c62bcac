//! `agentctl completions` and `agentctl man`: generated from the command definitions, they
//! work without a daemon, and real shells and man tools accept what they print.
//!
//! The shells and groff are Debian packages; .ci/run installs them. A missing one is a
//! skip that says so, except under CI (`CI=true`), where it is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::agentctl;

/// The program `name` on PATH; `None` (after saying why the check is skipped) if missing.
fn tool(name: &str, check: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{name} is missing: CI must install it (.ci/run) for {check}"
        );
        eprintln!("skipped: {check}: {name} is not installed (apt-get install {name})");
    }
    found
}

/// Runs agentctl without any daemon: a socket path where nothing listens.
fn run(args: &[&str]) -> Output {
    Command::new(agentctl())
        .arg("--socket")
        .arg("/nonexistent/agentd.sock")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn generated(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "agentctl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn shell(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Bash loads the script and completes subcommands and shell names with it.
#[test]
fn bash_completes_commands_and_arguments() {
    let script = generated(&["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "agentctl.bash", &script);
    let bash = tool("bash", "the bash completion script").unwrap();
    let complete = |words: &str, cword: usize| {
        let program = format!(
            "source '{}'\ncomplete -p agentctl\nCOMP_WORDS=({words})\nCOMP_CWORD={cword}\n\
             COMP_LINE=\"${{COMP_WORDS[*]}}\"\nCOMP_POINT=${{#COMP_LINE}}\n\
             _agentctl agentctl \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"\n\
             printf '%s\\n' \"${{COMPREPLY[@]}}\"\n",
            file.display()
        );
        shell(&bash, &["--norc", "--noprofile", "-c", &program])
    };
    let first = complete("agentctl complet", 1);
    assert!(first.contains("-F _agentctl agentctl"), "{first}");
    let words: Vec<&str> = first.lines().skip(1).collect();
    assert_eq!(words, ["completions"], "{first}");
    let shells = complete("agentctl completions ''", 2);
    for name in ["bash", "zsh", "fish"] {
        assert!(shells.lines().any(|l| l == name), "{name}: {shells}");
    }
    let agents = complete("agentctl agents ''", 2);
    for name in [
        "list", "create", "show", "delete", "rename", "pin", "unpin", "model", "fork", "export",
        "import",
    ] {
        assert!(agents.lines().any(|l| l == name), "{name}: {agents}");
    }
}

/// Fish loads the script and completes with it; zsh parses its script (driving zsh's
/// completion system takes a terminal).
#[test]
fn zsh_and_fish_accept_their_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let zsh_script = generated(&["completions", "zsh"]);
    assert!(zsh_script.starts_with("#compdef agentctl"), "{zsh_script}");
    for command in ["completions", "send", "chat", "watch", "man"] {
        assert!(zsh_script.contains(&format!("'{command}:")), "{command}");
    }
    if let Some(zsh) = tool("zsh", "the zsh completion script") {
        let file = write(dir.path(), "_agentctl", &zsh_script);
        shell(&zsh, &["-n", file.to_str().unwrap()]);
    }

    let fish_script = generated(&["completions", "fish"]);
    if let Some(fish) = tool("fish", "the fish completion script") {
        let file = write(dir.path(), "agentctl.fish", &fish_script);
        // (clap_complete gives fish no values for positional arguments: commands and
        // options only.)
        let program = format!(
            "source '{}'; complete -C 'agentctl comp'; complete -C 'agentctl agents '; \
             complete -C 'agentctl send --y'",
            file.display()
        );
        let out = shell(&fish, &["--no-config", "-c", &program]);
        for word in ["completions\t", "list\t", "create\t", "--yes\t"] {
            assert!(out.lines().any(|l| l.starts_with(word)), "{word:?}: {out}");
        }
    }
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tcsh") && err.contains("bash") && err.contains("zsh"),
        "{err}"
    );
}

/// The page renders without a warning from groff and documents every command; `--dir`
/// writes a page per command.
#[test]
fn man_pages_render_and_cover_every_command() {
    let page = generated(&["man"]);
    assert!(page.contains(".TH agentctl 1"), "{page}");
    let dir = tempfile::tempdir().unwrap();
    generated(&["man", "--dir", dir.path().to_str().unwrap()]);
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for name in [
        "agentctl.1",
        "agentctl-send.1",
        "agentctl-chat.1",
        "agentctl-agents-export.1",
        "agentctl-completions.1",
        "agentctl-man.1",
        "agentctl-agents-list.1",
    ] {
        assert!(pages.iter().any(|p| p == name), "{name}: {pages:?}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("agentctl.1")).unwrap(),
        page,
        "the printed page is the one written"
    );
    let Some(groff) = tool("groff", "rendering the manual pages") else {
        return;
    };
    for name in &pages {
        let out = Command::new(&groff)
            .args(["-man", "-Tutf8", "-ww"])
            .arg(dir.path().join(name))
            .output()
            .unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && warnings.is_empty(),
            "{name}: {warnings}"
        );
        let text = String::from_utf8_lossy(&out.stdout);
        if name == "agentctl.1" {
            for command in ["agentctl-send", "agentctl-completions", "agentctl-man"] {
                assert!(text.contains(command), "{command} in:\n{text}");
            }
        }
    }
}
