//! What the daemon's children get and how long they live (issue 12, sections 2 and 5):
//! bash commands and MCP stdio servers never see provider keys or other secrets, bash runs
//! without start-up hooks and never finds a workspace program by a bare name, children die
//! with the daemon (`kill -9`), the groups a previous daemon left behind are killed at the
//! next start (only those provably its own), and credentials in MCP URLs are masked
//! wherever a URL is shown or logged.

use agentd_testkit::send::SendByName;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, McpServerStatus, ToolCallStatus};
use agentd::process::{GUARD_ARG, process_mark};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::events::collect_until;
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::procs;
use serde_json::json;

use crate::common::{
    ALLOW_ALL, bin, send_and_collect, start_with, tool_agent, tool_result_of, tool_scenario,
};
use crate::mcp::wait_status;

/// How long a process or a server may take to show up (a hang guard).
const WAIT: Duration = Duration::from_secs(20);

/// The test kit's MCP server, built next to the daemon.
fn server_bin() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agentd")).with_file_name("mcp-test-server");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p agentd-testkit --bins`",
        path.display()
    );
    path
}

/// A duration no other test uses, so `sleep <it>` marks this test's processes.
fn marker(slot: u32) -> String {
    format!("sleep 7{:06}.{slot}", std::process::id() % 1_000_000)
}

/// Secrets in the daemon's environment, one per way a variable is recognised.
const OPENAI_KEY: &str = "sk-openai-never-in-a-tool";
const CUSTOM_KEY: &str = "custom-key-never-in-a-tool";
const GITHUB: &str = "gh-token-never-in-a-tool";
const CORP: &str = "corp-value-never-in-a-tool";

#[tokio::test]
async fn bash_and_mcp_servers_get_a_scrubbed_environment_and_bash_no_start_up_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("hook.sh");
    std::fs::write(&hook, "echo HOOK-RAN\n").unwrap();
    let mock = MockModel::start().await;
    let extra = format!(
        r#"
[[providers]]
id = "custom"
kind = "openai"
base_url = "{url}"
api_key_env = "LEAKY_CUSTOM_LLM"
default_model = "m"

[tools]
offload_threshold_chars = 1000000
env_deny = ["CORP_*"]

[[mcp_servers]]
name = "envs"
command = "{server}"
args = ["--env-tool"]
env = {{ SERVER_OWN = "own-value", API_TOKEN = "the-servers-own-token" }}

{ALLOW_ALL}"#,
        url = mock.url(),
        server = server_bin().display(),
    );
    let path = std::env::var("PATH").unwrap_or_default();
    let env = [
        ("OPENAI_API_KEY", OPENAI_KEY.to_owned()),
        ("LEAKY_CUSTOM_LLM", CUSTOM_KEY.to_owned()),
        ("GITHUB_TOKEN", GITHUB.to_owned()),
        ("CORP_VALUE", CORP.to_owned()),
        ("EDITOR", "harmless-editor".to_owned()),
        ("BASH_ENV", hook.display().to_string()),
        ("ENV", hook.display().to_string()),
        ("BASH_FUNC_ls%%", "() { echo FUNCTION-RAN; }".to_owned()),
        ("SHELLOPTS", "xtrace".to_owned()),
        ("PS4", "+XTRACE-RAN ".to_owned()),
        // Empty and relative entries first: an agent-written ./ls would win by name.
        ("PATH", format!(".::bin:{path}:")),
    ];
    let daemon = TestDaemon::start_with(
        bin(),
        DaemonOptions {
            config_toml: openai_config_with(&mock.url(), &extra),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        },
    )
    .await;
    let client = daemon.client().await;
    let (agent, ws) = tool_agent(&client, None).await;
    // A program the agent "wrote", named like a common one.
    let fake = ws.path().join("ls");
    std::fs::write(&fake, "#!/bin/sh\necho FAKE-LS-RAN\n").unwrap();
    std::fs::set_permissions(
        &fake,
        <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
    )
    .unwrap();

    let command = "printenv; echo \"bash=$BASH_VERSION\"; ls";
    mock.push(Reply::openai_tool_calls(
        &[],
        &[
            ("sh", "bash", &json!({ "command": command }).to_string()),
            ("mcp", "env", "{}"),
        ],
    ));
    mock.push(Reply::openai_text(&["done"]));
    wait_status(&client, "envs", McpServerStatus::Ready).await;
    let (_, events) = send_and_collect(&client, &agent.id, "show me").await;

    let (status, bash_out, _) = tool_result_of(&events, "sh");
    assert_eq!(status, ToolCallStatus::Success, "{bash_out}");
    for secret in [OPENAI_KEY, CUSTOM_KEY, GITHUB, CORP] {
        assert!(!bash_out.contains(secret), "{secret} in:\n{bash_out}");
    }
    for name in [
        "OPENAI_API_KEY=",
        "LEAKY_CUSTOM_LLM=",
        "GITHUB_TOKEN=",
        "CORP_VALUE=",
        "BASH_ENV=",
        "\nENV=",
        "BASH_FUNC_",
        "SHELLOPTS=",
        "PS4=",
    ] {
        assert!(!bash_out.contains(name), "{name} in:\n{bash_out}");
    }
    for ran in ["HOOK-RAN", "FUNCTION-RAN", "XTRACE-RAN", "FAKE-LS-RAN"] {
        assert!(!bash_out.contains(ran), "{ran} in:\n{bash_out}");
    }
    assert!(bash_out.contains("EDITOR=harmless-editor"), "{bash_out}");
    assert!(bash_out.contains("\nbash=5") || bash_out.contains("\nbash=4"));
    assert!(
        bash_out.contains("\nls\n"),
        "the real ls listed the fake: {bash_out}"
    );
    let path_line = bash_out
        .lines()
        .find_map(|l| l.strip_prefix("PATH="))
        .unwrap_or_else(|| panic!("no PATH in:\n{bash_out}"));
    assert!(
        !path_line.is_empty() && path_line.split(':').all(|entry| entry.starts_with('/')),
        "{path_line}"
    );

    let (status, mcp_out, _) = tool_result_of(&events, "mcp");
    assert_eq!(status, ToolCallStatus::Success, "{mcp_out}");
    let names: Vec<&str> = mcp_out
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    for wanted in ["SERVER_OWN", "API_TOKEN", "PATH"] {
        assert!(names.contains(&wanted), "{wanted} not in {names:?}");
    }
    assert!(mcp_out.contains("API_TOKEN=the-servers-own-token"));
    for name in &names {
        let allowed = [
            "SERVER_OWN",
            "API_TOKEN",
            "PATH",
            "HOME",
            "LANG",
            "LANGUAGE",
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
        assert!(
            allowed.contains(name) || name.starts_with("LC_"),
            "{name} is not on the allow list:\n{mcp_out}"
        );
    }
    for secret in [OPENAI_KEY, CUSTOM_KEY, GITHUB, CORP, "harmless-editor"] {
        assert!(!mcp_out.contains(secret), "{secret} in:\n{mcp_out}");
    }
}

#[tokio::test]
async fn kill_9_of_the_daemon_takes_a_running_command_and_its_children_along() {
    let (mock, mut daemon, client, agent, _ws) = tool_scenario(ALLOW_ALL).await.into_parts();
    let marker = marker(41);
    let args = json!({"command": format!("{marker} | {marker}; echo never")}).to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("slow", "bash", &args)]));
    client
        .send_plain(agent.id.clone(), "sleep".into())
        .await
        .unwrap();
    // The guard, bash (both name the command) and the two sleeps.
    procs::wait_running(&marker, 3, WAIT, "the commands to start").await;
    daemon.kill9().await;
    procs::wait_gone(&marker, Duration::from_secs(20)).await;
}

#[tokio::test]
async fn kill_9_of_the_daemon_takes_its_mcp_servers_along() {
    // The server quits when its stdin closes, as MCP servers do; the helper it started
    // (like a language server a real one spawns) does not.
    let helper = marker(45);
    let name = format!("dies-with-daemon-{}", std::process::id());
    let script = format!("{helper} & exec {} --name {name}", server_bin().display());
    let config = format!(
        "[[mcp_servers]]\nname = \"m\"\ncommand = \"/bin/sh\"\nargs = {}\n",
        json!(["-c", script])
    );
    let (_mock, mut daemon) = start_with(&config).await;
    let client = daemon.client().await;
    wait_status(&client, "m", McpServerStatus::Ready).await;
    procs::wait_running(&helper, 1, WAIT, "the commands to start").await;
    daemon.kill9().await;
    procs::wait_gone(&name, Duration::from_secs(20)).await;
    procs::wait_gone(&helper, Duration::from_secs(20)).await;
}

/// Runs one bash call (a prompt granted once) and returns its result and the time from
/// the send to the result.
async fn timed_call(
    mock: &MockModel,
    client: &Client,
    agent: &str,
    args: serde_json::Value,
) -> (ToolCallStatus, String, Duration) {
    let started = Instant::now();
    let (status, content, _) = crate::common::run_bash_granted(mock, client, agent, args).await;
    (status, content, started.elapsed())
}

#[tokio::test]
async fn a_command_that_leaves_its_group_ends_with_its_call_timeout_and_cancel() {
    let (mock, _daemon, client, agent, _ws) = tool_scenario(ALLOW_ALL).await.into_parts();

    // In the background, out of the group and the session, holding the call's pipes: the
    // call ends when the shell does, and takes it along.
    let left = marker(46);
    let (status, content, took) = timed_call(
        &mock,
        &client,
        &agent.id,
        json!({"command": format!("setsid {left} & echo started")}),
    )
    .await;
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "started\nexit code: 0")
    );
    procs::wait_gone(&left, Duration::from_secs(5)).await;
    eprintln!("setsid in the background: the call took {took:?}");

    // In the foreground: its timeout ends it.
    let timed = marker(47);
    let (status, content, took) = timed_call(
        &mock,
        &client,
        &agent.id,
        json!({"command": format!("setsid {timed}"), "timeout": 300}),
    )
    .await;
    assert_eq!(status, ToolCallStatus::Error);
    assert!(content.contains("timed out after 300 ms"), "{content}");
    procs::wait_gone(&timed, Duration::from_secs(5)).await;
    eprintln!("setsid with a 300 ms timeout: the call took {took:?}");

    // A cancel ends it too, and the agent is idle again.
    let cancelled = marker(48);
    let args = json!({"command": format!("setsid {cancelled}")}).to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("k", "bash", &args)]));
    // `setsid` is asked every time (what it starts leaves the group): the user lets it run.
    let (sent, events) = send_and_collect(&client, &agent.id, "go").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. })),
        "{:?}",
        agentd_testkit::events::type_names(&events)
    );
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .handle_permission_response(
            sent.assistant_message_id,
            "k".into(),
            true,
            None,
            Some(agent_proto::Remember::Once),
        )
        .await
        .unwrap();
    procs::wait_running(&cancelled, 1, WAIT, "the commands to start").await;
    let asked = Instant::now();
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let events = agentd_testkit::events::collect_run(&mut sub, Duration::from_secs(20)).await;
    eprintln!(
        "setsid then cancelLoop: the run ended {:?} after the cancel",
        asked.elapsed()
    );
    assert_eq!(tool_result_of(&events, "k").0, ToolCallStatus::Cancelled);
    procs::wait_gone(&cancelled, Duration::from_secs(5)).await;
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, agent_proto::SessionStatus::Idle);
}

/// A process group as a daemon records it, led by a process this test starts: the guard
/// (when `guard`) running `sleep`, or a plain `sleep`.
fn start_group(marker: &str, guard: bool) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let seconds = marker.trim_start_matches("sleep ");
    let mut command = if guard {
        let mut command = std::process::Command::new(bin());
        command
            .arg(GUARD_ARG)
            .arg(std::process::id().to_string())
            .arg("-") // the daemon's umask
            .arg("-") // no sandbox
            .args(["/bin/sh", "-c", &format!("{marker} & {marker}")]);
        command
    } else {
        let mut command = std::process::Command::new("sleep");
        command.arg(seconds);
        command
    };
    command.process_group(0).spawn().unwrap()
}

#[tokio::test]
async fn groups_left_behind_are_killed_at_the_next_start_but_only_provably_ours() {
    let (_mock, mut daemon) = start_with("").await;
    daemon.terminate().await;
    let records = daemon.data_dir().join("process-groups");
    assert!(records.is_dir());

    // Ours: a guard leading its group, recorded with its start time.
    let ours_marker = marker(42);
    let mut ours = start_group(&ours_marker, true);
    procs::wait_running(&ours_marker, 3, WAIT, "the commands to start").await;
    let mark = process_mark(ours.id()).unwrap();
    std::fs::write(records.join(ours.id().to_string()), &mark).unwrap();
    // Not provably ours: a plain process with a matching record, and a guard whose record
    // names another start time (its pid was reused, as far as the record can tell).
    let plain_marker = marker(43);
    let mut plain = start_group(&plain_marker, false);
    procs::wait_running(&plain_marker, 1, WAIT, "the commands to start").await;
    std::fs::write(
        records.join(plain.id().to_string()),
        process_mark(plain.id()).unwrap(),
    )
    .unwrap();
    let reused_marker = marker(44);
    let mut reused = start_group(&reused_marker, true);
    procs::wait_running(&reused_marker, 3, WAIT, "the commands to start").await;
    let boot = mark.split_whitespace().next().unwrap();
    std::fs::write(records.join(reused.id().to_string()), format!("{boot} 1\n")).unwrap();

    daemon.restart().await;
    procs::wait_gone(&ours_marker, Duration::from_secs(20)).await;
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(ours.wait().unwrap().signal(), Some(9));
    assert!(
        daemon
            .log()
            .contains("killed process groups the last run left behind")
    );
    // The others still run, and every record is forgotten.
    assert_eq!(plain.try_wait().unwrap(), None);
    assert_eq!(reused.try_wait().unwrap(), None);
    assert!(procs::with_marker(&reused_marker).len() >= 3);
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 0);
    for child in [&mut plain, &mut reused] {
        let group = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
        nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL).unwrap();
        child.wait().unwrap();
    }
}

#[tokio::test]
async fn credentials_in_mcp_urls_are_masked_in_listings_errors_events_and_logs() {
    let mut server = tokio::process::Command::new(server_bin())
        .args(["--http", "127.0.0.1:0", "--name", "web"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = tokio::io::BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line)
        .await
        .unwrap();
    let url = line.trim().strip_prefix("listening ").unwrap().to_owned();
    let up =
        url.replacen("http://", "http://alice:pw-secret-1@", 1) + "?token=tok-secret-2&region=eu";
    // Nothing listens on port 1: the connection error quotes the URL.
    let down = "http://bob:pw-secret-3@127.0.0.1:1/mcp?api_key=key-secret-4&x=1";
    let secrets = ["pw-secret-1", "tok-secret-2", "pw-secret-3", "key-secret-4"];

    let (_mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let mut all = client.subscribe_events(None, None, None).await.unwrap();
    for (name, url) in [("up", up.as_str()), ("down", down)] {
        let added = client
            .add_mcp_server(
                serde_json::from_value(json!({"name": name, "transport": "http", "url": url}))
                    .unwrap(),
            )
            .await
            .unwrap();
        let shown = added.spec.url.unwrap();
        assert!(shown.contains("://***@127.0.0.1:"), "{shown}");
    }
    let up_info = wait_status(&client, "up", McpServerStatus::Ready).await;
    assert_eq!(
        up_info.spec.url.as_deref(),
        Some((url.replacen("http://", "http://***@", 1) + "?token=***&region=eu").as_str())
    );
    let down_info = wait_status(&client, "down", McpServerStatus::Failed).await;
    let error = down_info.last_error.clone().unwrap();
    assert!(error.contains("127.0.0.1:1"), "{error}");
    let failed = collect_until(&mut all, Duration::from_secs(20), |e| {
        matches!(
            &e.kind,
            EventKind::McpServerStatus { server, status: McpServerStatus::Failed, .. } if server == "down"
        )
    })
    .await;
    let listing = serde_json::to_string(&client.list_mcp_servers().await.unwrap()).unwrap();
    let events = serde_json::to_string(&failed).unwrap();
    let log = daemon.log();
    assert!(
        log.contains("MCP server status"),
        "the daemon logs statuses"
    );
    for secret in secrets {
        for (what, text) in [("listing", &listing), ("events", &events), ("log", &log)] {
            assert!(!text.contains(secret), "{secret} in the {what}:\n{text}");
        }
    }
    let _ = server.kill().await;
}

/// The guard of `program` (as the daemon starts it: its own group, the test as the daemon).
fn guard_of(program: &[&str]) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut command = std::process::Command::new(bin());
    command
        .arg(GUARD_ARG)
        .arg(std::process::id().to_string())
        .arg("-") // the daemon's umask
        .arg("-") // no sandbox
        .args(program)
        .process_group(0);
    command
}

#[tokio::test]
async fn a_guard_told_to_end_everything_as_it_starts_leaves_nothing_behind() {
    // A cancel can reach a guard while it is still starting its program: whenever the
    // signal lands, the program either never starts or goes with the guard. (A guard that
    // armed its signals only after spawning died of the signal's default action in that
    // gap and left the program running, holding the call's pipes open.)
    let marker = marker(45);
    let script = format!("{marker} & {marker}");
    for round in 0..60u64 {
        // No pipes: a program left behind must not hold the test's output open.
        let mut guard = guard_of(&["/bin/sh", "-c", &script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Spread the signal over the guard's start, round after round.
        std::thread::sleep(Duration::from_micros(round * 50));
        let pid = nix::unistd::Pid::from_raw(i32::try_from(guard.id()).unwrap());
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGUSR1);
        guard.wait().unwrap();
        procs::wait_gone(&marker, WAIT).await;
    }
}

#[test]
fn the_guarded_program_starts_with_no_signal_blocked() {
    // The guard blocks the signals it waits for before it starts the program; the program
    // must not inherit that mask (a blocked SIGTERM would make it unkillable politely).
    let out = guard_of(&["/bin/sh", "-c", "grep SigBlk /proc/self/status"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let line = String::from_utf8_lossy(&out.stdout);
    assert_eq!(line.trim(), "SigBlk:\t0000000000000000");
}
