//! Several daemons on one PostgreSQL database (docs/scale-out.md): three real daemons, each
//! with its own socket and data directory, one database and one mock model. A client sees
//! the same contract on any of them.

use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind, LoopFinishReason, Remember, SessionStatus};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::events::{collect_run, collect_until};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::scenario::{bash_call, tool_agent};
use agentd_testkit::send::SendByName;

use crate::common::{bin, error_of, fresh_postgres, messages, new_agent, permission_request};

/// Three daemons on one fresh database; `None` (the test says it is skipped) outside CI
/// without PostgreSQL.
async fn three(test: &str, extra: &str) -> Option<(MockModel, Vec<TestDaemon>)> {
    let url = fresh_postgres(test).await?;
    let mock = MockModel::start().await;
    let mut daemons = Vec::new();
    for _ in 0..3 {
        let options = DaemonOptions {
            config_toml: openai_config_with(&mock.url(), extra),
            env: vec![("AGENTD_STORE".into(), url.clone())],
        };
        daemons.push(TestDaemon::start_with(bin(), options).await);
    }
    Some((mock, daemons))
}

/// Seqs of `events` with no gap and no repeat.
fn assert_gapless(events: &[Event]) {
    for pair in events.windows(2) {
        assert_eq!(
            pair[1].seq,
            pair[0].seq + 1,
            "{:?} then {:?}",
            pair[0],
            pair[1]
        );
    }
}

#[tokio::test]
async fn an_agent_made_on_one_daemon_is_listed_on_all_and_its_run_streams_to_another() {
    let Some((mock, daemons)) = three("scale_out::listed_and_streamed", "").await else {
        return;
    };
    let (a, b) = (daemons[0].client().await, daemons[1].client().await);
    let agent = new_agent(&a, "made on A").await;
    let listed = b.list_agents(None, None, None, None, None).await.unwrap();
    assert_eq!(listed.agents.len(), 1);
    assert_eq!(listed.agents[0].id, agent.id);

    // Watched on A and on B, sent on B: both see the same events, gapless, in order.
    let mut on_a = a
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let mut on_b = b
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["one ", "two ", "three"]));
    b.send_plain(agent.id.clone(), "hello".into())
        .await
        .unwrap();
    let seen_on_b = collect_run(&mut on_b, Duration::from_secs(30)).await;
    let seen_on_a = collect_run(&mut on_a, Duration::from_secs(30)).await;
    assert_gapless(&seen_on_a);
    assert_eq!(seen_on_a, seen_on_b);
    assert!(matches!(
        seen_on_a.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    // And what A's clients read is what was written.
    let history = messages(&a, &agent.id).await;
    assert_eq!(history.last().unwrap().text(), "one two three");
}

#[tokio::test]
async fn a_prompt_raised_on_one_daemon_is_answered_on_another_and_the_run_completes() {
    let Some((mock, daemons)) = three("scale_out::prompt_answered_elsewhere", "").await else {
        return;
    };
    let (b, c) = (daemons[1].client().await, daemons[2].client().await);
    let (agent, _workspace) = tool_agent(&b, None).await;
    let mut watch = c
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(bash_call("c1", "echo answered-elsewhere"));
    mock.push(Reply::openai_text(&["done"]));
    let sent = b
        .send_plain(agent.id.clone(), "run it".into())
        .await
        .unwrap();
    let asked = collect_run(&mut watch, Duration::from_secs(30)).await;
    let EventKind::PermissionRequested { message_id, .. } = permission_request(&asked) else {
        panic!("no prompt: {asked:?}");
    };
    assert_eq!(message_id, sent.assistant_message_id);
    // Answered on C, which is not the agent's home: the same answer as on B.
    c.handle_permission_response(message_id, "c1".into(), true, None, Some(Remember::Once))
        .await
        .unwrap();
    let resumed = collect_run(&mut watch, Duration::from_secs(30)).await;
    assert!(matches!(
        resumed.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    let history = messages(&c, &agent.id).await;
    assert_eq!(history.last().unwrap().text(), "done");
}

#[tokio::test]
async fn messages_racing_on_three_daemons_exactly_one_is_accepted() {
    let Some((mock, daemons)) = three("scale_out::racing", "").await else {
        return;
    };
    let mut clients = Vec::new();
    for daemon in &daemons {
        clients.push(daemon.client().await);
    }
    let agent = new_agent(&clients[0], "raced").await;
    mock.push(Reply::openai_text(&["slow "]).stall_after(1));
    let sends = clients
        .iter()
        .map(|c| c.send_plain(agent.id.clone(), "go".into()));
    let results = futures::future::join_all(sends).await;
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(accepted, 1, "{results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert_eq!(error_of(refused).1, "agentBusy", "{refused}");
    }
}

#[tokio::test]
async fn a_killed_home_is_taken_over_within_10_s_and_the_next_message_runs() {
    let Some((mock, mut daemons)) = three("scale_out::failover", "").await else {
        return;
    };
    let a = daemons[0].client().await;
    let b = daemons[1].client().await;
    // Made on B: B is its home, and runs it whoever sends.
    let agent = new_agent(&b, "survives its daemon").await;
    let mut watch = a
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["half ", "an answer"]).stall_after(1));
    a.send_plain(agent.id.clone(), "start, sent to A".into())
        .await
        .unwrap();
    collect_until(&mut watch, Duration::from_secs(30), |e| {
        matches!(e.kind, EventKind::TextDelta { .. })
    })
    .await;
    // B (the home) is killed mid-answer: within 10 s another daemon settles the agent.
    daemons[1].kill9().await;
    let settled = collect_until(&mut watch, Duration::from_secs(10), |e| {
        matches!(
            e.kind,
            EventKind::StatusChanged {
                status: SessionStatus::Idle
            }
        )
    })
    .await;
    assert!(!settled.is_empty());
    mock.push(Reply::openai_text(&["after"]));
    a.send_plain(agent.id.clone(), "again".into())
        .await
        .unwrap();
    let run = collect_run(&mut watch, Duration::from_secs(30)).await;
    assert!(matches!(
        run.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    let history = messages(&a, &agent.id).await;
    // The answer cut by the kill (its text as far as its last save got).
    assert_eq!(history[1].status, agent_proto::MessageStatus::Interrupted);
    assert!("half ".starts_with(&history[1].text()), "{:?}", history[1]);
    assert_eq!(history.last().unwrap().text(), "after");
}

#[tokio::test]
async fn restarting_every_daemon_loses_nothing() {
    let Some((mock, mut daemons)) = three("scale_out::restart_all", "").await else {
        return;
    };
    let a = daemons[0].client().await;
    let agent = new_agent(&a, "kept").await;
    mock.push(Reply::openai_text(&["kept ", "answer"]));
    let mut watch = a
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    daemons[2]
        .client()
        .await
        .send_plain(agent.id.clone(), "remember".into())
        .await
        .unwrap();
    collect_run(&mut watch, Duration::from_secs(30)).await;
    let before = messages(&a, &agent.id).await;
    drop((watch, a));
    for daemon in &mut daemons {
        assert!(daemon.terminate().await.success());
    }
    for daemon in &mut daemons {
        daemon.restart().await;
    }
    for daemon in &daemons {
        let client = daemon.client().await;
        assert_eq!(messages(&client, &agent.id).await, before);
    }
}

#[tokio::test]
async fn a_client_resuming_on_another_daemon_replays_from_the_events_table() {
    let Some((mock, daemons)) = three("scale_out::replay_elsewhere", "").await else {
        return;
    };
    let b = daemons[1].client().await;
    let agent = new_agent(&b, "home on B").await;
    let mut on_b = b
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["a ", "b ", "c"]));
    b.send_plain(agent.id.clone(), "go".into()).await.unwrap();
    let run = collect_run(&mut on_b, Duration::from_secs(30)).await;
    assert!(run.len() > 4, "{run:?}");
    // A client that saw the first events on B goes on from C, which never loaded the agent:
    // the rest comes from the events table, exactly.
    let since = run[2].seq;
    let c = daemons[2].client().await;
    let mut on_c = c
        .subscribe_events(Some(agent.id.clone()), Some(since), None)
        .await
        .unwrap();
    let replayed = collect_run(&mut on_c, Duration::from_secs(30)).await;
    assert_eq!(replayed, run[3..]);
}

#[tokio::test]
async fn an_agent_with_a_folder_runs_only_on_its_hosts_daemons() {
    let Some(url) = fresh_postgres("scale_out::host_labels").await else {
        return;
    };
    let mock = MockModel::start().await;
    let on = |label: &str| DaemonOptions {
        config_toml: openai_config_with(
            &mock.url(),
            &format!("[store]\nhost_label = \"{label}\"\n"),
        ),
        env: vec![("AGENTD_STORE".into(), url.clone())],
    };
    let mut here = TestDaemon::start_with(bin(), on("box-a")).await;
    let there = TestDaemon::start_with(bin(), on("box-b")).await;
    let (a, b) = (here.client().await, there.client().await);
    // Made on box-a, with a folder there: a send on box-b runs on box-a.
    let (agent, _workspace) = tool_agent(&a, None).await;
    drop(a);
    // Restarted: box-a's daemon holds no agent now; box-b is the first to load it.
    assert!(here.terminate().await.success());
    here.restart().await;
    mock.push(Reply::openai_text(&["ran on box-a"]));
    let mut watch = b
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    b.send_plain(agent.id.clone(), "where do you run?".into())
        .await
        .unwrap();
    collect_run(&mut watch, Duration::from_secs(30)).await;
    assert_eq!(
        messages(&b, &agent.id).await.last().unwrap().text(),
        "ran on box-a"
    );
    // Its home is box-a's daemon, though box-b loaded it first after its creation.
    let db = crate::common::database(&there).await;
    let (home,): (String,) =
        sqlx::query_as("SELECT daemon_id FROM agent_homes WHERE agent_id = $1")
            .bind(&agent.id)
            .fetch_one(&db)
            .await
            .unwrap();
    db.close().await;
    assert!(
        here.log().contains(&format!("daemon=\"{home}\"")),
        "home {home} is not box-a's"
    );
    // With no daemon of box-a alive, it is refused, naming the host; a chat agent runs.
    assert!(here.terminate().await.success());
    let refused = b
        .send_plain(agent.id.clone(), "and now?".into())
        .await
        .unwrap_err();
    assert_eq!(error_of(&refused).1, "invalidState", "{refused}");
    assert!(refused.to_string().contains("box-a"), "{refused}");
    let chat = new_agent(&b, "anywhere").await;
    mock.push(Reply::openai_text(&["fine"]));
    b.send_plain(chat.id.clone(), "hi".into()).await.unwrap();
}
