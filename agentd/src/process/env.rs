//! The environment of every child the daemon starts: `bash` tool commands and MCP stdio
//! servers. This is the one home of that policy; the launcher (`process.rs`) applies it.
//!
//! The daemon's own environment holds provider keys (`OPENAI_API_KEY`, a config's
//! `api_key_env`, ...) and whatever else the user exported. None of it may reach a child by
//! accident:
//! - a `bash` command gets the daemon's environment minus every variable a provider reads
//!   a key from, minus a deny list of common secret names (`*_TOKEN`, `*_API_KEY`, ...,
//!   extended by `[tools] env_deny`; `[tools] env_keep` lets named ones through), minus the
//!   variables that change what bash itself runs (`BASH_ENV`, exported functions, `PS4`,
//!   `SHELLOPTS`, ...), minus the variables that point git at another repository, config
//!   or program (`GIT_DIR`, `GIT_CONFIG_*`, `GIT_EXEC_PATH`, ...), with `PATH` cut to its
//!   absolute entries (so a program the agent wrote in the workspace is never found by
//!   name), and with git told, with the precedence of `git -c`, to run no fsmonitor and no
//!   hook ([`GIT_OVERRIDES`]): a repository's own config is written by whoever wrote the
//!   repository (the agent, in its workspace), and `core.fsmonitor` or a hook in it would
//!   make any granted `git status` or `git commit` run the agent's code;
//! - an MCP stdio server gets only a base allow list of the daemon's variables (`PATH`,
//!   `HOME`, `LANG`, `LC_*`, ..., extended by `[tools] mcp_env_allow`), never a provider
//!   key nor a denied name, plus its own `env` from its settings.
//!
//! What this module cannot read (a variable name that is not UTF-8) is dropped. It decides
//! names and values only; it never spawns anything.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::config::ConfigFile;

/// Common names of secrets, removed from every child's environment (case-insensitive,
/// `*` matches any run of characters).
pub const DEFAULT_DENY: &[&str] = &[
    "*_API_KEY",
    "*_APIKEY",
    "*_KEY",
    "*_KEY_ID",
    "*_SECRET",
    "*_SECRET_*",
    "*_TOKEN",
    "*_TOKEN_*",
    "*_PASSWORD",
    "*_PASSWD",
    "*_PASS",
    "*_PWD",
    "*_PAT",
    "*_CREDENTIALS",
    "*_CREDENTIAL",
    "*_AUTH",
    "*_COOKIE",
    "*_DSN",
    "*_DATABASE_URL",
    "API_KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "DATABASE_URL",
    // What systemd hands the daemon: its credentials folder and its sockets are its own.
    "CREDENTIALS_DIRECTORY",
    "NOTIFY_SOCKET",
    "LISTEN_FDS",
    "LISTEN_PID",
    "LISTEN_FDNAMES",
];

/// What an MCP stdio server gets of the daemon's environment (case-sensitive).
pub const DEFAULT_MCP_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

/// Variables that change what bash runs before or around the command: start-up files,
/// exported functions, prompts and traces, options, and lookup lists. Always removed from a
/// `bash` command's environment, whatever the config says.
const BASH_CONTROL: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "BASH_FUNC_*",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "CDPATH",
    "GLOBIGNORE",
    "EXECIGNORE",
    "BASH_XTRACEFD",
];

/// Variables that point git at another repository, config file or program, or make it
/// write traces to a file: never passed on to a `bash` command from the daemon's
/// environment (the command itself may still set them; the checker asks for that).
const GIT_CONTROL: &[&str] = &[
    "GIT_CONFIG",
    "GIT_CONFIG_*",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
    "GIT_ASKPASS",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "GIT_EXTERNAL_DIFF",
    "GIT_TRACE*",
];

/// git configuration every `bash` command gets through the environment, with the
/// precedence of `git -c` over every config file (a repository's included): no fsmonitor
/// program and no hooks, the two things a plain `git status` or `git commit` would run
/// from a repository's config.
pub const GIT_OVERRIDES: &[(&str, &str)] = &[
    ("GIT_CONFIG_COUNT", "2"),
    ("GIT_CONFIG_KEY_0", "core.fsmonitor"),
    ("GIT_CONFIG_VALUE_0", "false"),
    ("GIT_CONFIG_KEY_1", "core.hooksPath"),
    ("GIT_CONFIG_VALUE_1", "/dev/null"),
];

/// `PATH` for a child when the daemon has none with an absolute entry. Bash's built-in
/// default may contain `.`, so a child never goes without one.
pub const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A name pattern: literal characters and `*` for any run of characters.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern(String);

impl Pattern {
    fn parse(text: &str, setting: &str) -> Result<Pattern, String> {
        if text.is_empty() || text.contains('=') || text.contains('\0') {
            return Err(format!(
                "[tools] {setting}: {text:?} is not a variable name pattern (letters, digits, '_' and '*')"
            ));
        }
        Ok(Pattern(text.to_owned()))
    }

    fn matches(&self, name: &str, ignore_case: bool) -> bool {
        if ignore_case {
            wildcard(
                self.0.to_ascii_uppercase().as_bytes(),
                name.to_ascii_uppercase().as_bytes(),
            )
        } else {
            wildcard(self.0.as_bytes(), name.as_bytes())
        }
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of bytes (variable name
/// patterns here, tool name matchers of hooks).
pub fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    // The classic greedy match with backtracking to the last star.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&b| b == b'*')
}

fn any_match(patterns: &[Pattern], name: &str, ignore_case: bool) -> bool {
    patterns.iter().any(|p| p.matches(name, ignore_case))
}

/// One environment: names and values, as the process API takes them.
pub type EnvVars = Vec<(OsString, OsString)>;

/// The environment policy for children (see the module doc).
#[derive(Debug, Clone)]
pub struct EnvPolicy {
    /// Variables a provider (or the web search backend) reads its key from: never passed
    /// on.
    secrets: BTreeSet<String>,
    /// Removed (case-insensitive): the defaults and `env_deny`.
    deny: Vec<Pattern>,
    /// Let through to `bash` despite `deny` (never a secret nor a bash control variable).
    keep: Vec<Pattern>,
    /// What an MCP stdio server gets of the daemon's environment.
    mcp_allow: Vec<Pattern>,
}

impl EnvPolicy {
    /// The policy of a config file: the secrets of its providers and of every preset
    /// (`presets`: the variables the built-in provider presets read keys from), and its
    /// `[tools]` lists on top of the defaults.
    pub fn from_config<'a>(
        config: &ConfigFile,
        presets: impl IntoIterator<Item = &'a str>,
    ) -> Result<EnvPolicy, String> {
        let secrets = config
            .providers
            .iter()
            .filter_map(|p| p.api_key_env.clone())
            .chain(presets.into_iter().map(str::to_owned))
            .chain(config.web_search.as_ref().and_then(|s| s.key_variable()));
        let tools = &config.tools;
        EnvPolicy::new(
            secrets,
            &tools.env_deny,
            &tools.env_keep,
            &tools.mcp_env_allow,
        )
    }

    /// A policy from its parts: secret variable names, and the extra deny, keep and MCP
    /// allow patterns (each added to the defaults).
    pub fn new(
        secrets: impl IntoIterator<Item = String>,
        deny: &[String],
        keep: &[String],
        mcp_allow: &[String],
    ) -> Result<EnvPolicy, String> {
        let parse = |list: &[String], setting: &str| {
            list.iter()
                .map(|p| Pattern::parse(p, setting))
                .collect::<Result<Vec<_>, _>>()
        };
        let defaults = |list: &[&'static str]| -> Vec<Pattern> {
            list.iter().map(|p| Pattern((*p).to_owned())).collect()
        };
        let mut deny_all: Vec<Pattern> = defaults(DEFAULT_DENY);
        deny_all.extend(parse(deny, "env_deny")?);
        let mut allow_all: Vec<Pattern> = defaults(DEFAULT_MCP_ALLOW);
        allow_all.extend(parse(mcp_allow, "mcp_env_allow")?);
        Ok(EnvPolicy {
            secrets: secrets.into_iter().filter(|s| !s.is_empty()).collect(),
            deny: deny_all,
            keep: parse(keep, "env_keep")?,
            mcp_allow: allow_all,
        })
    }

    fn is_secret(&self, name: &str) -> bool {
        self.secrets.iter().any(|s| s.eq_ignore_ascii_case(name))
    }

    fn is_denied(&self, name: &str) -> bool {
        any_match(&self.deny, name, /*ignore_case*/ true)
    }

    /// The environment of a `bash` tool command, from the daemon's.
    pub fn bash_env(&self, daemon: impl IntoIterator<Item = (OsString, OsString)>) -> EnvVars {
        let control: Vec<Pattern> = BASH_CONTROL
            .iter()
            .chain(GIT_CONTROL)
            .map(|p| Pattern((*p).to_owned()))
            .collect();
        let mut out: EnvVars = Vec::new();
        for (name, value) in daemon {
            let Some(text) = name.to_str() else {
                continue;
            };
            if self.is_secret(text) || any_match(&control, text, /*ignore_case*/ false) {
                continue;
            }
            if self.is_denied(text) && !any_match(&self.keep, text, /*ignore_case*/ false) {
                continue;
            }
            out.push((name, value));
        }
        out.extend(
            GIT_OVERRIDES
                .iter()
                .map(|(name, value)| (OsString::from(name), OsString::from(value))),
        );
        with_clean_path(out)
    }

    /// The environment of an MCP stdio server: the allowed part of the daemon's, then the
    /// server's own `env` (which wins, and is not filtered: the user wrote it for it).
    pub fn mcp_env(
        &self,
        daemon: impl IntoIterator<Item = (OsString, OsString)>,
        own: &BTreeMap<String, String>,
    ) -> EnvVars {
        let mut out: EnvVars = Vec::new();
        for (name, value) in daemon {
            let Some(text) = name.to_str() else {
                continue;
            };
            if any_match(&self.mcp_allow, text, /*ignore_case*/ false)
                && !self.is_secret(text)
                && !self.is_denied(text)
            {
                out.push((name, value));
            }
        }
        let mut out = with_clean_path(out);
        for (name, value) in own {
            out.retain(|(n, _)| n.as_bytes() != name.as_bytes());
            out.push((name.into(), value.into()));
        }
        out
    }
}

/// The whole environment of a `git` the daemon runs to look at a workspace (`tools::git`):
/// nothing of the daemon's (no `GIT_*` variable, no `HOME`, so no user or system config),
/// the system and global config files turned off, no prompts, no optional locks, no
/// lazy fetches of a partial clone, and the C locale.
pub fn git_env() -> EnvVars {
    [
        ("PATH", FALLBACK_PATH),
        ("LC_ALL", "C"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_NO_REPLACE_OBJECTS", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into()))
    .collect()
}

/// `PATH` with only its absolute entries (no empty entry, no `.`, no relative folder), or
/// [`FALLBACK_PATH`] when none is left.
fn with_clean_path(mut vars: EnvVars) -> EnvVars {
    let original = vars
        .iter()
        .position(|(n, _)| n == OsStr::new("PATH"))
        .map(|i| vars.remove(i).1);
    let kept: Vec<&[u8]> = original
        .as_ref()
        .map(|p| {
            p.as_bytes()
                .split(|&b| b == b':')
                .filter(|entry| entry.first() == Some(&b'/'))
                .collect()
        })
        .unwrap_or_default();
    let path = if kept.is_empty() {
        OsString::from(FALLBACK_PATH)
    } else {
        OsString::from_vec(kept.join(&b':'))
    };
    vars.push(("PATH".into(), path));
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> EnvVars {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(vars: &EnvVars) -> Vec<String> {
        let mut names: Vec<String> = vars
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// `names` without the git configuration every `bash` command gets.
    fn without_git_overrides(names: Vec<String>) -> Vec<String> {
        names
            .into_iter()
            .filter(|n| !GIT_OVERRIDES.iter().any(|(name, _)| n == name))
            .collect()
    }

    fn value<'a>(vars: &'a EnvVars, name: &str) -> Option<&'a OsStr> {
        vars.iter()
            .find(|(k, _)| k == OsStr::new(name))
            .map(|(_, v)| v.as_os_str())
    }

    fn policy(deny: &[&str], keep: &[&str], allow: &[&str]) -> EnvPolicy {
        let own = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        EnvPolicy::new(
            ["MY_PROVIDER_VAR".to_owned(), "OPENAI_API_KEY".to_owned()],
            &own(deny),
            &own(keep),
            &own(allow),
        )
        .unwrap()
    }

    #[test]
    fn wildcards() {
        let cases = [
            ("*_TOKEN", "GITHUB_TOKEN", true),
            ("*_TOKEN", "TOKEN", false),
            ("*_TOKEN", "GITHUB_TOKENS", false),
            ("LC_*", "LC_ALL", true),
            ("LC_*", "LC_", true),
            ("LC_*", "LANG", false),
            ("A*B*C", "AxxBxxC", true),
            ("A*B*C", "AxxBxx", false),
            ("*", "", true),
            ("PATH", "PATH", true),
            ("PATH", "PATHS", false),
        ];
        for (pattern, name, expected) in cases {
            assert_eq!(
                wildcard(pattern.as_bytes(), name.as_bytes()),
                expected,
                "{pattern} ~ {name}"
            );
        }
    }

    #[test]
    fn bash_gets_the_daemons_environment_without_secrets_or_bash_controls() {
        let p = policy(&["CORP_*"], &["GH_TOKEN"], &[]);
        let daemon = env(&[
            ("HOME", "/home/me"),
            ("LANG", "C.UTF-8"),
            ("EDITOR", "vi"),
            ("OPENAI_API_KEY", "sk-1"),
            ("ANTHROPIC_API_KEY", "sk-2"),
            ("MY_PROVIDER_VAR", "sk-3"),
            ("my_provider_var", "sk-3b"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("AWS_ACCESS_KEY_ID", "b"),
            ("GITHUB_TOKEN", "c"),
            ("GH_TOKEN", "kept"),
            ("github_token", "d"),
            ("DB_PASSWORD", "e"),
            ("CORP_THING", "f"),
            ("BASH_ENV", "/tmp/x"),
            ("ENV", "/tmp/y"),
            ("BASH_FUNC_ls%%", "() { echo fake; }"),
            ("PS4", "$(touch P)"),
            ("PROMPT_COMMAND", "x"),
            ("SHELLOPTS", "xtrace"),
            ("BASHOPTS", "x"),
            ("CDPATH", "."),
            ("GLOBIGNORE", "x"),
            ("EXECIGNORE", "x"),
            ("BASH_XTRACEFD", "2"),
            ("PATH", ".:/usr/bin::bin:/bin:./x"),
        ]);
        let out = p.bash_env(daemon);
        assert_eq!(
            without_git_overrides(names(&out)),
            ["EDITOR", "GH_TOKEN", "HOME", "LANG", "PATH"],
            "{out:?}"
        );
        assert_eq!(value(&out, "PATH"), Some(OsStr::new("/usr/bin:/bin")));
        assert_eq!(value(&out, "GH_TOKEN"), Some(OsStr::new("kept")));
    }

    #[test]
    fn keep_never_lets_a_provider_key_through() {
        let p = policy(&[], &["OPENAI_API_KEY", "*"], &[]);
        let out = p.bash_env(env(&[("OPENAI_API_KEY", "sk"), ("BASH_ENV", "x")]));
        assert_eq!(without_git_overrides(names(&out)), ["PATH"]);
    }

    #[test]
    fn a_missing_or_all_relative_path_becomes_the_fallback() {
        let p = policy(&[], &[], &[]);
        for daemon in [env(&[]), env(&[("PATH", "")]), env(&[("PATH", ".:bin::")])] {
            let out = p.bash_env(daemon);
            assert_eq!(value(&out, "PATH"), Some(OsStr::new(FALLBACK_PATH)));
            let out = p.mcp_env(env(&[]), &BTreeMap::new());
            assert_eq!(value(&out, "PATH"), Some(OsStr::new(FALLBACK_PATH)));
        }
    }

    #[test]
    fn mcp_servers_get_the_allow_list_and_their_own_env() {
        let p = policy(&["LC_SECRET*"], &[], &["SSL_CERT_FILE", "MY_PROVIDER_VAR"]);
        let daemon = env(&[
            ("HOME", "/home/me"),
            ("LANG", "C"),
            ("LC_ALL", "C"),
            ("LC_SECRET_X", "no"),
            ("TERM", "xterm"),
            ("EDITOR", "vi"),
            ("SSL_CERT_FILE", "/etc/ssl/cert.pem"),
            ("OPENAI_API_KEY", "sk"),
            ("MY_PROVIDER_VAR", "sk"),
            ("BASH_ENV", "/tmp/x"),
            ("PATH", "/usr/bin:."),
        ]);
        let own: BTreeMap<String, String> = [
            ("API_TOKEN".to_owned(), "mine".to_owned()),
            ("LANG".to_owned(), "de_DE.UTF-8".to_owned()),
        ]
        .into();
        let out = p.mcp_env(daemon, &own);
        assert_eq!(
            names(&out),
            [
                "API_TOKEN",
                "HOME",
                "LANG",
                "LC_ALL",
                "PATH",
                "SSL_CERT_FILE",
                "TERM"
            ],
            "{out:?}"
        );
        assert_eq!(value(&out, "PATH"), Some(OsStr::new("/usr/bin")));
        assert_eq!(value(&out, "LANG"), Some(OsStr::new("de_DE.UTF-8")));
        assert_eq!(value(&out, "API_TOKEN"), Some(OsStr::new("mine")));
    }

    #[test]
    fn names_that_are_not_utf8_are_dropped() {
        let p = policy(&[], &[], &["*"]);
        let odd = OsString::from_vec(vec![b'X', 0xff]);
        let daemon = vec![(odd.clone(), OsString::from("v"))];
        assert_eq!(
            without_git_overrides(names(&p.bash_env(daemon.clone()))),
            ["PATH"]
        );
        assert_eq!(names(&p.mcp_env(daemon, &BTreeMap::new())), ["PATH"]);
    }

    #[test]
    fn bad_patterns_are_config_errors() {
        for bad in ["", "A=B"] {
            let err = EnvPolicy::new([], &[bad.to_owned()], &[], &[]).unwrap_err();
            assert!(err.contains("env_deny"), "{err}");
        }
    }

    #[test]
    fn the_configs_key_variables_and_the_presets_given_are_secrets() {
        let config = ConfigFile::parse(
            "[[providers]]\nid = \"work\"\nkind = \"openai\"\napi_key_env = \"WORK_LLM\"\n",
        )
        .unwrap();
        let p = EnvPolicy::from_config(&config, ["OPENAI_API_KEY"]).unwrap();
        let secrets: Vec<&str> = p.secrets.iter().map(String::as_str).collect();
        for name in ["WORK_LLM", "OPENAI_API_KEY"] {
            assert!(secrets.contains(&name), "{name} in {secrets:?}");
        }
        let out = p.bash_env(env(&[("WORK_LLM", "k"), ("OPENAI_API_KEY", "k")]));
        assert_eq!(without_git_overrides(names(&out)), ["PATH"]);
    }

    #[test]
    fn bash_gets_git_overrides_and_no_git_controls_of_the_daemon() {
        let p = policy(&[], &["GIT_*"], &[]);
        let daemon = env(&[
            ("GIT_DIR", "/elsewhere"),
            ("GIT_WORK_TREE", "/elsewhere"),
            ("GIT_EXEC_PATH", "/tmp/x"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.hooksPath"),
            ("GIT_CONFIG_VALUE_0", ".git/hooks"),
            ("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='x'"),
            ("GIT_CONFIG_GLOBAL", "/tmp/x"),
            ("GIT_SSH_COMMAND", "x"),
            ("GIT_TRACE", "/tmp/trace"),
            ("GIT_AUTHOR_NAME", "me"),
        ]);
        let out = p.bash_env(daemon);
        let mut expected: Vec<&str> = GIT_OVERRIDES.iter().map(|(n, _)| *n).collect();
        expected.extend(["GIT_AUTHOR_NAME", "PATH"]);
        expected.sort_unstable();
        assert_eq!(names(&out), expected, "{out:?}");
        for (name, v) in GIT_OVERRIDES {
            assert_eq!(value(&out, name), Some(OsStr::new(v)), "{name}");
        }
    }

    /// A repository whose config names an fsmonitor program and which has a pre-commit
    /// hook: both run for a plain `git status` / `git commit`, and neither runs with the
    /// environment of a `bash` command.
    #[test]
    fn git_runs_no_fsmonitor_and_no_hook_of_the_repository_under_bash_env() {
        use std::os::unix::fs::PermissionsExt;
        use std::process::Command;
        let Some(git) = ["/usr/bin/git", "/bin/git", "/usr/local/bin/git"]
            .into_iter()
            .find(|p| std::path::Path::new(p).is_file())
        else {
            eprintln!("skipped: git is not installed");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let daemon = || {
            env(&[
                ("PATH", "/usr/local/bin:/usr/bin:/bin"),
                ("HOME", home.to_str().unwrap()),
                ("GIT_CONFIG_NOSYSTEM", "1"),
                ("LC_ALL", "C"),
            ])
        };
        let script = |path: &std::path::Path, marker: &std::path::Path| {
            std::fs::write(path, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        let git_in = |repo: &std::path::Path, vars: &EnvVars, args: &[&str]| {
            let status = Command::new(git)
                .args(args)
                .current_dir(repo)
                .env_clear()
                .envs(vars.iter().map(|(k, v)| (k, v)))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        // Returns which of the repository's programs ran: (fsmonitor, hook).
        let run = |name: &str, vars: &EnvVars| -> (bool, bool) {
            let repo = root.join(name);
            std::fs::create_dir_all(&repo).unwrap();
            let plain = daemon();
            git_in(&repo, &plain, &["init", "-q"]);
            git_in(&repo, &plain, &["config", "user.email", "a@b.c"]);
            git_in(&repo, &plain, &["config", "user.name", "a"]);
            let fsmonitor = root.join(format!("{name}-fsmonitor-ran"));
            let hook = root.join(format!("{name}-hook-ran"));
            script(&root.join(format!("{name}-fsmonitor")), &fsmonitor);
            script(&repo.join(".git/hooks/pre-commit"), &hook);
            let program = root.join(format!("{name}-fsmonitor"));
            git_in(
                &repo,
                &plain,
                &["config", "core.fsmonitor", program.to_str().unwrap()],
            );
            std::fs::write(repo.join("f"), "x\n").unwrap();
            git_in(&repo, vars, &["add", "f"]);
            git_in(&repo, vars, &["status", "--short"]);
            git_in(&repo, vars, &["commit", "-q", "-m", "m"]);
            (fsmonitor.exists(), hook.exists())
        };
        assert_eq!(
            run("plain", &daemon()),
            (true, true),
            "the repository's programs run without the overrides"
        );
        let p = policy(&[], &[], &[]);
        assert_eq!(
            run("bash", &p.bash_env(daemon())),
            (false, false),
            "neither runs with a bash command's environment"
        );
    }
}
