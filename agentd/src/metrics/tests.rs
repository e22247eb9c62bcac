//! The rendered text after recorded events.

use super::*;

fn rendered(metrics: &Metrics) -> String {
    futures::executor::block_on(metrics.render())
}

/// Asserts that `text` has exactly the line `line`.
#[track_caller]
fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "no line {line:?} in:\n{text}"
    );
}

#[test]
fn every_known_series_starts_at_zero() {
    let text = rendered(&Metrics::new());
    has_line(&text, "agentd_runs_started_total 0");
    has_line(&text, r#"agentd_runs_ended_total{outcome="maxSteps"} 0"#);
    has_line(&text, r#"agentd_tokens_total{direction="input"} 0"#);
    has_line(&text, r#"agentd_rpc_errors_total{kind="agentBusy"} 0"#);
    has_line(
        &text,
        r#"agentd_connections_accepted_total{transport="websocket"} 0"#,
    );
    has_line(&text, r#"agentd_connections_open{transport="unix"} 0"#);
    has_line(&text, r#"agentd_agents{status="waiting_permission"} 0"#);
    // A family with labels not known in advance shows once it has a series.
    assert!(!text.contains("agentd_model_request_seconds"), "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn runs_tokens_tools_and_errors_are_counted_by_label() {
    let metrics = Metrics::new();
    let counting = metrics.clone();
    counting.run_started();
    counting.run_started();
    counting.run_ended(LoopFinishReason::Completed);
    counting.run_ended(LoopFinishReason::WaitingPermission);
    counting.tokens(120, 7);
    counting.tokens(30, 3);
    counting.tool_call("bash", ToolCallStatus::Success);
    counting.tool_call("bash", ToolCallStatus::Success);
    counting.tool_call("mcp", ToolCallStatus::Denied);
    counting.tool_call("bash", ToolCallStatus::Running);
    counting.rpc_error(ErrorKind::AgentNotFound);
    let text = rendered(&metrics);
    for line in [
        "agentd_runs_started_total 2",
        r#"agentd_runs_ended_total{outcome="completed"} 1"#,
        r#"agentd_runs_ended_total{outcome="waitingPermission"} 1"#,
        r#"agentd_runs_ended_total{outcome="error"} 0"#,
        r#"agentd_tokens_total{direction="input"} 150"#,
        r#"agentd_tokens_total{direction="output"} 10"#,
        r#"agentd_tool_calls_total{tool="bash",result="ok"} 2"#,
        r#"agentd_tool_calls_total{tool="mcp",result="denied"} 1"#,
        r#"agentd_rpc_errors_total{kind="agentNotFound"} 1"#,
    ] {
        has_line(&text, line);
    }
    assert!(
        !text.contains(r#"result="running""#)
            && text.matches("agentd_tool_calls_total{").count() == 2,
        "a call not finished counts nothing:\n{text}"
    );
}

#[test]
fn an_open_connection_counts_until_dropped() {
    let metrics = Metrics::new();
    let first = metrics.connection_opened(Transport::Unix);
    let second = metrics.connection_opened(Transport::Unix);
    let web = metrics.connection_opened(Transport::WebSocket);
    drop(first);
    let text = rendered(&metrics);
    has_line(
        &text,
        r#"agentd_connections_accepted_total{transport="unix"} 2"#,
    );
    has_line(&text, r#"agentd_connections_open{transport="unix"} 1"#);
    has_line(&text, r#"agentd_connections_open{transport="websocket"} 1"#);
    drop((second, web));
    let text = rendered(&metrics);
    has_line(&text, r#"agentd_connections_open{transport="unix"} 0"#);
    has_line(
        &text,
        r#"agentd_connections_accepted_total{transport="websocket"} 1"#,
    );
}

#[test]
fn a_model_request_observes_its_first_event_once_and_its_end() {
    let metrics = Metrics::new();
    let mut request = metrics.model_request("work");
    request.first_event();
    request.first_event();
    request.ended(true);
    let failed = metrics.model_request("work");
    failed.ended(false);
    // Dropped before its end (a cancelled run): no duration.
    drop(metrics.model_request("work"));
    let text = rendered(&metrics);
    has_line(&text, "# TYPE agentd_model_request_seconds histogram");
    let count = |series: &str| value_of(&text, series);
    assert_eq!(
        count(r#"agentd_model_first_token_seconds_count{provider="work"}"#),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        count(r#"agentd_model_request_seconds_count{provider="work",outcome="ok"}"#),
        Some(1.0)
    );
    assert_eq!(
        count(r#"agentd_model_request_seconds_count{provider="work",outcome="error"}"#),
        Some(1.0)
    );
    has_line(
        &text,
        r#"agentd_model_request_seconds_bucket{le="+Inf",provider="work",outcome="ok"} 1"#,
    );
}

#[test]
fn agents_by_status_are_asked_at_each_scrape() {
    let metrics = Metrics::new();
    let round = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let asked = round.clone();
    metrics.count_agents_with(Arc::new(move || {
        let n = asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async move {
            match n {
                0 => Ok(vec![
                    (SessionStatus::Idle, 3),
                    (SessionStatus::Generating, 1),
                ]),
                1 => Ok(vec![(SessionStatus::Idle, 4)]),
                _ => Err("the store is gone".to_owned()),
            }
        })
    }));
    let text = rendered(&metrics);
    has_line(&text, r#"agentd_agents{status="idle"} 3"#);
    has_line(&text, r#"agentd_agents{status="generating"} 1"#);
    let text = rendered(&metrics);
    has_line(&text, r#"agentd_agents{status="idle"} 4"#);
    has_line(&text, r#"agentd_agents{status="generating"} 0"#);
    // A failed count keeps the last values.
    let text = rendered(&metrics);
    has_line(&text, r#"agentd_agents{status="idle"} 4"#);
}

#[test]
fn value_of_reads_one_series() {
    let text = "a_total 3\na_total{k=\"v\"} 2.5\n# EOF\n";
    assert_eq!(value_of(text, "a_total"), Some(3.0));
    assert_eq!(value_of(text, "a_total{k=\"v\"}"), Some(2.5));
    assert_eq!(value_of(text, "a"), None);
}
