//! Permission policy tests: one table per kind of access.

use std::path::PathBuf;

use agent_proto::{PermissionLevel, PermissionRule, PermissionRules, SandboxMode};

use super::*;
use crate::store::{Grant, GrantScope};

fn path(p: &str, zone: Zone) -> ResolvedPath {
    ResolvedPath {
        path: PathBuf::from(p),
        zone,
    }
}

fn grant(level: PermissionLevel, key: &str) -> Grant {
    Grant {
        scope: GrantScope::Session,
        level,
        key: key.into(),
    }
}

/// A compact view of a decision: "allow", "deny", or "ask:<keys>" ("ask!" when not
/// rememberable).
fn view(d: &Decision) -> String {
    match d {
        Decision::Allow => "allow".into(),
        Decision::Deny(_) => "deny".into(),
        Decision::Ask(ask) if !ask.grant_keys.is_empty() => {
            let keys: Vec<&str> = ask.grant_keys.iter().map(|(_, k)| k.as_str()).collect();
            format!("ask:{}", keys.join("|"))
        }
        Decision::Ask(_) => "ask!".into(),
    }
}

#[test]
fn paths() {
    let read = PermissionLevel::Read;
    let write = PermissionLevel::Write;
    let none: PermissionRules = PermissionRules::default();
    let allow_write = PermissionRules {
        write: Some(PermissionRule::Allow),
        ..PermissionRules::default()
    };
    let deny_read = PermissionRules {
        read: Some(PermissionRule::Deny),
        ..PermissionRules::default()
    };
    let ws = |p: &str| path(&format!("/ws/{p}"), Zone::Workspace);
    let out = |p: &str| path(p, Zone::Outside);
    // (level, paths, rules, grants, expected decision)
    type Case = (
        PermissionLevel,
        Vec<ResolvedPath>,
        PermissionRules,
        Vec<Grant>,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (read, vec![ws("a.txt")], none, vec![], "allow"),
        (read, vec![out("/etc/x/passwd")], none, vec![], "ask:/etc/x"),
        (
            read,
            vec![out("/etc/x/passwd")],
            none,
            vec![grant(read, "/etc")],
            "allow",
        ),
        (
            read,
            vec![out("/etc/x/passwd")],
            none,
            vec![grant(write, "/etc")],
            "ask:/etc/x",
        ),
        (
            read,
            vec![path("/data/sessions/me/tool_1.offload", Zone::OwnOffloads)],
            none,
            vec![],
            "allow",
        ),
        (
            read,
            vec![path(
                "/data/sessions/it/tool_1.offload",
                Zone::ForeignOffloads,
            )],
            none,
            vec![grant(read, "/")],
            "deny",
        ),
        (read, vec![ws("a")], deny_read, vec![], "deny"),
        (write, vec![ws("src/a.rs")], none, vec![], "ask:/ws/src"),
        (
            write,
            vec![ws("src/a.rs")],
            none,
            vec![grant(write, "/ws")],
            "allow",
        ),
        (write, vec![ws("src/a.rs")], allow_write, vec![], "allow"),
        // outside the workspace asks even when the level is allowed
        (
            write,
            vec![out("/tmp/y/z")],
            allow_write,
            vec![],
            "ask:/tmp/y",
        ),
        // its own offloads are readable, never writable; the rest of the data dir is
        // denied whatever the rules and grants
        (
            write,
            vec![path("/data/sessions/me/tool_1.offload", Zone::OwnOffloads)],
            allow_write,
            vec![grant(write, "/")],
            "deny",
        ),
        (
            read,
            vec![path("/data/agentd.db-wal", Zone::DataDir)],
            none,
            vec![grant(read, "/")],
            "deny",
        ),
        (
            write,
            vec![ws("x"), path("/data/workspaces/it/f", Zone::DataDir)],
            allow_write,
            vec![grant(write, "/")],
            "deny",
        ),
        (
            read,
            vec![ws("a"), out("/opt/b/c")],
            none,
            vec![],
            "ask:/opt/b",
        ),
    ];
    for (level, paths, rules, grants, expected) in cases {
        let policy = Policy {
            rules,
            blocked_commands: &[],
            grants: &grants,
        };
        let access = Access::Paths {
            level,
            paths: paths.clone(),
        };
        assert_eq!(
            view(&policy.decide("t", &access)),
            expected,
            "{level:?} {paths:?} {grants:?}"
        );
    }
}

#[test]
fn asks_name_the_outside_paths() {
    let policy = Policy {
        rules: PermissionRules::default(),
        blocked_commands: &[],
        grants: &[],
    };
    let access = Access::Paths {
        level: PermissionLevel::Read,
        paths: vec![
            path("/ws/in", Zone::Workspace),
            path("/etc/hosts", Zone::Outside),
        ],
    };
    match policy.decide("read_file", &access) {
        Decision::Ask(ask) => {
            assert_eq!(ask.paths, ["/etc/hosts"]);
            assert_eq!(ask.level, PermissionLevel::Read);
            assert!(
                ask.description.contains("outside the workspace"),
                "{}",
                ask.description
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn commands() {
    let exec = PermissionLevel::Execute;
    let allow_exec = PermissionRules {
        execute: Some(PermissionRule::Allow),
        ..PermissionRules::default()
    };
    let deny_exec = PermissionRules {
        execute: Some(PermissionRule::Deny),
        ..PermissionRules::default()
    };
    let none = PermissionRules::default();
    let blocked = vec!["rm -rf /".to_owned(), "git push *".to_owned()];
    let cases: Vec<(&str, PermissionRules, Vec<Grant>, &str)> = vec![
        ("git status", none, vec![], "ask:git status"),
        ("git status", none, vec![grant(exec, "git status")], "allow"),
        (
            "git log",
            none,
            vec![grant(exec, "git status")],
            "ask:git log",
        ),
        // every part must be covered
        (
            "cargo test && ls -la",
            none,
            vec![grant(exec, "cargo test")],
            "ask:cargo test|ls",
        ),
        (
            "cargo test && ls -la",
            none,
            vec![grant(exec, "cargo test"), grant(exec, "ls")],
            "allow",
        ),
        (
            "RUST_LOG=debug cargo test --release",
            none,
            vec![grant(exec, "cargo test")],
            "allow",
        ),
        // only a plain command is covered, by a grant or by `allow`; the rest asks every
        // time and is never rememberable
        ("ls \r# ; touch P", none, vec![grant(exec, "ls")], "ask!"),
        ("ls \r# ; touch P", allow_exec, vec![], "ask!"),
        ("echo $(( $(touch P) 0 ))", allow_exec, vec![], "ask!"),
        (
            "ls $(touch P)",
            none,
            vec![grant(exec, "ls"), grant(exec, "touch")],
            "ask!",
        ),
        (
            "bash --rcfile x -c ls",
            none,
            vec![grant(exec, "ls"), grant(exec, "bash")],
            "ask!",
        ),
        ("./x/ls", none, vec![grant(exec, "ls")], "ask!"),
        (
            "FOO=1 cargo test",
            none,
            vec![grant(exec, "cargo test")],
            "ask!",
        ),
        (
            "ls *.rs | wc -l",
            none,
            vec![grant(exec, "ls"), grant(exec, "wc")],
            "allow",
        ),
        // a grant never covers a risky command, and it is never rememberable
        (
            "git status; rm -rf build",
            none,
            vec![grant(exec, "git status"), grant(exec, "rm")],
            "ask!",
        ),
        ("rm -rf build", allow_exec, vec![], "ask!"),
        ("ls", allow_exec, vec![], "allow"),
        ("ls", deny_exec, vec![grant(exec, "ls")], "deny"),
        // blocked patterns deny without asking, whatever the rules and grants
        ("rm -rf /", allow_exec, vec![grant(exec, "rm")], "deny"),
        ("git push origin main", allow_exec, vec![], "deny"),
        ("cd x && git push origin main", none, vec![], "deny"),
        // a blocked pattern that cannot be ruled out counts as matched
        ("rm $FLAGS /", allow_exec, vec![], "deny"),
        ("git $(echo push) origin main", none, vec![], "deny"),
    ];
    for (command, rules, grants, expected) in cases {
        let policy = Policy {
            rules,
            blocked_commands: &blocked,
            grants: &grants,
        };
        let analysis = crate::tools::command::analyze(command, &|_, _| None);
        let access = CommandAccess::plain(analysis, WallState::Enforced(SandboxMode::default()));
        let got = policy.decide("bash", &Access::Command(access));
        assert_eq!(view(&got), expected, "{command} {grants:?}");
    }
}

/// How the wall and the model's requests (`network`, `outsideSandbox`) change what a
/// command asks: "allow", "deny", or "ask(<level>[,net][,outside]):<level>=<keys>" ("ask!"
/// instead of "ask" when not rememberable).
#[test]
fn commands_under_the_wall() {
    use PermissionLevel::{Execute, Network};
    let exec = |rule| PermissionRules {
        execute: Some(rule),
        ..PermissionRules::default()
    };
    let with_net = |execute, network| PermissionRules {
        execute: Some(execute),
        network: Some(network),
        ..PermissionRules::default()
    };
    let (allow, ask, deny) = (
        PermissionRule::Allow,
        PermissionRule::Ask,
        PermissionRule::Deny,
    );
    let on = WallState::Enforced(SandboxMode::WorkspaceWrite);
    let off = WallState::Off;
    let missing = WallState::Unavailable("no Landlock".into());
    // (command, wall, network requested, outside reason, rules, grants, expected)
    type Case = (
        &'static str,
        WallState,
        bool,
        Option<&'static str>,
        PermissionRules,
        Vec<Grant>,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        // Confined, no network wanted: as before.
        ("ls", on.clone(), false, None, exec(allow), vec![], "allow"),
        (
            "ls",
            on.clone(),
            false,
            None,
            exec(ask),
            vec![],
            "ask(execute):execute=ls",
        ),
        // The network asked for: its own prompt once the command is covered...
        (
            "ls",
            on.clone(),
            true,
            None,
            exec(allow),
            vec![],
            "ask(network,net):network=command:ls",
        ),
        (
            "ls",
            on.clone(),
            true,
            None,
            exec(ask),
            vec![grant(Execute, "ls")],
            "ask(network,net):network=command:ls",
        ),
        // ... one prompt for both when neither is covered, remembering both ...
        (
            "ls",
            on.clone(),
            true,
            None,
            exec(ask),
            vec![],
            "ask(execute,net):execute=ls|network=command:ls",
        ),
        // ... none when the network rule or a grant covers it ...
        (
            "ls",
            on.clone(),
            true,
            None,
            with_net(allow, allow),
            vec![],
            "allow",
        ),
        (
            "ls",
            on.clone(),
            true,
            None,
            exec(allow),
            vec![grant(Network, "command:ls")],
            "allow",
        ),
        // ... a host grant of web_fetch is not a command's ...
        (
            "ls",
            on.clone(),
            true,
            None,
            exec(allow),
            vec![grant(Network, "ls")],
            "ask(network,net):network=command:ls",
        ),
        // ... and a denied network denies a command that asks for it.
        (
            "ls",
            on.clone(),
            true,
            None,
            with_net(allow, deny),
            vec![],
            "deny",
        ),
        // A command not understood asks with the network, and remembers nothing.
        (
            "ls $(x)",
            on.clone(),
            true,
            None,
            exec(ask),
            vec![],
            "ask!(execute,net)",
        ),
        // Unconfined: no network question (it has everything).
        ("ls", off.clone(), true, None, exec(allow), vec![], "allow"),
        (
            "ls",
            off.clone(),
            false,
            Some("why"),
            exec(allow),
            vec![],
            "allow",
        ),
        // Outside the sandbox: always asked, even under allow and with a grant; never
        // remembered.
        (
            "ls",
            on.clone(),
            false,
            Some("needs ~/.cache"),
            exec(allow),
            vec![grant(Execute, "ls")],
            "ask!(execute,outside)",
        ),
        (
            "ls",
            on.clone(),
            true,
            Some("needs ~/.cache"),
            with_net(allow, allow),
            vec![],
            "ask!(execute,outside)",
        ),
        // No sandbox on this machine: every command asks, never remembered.
        (
            "ls",
            missing.clone(),
            false,
            None,
            exec(allow),
            vec![],
            "ask!(execute,outside)",
        ),
        (
            "ls",
            missing.clone(),
            false,
            None,
            exec(ask),
            vec![grant(Execute, "ls")],
            "ask!(execute,outside)",
        ),
        // A deny still denies, and a blocked command is blocked, whatever the wall.
        ("ls", missing, false, None, exec(deny), vec![], "deny"),
        ("rm -rf /", off, false, None, exec(allow), vec![], "deny"),
    ];
    let blocked = vec!["rm -rf /".to_owned()];
    for (command, wall, network, outside, rules, grants, expected) in cases {
        let policy = Policy {
            rules,
            blocked_commands: &blocked,
            grants: &grants,
        };
        let access = CommandAccess {
            analysis: crate::tools::command::analyze(command, &|_, _| None),
            network_requested: network,
            outside_sandbox: outside.map(str::to_owned),
            wall: wall.clone(),
        };
        let got = match policy.decide("bash", &Access::Command(access)) {
            Decision::Allow => "allow".to_owned(),
            Decision::Deny(_) => "deny".to_owned(),
            Decision::Ask(ask) => {
                let mut flags = vec![ask.level.as_str().to_owned()];
                if ask.network_access {
                    flags.push("net".into());
                }
                if ask.outside_sandbox {
                    flags.push("outside".into());
                }
                let keys: Vec<String> = ask
                    .grant_keys
                    .iter()
                    .map(|(level, key)| format!("{}={key}", level.as_str()))
                    .collect();
                if keys.is_empty() {
                    format!("ask!({})", flags.join(","))
                } else {
                    format!("ask({}):{}", flags.join(","), keys.join("|"))
                }
            }
        };
        assert_eq!(got, expected, "{command} {wall:?} {network} {outside:?}");
    }
}

#[test]
fn a_commands_network_without_a_prompt_comes_from_the_rule_or_grants_only() {
    let access = |command: &str| {
        CommandAccess::plain(
            crate::tools::command::analyze(command, &|_, _| None),
            WallState::Enforced(SandboxMode::WorkspaceWrite),
        )
    };
    let rules = |network| PermissionRules {
        network,
        ..PermissionRules::default()
    };
    let grants = [grant(PermissionLevel::Network, "command:git fetch")];
    let cases: &[(&str, Option<PermissionRule>, &[Grant], bool)] = &[
        ("git fetch", Some(PermissionRule::Allow), &[], true),
        ("git fetch", None, &[], false),
        ("git fetch", None, &grants, true),
        ("git fetch && ls", None, &grants, false),
        ("git fetch $(x)", None, &grants, false),
        ("git fetch", Some(PermissionRule::Deny), &grants, false),
    ];
    for (command, rule, grants, expected) in cases {
        let policy = Policy {
            rules: rules(*rule),
            blocked_commands: &[],
            grants,
        };
        assert_eq!(
            policy.command_network(&access(command)),
            *expected,
            "{command} {rule:?}"
        );
    }
}

#[test]
fn hosts() {
    let net = PermissionLevel::Network;
    let cases: Vec<(Option<PermissionRule>, Vec<Grant>, &str)> = vec![
        (None, vec![], "ask:example.com"),
        (None, vec![grant(net, "example.com")], "allow"),
        (None, vec![grant(net, "other.org")], "ask:example.com"),
        (Some(PermissionRule::Allow), vec![], "allow"),
        (
            Some(PermissionRule::Deny),
            vec![grant(net, "example.com")],
            "deny",
        ),
    ];
    for (rule, grants, expected) in cases {
        let policy = Policy {
            rules: PermissionRules {
                network: rule,
                ..PermissionRules::default()
            },
            blocked_commands: &[],
            grants: &grants,
        };
        let got = policy.decide("web_fetch", &Access::Host("example.com".into()));
        assert_eq!(view(&got), expected, "{rule:?} {grants:?}");
    }
}

#[test]
fn agent_rules_override_config_rules() {
    let config = PermissionRules {
        read: Some(PermissionRule::Ask),
        write: Some(PermissionRule::Deny),
        ..PermissionRules::default()
    };
    let agent = PermissionRules {
        write: Some(PermissionRule::Allow),
        ..PermissionRules::default()
    };
    let rules = layered(config, Some(agent));
    assert_eq!(rules.read, Some(PermissionRule::Ask));
    assert_eq!(rules.write, Some(PermissionRule::Allow));
    assert_eq!(rules.execute, None);
}

/// The bash tool's redirections, read and written, against an agent's zones: a grant of
/// the program covers reading the workspace or the agent's own folder; anything else a
/// redirection opens is asked every time, with the path.
#[test]
fn bash_redirections_follow_the_agents_zones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let ws = root.join("ws");
    let data = root.join("data");
    for folder in [
        ws.clone(),
        data.join("sessions/me"),
        data.join("sessions/other"),
    ] {
        std::fs::create_dir_all(folder).unwrap();
    }
    let sandbox = crate::tools::sandbox::Sandbox::new(&ws, &data, "me").unwrap();
    let grants = vec![
        grant(PermissionLevel::Execute, "sort"),
        grant(PermissionLevel::Execute, ">"),
    ];
    let policy = Policy {
        rules: PermissionRules::default(),
        blocked_commands: &[],
        grants: &grants,
    };
    let own = data.join("sessions/me/result.txt");
    let other = data.join("sessions/other/result.txt");
    let db = data.join("agentd.db");
    let cases = [
        ("sort < in.txt".to_owned(), "allow", None),
        ("sort < in.txt > out.txt".to_owned(), "allow", None),
        (format!("sort < {}", own.display()), "allow", None),
        (
            format!("sort < {}", other.display()),
            "ask!",
            Some("reads outside the workspace"),
        ),
        (
            format!("sort < {}", db.display()),
            "ask!",
            Some("reads outside the workspace"),
        ),
        (
            "sort < /etc/hostname".to_owned(),
            "ask!",
            Some("reads outside the workspace (/etc/hostname)"),
        ),
        (
            format!("sort > {}", own.display()),
            "ask!",
            Some("writes outside the workspace"),
        ),
        (
            "sort 3< in.txt >> /dev/fd/3".to_owned(),
            "ask!",
            Some("descriptor 3"),
        ),
    ];
    for (command, expected, reason) in cases {
        let analysis = crate::tools::builtin::bash::analyze_in(&command, &sandbox);
        let access = CommandAccess::plain(
            analysis.clone(),
            WallState::Enforced(SandboxMode::WorkspaceWrite),
        );
        let got = policy.decide("bash", &Access::Command(access));
        assert_eq!(view(&got), expected, "{command}: {:?}", analysis.unclear);
        if let Some(reason) = reason {
            assert!(
                analysis.unclear.iter().any(|r| r.contains(reason)),
                "{command}: {:?}",
                analysis.unclear
            );
        }
    }
}
