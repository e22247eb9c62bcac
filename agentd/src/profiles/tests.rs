use agent_proto::{PermissionRule, PermissionRules, ProfileSource};

use super::*;
use crate::config::ConfigFile;

fn env() -> Environment {
    Environment {
        date: "2026-11-23".into(),
        os: "linux x86_64".into(),
        workspace: Some("/home/u/proj".into()),
        git: Git::Repository {
            head: Head::Branch("main".into()),
            dirty: Dirty::Clean,
        },
        profile: Some("coder".into()),
    }
}

#[test]
fn the_builtin_profiles_are_the_four_generations() {
    let profiles = Profiles::builtin();
    let tools = |name: &str| profiles.get(name).unwrap().tools.join(" ");
    assert_eq!(profiles.names(), "basic, coder, planner, full");
    assert_eq!(tools("basic"), "read_file write_file edit_file bash");
    assert_eq!(
        tools("coder"),
        "read_file write_file edit_file bash glob grep list_directory directory_tree"
    );
    assert_eq!(
        tools("planner"),
        format!("{} todo_write ask_user_question task", tools("coder"))
    );
    assert_eq!(
        tools("full"),
        format!("{} web_fetch web_search skill", tools("planner"))
    );
    for profile in profiles.all() {
        assert_eq!(profile.source, ProfileSource::Builtin, "{}", profile.name);
        assert_eq!(profile.mcp, None, "{}", profile.name);
        assert_eq!(profile.permissions, PermissionRules::default());
        assert!(profile.prompt.contains("{{workspace}}"), "{}", profile.name);
        assert!(!profile.description.is_empty());
        // The prompt teaches the tools the profile has.
        for tool in ["read_file", "edit_file", "bash"] {
            assert!(profile.prompt.contains(tool), "{}: {tool}", profile.name);
        }
    }
    for name in ["planner", "full"] {
        let prompt = &profiles.get(name).unwrap().prompt;
        for tool in ["todo_write", "ask_user_question", "task"] {
            assert!(prompt.contains(tool), "{name}: {tool}");
        }
    }
    for name in ["basic", "coder"] {
        assert!(!profiles.get(name).unwrap().prompt.contains("todo_write"));
    }
}

/// What a profile of a parsed config resolves to, in one line (for the tables).
/// The profiles of a config file as the daemon checks them at start.
fn checked(config: &ConfigFile) -> Result<Profiles, crate::config::ConfigError> {
    Profiles::from_file(config).map_err(crate::config::ConfigError::Invalid)
}

fn line(p: &Profile) -> String {
    let rules = |r: &PermissionRules| {
        [r.read, r.write, r.execute, r.network]
            .iter()
            .map(|x| match x {
                None => "-",
                Some(PermissionRule::Allow) => "allow",
                Some(PermissionRule::Ask) => "ask",
                Some(PermissionRule::Deny) => "deny",
            })
            .collect::<Vec<_>>()
            .join("/")
    };
    format!(
        "{} [{}] mcp={:?} perms={} t={:?} max={:?} src={:?} desc={:?} prompt={:?}",
        p.name,
        p.tools.join(" "),
        p.mcp,
        rules(&p.permissions),
        p.temperature,
        p.max_output_tokens,
        p.source,
        p.description,
        p.prompt.chars().take(20).collect::<String>(),
    )
}

#[test]
fn config_profiles_resolve_or_are_refused_naming_the_key() {
    let coder_prompt: String = Profiles::builtin()
        .get("coder")
        .unwrap()
        .prompt
        .chars()
        .take(20)
        .collect();
    // (config text, the profile `name` of the last entry as `line` shows it, or the error)
    let cases: Vec<(&str, Result<String, &str>)> = vec![
        (
            r#"[[profiles]]
name = "reader"
description = "Reads only."
tools = ["read_file", "grep", "grep"]
system_prompt = "Read, never write."
"#,
            Ok(r##"reader [read_file grep] mcp=None perms=-/-/-/- t=None max=None src=Config desc="Reads only." prompt="Read, never write.""##.to_owned()),
        ),
        (
            r#"[[profiles]]
name = "reviewer"
extends = "coder"
remove_tools = ["write_file", "edit_file"]
add_tools = ["web_fetch", "glob"]
mcp = ["docs", "git/log"]
permissions = { execute = "deny", read = "allow" }
temperature = 0.2
max_output_tokens = 2048
"#,
            Ok(format!(
                "reviewer [read_file bash glob grep list_directory directory_tree web_fetch] \
                 mcp=Some([\"docs\", \"git/log\"]) perms=allow/-/deny/- t=Some(0.2) \
                 max=Some(2048) src=Config desc={:?} prompt={coder_prompt:?}",
                Profiles::builtin().get("coder").unwrap().description
            )),
        ),
        // A chain: what is not given comes from the profile extended, level by level.
        (
            r#"[[profiles]]
name = "a"
tools = ["bash"]
permissions = { execute = "allow", write = "deny" }
temperature = 0.5
mcp = []
[[profiles]]
name = "b"
extends = "a"
description = "B"
permissions = { execute = "ask" }
"#,
            Ok(r#"b [bash] mcp=Some([]) perms=-/deny/ask/- t=Some(0.5) max=None src=Config desc="B" prompt="""#.to_owned()),
        ),
        // A built-in's name replaces it, and may extend the built-in itself.
        (
            r#"[[profiles]]
name = "basic"
extends = "basic"
tools = ["read_file"]
"#,
            Ok(format!(
                "basic [read_file] mcp=None perms=-/-/-/- t=None max=None src=Config desc={:?} \
                 prompt={:?}",
                Profiles::builtin().get("basic").unwrap().description,
                Profiles::builtin()
                    .get("basic")
                    .unwrap()
                    .prompt
                    .chars()
                    .take(20)
                    .collect::<String>()
            )),
        ),
        (
            r#"[[profiles]]
name = "x"
tools = []
[[profiles]]
name = "x"
tools = []
"#,
            Err("profiles[1].name: \"x\" is defined twice (also profiles[0])"),
        ),
        (
            "[[profiles]]\nname = \"my profile\"\ntools = []\n",
            Err("profiles[0].name: \"my profile\" is not a profile name (letters, digits, `_`, `-` and `.`, at most 64)"),
        ),
        (
            "[[profiles]]\nname = \"\"\ntools = []\n",
            Err("profiles[0].name: \"\" is not a profile name (letters, digits, `_`, `-` and `.`, at most 64)"),
        ),
        (
            "[[profiles]]\nname = \"x\"\n",
            Err("profiles[0] (x): give `tools` (its builtin tools, [] for none) or `extends` (a profile to start from)"),
        ),
        (
            "[[profiles]]\nname = \"x\"\nextends = \"y\"\n[[profiles]]\nname = \"y\"\ntools = []\n",
            Err("profiles[0].extends: \"y\" is neither a built-in profile nor one defined before this one (there are: basic, coder, planner, full)"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = [\"read file\"]\n",
            Err("profiles[0].tools: \"read file\" is not a tool name (letters, digits, `_` and `-`, at most 64)"),
        ),
        (
            "[[profiles]]\nname = \"x\"\nextends = \"basic\"\nadd_tools = [\"\"]\n",
            Err("profiles[0].add_tools: \"\" is not a tool name (letters, digits, `_` and `-`, at most 64)"),
        ),
        (
            "[[profiles]]\nname = \"x\"\nextends = \"basic\"\nremove_tools = [\"grep\"]\n",
            Err("profiles[0].remove_tools: \"grep\" is not among its tools (read_file, write_file, edit_file, bash)"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\nmcp = [\"a/b/c\"]\n",
            Err("profiles[0].mcp: \"a/b/c\" is neither a server name nor server/tool"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\nmcp = [\"/t\"]\n",
            Err("profiles[0].mcp: \"/t\" is neither a server name nor server/tool"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\ntemperature = 2.5\n",
            Err("profiles[0].temperature must be between 0 and 2, got 2.5"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\ntemperature = -0.1\n",
            Err("profiles[0].temperature must be between 0 and 2, got -0.1"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\ntemperature = nan\n",
            Err("profiles[0].temperature must be between 0 and 2, got NaN"),
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\nmax_output_tokens = 0\n",
            Err("profiles[0].max_output_tokens must be at least 1, got 0"),
        ),
        (
            "[defaults]\nprofile = \"nope\"\n",
            Err("defaults.profile: unknown profile \"nope\"; the profiles are: basic, coder, planner, full (listProfiles), or \"\" for none"),
        ),
    ];
    for (text, expected) in cases {
        let config = ConfigFile::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let got = checked(&config).map_err(|e| e.to_string()).map(|profiles| {
            let name = &config.profiles.last().unwrap().name;
            line(profiles.get(name).unwrap())
        });
        let expected = expected.map_err(|m| format!("invalid config: {m}"));
        assert_eq!(got, expected, "{text}");
    }
    // The last entry's name is listed once, after the built-ins, unless it replaced one.
    let config =
        ConfigFile::parse("[[profiles]]\nname = \"coder\"\ntools = []\n[[profiles]]\nname = \"z\"\nextends = \"coder\"\n[defaults]\nprofile = \"z\"\n").unwrap();
    let profiles = checked(&config).unwrap();
    assert_eq!(profiles.names(), "basic, coder, planner, full, z");
    assert_eq!(profiles.get("coder").unwrap().source, ProfileSource::Config);
    assert!(profiles.get("z").unwrap().tools.is_empty());
}

#[test]
fn unknown_keys_and_bad_values_of_profiles_are_parse_errors_naming_them() {
    for (text, needle) in [
        ("[[profiles]]\nname = \"x\"\ntoolz = []\n", "toolz"),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\npermissions = { exec = \"deny\" }\n",
            "exec",
        ),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\npermissions = { execute = \"never\" }\n",
            "never",
        ),
        ("[[profiles]]\ntools = []\n", "name"),
        ("[[profiles]]\nname = \"x\"\ntools = \"bash\"\n", "tools"),
        (
            "[[profiles]]\nname = \"x\"\ntools = []\nmax_output_tokens = -1\n",
            "max_output_tokens",
        ),
        ("[defaults]\nprofil = \"x\"\n", "profil"),
    ] {
        let err = ConfigFile::parse(text).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

#[test]
fn an_agent_resolves_to_its_profile_none_or_a_clear_error() {
    let profiles = Profiles::builtin();
    let agent = |profile: Option<&str>| agent_proto::Agent {
        id: "a".into(),
        title: "t".into(),
        mode: agent_proto::AgentMode::Agent,
        provider: "p".into(),
        model: "m".into(),
        system_prompt: None,
        workspace: None,
        profile: profile.map(str::to_owned),
        settings: Default::default(),
        pinned: false,
        archived: false,
        status: Default::default(),
        context_edge: None,
        parent_agent_id: None,
        subagent_type: None,
        parent_tool_call_id: None,
        fork_message_id: None,
        acp: None,
        sandbox: None,
        created_at: 0,
        updated_at: 0,
    };
    assert_eq!(profiles.resolve(&agent(None)), Ok(None));
    assert_eq!(
        profiles
            .resolve(&agent(Some("coder")))
            .unwrap()
            .unwrap()
            .name,
        "coder"
    );
    let err = profiles.resolve(&agent(Some("gone"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        "this agent's profile \"gone\" does not exist (the profiles are: basic, coder, \
         planner, full); give it one that exists with updateAgent (profile), or profile \"\" \
         for none"
    );
    assert_eq!(profiles.check("full"), Ok(()));
    assert!(profiles.check("Full").is_err());
}

#[test]
fn mcp_tools_of_a_profile_match_servers_or_single_tools() {
    let mut profile = Profiles::builtin().get("basic").unwrap().clone();
    assert!(
        profile.offers_mcp("any", "thing"),
        "no list: every MCP tool"
    );
    profile.mcp = Some(vec!["docs".into(), "git/log".into()]);
    let cases = [
        ("docs", "search", true),
        ("git", "log", true),
        ("git", "push", false),
        ("gi", "t/log", false),
        ("other", "docs", false),
    ];
    for (server, tool, offered) in cases {
        assert_eq!(profile.offers_mcp(server, tool), offered, "{server}/{tool}");
    }
    profile.mcp = Some(Vec::new());
    assert!(!profile.offers_mcp("docs", "search"));
    assert!(profile.offers_tool("bash") && !profile.offers_tool("grep"));
}

#[test]
fn templates_fill_known_placeholders_and_leave_the_rest() {
    let cases = [
        ("Work in {{workspace}}.", "Work in /home/u/proj."),
        (
            "{{date}} {{os}} {{profile}}",
            "2026-11-23 linux x86_64 coder",
        ),
        ("{{ date }}", "2026-11-23"),
        ("{{unknown}} {{date}}", "{{unknown}} 2026-11-23"),
        ("{{date", "{{date"),
        ("{{{{date}}}}", "{{2026-11-23}}"),
        ("{{}}", "{{}}"),
        ("no placeholders", "no placeholders"),
        ("", ""),
        ("ünïcode {{os}}é", "ünïcode linux x86_64é"),
    ];
    for (template, expected) in cases {
        assert_eq!(render_template(template, &env()), expected, "{template:?}");
    }
    let bare = Environment {
        workspace: None,
        profile: None,
        ..env()
    };
    assert_eq!(
        render_template("{{workspace}}/{{profile}}", &bare),
        "none/none"
    );
}

use environment::{iso_date, render_template};

#[test]
fn dates_are_utc_iso() {
    let cases = [
        (0, "1970-01-01"),
        (86_399, "1970-01-01"),
        (86_400, "1970-01-02"),
        (951_782_400, "2000-02-29"),
        (1_709_164_800, "2024-02-29"),
        (1_735_689_599, "2024-12-31"),
        (1_735_689_600, "2025-01-01"),
        (1_795_353_390, "2026-11-22"),
        (4_107_542_400, "2100-03-01"),
        (-1, "1969-12-31"),
    ];
    for (secs, expected) in cases {
        assert_eq!(iso_date(secs), expected, "{secs}");
    }
}

#[test]
fn the_environment_section_says_what_is_known() {
    let with = |git: Git, workspace: Option<&str>, profile: Option<&str>| {
        Environment {
            git,
            workspace: workspace.map(str::to_owned),
            profile: profile.map(str::to_owned),
            ..env()
        }
        .section()
    };
    let repo = |head: Head, dirty: Dirty| Git::Repository { head, dirty };
    let cases = [
        (
            with(
                repo(Head::Branch("main".into()), Dirty::Clean),
                Some("/w"),
                Some("coder"),
            ),
            "yes (branch main; clean)",
            "/w",
            "coder",
        ),
        (
            with(
                repo(Head::Branch("feat/x".into()), Dirty::Dirty),
                Some("/w"),
                None,
            ),
            "yes (branch feat/x; uncommitted changes)",
            "/w",
            "none",
        ),
        (
            with(
                repo(Head::Detached("1a2b3c4d5e6f".into()), Dirty::Unknown),
                Some("/w"),
                None,
            ),
            "yes (detached HEAD at 1a2b3c4d5e6f; changes unknown)",
            "/w",
            "none",
        ),
        (
            with(repo(Head::Unknown, Dirty::Unknown), Some("/w"), None),
            "yes (branch unknown; changes unknown)",
            "/w",
            "none",
        ),
        (
            with(Git::NotARepository, None, Some("full")),
            "no",
            "none",
            "full",
        ),
    ];
    for (section, git, workspace, profile) in cases {
        assert_eq!(
            section,
            format!(
                "# Environment\n- Date: 2026-11-23 (UTC)\n- OS: linux x86_64\n- Workspace: \
                 {workspace}\n- Git repository: {git}\n- Profile: {profile}"
            )
        );
    }
    let now = Environment::now(None, Git::NotARepository, None);
    assert_eq!(
        now.os,
        format!("{} {}", std::env::consts::OS, std::env::consts::ARCH)
    );
    assert_eq!(now.date.len(), 10);
}

#[test]
fn a_frame_renders_its_profile_prompt() {
    let mut profile = Profiles::builtin().get("basic").unwrap().clone();
    profile.prompt = "In {{workspace}} on {{date}}.".into();
    let frame = PromptFrame {
        profile: Some(profile.clone()),
        instructions: None,
        skills: None,
        environment: env(),
    };
    assert_eq!(
        frame.profile_prompt().as_deref(),
        Some("In /home/u/proj on 2026-11-23.")
    );
    profile.prompt = "  \n".into();
    let blank = PromptFrame {
        profile: Some(profile),
        instructions: None,
        skills: None,
        environment: env(),
    };
    assert_eq!(blank.profile_prompt(), None);
    let none = PromptFrame {
        profile: None,
        instructions: None,
        skills: None,
        environment: env(),
    };
    assert_eq!(none.profile_prompt(), None);
}
