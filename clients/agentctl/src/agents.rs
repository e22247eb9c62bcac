//! The request/response commands: agents (and their title, pin, model, forks, exports and
//! imports), messages, cancel, session, profiles, providers, models.

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{ListOrder, Remember};
use anyhow::Result;
use serde::Serialize;

use crate::format;
use crate::{AgentChange, AgentsCommand};

fn print_json(value: &impl Serialize) -> Result<()> {
    outln!("{}", serde_json::to_string(value)?);
    Ok(())
}

pub(crate) async fn run(client: &Client, command: AgentsCommand, json: bool) -> Result<()> {
    match command {
        AgentsCommand::List {
            limit,
            archived,
            pinned,
            search,
            all,
        } => {
            let mut cursor = None;
            loop {
                let page = client
                    .list_agents(
                        cursor.take(),
                        Some(limit),
                        search.clone(),
                        pinned.then_some(true),
                        Some(archived),
                    )
                    .await?;
                for agent in &page.agents {
                    if json {
                        print_json(agent)?;
                    } else {
                        outln!("{}", format::agent_line(agent));
                    }
                }
                match page.next_cursor {
                    Some(next) if all => cursor = Some(next),
                    Some(_) => {
                        eprintln!("(more agents: use --all or a larger --limit)");
                        break;
                    }
                    None => break,
                }
            }
            Ok(())
        }
        AgentsCommand::Create {
            title,
            mode,
            provider,
            model,
            system,
            workspace,
            profile,
            acp,
        } => {
            let acp = acp.map(|name| agent_proto::AcpBackend {
                name: Some(name),
                ..agent_proto::AcpBackend::default()
            });
            let agent = client
                .create_agent(
                    title, mode, provider, model, system, workspace, profile, None, acp,
                )
                .await?;
            if json {
                print_json(&agent)
            } else {
                outln!("{}", agent.id);
                Ok(())
            }
        }
        AgentsCommand::Show { agent } => {
            let agent = client.get_agent(agent).await?;
            if json {
                print_json(&agent)
            } else {
                outln!("{}", format::agent_detail(&agent));
                Ok(())
            }
        }
        AgentsCommand::Delete { agent } => {
            let result = client.delete_agent(agent.clone()).await?;
            if json {
                print_json(&result)
            } else {
                outln!("deleted {agent}");
                Ok(())
            }
        }
        AgentsCommand::Rename { agent, title } => {
            update(client, agent, AgentChange::Title(title), json).await
        }
        AgentsCommand::Pin { agent } => {
            update(client, agent, AgentChange::Pinned(true), json).await
        }
        AgentsCommand::Unpin { agent } => {
            update(client, agent, AgentChange::Pinned(false), json).await
        }
        AgentsCommand::Model {
            agent,
            model,
            provider,
        } => update(client, agent, AgentChange::Model { provider, model }, json).await,
        AgentsCommand::Fork { agent, message } => fork(client, agent, message, json).await,
        AgentsCommand::Export {
            agent,
            markdown,
            output,
        } => export(client, agent, markdown, output).await,
        AgentsCommand::Import {
            file,
            workspace,
            keep_workspace,
        } => import(client, file, workspace, keep_workspace, json).await,
    }
}

pub(crate) async fn messages(client: &Client, agent: String, limit: u32, json: bool) -> Result<()> {
    // The newest `limit`, printed oldest first.
    let page = client
        .list_messages(agent, None, Some(limit), Some(ListOrder::Desc))
        .await?;
    for message in page.messages.iter().rev() {
        if json {
            print_json(message)?;
        } else {
            outln!("{}", format::message_text(message));
        }
    }
    Ok(())
}

pub(crate) async fn cancel(client: &Client, agent: String) -> Result<()> {
    let result = client.cancel_loop(agent).await?;
    outln!(
        "{}",
        if result.cancelled {
            "cancelled"
        } else {
            "nothing to cancel"
        }
    );
    Ok(())
}

pub(crate) async fn session(client: &Client, agent: String, json: bool) -> Result<()> {
    let session = client.get_session(agent).await?;
    if json {
        return print_json(&session);
    }
    outln!("status:   {}", session.status.as_str());
    if let Some(run) = &session.run_message_id {
        outln!("run:      {run} (step {})", session.step);
    }
    for p in &session.pending_permissions {
        outln!(
            "pending:  {} {} ({})",
            p.tool_call_id,
            p.tool_name,
            p.description
        );
    }
    for q in &session.pending_questions {
        let asked: Vec<&str> = q.questions.iter().map(|q| q.question.as_str()).collect();
        outln!("question: {} {}", q.tool_call_id, asked.join(" / "));
    }
    if !session.queue.is_empty() {
        outln!("queued:   {} (agentctl queue)", session.queue.len());
    }
    outln!("last seq: {}", session.last_seq);
    Ok(())
}

/// `queue`: the agent's queue, or drops one message of it (`cancel`, an id or the start of
/// one) or all of it (`clear`).
pub(crate) async fn queue(
    client: &Client,
    agent: String,
    cancel: Option<String>,
    clear: bool,
    json: bool,
) -> Result<()> {
    if cancel.is_some() || clear {
        let id = match cancel {
            Some(start) => Some(queued_id(client, &agent, &start).await?),
            None => None,
        };
        let dropped = client.cancel_queued_message(agent, id).await?;
        if json {
            return print_json(&dropped);
        }
        outln!("dropped {}", dropped.cancelled);
        return Ok(());
    }
    for queued in client.get_session(agent).await?.queue {
        if json {
            print_json(&queued)?;
            continue;
        }
        let kind = match queued.when_busy {
            agent_proto::WhenBusy::Steer => "steer",
            _ => "queue",
        };
        let text = agent_proto::Message::new(
            queued.user_message_id.clone(),
            "",
            agent_proto::Role::User,
            queued.content,
            agent_proto::MessageStatus::Done,
            queued.created_at,
        )
        .text();
        outln!("{} {kind:<5} {text:?}", queued.user_message_id);
    }
    Ok(())
}

/// The queued message whose id starts with `start` (exactly one).
async fn queued_id(client: &Client, agent: &str, start: &str) -> Result<String> {
    let queue = client.get_session(agent.to_owned()).await?.queue;
    let found: Vec<String> = queue
        .into_iter()
        .map(|q| q.user_message_id)
        .filter(|id| id.starts_with(start))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        [] => anyhow::bail!("no queued message of this agent has an id starting with {start:?}"),
        many => anyhow::bail!(
            "{start:?} names several queued messages: {}",
            many.join(", ")
        ),
    }
}

/// `compact`: the conversation summarized now.
pub(crate) async fn compact(client: &Client, agent: String, keep: u32, json: bool) -> Result<()> {
    let made = client.compact_context(agent, Some(keep)).await?;
    if json {
        return print_json(&made);
    }
    outln!(
        "{} messages folded into a summary: ~{} -> ~{} tokens",
        made.summarized_messages,
        made.before_tokens,
        made.after_tokens
    );
    Ok(())
}

pub(crate) async fn profiles(client: &Client, json: bool) -> Result<()> {
    for p in client.list_profiles().await?.profiles {
        if json {
            print_json(&p)?;
        } else {
            let source = match p.source {
                agent_proto::ProfileSource::Builtin => "builtin",
                agent_proto::ProfileSource::Config => "config",
            };
            outln!("{:<14} {:<8} {}", p.name, source, p.description);
            outln!("{:<14} tools: {}", "", p.tools.join(", "));
        }
    }
    Ok(())
}

pub(crate) async fn providers(client: &Client, json: bool) -> Result<()> {
    for p in client.list_providers().await?.providers {
        if json {
            print_json(&p)?;
        } else {
            outln!(
                "{}{:<14} {:<9} key:{:<4} model:{}  {}",
                if p.is_default { "*" } else { " " },
                p.id,
                p.kind,
                if p.has_api_key { "yes" } else { "no" },
                p.default_model,
                p.base_url.as_deref().unwrap_or("")
            );
        }
    }
    Ok(())
}

pub(crate) async fn models(
    client: &Client,
    provider: Option<String>,
    served: bool,
    json: bool,
) -> Result<()> {
    let list = client.list_models(provider, served.then_some(true)).await?;
    for m in &list.models {
        if json {
            print_json(m)?;
        } else {
            let mut caps = Vec::new();
            for (on, name) in [
                (m.tools, "tools"),
                (m.vision, "vision"),
                (m.reasoning, "reasoning"),
                (m.documents, "documents"),
            ] {
                if on {
                    caps.push(name);
                }
            }
            let listed = match m.served {
                Some(true) => "  served",
                Some(false) => "  not served",
                None => "",
            };
            outln!(
                "{}/{}  context {}  output {}  {}{listed}",
                m.provider,
                m.id,
                m.context_window,
                m.max_output_tokens,
                caps.join(",")
            );
        }
    }
    for e in &list.errors {
        eprintln!(
            "{}: cannot say which models it serves: {}",
            e.provider, e.error
        );
    }
    Ok(())
}

pub(crate) async fn usage(client: &Client, agent: Option<String>, json: bool) -> Result<()> {
    let report = client.get_usage(agent).await?;
    if json {
        return print_json(&report);
    }
    let cost = |c: Option<f64>| c.map_or_else(String::new, |c| format!("  ${c:.4}"));
    outln!(
        "{} answers  {} in  {} out{}",
        report.answers,
        report.input_tokens,
        report.output_tokens,
        cost(report.cost_usd)
    );
    for m in &report.by_model {
        outln!(
            "  {}/{}  {} answers  {} in  {} out{}",
            m.provider,
            m.model,
            m.answers,
            m.input_tokens,
            m.output_tokens,
            cost(m.cost_usd)
        );
    }
    if report.by_agent.len() > 1 {
        for a in &report.by_agent {
            outln!(
                "  agent {}  {} answers  {} in  {} out{}",
                a.agent_id,
                a.answers,
                a.input_tokens,
                a.output_tokens,
                cost(a.cost_usd)
            );
        }
    }
    if !report.unpriced.is_empty() {
        outln!(
            "no price in the config for: {} (input_price, output_price on the model)",
            report.unpriced.join(", ")
        );
    }
    Ok(())
}

pub(crate) async fn search(
    client: &Client,
    query: String,
    agent: Option<String>,
    limit: Option<u32>,
    json: bool,
) -> Result<()> {
    for hit in client.search_messages(query, agent, limit).await?.hits {
        if json {
            print_json(&hit)?;
        } else {
            let agent: String = hit.agent_id.chars().take(8).collect();
            outln!(
                "{agent} {} {:<9} {}",
                hit.message_id,
                hit.role.as_str(),
                hit.snippet
            );
        }
    }
    Ok(())
}

pub(crate) async fn permit(
    client: &Client,
    message: String,
    tool_call: String,
    granted: bool,
    remember: Option<String>,
) -> Result<()> {
    let remember = match remember.as_deref() {
        Some("session") => Remember::Session,
        Some("always") => Remember::Always,
        _ => Remember::Once,
    };
    client
        .handle_permission_response(message, tool_call, granted, None, Some(remember))
        .await?;
    outln!("{}", if granted { "allowed" } else { "denied" });
    Ok(())
}

pub(crate) async fn continue_loop(client: &Client, agent: String) -> Result<()> {
    let result = client.continue_loop(agent).await?;
    outln!("continuing {}", result.assistant_message_id);
    Ok(())
}

pub(crate) async fn preview(
    client: &Client,
    agent: String,
    message: Option<String>,
    body: bool,
    json: bool,
) -> Result<()> {
    let preview = client.get_message_request_preview(agent, message).await?;
    if json {
        return print_json(&preview);
    }
    let c = &preview.context;
    outln!("model:    {}/{}", preview.provider, preview.model);
    outln!(
        "tokens:   ~{} of a budget of {} (window {}): system {}, tools {}, messages {}",
        preview.estimated_tokens,
        c.budget,
        c.context_window,
        c.system_tokens,
        c.tools_tokens,
        c.messages_tokens
    );
    outln!(
        "fitting:  ~{} before; {} tool results cut, {} rounds left out, {} messages behind the edge, {} in the summary{}",
        c.estimated_before,
        c.stubbed_results,
        c.dropped_rounds,
        c.hidden_by_edge,
        c.summarized_messages,
        if c.over_budget {
            "; OVER BUDGET (the latest round alone does not fit)"
        } else {
            ""
        }
    );
    if body {
        outln!("{}", serde_json::to_string_pretty(&preview.request)?);
    }
    Ok(())
}

/// The id of the agent's latest message (of `role`, if given).
async fn latest_message(
    client: &Client,
    agent: &str,
    role: Option<agent_proto::Role>,
) -> Result<String> {
    let page = client
        .list_messages(agent.to_owned(), None, Some(50), Some(ListOrder::Desc))
        .await?;
    page.messages
        .into_iter()
        .find(|m| role.is_none_or(|r| m.role == r))
        .map(|m| m.id)
        .ok_or_else(|| anyhow::anyhow!("the agent has no such message yet"))
}

pub(crate) async fn edge(
    client: &Client,
    agent: String,
    message: Option<String>,
    clear: bool,
) -> Result<()> {
    let message = match (message, clear) {
        (_, true) => None,
        (Some(m), false) => Some(m),
        (None, false) => Some(latest_message(client, &agent, None).await?),
    };
    let updated = client.set_context_edge(agent, message).await?;
    match updated.context_edge {
        Some(edge) => outln!("the model no longer sees {edge} and everything before it"),
        None => outln!("no edge: the model sees the whole history"),
    }
    Ok(())
}

pub(crate) async fn regenerate(
    client: &Client,
    agent: String,
    message: Option<String>,
) -> Result<()> {
    let message = match message {
        Some(m) => m,
        None => latest_message(client, &agent, Some(agent_proto::Role::Assistant)).await?,
    };
    let result = client.regenerate(agent.clone(), message).await?;
    outln!(
        "regenerating as {} (follow it with: agentctl watch {agent})",
        result.assistant_message_id
    );
    Ok(())
}

/// `agentctl diff`: the files an answer changed, each with its unified diff.
pub(crate) async fn diff(
    client: &Client,
    agent: String,
    message: Option<String>,
    json: bool,
) -> Result<()> {
    let message = match message {
        Some(m) => m,
        None => latest_message(client, &agent, Some(agent_proto::Role::Assistant)).await?,
    };
    let diff = client.get_turn_diff(agent, message.clone()).await?;
    if json {
        return print_json(&diff);
    }
    if diff.files.is_empty() {
        outln!("{message} changed no file");
    }
    for file in &diff.files {
        let status = serde_json::to_value(file.status)?;
        outln!("{} ({})", file.path, status.as_str().unwrap_or_default());
        out!("{}", file.diff);
    }
    Ok(())
}

/// `agentctl revert`: back to before a user message (files and conversation).
pub(crate) async fn revert(
    client: &Client,
    agent: String,
    message: Option<String>,
    files: bool,
    conversation: bool,
    json: bool,
) -> Result<()> {
    let message = match message {
        Some(m) => m,
        None => latest_message(client, &agent, Some(agent_proto::Role::User)).await?,
    };
    let result = client
        .revert_to(agent, message, Some(files), Some(conversation))
        .await?;
    if json {
        return print_json(&result);
    }
    for path in &result.restored {
        outln!("restored {path}");
    }
    for c in &result.conflicts {
        outln!("left alone {}: {}", c.path, c.reason);
    }
    outln!("{} messages removed", result.removed_messages);
    Ok(())
}

pub(crate) async fn mcp(client: &Client, restart: Option<String>, json: bool) -> Result<()> {
    let servers = match restart {
        Some(name) => vec![client.restart_mcp_server(name).await?],
        None => client.list_mcp_servers().await?.servers,
    };
    for s in &servers {
        if json {
            print_json(s)?;
            continue;
        }
        let source = serde_json::to_value(s.source)?;
        outln!(
            "{:<16} {:<8} {:<6} restarts:{} tools: {}",
            s.spec.name,
            s.status.as_str(),
            source.as_str().unwrap_or_default(),
            s.restarts,
            s.tools
                .iter()
                .map(|t| t.exposed_name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(e) = &s.last_error {
            outln!("    last error: {e}");
        }
        for line in &s.stderr_tail {
            outln!("    stderr: {line}");
        }
    }
    if servers.is_empty() && !json {
        outln!("no MCP servers (add them to the config file, or with addMcpServer)");
    }
    Ok(())
}

pub(crate) async fn pause(client: &Client, agent: String) -> Result<()> {
    let status = client.pause_session(agent).await?.status;
    outln!("pausing (status {})", status.as_str());
    Ok(())
}

pub(crate) async fn resume(client: &Client, agent: String) -> Result<()> {
    let status = client.resume_session(agent).await?.status;
    outln!("resumed (status {})", status.as_str());
    Ok(())
}

pub(crate) async fn tools(client: &Client, agent: Option<String>, json: bool) -> Result<()> {
    for tool in client.list_tools(agent).await?.tools {
        if json {
            print_json(&tool)?;
        } else {
            outln!(
                "{} {:<16} {:<8} {}",
                if tool.enabled { "*" } else { " " },
                tool.name,
                tool.permission_level.as_str(),
                tool.description.split(". ").next().unwrap_or("")
            );
        }
    }
    Ok(())
}

pub(crate) async fn test_provider(
    client: &Client,
    provider: Option<String>,
    model: Option<String>,
    json: bool,
) -> crate::exit::Exit {
    let result = match client.test_provider(provider, model).await {
        Ok(r) => r,
        Err(e) => return crate::exit::report(&e.into()),
    };
    if json {
        if let Err(e) = print_json(&result) {
            return crate::exit::report(&e);
        }
    } else if result.ok {
        outln!(
            "{}/{}: ok, first token after {} ms, done after {} ms{}: {:?}",
            result.provider,
            result.model,
            result.latency_ms.unwrap_or(result.total_ms),
            result.total_ms,
            if result.retries > 0 {
                format!(" ({} retries)", result.retries)
            } else {
                String::new()
            },
            result.reply.unwrap_or_default()
        );
    } else {
        outln!(
            "{}/{}: failed after {} ms: {} ({})",
            result.provider,
            result.model,
            result.total_ms,
            result.error.unwrap_or_default(),
            result.error_kind.unwrap_or_default()
        );
    }
    if result.ok {
        crate::exit::Exit::Ok
    } else {
        crate::exit::Exit::Error
    }
}

/// `agents rename|pin|unpin|model`: one `updateAgent` call; prints the agent as `show` does.
pub(crate) async fn update(
    client: &Client,
    agent: String,
    change: AgentChange,
    json: bool,
) -> Result<()> {
    let (title, pinned, provider, model) = match change {
        AgentChange::Title(title) => (Some(title), None, None, None),
        AgentChange::Pinned(pinned) => (None, Some(pinned), None, None),
        AgentChange::Model { provider, model } => (None, None, provider, Some(model)),
    };
    let agent = client
        .update_agent(
            agent, title, pinned, None, provider, model, None, None, None,
        )
        .await?;
    if json {
        print_json(&agent)
    } else {
        outln!("{}", format::agent_detail(&agent));
        Ok(())
    }
}

/// `agents fork`: a new agent with a copy of the history; prints its id.
pub(crate) async fn fork(
    client: &Client,
    agent: String,
    message: Option<String>,
    json: bool,
) -> Result<()> {
    let fork = client.fork_agent(agent, message).await?;
    if json {
        print_json(&fork)
    } else {
        outln!("{}", fork.id);
        Ok(())
    }
}

/// `agents export`: the JSON export (or the markdown transcript) to a file or stdout.
pub(crate) async fn export(
    client: &Client,
    agent: String,
    markdown: bool,
    output: Option<std::path::PathBuf>,
) -> Result<()> {
    let format = if markdown {
        agent_proto::ExportFormat::Markdown
    } else {
        agent_proto::ExportFormat::Json
    };
    let exported = client.export_agent(agent, format).await?;
    match output.filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            std::fs::write(&path, &exported.content)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => outln!("{}", exported.content.trim_end()),
    }
    Ok(())
}

/// `agents import`: a new agent from a JSON export read from a file or stdin; prints its id.
pub(crate) async fn import(
    client: &Client,
    input: std::path::PathBuf,
    workspace: Option<String>,
    keep_workspace: bool,
    json: bool,
) -> Result<()> {
    let text = if input.as_os_str() == "-" {
        let mut buf = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf)
            .map_err(|e| anyhow::anyhow!("cannot read the export from stdin: {e}"))?;
        buf
    } else {
        std::fs::read_to_string(&input)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", input.display()))?
    };
    let agent = client
        .import_agent(
            serde_json::Value::String(text),
            workspace,
            keep_workspace.then_some(true),
        )
        .await?;
    if json {
        print_json(&agent)
    } else {
        outln!("{}", agent.id);
        Ok(())
    }
}
