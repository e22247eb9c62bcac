//! The store on PostgreSQL (`[store] url`, `--store`, `AGENTD_STORE`): a daemon keeps its
//! sessions there across restarts, and a URL that is not a store is refused at start.
//! (The whole suite also runs with every daemon on PostgreSQL: `AGENTD_TEST_STORE=postgres`,
//! tests/run-all.sh; several daemons on one database: `scale_out`.)

use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config};
use agentd_testkit::mock_model::{MockModel, Reply};

use crate::common::{bin, fresh_postgres, messages, new_agent, send_and_collect};

fn on(url: &str, mock: &MockModel) -> DaemonOptions {
    DaemonOptions {
        config_toml: openai_config(&mock.url()),
        env: vec![("AGENTD_STORE".into(), url.into())],
    }
}

#[tokio::test]
async fn a_daemon_keeps_its_sessions_in_postgres_across_a_restart() {
    let Some(url) = fresh_postgres("postgres::a_daemon_keeps_its_sessions").await else {
        return;
    };
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with(bin(), on(&url, &mock)).await;
    assert!(daemon.log().contains("store: PostgreSQL at postgres://"));
    let client = daemon.client().await;
    let agent = new_agent(&client, "kept in postgres").await;
    mock.push(Reply::openai_text(&["stored ", "there"]));
    send_and_collect(&client, &agent.id, "hello").await;
    drop(client);
    assert!(daemon.terminate().await.success());
    daemon.restart().await;

    let client = daemon.client().await;
    let history = messages(&client, &agent.id).await;
    assert_eq!(history.len(), 2);
    assert_eq!(history[1].text(), "stored there");
    assert!(
        !daemon.db_path().exists(),
        "no SQLite file beside a PostgreSQL store"
    );
    // The rows are in the database itself.
    let db = crate::common::database(&daemon).await;
    let (count,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM messages WHERE agent_id = $1")
        .bind(&agent.id)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(count, 2);
}

#[tokio::test]
async fn a_store_url_of_another_kind_is_refused_at_start() {
    let mock = MockModel::start().await;
    let failed = TestDaemon::try_start_with(bin(), on("mysql://me@db.example/agents", &mock))
        .await
        .err()
        .expect("refused");
    assert!(
        failed.log.contains("\"mysql\" is not a store"),
        "{}",
        failed.log
    );
    assert!(failed.log.contains("postgres://"), "{}", failed.log);
    // A password in a URL that cannot be reached is never logged.
    let failed = TestDaemon::try_start_with(
        bin(),
        on(
            "postgres://me:hunter2@/agents?host=/nonexistent-agentd-test",
            &mock,
        ),
    )
    .await
    .err()
    .expect("refused");
    assert!(
        failed.log.contains("cannot open the store"),
        "{}",
        failed.log
    );
    assert!(!failed.log.contains("hunter2"), "{}", failed.log);
    assert!(failed.log.contains("me:***@"), "{}", failed.log);
}
