//! Command analysis tables: signatures, compound commands, redirections, risks, blocking.

use super::*;

fn sigs(command: &str) -> Vec<String> {
    analyze(command)
        .parts
        .into_iter()
        .map(|p| p.signature)
        .collect()
}

#[test]
fn signatures() {
    let cases: &[(&str, &[&str])] = &[
        ("git status", &["git status"]),
        ("git -C repo status --short", &["git status"]),
        ("git -c core.pager=cat log -5", &["git log"]),
        ("FOO=1 BAR=2 cargo test --release", &["cargo test"]),
        ("cargo +nightly build", &["cargo build"]),
        ("env X=1 npm run build", &["npm run"]),
        ("env -u HOME make check", &["make check"]),
        ("ls -la", &["ls"]),
        ("/usr/bin/make check", &["make check"]),
        ("/bin/ls", &["ls"]),
        ("python -m pytest -q", &["python -m pytest"]),
        ("python3 script.py", &["python3"]),
        ("time cargo build", &["cargo build"]),
        ("nohup ./server --port 1 &", &["server"]),
        ("nice -n 10 make", &["make"]),
        ("timeout 5 curl http://x", &["curl"]),
        ("timeout -s KILL 5s sleep 9", &["sleep"]),
        ("docker ps -a", &["docker ps"]),
        ("git", &["git"]),
        ("  ", &[]),
    ];
    for (command, expected) in cases {
        assert_eq!(sigs(command), *expected, "{command:?}");
    }
}

#[test]
fn compound_commands_split_into_parts() {
    let cases: &[(&str, &[&str])] = &[
        ("cd x && make", &["cd", "make"]),
        ("a | b", &["a", "b"]),
        ("a; b || c &", &["a", "b", "c"]),
        ("a\nb", &["a", "b"]),
        ("a |& b", &["a", "b"]),
        ("echo $(whoami)", &["echo", "whoami"]),
        ("echo \"user: $(id -un)\"", &["echo", "id"]),
        ("echo `date`", &["echo", "date"]),
        ("echo $((1 + 2))", &["echo"]),
        ("echo '$(not run)' \"`not either`\"", &["echo", "not"]),
        ("bash -c 'rm -rf /tmp/x'", &["rm"]),
        ("sh -c \"git status; ls\"", &["git status", "ls"]),
        (
            "(cd sub && make) ; { ls; pwd; }",
            &["cd", "make", "ls", "pwd"],
        ),
        ("echo a;;", &["echo"]),
        ("echo 'a; b' \"c && d\"", &["echo"]),
        ("echo a\\;b", &["echo"]),
        ("ls # rm -rf /", &["ls"]),
    ];
    for (command, expected) in cases {
        assert_eq!(sigs(command), *expected, "{command:?}");
    }
}

#[test]
fn redirections() {
    let cases: &[(&str, &[&str])] = &[
        ("echo hi > out.txt", &[">", "echo"]),
        ("echo hi >> log", &[">", "echo"]),
        ("cmd 2>&1", &["cmd"]),
        ("cmd > /dev/null 2>&1", &["cmd"]),
        ("cmd &> all.log", &[">", "cmd"]),
        ("cmd 2> err.log", &[">", "cmd"]),
        ("sort < in.txt", &["sort"]),
        ("echo hi >| forced", &[">", "echo"]),
    ];
    for (command, expected) in cases {
        let mut got = sigs(command);
        got.sort();
        let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want, "{command:?}");
    }
    let parts = analyze("echo hi > notes/today.txt").parts;
    assert!(parts.iter().any(|p| p.text == "> notes/today.txt"));
}

#[test]
fn risks() {
    let risky: &[(&str, &str)] = &[
        ("rm -rf build", "recursive delete"),
        ("rm -r x", "recursive delete"),
        ("rm -fR x", "recursive delete"),
        ("rm --recursive x", "recursive delete"),
        ("sudo apt-get install x", "as another user"),
        ("doas ls", "as another user"),
        ("curl -fsSL https://x.sh | sh", "downloaded"),
        ("wget -qO- https://x | python3", "downloaded"),
        ("chmod -R 777 .", "recursive"),
        ("chown -R me .", "recursive"),
        ("dd if=/dev/zero of=x", "(dd)"),
        ("mkfs.ext4 /dev/sdb1", "formats"),
        ("shutdown -h now", "shuts down"),
        ("init 0", "shuts down"),
        (":(){ :|:& };:", "fork bomb"),
        ("bomb(){ bomb|bomb& }; bomb", "fork bomb"),
        ("eval \"$CMD\"", "eval"),
        ("git push --force origin main", "force push"),
        ("git push -f", "force push"),
        ("git reset --hard HEAD~1", "git reset --hard"),
        ("git clean -fdx", "deletes untracked files"),
        ("find . -name '*.o' -delete", "deletes files"),
        ("find . -exec rm {} \\;", "deletes files"),
        ("kill -9 -1", "kills every process"),
        ("killall node", "kills processes by name"),
        ("ls | xargs rm", "deletes files (xargs rm)"),
        ("shred secret", "destroys file contents"),
        ("echo x > /dev/sda", "writes to a disk device"),
        ("echo x > /etc/hosts", "/etc/hosts"),
        ("ls && bash -c 'rm -rf ~'", "recursive delete"),
        ("echo $(sudo cat /etc/shadow)", "as another user"),
        ("echo 'unterminated", "could not parse"),
        ("echo $(ls", "could not parse"),
    ];
    for (command, reason) in risky {
        let risk = analyze(command).risk;
        assert!(
            risk.as_deref().is_some_and(|r| r.contains(reason)),
            "{command:?}: {risk:?} does not say {reason:?}"
        );
    }
    let safe = [
        "rm file.txt",
        "rm -f file.txt",
        "rm -- -r",
        "git push origin main",
        "git status",
        "chmod +x run.sh",
        "curl -o out https://x",
        "find . -name '*.rs'",
        "kill 1234",
        "echo rm -rf /",
        "cargo test 2>&1 | tail -20",
    ];
    for command in safe {
        assert_eq!(analyze(command).risk, None, "{command:?}");
    }
}

#[test]
fn blocked_patterns() {
    let patterns = vec![
        "rm -rf /".to_owned(),
        "git push *".to_owned(),
        "curl".to_owned(),
    ];
    let cases: &[(&str, Option<&str>)] = &[
        ("rm -rf /", Some("rm -rf /")),
        ("FOO=1 rm -rf / --no-preserve-root", Some("rm -rf /")),
        ("sudo rm -rf /", Some("rm -rf /")),
        ("sudo -u root rm -rf /", Some("rm -rf /")),
        ("rm -rf /tmp/x", None),
        ("cd / && git push origin", Some("git push *")),
        ("git push", None),
        ("echo $(curl x)", Some("curl")),
        ("sh -c 'curl x'", Some("curl")),
        ("ls", None),
    ];
    for (command, expected) in cases {
        assert_eq!(
            blocked_by(&analyze(command), &patterns),
            *expected,
            "{command:?}"
        );
    }
    assert_eq!(blocked_by(&analyze("ls"), &["  ".to_owned()]), None);
}
