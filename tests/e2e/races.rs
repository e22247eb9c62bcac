//! Concurrent clients with random timing: each scenario races two calls over many trials
//! (`RACE_TRIALS`, small in CI) with random jitter, and checks after every trial the
//! invariants of `agentd_testkit::race`: no agent stuck, one resolution per call, nothing
//! after `agentDeleted`, stored = streamed. Plus one scenario per path where a store failure
//! after the run slot was taken used to leave the agent busy for good.

use agentd_testkit::send::{SendByName, SendOptions};
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind, LoopFinishReason, SessionStatus};
use agentd_testkit::events::collect_run;
use agentd_testkit::mock_model::{MockModel, Reply, openai_chunk};
use agentd_testkit::race::{self, jitter};
use agentd_testkit::scenario::bash_call;
use serde_json::json;

use crate::common::{error_of, messages, new_agent, start, tool_agent};
use agent_proto::ToolCallBlock;

const SETTLE: Duration = Duration::from_secs(30);

/// A slow answer, so a run is active for a while.
fn slow_text() -> Reply {
    Reply::openai_text(&["one ", "two ", "three ", "four ", "five"])
        .chunk_delay(Duration::from_millis(3))
}

async fn subscribe(client: &Client, agent_id: &str) -> agent_proto::client::Subscription<Event> {
    client
        .subscribe_events(Some(agent_id.to_owned()), None, None)
        .await
        .unwrap()
}

/// Checks every invariant of a settled trial; panics naming the trial.
async fn check(trial: usize, client: &Client, agent_id: &str, events: &[Event]) {
    let checks = [
        race::check_transcript(events),
        race::check_stored_equals_streamed(client, agent_id, events).await,
        race::check_not_stuck(client, agent_id).await,
    ];
    for result in checks {
        if let Err(e) = result {
            panic!(
                "trial {trial}: {e}; events: {}",
                agentd_testkit::events::summary(events)
            );
        }
    }
}

/// An agent that reached a permission prompt for a `bash` call `call`; routes a text
/// answer for the step after it.
async fn at_a_prompt(
    mock: &MockModel,
    client: &Client,
    tag: &str,
) -> (agent_proto::Agent, tempfile::TempDir, String) {
    let (agent, dir) = tool_agent(client, None).await;
    // Needles end with a character no other trial's text has there ("go g1." is not in
    // "go g10.").
    let call = format!("call-{tag}");
    mock.route(
        &format!("\"{call}\""),
        Reply::openai_text(&["after ", "the ", "call"]),
    );
    mock.route(&format!("go {tag}."), bash_call(&call, "echo hi"));
    let mut sub = subscribe(client, &agent.id).await;
    let sent = client
        .send_plain(agent.id.clone(), format!("go {tag}.").into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, SETTLE).await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::WaitingPermission,
            ..
        }
    ));
    (agent, dir, sent.assistant_message_id)
}

#[tokio::test]
async fn delete_racing_send_never_runs_on_a_deleted_agent() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let mut rng = race::rng(1);
    for trial in 0..race::trials() {
        let agent = new_agent(&client, "doomed").await;
        mock.route(&format!("hello {trial}."), slow_text());
        let mut sub = subscribe(&client, &agent.id).await;
        let send = client.send_plain(agent.id.clone(), format!("hello {trial}.").into());
        let delete = async {
            jitter(&mut rng, Duration::from_millis(15)).await;
            client.delete_agent(agent.id.clone()).await
        };
        let (sent, deleted) = tokio::join!(send, delete);
        deleted.unwrap_or_else(|e| panic!("trial {trial}: delete failed: {e}"));
        if let Err(e) = sent {
            assert_eq!(error_of(&e).1, "agentNotFound", "trial {trial}: {e}");
        }
        let events = race::settle(&client, &agent.id, &mut sub, SETTLE).await;
        check(trial, &client, &agent.id, &events).await;
        assert!(
            events
                .iter()
                .any(|e| matches!(e.kind, EventKind::AgentDeleted {})),
            "trial {trial}: no agentDeleted"
        );
        let after = client.send_plain(agent.id.clone(), "again".into()).await;
        assert_eq!(error_of(&after.unwrap_err()).1, "agentNotFound");
    }
}

#[tokio::test]
async fn two_deletes_at_once_delete_once() {
    let (_mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(2);
    for trial in 0..race::trials() {
        let agent = new_agent(&client, "twice").await;
        let mut sub = subscribe(&client, &agent.id).await;
        let first = client.delete_agent(agent.id.clone());
        let second = async {
            jitter(&mut rng, Duration::from_millis(2)).await;
            other.delete_agent(agent.id.clone()).await
        };
        let (a, b) = tokio::join!(first, second);
        let oks = [a.is_ok(), b.is_ok()].iter().filter(|ok| **ok).count();
        assert_eq!(oks, 1, "trial {trial}: {a:?} {b:?}");
        for result in [a, b] {
            if let Err(e) = result {
                assert_eq!(error_of(&e).1, "agentNotFound", "trial {trial}");
            }
        }
        let events = race::settle(&client, &agent.id, &mut sub, SETTLE).await;
        check(trial, &client, &agent.id, &events).await;
        let deletes = events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::AgentDeleted {}))
            .count();
        assert_eq!(deletes, 1, "trial {trial}");
    }
}

#[tokio::test]
async fn a_cancel_as_the_run_suspends_takes_effect() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let mut rng = race::rng(3);
    for trial in 0..race::trials() {
        let (agent, _dir) = tool_agent(&client, None).await;
        let tag = format!("c{trial}");
        mock.route(
            &format!("go {tag}."),
            bash_call(&format!("call-{tag}"), "echo hi"),
        );
        let mut sub = subscribe(&client, &agent.id).await;
        client
            .send_plain(agent.id.clone(), format!("go {tag}.").into())
            .await
            .unwrap();
        jitter(&mut rng, Duration::from_millis(10)).await;
        let cancelled = client.cancel_loop(agent.id.clone()).await.unwrap();
        // The send started a run that ends at a prompt: a cancel at any instant of it
        // takes effect.
        assert!(cancelled.cancelled, "trial {trial}");
        let events = race::settle(&client, &agent.id, &mut sub, SETTLE).await;
        check(trial, &client, &agent.id, &events).await;
        let info = client.get_session(agent.id.clone()).await.unwrap();
        assert_eq!(info.status, SessionStatus::Idle, "trial {trial}");
        assert!(info.pending_permissions.is_empty(), "trial {trial}");
        assert!(
            events.iter().rev().find_map(|e| match &e.kind {
                EventKind::LoopFinished { reason, .. } => Some(*reason),
                _ => None,
            }) == Some(LoopFinishReason::Cancelled),
            "trial {trial}: the last run did not end cancelled; events: {}",
            agentd_testkit::events::summary(&events)
        );
    }
}

#[tokio::test]
async fn a_grant_and_a_cancel_back_to_back_resolve_the_call_once() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(4);
    for trial in 0..race::trials() {
        let tag = format!("g{trial}");
        let (agent, _dir, message_id) = at_a_prompt(&mock, &client, &tag).await;
        let mut sub = subscribe(&client, &agent.id).await;
        let grant = client.handle_permission_response(
            message_id.clone(),
            format!("call-{tag}"),
            true,
            None,
            None,
        );
        let cancel = async {
            jitter(&mut rng, Duration::from_millis(3)).await;
            other.cancel_loop(agent.id.clone()).await
        };
        let (granted, cancelled) = tokio::join!(grant, cancel);
        let cancelled = cancelled.unwrap().cancelled;
        if let Err(e) = &granted {
            assert_eq!(error_of(e).1, "permissionNotPending", "trial {trial}");
            assert!(
                cancelled,
                "trial {trial}: neither the grant nor the cancel took"
            );
        }
        let events = race::settle(&client, &agent.id, &mut sub, SETTLE).await;
        check(trial, &client, &agent.id, &events).await;
        let info = client.get_session(agent.id.clone()).await.unwrap();
        assert_eq!(info.status, SessionStatus::Idle, "trial {trial}");
    }
}

#[tokio::test]
async fn an_answer_acknowledged_before_a_cancel_is_applied_never_declined() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(9);
    let questions = json!({"questions": [{"question": "Which one?",
        "options": [{"label": "left"}, {"label": "right"}]}]});
    for trial in 0..race::trials() {
        let tag = format!("q{trial}");
        let call = format!("call-{tag}");
        let (agent, _dir) = tool_agent(&client, None).await;
        mock.route(
            &format!("\"{call}\""),
            Reply::openai_text(&["after ", "the ", "answer"]),
        );
        mock.route(
            &format!("ask {tag}."),
            Reply::openai_tool_call(&call, "ask_user_question", questions.clone()),
        );
        let mut sub = subscribe(&client, &agent.id).await;
        let sent = client
            .send_plain(agent.id.clone(), format!("ask {tag}.").into())
            .await
            .unwrap();
        let events = collect_run(&mut sub, SETTLE).await;
        assert_eq!(
            agentd_testkit::events::finish_reason(&events),
            LoopFinishReason::WaitingQuestion
        );
        let answer = client.answer_question(
            sent.assistant_message_id.clone(),
            call.clone(),
            Some(vec![agent_proto::QuestionAnswer {
                selected: vec!["right".into()],
                text: None,
            }]),
            None,
        );
        let cancel = async {
            jitter(&mut rng, Duration::from_millis(3)).await;
            other.cancel_loop(agent.id.clone()).await
        };
        let (answered, cancelled) = tokio::join!(answer, cancel);
        let cancelled = cancelled.unwrap().cancelled;
        let events = race::settle(&client, &agent.id, &mut sub, SETTLE).await;
        check(trial, &client, &agent.id, &events).await;
        let stored = messages(&client, &agent.id).await;
        let result = stored
            .iter()
            .find(|m| m.id == sent.assistant_message_id)
            .and_then(|m| {
                m.blocks.iter().find_map(|b| match b {
                    agent_proto::Block::ToolCall(ToolCallBlock { result, .. }) => {
                        result.as_ref().map(|r| r.content.clone())
                    }
                    _ => None,
                })
            })
            .unwrap_or_default();
        match answered {
            // Acknowledged: the answer is what the call returns, whatever the cancel did.
            Ok(_) => assert!(
                result.contains("A: right"),
                "trial {trial}: an acknowledged answer became {result:?}"
            ),
            Err(e) => {
                assert_eq!(error_of(&e).1, "questionNotPending", "trial {trial}");
                assert!(
                    cancelled,
                    "trial {trial}: neither the answer nor the cancel took"
                );
                assert!(result.contains("declined"), "trial {trial}: {result:?}");
            }
        }
    }
}

#[tokio::test]
async fn a_cancel_racing_a_continue_is_true_only_if_the_run_is_cancelled() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(5);
    for trial in 0..race::trials() {
        let agent = new_agent(&client, "continued").await;
        // The first answer is cut by the output limit; the continued one is slow.
        let part = format!("part-{trial}. ");
        mock.route(&part, slow_text());
        mock.route(
            &format!("start {trial}."),
            Reply::sse(vec![
                openai_chunk(json!({"content": part}), None),
                openai_chunk(json!({}), Some("length")),
                "[DONE]".into(),
            ]),
        );
        let mut sub = subscribe(&client, &agent.id).await;
        client
            .send_plain(agent.id.clone(), format!("start {trial}.").into())
            .await
            .unwrap();
        let mut events = collect_run(&mut sub, SETTLE).await;
        let continued = client.continue_loop(agent.id.clone());
        let cancel = async {
            jitter(&mut rng, Duration::from_millis(20)).await;
            other.cancel_loop(agent.id.clone()).await
        };
        let (continued, cancelled) = tokio::join!(continued, cancel);
        continued.unwrap_or_else(|e| panic!("trial {trial}: continueLoop failed: {e}"));
        let cancelled = cancelled.unwrap().cancelled;
        // The message is written by both runs: check it against both.
        events.extend(race::settle(&client, &agent.id, &mut sub, SETTLE).await);
        check(trial, &client, &agent.id, &events).await;
        let last = events.iter().rev().find_map(|e| match &e.kind {
            EventKind::LoopFinished { reason, .. } => Some(*reason),
            _ => None,
        });
        if cancelled {
            assert_eq!(last, Some(LoopFinishReason::Cancelled), "trial {trial}");
        } else {
            assert_eq!(last, Some(LoopFinishReason::Completed), "trial {trial}");
        }
    }
}

#[tokio::test]
async fn fork_and_export_racing_a_delete_see_all_or_nothing() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(6);
    for trial in 0..race::trials() {
        let agent = new_agent(&client, "source").await;
        mock.route(&format!("history {trial}."), Reply::openai_text(&["kept"]));
        let mut sub = subscribe(&client, &agent.id).await;
        client
            .send_plain(agent.id.clone(), format!("history {trial}.").into())
            .await
            .unwrap();
        collect_run(&mut sub, SETTLE).await;
        let fork = client.fork_agent(agent.id.clone(), None);
        let export = client.export_agent(agent.id.clone(), agent_proto::ExportFormat::Json);
        let delete = async {
            jitter(&mut rng, Duration::from_millis(3)).await;
            other.delete_agent(agent.id.clone()).await
        };
        let (fork, export, deleted) = tokio::join!(fork, export, delete);
        deleted.unwrap();
        match fork {
            Ok(copy) => assert_eq!(
                messages(&client, &copy.id).await.len(),
                2,
                "trial {trial}: a fork with part of the history"
            ),
            Err(e) => assert_eq!(error_of(&e).1, "agentNotFound", "trial {trial}"),
        }
        match export {
            Ok(export) => assert!(
                export.content.contains("kept"),
                "trial {trial}: an export without the answer"
            ),
            Err(e) => assert_eq!(error_of(&e).1, "agentNotFound", "trial {trial}"),
        }
    }
}

#[tokio::test]
async fn updates_of_different_settings_both_land_and_a_client_title_wins() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(7);
    for trial in 0..race::trials() {
        let agent = client
            .create_agent(None, None, None, None, None, None, None, None, None)
            .await
            .unwrap();
        let steps = client.update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"maxSteps": 7})),
            None,
        );
        let title = async {
            jitter(&mut rng, Duration::from_millis(2)).await;
            other
                .update_agent(
                    agent.id.clone(),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    Some(json!({"autoTitle": false})),
                    None,
                )
                .await
        };
        let mut updates = subscribe(&client, &agent.id).await;
        let (a, b) = tokio::join!(steps, title);
        a.unwrap();
        b.unwrap();
        let stored = client.get_agent(agent.id.clone()).await.unwrap();
        assert_eq!(stored.settings.max_steps, Some(7), "trial {trial}");
        assert_eq!(stored.settings.auto_title, Some(false), "trial {trial}");
        // The last announcement carries what is stored.
        let last = last_of_updates(&mut updates, 2).await;
        assert_eq!(last.settings, stored.settings, "trial {trial}");
        // Titles at once from two clients: any may win, and the last announcement names
        // the winner.
        let titles = (0..TITLES).map(|n| {
            let by = if n % 2 == 0 { &client } else { &other };
            by.update_agent(
                agent.id.clone(),
                Some(format!("T{n}")),
                None,
                None,
                None,
                None,
                None,
                None,
                None,
            )
        });
        for done in futures::future::join_all(titles).await {
            done.unwrap();
        }
        let stored = client.get_agent(agent.id.clone()).await.unwrap();
        let last = last_of_updates(&mut updates, TITLES).await;
        assert_eq!(last.title, stored.title, "trial {trial}");
        assert_eq!(last.updated_at, stored.updated_at, "trial {trial}");

        // The first message names the agent unless a client named it meanwhile.
        mock.route(&format!("first {trial}."), Reply::openai_text(&["ok"]));
        let mut sub = subscribe(&client, &agent.id).await;
        let send = client.send_plain(agent.id.clone(), format!("first {trial}. message").into());
        let rename = async {
            jitter(&mut rng, Duration::from_millis(2)).await;
            other
                .update_agent(
                    agent.id.clone(),
                    Some("Mine".into()),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                )
                .await
        };
        let (sent, renamed) = tokio::join!(send, rename);
        sent.unwrap();
        renamed.unwrap();
        let mut events = collect_run(&mut sub, SETTLE).await;
        let stored = client.get_agent(agent.id.clone()).await.unwrap();
        assert_eq!(stored.title, "Mine", "trial {trial}");
        // Whatever the order of the two, the announcement before a later pin (which marks
        // the end of the subscription's part of the race) names the stored title.
        client
            .update_agent(
                agent.id.clone(),
                None,
                Some(true),
                None,
                None,
                None,
                None,
                None,
                None,
            )
            .await
            .unwrap();
        events.extend(
            agentd_testkit::events::collect_until(
                &mut sub,
                SETTLE,
                |e| matches!(&e.kind, EventKind::AgentUpdated { agent } if agent.pinned),
            )
            .await,
        );
        let before_pin = events.iter().rev().skip(1).find_map(|e| match &e.kind {
            EventKind::AgentUpdated { agent } => Some(agent.title.as_str()),
            _ => None,
        });
        assert_eq!(before_pin, Some("Mine"), "trial {trial}");
    }
}

/// How many title updates race in a trial.
const TITLES: usize = 6;

/// The agent of the `count`-th `agentUpdated` to come, the earlier ones skipped.
async fn last_of_updates(
    sub: &mut agent_proto::client::Subscription<Event>,
    count: usize,
) -> agent_proto::Agent {
    let mut seen = 0;
    let events = agentd_testkit::events::collect_until(sub, SETTLE, |e| {
        seen += usize::from(matches!(e.kind, EventKind::AgentUpdated { .. }));
        seen == count
    })
    .await;
    match events.last().map(|e| &e.kind) {
        Some(EventKind::AgentUpdated { agent }) => agent.clone(),
        _ => unreachable!("collect_until ends at the update it waited for"),
    }
}

#[tokio::test]
async fn the_same_client_request_from_two_clients_gets_the_same_ids() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let mut rng = race::rng(8);
    for trial in 0..race::trials() {
        let agent = new_agent(&client, "dedupe").await;
        mock.route(&format!("once {trial}."), slow_text());
        let request = format!("request-{trial}");
        let mut sub = subscribe(&client, &agent.id).await;
        let a = client.send_with(
            agent.id.clone(),
            format!("once {trial}.").into(),
            SendOptions {
                client_request_id: Some(request.clone()),
                ..SendOptions::default()
            },
        );
        let b = async {
            jitter(&mut rng, Duration::from_millis(2)).await;
            other
                .send_with(
                    agent.id.clone(),
                    format!("once {trial}.").into(),
                    SendOptions {
                        client_request_id: Some(request.clone()),
                        ..SendOptions::default()
                    },
                )
                .await
        };
        let (a, b) = tokio::join!(a, b);
        assert_eq!(a.unwrap(), b.unwrap(), "trial {trial}");
        let events = race::settle(&client, &agent.id, &mut sub, SETTLE).await;
        check(trial, &client, &agent.id, &events).await;
        assert_eq!(messages(&client, &agent.id).await.len(), 2, "trial {trial}");
    }
}

#[tokio::test]
async fn no_replayed_event_arrives_after_unsubscribe_is_answered() {
    use agentd_testkit::raw::{Framing, RawConn};
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "replayed").await;
    for k in 0..10 {
        mock.route(
            &format!("fill {k}"),
            Reply::openai_text(&["a ", "b ", "c ", "d"]),
        );
        let mut sub = subscribe(&client, &agent.id).await;
        client
            .send_plain(agent.id.clone(), format!("fill {k}").into())
            .await
            .unwrap();
        collect_run(&mut sub, SETTLE).await;
    }
    for trial in 0..race::trials().max(20) {
        let mut raw = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
        // Subscribe with a replay of everything, and unsubscribe in the same write.
        let subscribe = json!({"jsonrpc": "2.0", "id": 1, "method": "subscribe",
            "params": {"agentId": agent.id, "sinceSeq": 0}});
        raw.send(&subscribe).await;
        let answer = loop {
            let frame = raw.recv().await;
            if frame["id"] == 1 {
                break frame;
            }
        };
        let id = answer["result"].clone();
        raw.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "unsubscribe",
            "params": {"subscription": id}}))
            .await;
        // Frames after the unsubscribe answer must not be notifications of it.
        loop {
            let frame = raw.recv().await;
            if frame["id"] == 2 {
                assert_eq!(frame["result"], true, "trial {trial}");
                break;
            }
        }
        // Anything still in flight would arrive now; a ping's answer marks the end.
        raw.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "getSession",
            "params": {"agentId": agent.id}}))
            .await;
        loop {
            let frame = raw.recv().await;
            if frame["id"] == 3 {
                break;
            }
            assert_ne!(
                frame["params"]["subscription"], id,
                "trial {trial}: a notification after unsubscribe answered true"
            );
        }
    }
}

/// Makes the daemon's store refuse `op` (`INSERT` or `UPDATE`) of `table` where `when`
/// holds, with a real trigger of its database (SQLite's or PostgreSQL's) named `name`.
async fn fail_when(
    daemon: &agentd_testkit::daemon::TestDaemon,
    name: &str,
    op: &str,
    table: &str,
    when: &str,
) -> sqlx::AnyPool {
    let pool = crate::common::database(daemon).await;
    let statements = if daemon.postgres_url().is_some() {
        vec![
            "CREATE OR REPLACE FUNCTION injected_failure() RETURNS trigger LANGUAGE plpgsql \
             AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$"
                .to_owned(),
            format!(
                "CREATE TRIGGER {name} BEFORE {op} ON {table} FOR EACH ROW WHEN ({when}) \
                 EXECUTE FUNCTION injected_failure()"
            ),
        ]
    } else {
        vec![format!(
            "CREATE TRIGGER {name} BEFORE {op} ON {table} WHEN {when} \
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
        )]
    };
    for sql in statements {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .unwrap();
    }
    pool
}

async fn stop_failing(
    daemon: &agentd_testkit::daemon::TestDaemon,
    pool: &sqlx::AnyPool,
    name: &str,
    table: &str,
) {
    let sql = if daemon.postgres_url().is_some() {
        format!("DROP TRIGGER {name} ON {table}")
    } else {
        format!("DROP TRIGGER {name}")
    };
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_store_failure_after_the_run_slot_is_taken_leaves_the_agent_usable() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;

    // sendMessage: the messages cannot be stored.
    let agent = new_agent(&client, "store fails").await;
    let db = fail_when(
        &daemon,
        "no_insert",
        "INSERT",
        "messages",
        "NEW.blocks LIKE '%FAIL-ME%'",
    )
    .await;
    let err = client
        .send_plain(agent.id.clone(), "FAIL-ME".into())
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "internal", "{err}");
    mock.route("works now", Reply::openai_text(&["fine"]));
    let mut sub = subscribe(&client, &agent.id).await;
    client
        .send_plain(agent.id.clone(), "works now".into())
        .await
        .expect("the agent takes the next message");
    collect_run(&mut sub, SETTLE).await;
    stop_failing(&daemon, &db, "no_insert", "messages").await;

    // handlePermissionResponse: the answer cannot be saved.
    let (agent, _dir, message_id) = at_a_prompt(&mock, &client, "slot").await;
    db.close().await;
    let db = fail_when(
        &daemon,
        "no_answer",
        "UPDATE",
        "messages",
        "NEW.blocks LIKE '%\"resolution\"%'",
    )
    .await;
    let answer = |granted| {
        client.handle_permission_response(
            message_id.clone(),
            "call-slot".into(),
            granted,
            None,
            None,
        )
    };
    assert_eq!(error_of(&answer(true).await.unwrap_err()).1, "internal");
    stop_failing(&daemon, &db, "no_answer", "messages").await;
    let mut sub = subscribe(&client, &agent.id).await;
    answer(true)
        .await
        .expect("the prompt is still pending and answerable");
    let events = collect_run(&mut sub, SETTLE).await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));

    // continueLoop and regenerate: the message cannot be read after the claim (the
    // messages table is briefly renamed away).
    for method in ["continue", "regenerate"] {
        let agent = new_agent(&client, method).await;
        mock.route(
            &format!("{method} me"),
            Reply::sse(vec![
                openai_chunk(json!({"content": "cut"}), None),
                openai_chunk(json!({}), Some("length")),
                "[DONE]".into(),
            ]),
        );
        let mut sub = subscribe(&client, &agent.id).await;
        let sent = client
            .send_plain(agent.id.clone(), format!("{method} me").into())
            .await
            .unwrap();
        collect_run(&mut sub, SETTLE).await;
        sqlx::query("ALTER TABLE messages RENAME TO messages_away")
            .execute(&db)
            .await
            .unwrap();
        let failed = match method {
            "continue" => client.continue_loop(agent.id.clone()).await.err(),
            _ => client
                .regenerate(agent.id.clone(), sent.assistant_message_id.clone())
                .await
                .err(),
        };
        sqlx::query("ALTER TABLE messages_away RENAME TO messages")
            .execute(&db)
            .await
            .unwrap();
        assert!(
            failed.is_some(),
            "{method} should fail while the table is away"
        );
        let busy = client.cancel_loop(agent.id.clone()).await.unwrap();
        assert!(!busy.cancelled, "{method}: a run was left behind");
        mock.route(&format!("after {method}"), Reply::openai_text(&["fine"]));
        client
            .send_plain(agent.id.clone(), format!("after {method}").into())
            .await
            .unwrap_or_else(|e| panic!("{method}: the agent is stuck: {e}"));
        collect_run(&mut sub, SETTLE).await;
    }
}

#[tokio::test]
async fn a_grant_acknowledged_before_a_shutdown_is_applied_after_the_restart() {
    let (mock, mut daemon) = start().await;
    let mut rng = race::rng(9);
    for trial in 0..race::trials() {
        let client = daemon.client().await;
        let tag = format!("s{trial}");
        let (agent, _dir, message_id) = at_a_prompt(&mock, &client, &tag).await;
        let grant = client.handle_permission_response(
            message_id.clone(),
            format!("call-{tag}"),
            true,
            None,
            None,
        );
        let stop = async {
            jitter(&mut rng, Duration::from_millis(5)).await;
            daemon.signal(nix::sys::signal::Signal::SIGTERM);
        };
        let (granted, ()) = tokio::join!(grant, stop);
        daemon.wait_exit(Duration::from_secs(20)).await;
        daemon.restart().await;
        let client = daemon.client().await;
        let message = messages(&client, &agent.id).await.pop().unwrap();
        let call = message.blocks.iter().find_map(|b| match b {
            agent_proto::Block::ToolCall(ToolCallBlock {
                status, resolution, ..
            }) => Some((*status, *resolution)),
            _ => None,
        });
        let (status, resolution) = call.unwrap();
        if granted.is_ok() {
            // Acknowledged: it was saved first, so it holds.
            assert!(
                resolution.is_some_and(|r| r.granted) || status.is_finished(),
                "trial {trial}: an acknowledged grant was lost ({status:?})"
            );
        }
        // Whatever happened, going on never leaves a silent prompt: either the call is
        // settled, or its prompt is announced again.
        let info = client.get_session(agent.id.clone()).await.unwrap();
        if info.status == SessionStatus::WaitingPermission {
            assert!(!info.pending_permissions.is_empty(), "trial {trial}");
            continue;
        }
        if !status.is_finished() {
            let mut sub = subscribe(&client, &agent.id).await;
            client.continue_loop(agent.id.clone()).await.unwrap();
            let events = collect_run(&mut sub, SETTLE).await;
            let asked = events
                .iter()
                .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. }));
            let finished = matches!(
                events.last().unwrap().kind,
                EventKind::LoopFinished {
                    reason: LoopFinishReason::WaitingPermission,
                    ..
                }
            );
            assert_eq!(
                asked, finished,
                "trial {trial}: a prompt re-raised silently"
            );
            if granted.is_ok() {
                assert!(
                    !finished,
                    "trial {trial}: an acknowledged grant asked again"
                );
            }
        }
    }
}
