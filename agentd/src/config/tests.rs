use super::*;

#[test]
fn design_example_parses() {
    let text = r#"
[defaults]
provider = "local"
model = "qwen2.5"
mode = "agent"
max_steps = 50

[[providers]]
id = "local"
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "LOCAL_API_KEY"
models = [{ id = "qwen2.5", context_window = 32768, tools = true }]

[permissions]
read = "allow"
blocked_commands = ["rm -rf /"]

[tools]
offload_threshold_chars = 3000
env_deny = ["CORP_*"]
env_keep = ["GH_TOKEN"]
mcp_env_allow = ["SSL_CERT_FILE"]

[[mcp_servers]]
name = "time"
transport = "stdio"
command = "python3"
args = ["-m", "mcp_server_time"]
env = { TZ = "UTC" }
auto_approve = ["get_time"]

[[mcp_servers]]
name = "everything"
transport = "http"
url = "http://127.0.0.1:3001/mcp"
autoStart = false
"#;
    let config = ConfigFile::parse(text).unwrap();
    assert_eq!(config.defaults.provider.as_deref(), Some("local"));
    assert_eq!(config.defaults.mode, Some(AgentMode::Agent));
    assert_eq!(config.providers.len(), 1);
    assert_eq!(config.providers[0].models[0].context_window, Some(32768));
    let mcp = &config.mcp_servers;
    assert_eq!((mcp[0].name.as_str(), mcp[0].args.len()), ("time", 2));
    assert_eq!(mcp[0].auto_approve, ["get_time"]);
    assert!(mcp[0].enabled && mcp[0].auto_start);
    assert_eq!(mcp[1].transport, agent_proto::McpTransport::Http);
    assert!(!mcp[1].auto_start);
    assert_eq!(config.permissions.read, Some(PermissionRule::Allow));
    assert_eq!(config.permissions.blocked_commands, ["rm -rf /"]);
    assert_eq!(config.tools.offload_threshold_chars, Some(3000));
    assert_eq!(config.tools.env_deny, ["CORP_*"]);
    assert_eq!(config.tools.env_keep, ["GH_TOKEN"]);
    assert_eq!(config.tools.mcp_env_allow, ["SSL_CERT_FILE"]);
    assert_eq!(config.limits.replay_events, 10_000);
}

#[test]
fn relative_script_paths_follow_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[[providers]]\nid = \"s\"\nkind = \"scripted\"\nscript = \"turns.toml\"\n",
    )
    .unwrap();
    let config = ConfigFile::load(&path, true).unwrap();
    assert_eq!(
        config.providers[0].script.as_deref(),
        Some(dir.path().join("turns.toml").as_path())
    );
    assert!(
        ConfigFile::load(&dir.path().join("none.toml"), false)
            .unwrap()
            .providers
            .is_empty()
    );
    assert!(ConfigFile::load(&dir.path().join("none.toml"), true).is_err());
}

#[test]
fn typos_are_errors_naming_the_field() {
    let err = ConfigFile::parse("[[providers]]\nid = \"x\"\nkind = \"openai\"\nbase_ulr = \"x\"\n")
        .unwrap_err();
    assert!(err.contains("base_ulr"), "{err}");
    let err = ConfigFile::parse("[[providers]]\nid = \"x\"\nkind = \"weird\"\n").unwrap_err();
    assert!(
        err.contains("unknown variant `weird`") && err.contains("`anthropic`"),
        "{err}"
    );
}

#[test]
fn limits_have_defaults_that_pass_the_checks() {
    let config = ConfigFile::parse("").unwrap();
    assert_eq!(config.limits.max_buffered_input_bytes, 64 * 1024 * 1024);
    assert_eq!(config.limits.max_batch_requests, 1000);
    assert_eq!(config.limits.max_subscriptions_per_connection, 1000);
    assert_eq!(config.limits.max_message_bytes, 16 * 1024 * 1024);
    assert_eq!(config.limits.max_tool_arguments_bytes, 4 * 1024 * 1024);
    assert_eq!(config.limits.max_tool_calls_per_answer, 256);
    config.validate().unwrap();
}

#[test]
fn unusable_values_are_refused_naming_the_field() {
    let threshold = "context.summarize_threshold must be above 0 and at most 1 (a share \
                     of the model's window), got";
    let cases: &[(&str, Option<&str>)] = &[
        (
            "[sandbox]\nmode = \"read-only\"\nwritable = [\"/opt/c\", \"~/.cargo\"]",
            None,
        ),
        (
            "[sandbox]\nwritable = [\"cache\"]",
            Some("sandbox.writable: \"cache\" must be an absolute path or start with ~/"),
        ),
        (
            "[sandbox]\nhidden = [\"~user/x\"]",
            Some("sandbox.hidden: \"~user/x\" must be an absolute path or start with ~/"),
        ),
        ("[limits]\nmax_connections = 1", None),
        (
            "[[providers]]\nid = \"p\"\nmodels = [{ id = \"m\", input_price = 0.5, output_price = 0 }]",
            None,
        ),
        (
            "[[providers]]\nid = \"p\"\nmodels = [{ id = \"m\", output_price = -1 }]",
            Some("providers \"p\", model \"m\": output_price is USD per million tokens, 0 or more"),
        ),
        (
            "[limits]\nmax_connections = 0",
            Some("limits.max_connections must be at least 1, got 0"),
        ),
        (
            "[limits]\nmax_in_flight_requests = 0",
            Some("limits.max_in_flight_requests must be at least 1, got 0"),
        ),
        (
            "[limits]\nrequest_timeout_secs = 0",
            Some("limits.request_timeout_secs must be at least 1, got 0"),
        ),
        (
            "[limits]\nreplay_events = 0",
            Some("limits.replay_events must be at least 1, got 0"),
        ),
        ("[limits]\nreplay_bytes = 1024", None),
        ("[limits]\nreplay_budget_bytes = 1048576", None),
        (
            "[limits]\nreplay_budget_bytes = 1048575",
            Some("limits.replay_budget_bytes must be at least 1048576, got 1048575"),
        ),
        (
            "[limits]\nidle_session_secs = 0",
            Some("limits.idle_session_secs must be at least 1, got 0"),
        ),
        (
            "[limits]\nreplay_bytes = 1023",
            Some("limits.replay_bytes must be at least 1024, got 1023"),
        ),
        ("[limits]\nmax_buffered_input_bytes = 1048576", None),
        (
            "[limits]\nmax_buffered_input_bytes = 1048575",
            Some("limits.max_buffered_input_bytes must be at least 1048576, got 1048575"),
        ),
        ("[limits]\nmax_batch_requests = 1", None),
        (
            "[limits]\nmax_batch_requests = 0",
            Some("limits.max_batch_requests must be at least 1, got 0"),
        ),
        (
            "[limits]\nmax_subscriptions_per_connection = 0",
            Some("limits.max_subscriptions_per_connection must be at least 1, got 0"),
        ),
        ("[limits]\nmax_message_bytes = 1024", None),
        (
            "[limits]\nmax_message_bytes = 1023",
            Some("limits.max_message_bytes must be at least 1024, got 1023"),
        ),
        (
            "[limits]\nmax_tool_arguments_bytes = 0",
            Some("limits.max_tool_arguments_bytes must be at least 1024, got 0"),
        ),
        ("[limits]\nmax_tool_calls_per_answer = 1", None),
        (
            "[limits]\nmax_tool_calls_per_answer = 0",
            Some("limits.max_tool_calls_per_answer must be at least 1, got 0"),
        ),
        // No run gets time to stop: the daemon exits at once. A choice, not an error.
        ("[limits]\nshutdown_grace_secs = 0", None),
        ("[defaults]\nmax_steps = 1", None),
        (
            "[defaults]\nmax_steps = 0",
            Some("defaults.max_steps must be at least 1, got 0"),
        ),
        ("[context]\nkeep_rounds = 1", None),
        (
            "[context]\nkeep_rounds = 0",
            Some("context.keep_rounds must be at least 1, got 0"),
        ),
        ("[context]\nsummarize_threshold = 1.0", None),
        ("[context]\nsummarize_threshold = 0.05", None),
        ("[context]\nsummarize_threshold = 0.0", Some("0")),
        ("[context]\nsummarize_threshold = -0.5", Some("-0.5")),
        ("[context]\nsummarize_threshold = 1.5", Some("1.5")),
        ("[context]\nsummarize_threshold = nan", Some("NaN")),
    ];
    for (text, expected) in cases {
        let got = ConfigFile::parse(text)
            .unwrap()
            .validate()
            .map_err(|e| e.to_string());
        let expected = expected.map_or(Ok(()), |message| {
            Err(if text.contains("summarize_threshold") {
                format!("invalid config: {threshold} {message}")
            } else {
                format!("invalid config: {message}")
            })
        });
        assert_eq!(got, expected, "{text}");
    }
}

#[test]
fn sandbox_paths_under_home_are_taken_from_home() {
    let config = ConfigFile::parse(
        "[sandbox]\nmode = \"off\"\nwritable = [\"~/.cargo\"]\nhidden = [\"/etc/x\"]",
    )
    .unwrap();
    assert_eq!(config.sandbox.mode, SandboxMode::Off);
    let (writable, hidden) = config.sandbox.resolve(Some(Path::new("/home/u"))).unwrap();
    assert_eq!(writable, [PathBuf::from("/home/u/.cargo")]);
    assert_eq!(hidden, [PathBuf::from("/etc/x")]);
    assert!(config.sandbox.resolve(None).unwrap_err().contains("HOME"));
    assert_eq!(
        ConfigFile::default().sandbox.mode,
        SandboxMode::WorkspaceWrite
    );
}

#[test]
fn the_daemons_secrets_are_the_config_the_env_file_and_the_credentials() {
    let paths = Paths {
        socket: "/run/a.sock".into(),
        data_dir: "/d".into(),
        config_file: Some("/etc/agentd.toml".into()),
    };
    let env = |k: &str| match k {
        "XDG_CONFIG_HOME" => Some("/home/u/.config".to_owned()),
        "CREDENTIALS_DIRECTORY" => Some("/run/credentials/agentd.service".to_owned()),
        _ => None,
    };
    assert_eq!(
        paths.secrets(env),
        [
            PathBuf::from("/etc/agentd.toml"),
            PathBuf::from("/home/u/.config/agentd/env"),
            PathBuf::from("/run/credentials/agentd.service"),
        ]
    );
    // A relative credentials folder is not one systemd gave.
    let relative = |k: &str| (k == "CREDENTIALS_DIRECTORY").then(|| "creds".to_owned());
    assert_eq!(paths.secrets(relative), [PathBuf::from("/etc/agentd.toml")]);
}

#[test]
fn load_checks_the_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[limits]\nmax_connections = 0\n").unwrap();
    let err = ConfigFile::load(&path, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid config: limits.max_connections must be at least 1, got 0"
    );
}

#[test]
fn secrets_do_not_debug_print() {
    let config = ConfigFile::parse(
        "[[providers]]\nid = \"x\"\nkind = \"openai\"\napi_key = \"sk-very-secret\"\n",
    )
    .unwrap();
    assert_eq!(config.providers[0].kind, Some(ProviderKind::Openai));
    let printed = format!("{config:?}");
    assert!(!printed.contains("sk-very-secret"), "{printed}");
    assert_eq!(
        config.providers[0].api_key.as_ref().unwrap().expose(),
        "sk-very-secret"
    );
}

#[test]
fn credentials_are_files_named_like_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("OPENAI_API_KEY", "sk-from-cred\n"),
        ("SPACED", "  sk-spaced \r\n"),
        ("EMPTY", "\n"),
        ("HUGE", &"k".repeat(64 * 1024 + 1)),
        (".hidden", "x"),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    std::fs::create_dir(dir.path().join("A_DIR")).unwrap();
    let dir_text = dir.path().display().to_string();
    let creds = Credentials::from_env(|k| (k == "CREDENTIALS_DIRECTORY").then(|| dir_text.clone()));
    let cases: &[(&str, Option<&str>)] = &[
        ("OPENAI_API_KEY", Some("sk-from-cred")),
        ("SPACED", Some("sk-spaced")),
        ("EMPTY", None),
        ("HUGE", None),
        ("MISSING", None),
        (".hidden", None),
        ("../OUTSIDE", None),
        ("A_DIR", None),
        ("", None),
    ];
    for (name, want) in cases {
        assert_eq!(creds.get(name).as_deref(), *want, "{name:?}");
    }
    // A credential wins over the variable; without one, the variable is used.
    let env = |k: &str| Some(format!("env-{k}"));
    let lookup = creds.lookup(env);
    assert_eq!(lookup("OPENAI_API_KEY").as_deref(), Some("sk-from-cred"));
    assert_eq!(lookup("MISSING").as_deref(), Some("env-MISSING"));
    // No directory, or a relative one: nothing is read.
    for dir in [None, Some("relative/dir")] {
        let creds = Credentials::from_env(|_| dir.map(str::to_owned));
        assert_eq!(creds.get("OPENAI_API_KEY"), None, "{dir:?}");
    }
}

#[test]
fn xdg_locations() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    };
    assert_eq!(
        default_data_dir(env(&[("XDG_DATA_HOME", "/x/data"), ("HOME", "/h")])),
        Some(PathBuf::from("/x/data/agentd"))
    );
    assert_eq!(
        default_data_dir(env(&[("HOME", "/h")])),
        Some(PathBuf::from("/h/.local/share/agentd"))
    );
    assert_eq!(
        default_config_file(env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "")])),
        Some(PathBuf::from("/h/.config/agentd/config.toml"))
    );
    assert_eq!(default_config_file(env(&[])), None);
    assert_eq!(
        default_skills_dir(env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x/c")])),
        Some(PathBuf::from("/x/c/agentd/skills"))
    );
    assert_eq!(
        default_skills_dir(env(&[("HOME", "/h")])),
        Some(PathBuf::from("/h/.config/agentd/skills"))
    );
}
