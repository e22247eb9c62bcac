//! agentctl's undo commands: `diff` shows what an answer changed, `revert` puts the files
//! back and cuts the conversation.

use agentd_testkit::daemon::{TestDaemon, openai_config_with};
use agentd_testkit::mock_model::{MockModel, Reply};

use super::{agent_in_workspace, agentd, ctl, stderr, stdout};

#[tokio::test]
async fn diff_shows_a_turn_and_revert_undoes_it() {
    let mock = MockModel::start().await;
    let config = openai_config_with(&mock.url(), "[permissions]\nwrite = \"allow\"\n");
    let daemon = TestDaemon::start(&agentd(), &config).await;
    let dir = tempfile::tempdir().unwrap();
    let ws = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(ws.join("notes.txt"), "alpha\nkeep\n").unwrap();
    let id = agent_in_workspace(&daemon, &ws).await;
    let args = serde_json::json!({"path": "notes.txt", "content": "beta\nkeep\n"}).to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("w", "write_file", &args)]));
    mock.push(Reply::openai_text(&["done"]));
    let sent = ctl(&daemon, &["send", &id, "change the notes"]).await;
    assert!(sent.status.success(), "{}", stderr(&sent));

    let diff = ctl(&daemon, &["diff", &id]).await;
    assert!(diff.status.success(), "{}", stderr(&diff));
    let shown = stdout(&diff);
    assert!(
        shown.starts_with("notes.txt (modified)\n--- a/notes.txt\n+++ b/notes.txt\n"),
        "{shown}"
    );
    assert!(shown.contains("-alpha\n+beta\n keep\n"), "{shown}");

    let reverted = ctl(&daemon, &["revert", &id]).await;
    assert!(reverted.status.success(), "{}", stderr(&reverted));
    assert_eq!(
        stdout(&reverted),
        "restored notes.txt\n2 messages removed\n",
        "{}",
        stderr(&reverted)
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "alpha\nkeep\n"
    );
    let listed = ctl(&daemon, &["--json", "messages", &id]).await;
    assert!(
        !stdout(&listed).contains("change the notes"),
        "{}",
        stdout(&listed)
    );

    // An agent with nothing to revert says so with the daemon's words.
    let again = ctl(&daemon, &["revert", &id]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        stderr(&again).contains("no such message"),
        "{}",
        stderr(&again)
    );
}
