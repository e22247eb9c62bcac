//! Agent CRUD, paging and unknown ids.

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{AgentMode, EventKind, SessionStatus};
use agentd_testkit::events::collect_until;
use agentd_testkit::send::SendByName;
use serde_json::json;
use std::time::Duration;

use crate::common::{error_of, new_agent, start};

#[tokio::test]
async fn create_list_update_delete_with_paging() {
    let (_mock, daemon) = start().await;
    let client = daemon.client().await;

    let mut ids = Vec::new();
    for i in 0..7 {
        ids.push(new_agent(&client, &format!("agent {i}")).await.id);
    }
    let first = client.get_agent(ids[0].clone()).await.unwrap();
    assert_eq!(first.title, "agent 0");
    assert_eq!(first.mode, AgentMode::Chat);
    assert_eq!(
        (first.provider.as_str(), first.model.as_str()),
        ("mock", "mock-model")
    );
    assert_eq!(first.status, SessionStatus::Idle);

    // Pages of 3, newest first, until nextCursor runs out.
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = client
            .list_agents(cursor, Some(3), None, None, None)
            .await
            .unwrap();
        pages += 1;
        assert!(page.agents.len() <= 3);
        seen.extend(page.agents.into_iter().map(|a| a.id));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    assert_eq!(pages, 3);

    // Updates: fields and a settings merge, seen by a subscriber as agentUpdated.
    let mut sub = client
        .subscribe_events(Some(ids[1].clone()), None, None)
        .await
        .unwrap();
    let updated = client
        .update_agent(
            ids[1].clone(),
            Some("renamed".into()),
            Some(true),
            None,
            None,
            None,
            Some("be terse".into()),
            Some(json!({"temperature": 0.25})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(updated.title, "renamed");
    assert!(updated.pinned);
    assert_eq!(updated.system_prompt.as_deref(), Some("be terse"));
    assert_eq!(updated.settings.temperature, Some(0.25));
    let events = collect_until(&mut sub, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::AgentUpdated { .. })
    })
    .await;
    match &events.last().unwrap().kind {
        EventKind::AgentUpdated { agent } => assert_eq!(agent, &updated),
        other => panic!("{other:?}"),
    }
    let merged = client
        .update_agent(
            ids[1].clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"maxOutputTokens": 64})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(merged.settings.temperature, Some(0.25), "settings merge");
    assert_eq!(merged.settings.max_output_tokens, Some(64));

    let pinned = client
        .list_agents(None, None, None, Some(true), None)
        .await
        .unwrap();
    assert_eq!(
        pinned
            .agents
            .iter()
            .map(|a| a.id.clone())
            .collect::<Vec<_>>(),
        [ids[1].clone()]
    );
    let found = client
        .list_agents(None, None, Some("RENAMED".into()), None, None)
        .await
        .unwrap();
    assert_eq!(found.agents.len(), 1);
    client
        .update_agent(
            ids[2].clone(),
            None,
            None,
            Some(true),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let listed = client
        .list_agents(None, Some(100), None, None, None)
        .await
        .unwrap();
    assert_eq!(
        listed.agents.len(),
        6,
        "archived agents are hidden by default"
    );
    let archived = client
        .list_agents(None, None, None, None, Some(true))
        .await
        .unwrap();
    assert_eq!(archived.agents.len(), 1);

    // Delete: subscribers see agentDeleted, then the agent is gone.
    let mut sub = client
        .subscribe_events(Some(ids[3].clone()), None, None)
        .await
        .unwrap();
    let deleted = client.delete_agent(ids[3].clone()).await.unwrap();
    assert_eq!(deleted, agent_proto::DeleteAgentResult {});
    let events = collect_until(&mut sub, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::AgentDeleted {})
    })
    .await;
    assert_eq!(events.last().unwrap().agent_id, ids[3]);
    let err = client.get_agent(ids[3].clone()).await.unwrap_err();
    assert_eq!(error_of(&err), (-32001, "agentNotFound".into()));
}

#[tokio::test]
async fn unknown_ids_and_bad_params_are_clear_errors() {
    let (_mock, daemon) = start().await;
    let client = daemon.client().await;
    let ghost = "01234567-0000-7000-8000-000000000000".to_owned();

    let cases = [
        error_of(&client.get_agent(ghost.clone()).await.unwrap_err()),
        error_of(&client.delete_agent(ghost.clone()).await.unwrap_err()),
        error_of(
            &client
                .list_messages(ghost.clone(), None, None, None)
                .await
                .unwrap_err(),
        ),
        error_of(
            &client
                .send_plain(ghost.clone(), "hi".into())
                .await
                .unwrap_err(),
        ),
        error_of(&client.cancel_loop(ghost.clone()).await.unwrap_err()),
        error_of(&client.get_session(ghost.clone()).await.unwrap_err()),
        error_of(
            &client
                .update_agent(
                    ghost.clone(),
                    Some("x".into()),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                )
                .await
                .unwrap_err(),
        ),
    ];
    for case in cases {
        assert_eq!(case, (-32001, "agentNotFound".into()));
    }
    let err = client
        .subscribe_events(Some(ghost), None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32001, "agentNotFound".into()));

    let err = client
        .create_agent(
            None,
            None,
            Some("nope".into()),
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32006, "providerNotConfigured".into()));
    let err = client
        .create_agent(
            None,
            Some(AgentMode::Acp),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap_err();
    // Mode acp needs the external agent (docs/protocol.md 3.29).
    assert_eq!(error_of(&err).1, "invalidParams");
    assert!(err.to_string().contains("needs acp"), "{err}");
    let err = client
        .create_agent(
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"temprature": 1})),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32602, "invalidParams".into()));
    let agent = new_agent(&client, "x").await;
    let err = client
        .list_messages(agent.id.clone(), Some("garbage".into()), None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "invalidParams");
    let err = client
        .subscribe_events(None, Some(3), None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "invalidParams");
}

#[tokio::test]
async fn search_finds_messages_by_their_text_across_agents_newest_first() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let one = new_agent(&client, "one").await;
    let two = new_agent(&client, "two").await;
    use agentd_testkit::mock_model::Reply;
    mock.push(Reply::openai_text(&["The Quick brown fox ", "jumps."]));
    crate::common::send_and_collect(&client, &one.id, "tell me about foxes").await;
    mock.push(Reply::openai_text(&["Nothing here."]));
    // Text a JSON encoding escapes, with LIKE's wildcards: found only as written.
    let (sent, _) =
        crate::common::send_and_collect(&client, &two.id, "a \"quoted\" 100%_fox\nline").await;
    mock.push(Reply::openai_text(&["ok"]));
    crate::common::send_and_collect(&client, &two.id, "a 100 percent fox").await;

    let found = client
        .search_messages("FOX".into(), None, None)
        .await
        .unwrap()
        .hits;
    let texts: Vec<(&str, &str)> = found
        .iter()
        .map(|h| (h.agent_id.as_str(), h.snippet.as_str()))
        .collect();
    assert_eq!(
        texts,
        [
            (two.id.as_str(), "a 100 percent fox"),
            (two.id.as_str(), "a \"quoted\" 100%_fox line"),
            (one.id.as_str(), "The Quick brown fox jumps."),
            (one.id.as_str(), "tell me about foxes"),
        ]
    );
    let exact = client
        .search_messages("\"quoted\" 100%_".into(), Some(two.id.clone()), None)
        .await
        .unwrap()
        .hits;
    assert_eq!(exact.len(), 1);
    assert_eq!(exact[0].message_id, sent.user_message_id);
    assert_eq!(exact[0].role, agent_proto::Role::User);
    // Only text counts: a word of the blocks' JSON is not a hit.
    let keys = client
        .search_messages("type".into(), None, Some(10))
        .await
        .unwrap()
        .hits;
    assert!(keys.is_empty(), "{keys:?}");
    // A long text is cut around the match.
    let long = format!("{} needle {}", "a".repeat(300), "b".repeat(300));
    mock.push(Reply::openai_text(&["ok"]));
    crate::common::send_and_collect(&client, &one.id, &long).await;
    let cut = client
        .search_messages("needle".into(), Some(one.id.clone()), Some(1))
        .await
        .unwrap()
        .hits;
    assert!(cut[0].snippet.starts_with('…') && cut[0].snippet.ends_with('…'));
    assert!(cut[0].snippet.chars().count() < 160, "{}", cut[0].snippet);

    for (query, agent, limit, kind) in [
        ("  ", None, None, "invalidParams"),
        (
            "fox",
            Some("no-such-agent".to_owned()),
            None,
            "agentNotFound",
        ),
        ("fox", None, Some(0), "invalidParams"),
    ] {
        let e = client
            .search_messages(query.into(), agent, limit)
            .await
            .unwrap_err();
        assert_eq!(error_of(&e).1, kind, "{query:?}");
    }
}
