//! `agentctl`: a command-line client for agentd.
//!
//! Small on purpose: parse the command, connect to the socket, call the daemon, print.
//! Exit status: 0 success; 1 an error (of the run or of a call); 2 the run was cancelled;
//! 3 the run ended for another reason; 4 the daemon is unreachable or went away; 130 a
//! second Ctrl-C.

#[macro_use]
mod output;

mod agents;
mod chat;
mod endpoint;
mod exit;
mod format;
mod manual;
mod questions;
mod resolve;
mod send;
mod watch;

use std::path::PathBuf;

use agent_proto::{AgentMode, WhenBusy};
use clap::{Parser, Subcommand};

use endpoint::{Endpoint, Refusal};
use exit::Exit;

/// Command-line client for agentd.
///
/// Wherever a command takes an agent id, the start of one will do when it names a single
/// agent (`watch` shows an id's first 8 characters); an ambiguous start is refused with
/// the agents it could name.
#[derive(Debug, Parser)]
#[command(version, about)]
pub struct Cli {
    /// Socket of the daemon [default: $XDG_RUNTIME_DIR/agentd/agentd.sock, else $TMPDIR/agentd-$UID/agentd.sock]
    #[arg(long, global = true, env = "AGENTD_SOCKET")]
    socket: Option<PathBuf>,
    /// The daemon's WebSocket listener instead of its socket: ws://HOST:PORT or
    /// wss://HOST:PORT (agentd --listen); the token comes from AGENTD_TOKEN
    #[arg(long, global = true, env = "AGENTD_URL", value_name = "URL")]
    url: Option<String>,
    /// wss: trust this CA certificate (PEM) instead of the system's
    #[arg(long, global = true, env = "AGENTD_CA_CERT", value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Machine output: one JSON value per line
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create, list, show and delete agents
    #[command(subcommand)]
    Agents(AgentsCommand),
    /// Print an agent's messages
    Messages {
        /// Agent id
        agent: String,
        /// At most this many messages (the newest)
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Send a message and stream the answer until the run ends; asks at the terminal
    /// when a tool needs permission
    Send {
        /// Agent id (or the start of one)
        agent: String,
        /// The message; `-` reads it from stdin
        text: String,
        /// Grant every permission prompt of this run (once each)
        #[arg(long)]
        yes: bool,
        /// Attach a file (repeatable): an image (png, jpg, gif, webp) is shown to the
        /// model, a text file is read into the message, a PDF kept as a document
        #[arg(long, value_name = "FILE")]
        attach: Vec<PathBuf>,
        /// If the agent is busy, queue the message as its next turn (and follow that
        /// turn when it runs) instead of failing
        #[arg(long, conflicts_with = "steer")]
        queue: bool,
        /// If the agent is busy, steer the running turn: the text joins it before its next
        /// model call (text only)
        #[arg(long)]
        steer: bool,
        /// This turn only: the provider that answers (its default model unless --model)
        #[arg(long)]
        provider: Option<String>,
        /// This turn only: the model that answers
        #[arg(long)]
        model: Option<String>,
        /// This turn only: how much a reasoning model thinks
        #[arg(long, value_parser = ["low", "medium", "high"])]
        effort: Option<String>,
        /// This turn only: a JSON Schema file the final answer must be valid JSON against
        /// (one corrective retry, then the run ends in an error)
        #[arg(long, value_name = "FILE")]
        output_schema: Option<PathBuf>,
    },
    /// Talk with an agent: reads a line, sends it, streams the answer, and again, until
    /// the end of input or /quit. Permission prompts and questions take the next line
    Chat {
        /// Agent id (or the start of one)
        agent: String,
        /// Grant every permission prompt (once each)
        #[arg(long)]
        yes: bool,
    },
    /// Answer a permission prompt (for scripts; `send` asks by itself)
    Permit {
        /// The assistant message of the prompt
        message: String,
        /// The tool call of the prompt
        tool_call: String,
        /// Allow or deny the call
        #[arg(value_parser = ["allow", "deny"])]
        answer: String,
        /// Remember a grant for this agent (session) or for every agent (always)
        #[arg(long, value_parser = ["session", "always"])]
        remember: Option<String>,
    },
    /// Answer a question the model asked (for scripts; `send` asks by itself)
    Answer {
        /// The assistant message of the question
        message: String,
        /// The tool call of the question
        tool_call: String,
        /// One answer per question, in the user's own words
        answers: Vec<String>,
        /// The answers as JSON: `[{"selected": ["label"], "text": "..."}, ...]`
        #[arg(long, value_name = "JSON", conflicts_with_all = ["answers", "decline"])]
        data: Option<String>,
        /// Decline: the model is told the user declined to answer
        #[arg(long, conflicts_with = "answers")]
        decline: bool,
    },
    /// Show the agent's plan (its todo list)
    Plan {
        /// Agent id
        agent: String,
    },
    /// Continue the agent's last run (after maxSteps, a pause or an error)
    Continue {
        /// Agent id
        agent: String,
    },
    /// Pause the agent's run at its next checkpoint
    Pause {
        /// Agent id
        agent: String,
    },
    /// Resume a paused run
    Resume {
        /// Agent id
        agent: String,
    },
    /// List the tools (of one agent, with which are enabled)
    Tools {
        /// Agent id (without it: every tool the daemon has)
        agent: Option<String>,
    },
    /// Print events as they happen (one agent, or all); when the daemon restarts, waits
    /// for it and goes on after the last event seen
    Watch {
        /// Agent id (without it: every agent)
        agent: Option<String>,
        /// First replay the events after this seq (needs AGENT: seqs are per agent)
        #[arg(long, requires = "agent")]
        since: Option<u64>,
    },
    /// Cancel an agent's active run
    Cancel {
        /// Agent id
        agent: String,
    },
    /// Show the messages queued behind an agent's run (`send --queue`/`--steer`), or drop
    /// them
    Queue {
        /// Agent id
        agent: String,
        /// Drop this queued message (its user message id, or the start of one)
        #[arg(long, value_name = "ID", conflicts_with = "clear")]
        cancel: Option<String>,
        /// Drop every queued message
        #[arg(long)]
        clear: bool,
    },
    /// Summarize the agent's conversation now (all but the last rounds), to free context
    Compact {
        /// Agent id
        agent: String,
        /// Rounds to keep word for word
        #[arg(long, default_value_t = 1)]
        keep: u32,
    },
    /// Show an agent's session (status, active run)
    Session {
        /// Agent id
        agent: String,
    },
    /// Show the exact request of the agent's next model call (or of the call that produced
    /// an answer): its token estimate by part and what was cut to fit the window
    Preview {
        /// Agent id
        agent: String,
        /// An assistant message: the request that produced it
        #[arg(long)]
        message: Option<String>,
        /// Also print the request body
        #[arg(long)]
        body: bool,
    },
    /// Hide everything up to a message from the model ("clear context"); messages stay
    Edge {
        /// Agent id
        agent: String,
        /// The last message to hide [default: the agent's latest message]
        message: Option<String>,
        /// Remove the edge: the model sees everything again
        #[arg(long, conflicts_with = "message")]
        clear: bool,
    },
    /// Run the last step of the agent's latest answer again, as a new variant
    Regenerate {
        /// Agent id
        agent: String,
        /// The answer [default: the agent's latest one]
        message: Option<String>,
    },
    /// Show the workspace files an answer changed, as unified diffs
    Diff {
        /// Agent id
        agent: String,
        /// The answer [default: the agent's latest one]
        message: Option<String>,
    },
    /// Undo the agent's turns from a user message on: the files they changed go back and
    /// the messages leave the conversation (files changed since by others are left alone)
    Revert {
        /// Agent id
        agent: String,
        /// The user message to go back before [default: the agent's latest one]
        message: Option<String>,
        /// Leave the workspace files as they are (only cut the conversation)
        #[arg(long)]
        keep_files: bool,
        /// Keep the messages (only put the files back)
        #[arg(long)]
        keep_messages: bool,
    },
    /// List MCP servers (status, tools, last error), or restart one
    Mcp {
        /// Restart this server now
        #[arg(long)]
        restart: Option<String>,
    },
    /// List the profiles agents can be given (built in and from the config)
    Profiles,
    /// Ask a model one question, with no agent and nothing stored; prints the answer
    Ask {
        /// The question; `-` reads it from stdin
        text: String,
        /// Provider id [default: the daemon's default]
        #[arg(long)]
        provider: Option<String>,
        /// Model [default: the provider's default model]
        #[arg(long)]
        model: Option<String>,
        /// A system prompt
        #[arg(long)]
        system: Option<String>,
    },
    /// List the configured providers
    Providers,
    /// List models (of one provider, or all)
    Models {
        /// Provider id (without it: every provider)
        provider: Option<String>,
        /// Also ask each provider which models it serves (marks them, adds the unlisted)
        #[arg(long)]
        served: bool,
    },
    /// Tokens the answers used and their cost, by model and by agent
    Usage {
        /// Only this agent (id or unique prefix)
        agent: Option<String>,
    },
    /// Find messages whose text contains QUERY (newest first)
    Search {
        query: String,
        /// Only this agent's messages (id or unique prefix)
        #[arg(long)]
        agent: Option<String>,
        /// At most this many (default 50, at most 500)
        #[arg(long)]
        limit: Option<u32>,
    },
    /// Send one tiny request to a provider and report its latency or error
    TestProvider {
        /// Provider id (without it: the default provider)
        provider: Option<String>,
        /// Model (without it: the provider's default model)
        #[arg(long)]
        model: Option<String>,
    },
    /// Print a completion script for a shell (needs no daemon). For example:
    /// `agentctl completions bash > ~/.local/share/bash-completion/completions/agentctl`
    Completions {
        /// bash, zsh, fish, elvish or powershell
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; needs no daemon): `agentctl man | man -l -`
    Man {
        /// Instead, write agentctl.1 and one page per command (agentctl-send.1, ...) into
        /// this folder
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// List agents, newest first
    List {
        /// Agents per page
        #[arg(long, default_value_t = 50)]
        limit: u32,
        /// Archived agents instead of active ones
        #[arg(long)]
        archived: bool,
        /// Only pinned agents
        #[arg(long)]
        pinned: bool,
        /// Only agents whose title contains this text
        #[arg(long)]
        search: Option<String>,
        /// Follow every page
        #[arg(long)]
        all: bool,
    },
    /// Create an agent and print its id
    Create {
        /// Title [default: from the daemon]
        #[arg(long)]
        title: Option<String>,
        /// chat (no tools), agent (tools) or acp [default: from the daemon's config]
        #[arg(long, value_parser = parse_mode)]
        mode: Option<AgentMode>,
        /// Provider id [default: from the daemon's config]
        #[arg(long)]
        provider: Option<String>,
        /// Model [default: the provider's default model]
        #[arg(long)]
        model: Option<String>,
        /// System prompt
        #[arg(long)]
        system: Option<String>,
        /// Working directory of the agent's tools (absolute)
        #[arg(long)]
        workspace: Option<String>,
        /// Profile (see `agentctl profiles`) [default: from the daemon's config]
        #[arg(long)]
        profile: Option<String>,
        /// With --mode acp: the config's [[acp_agents]] entry that answers the agent
        #[arg(long)]
        acp: Option<String>,
    },
    /// Show one agent
    Show {
        /// Agent id
        agent: String,
    },
    /// Delete an agent and its messages
    Delete {
        /// Agent id
        agent: String,
    },
    /// Give an agent a new title
    Rename {
        /// Agent id
        agent: String,
        /// The new title
        title: String,
    },
    /// Pin an agent (`agents list --pinned` lists the pinned ones)
    Pin {
        /// Agent id
        agent: String,
    },
    /// Unpin an agent
    Unpin {
        /// Agent id
        agent: String,
    },
    /// Change the model of an agent's next runs (see `agentctl models`)
    Model {
        /// Agent id
        agent: String,
        /// The model
        model: String,
        /// Also change the provider
        #[arg(long)]
        provider: Option<String>,
    },
    /// Copy an agent and its history into a new agent; prints the new id
    Fork {
        /// Agent id
        agent: String,
        /// The last message to copy [default: all of them]
        #[arg(long)]
        message: Option<String>,
    },
    /// Write an agent and its history as JSON (for `agents import`) or as markdown
    Export {
        /// Agent id
        agent: String,
        /// A markdown transcript to read instead of the JSON export
        #[arg(long)]
        markdown: bool,
        /// Write to this file instead of stdout
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Create an agent from a JSON export (of `agents export`); prints the new id
    Import {
        /// The export file; `-` reads stdin
        #[arg(default_value = "-")]
        file: PathBuf,
        /// An existing absolute folder for the agent to work in [default: a new folder of
        /// its own]
        #[arg(long, conflicts_with = "keep_workspace")]
        workspace: Option<String>,
        /// Work in the exported workspace (it must exist here)
        #[arg(long)]
        keep_workspace: bool,
    },
}

/// What `agents rename|pin|unpin|model` changes.
#[derive(Debug)]
pub(crate) enum AgentChange {
    Title(String),
    Pinned(bool),
    Model {
        provider: Option<String>,
        model: String,
    },
}

impl Command {
    /// The agent id the command takes, if it takes one: resolved from a prefix before the
    /// command runs.
    fn agent_mut(&mut self) -> Option<&mut String> {
        match self {
            Command::Messages { agent, .. }
            | Command::Send { agent, .. }
            | Command::Chat { agent, .. }
            | Command::Plan { agent }
            | Command::Continue { agent }
            | Command::Pause { agent }
            | Command::Resume { agent }
            | Command::Cancel { agent }
            | Command::Queue { agent, .. }
            | Command::Compact { agent, .. }
            | Command::Session { agent }
            | Command::Preview { agent, .. }
            | Command::Edge { agent, .. }
            | Command::Regenerate { agent, .. }
            | Command::Diff { agent, .. }
            | Command::Revert { agent, .. } => Some(agent),
            Command::Tools { agent }
            | Command::Watch { agent, .. }
            | Command::Usage { agent }
            | Command::Search { agent, .. } => agent.as_mut(),
            Command::Agents(
                AgentsCommand::Show { agent }
                | AgentsCommand::Delete { agent }
                | AgentsCommand::Rename { agent, .. }
                | AgentsCommand::Pin { agent }
                | AgentsCommand::Unpin { agent }
                | AgentsCommand::Model { agent, .. }
                | AgentsCommand::Fork { agent, .. }
                | AgentsCommand::Export { agent, .. },
            ) => Some(agent),
            Command::Agents(AgentsCommand::List { .. } | AgentsCommand::Create { .. })
            | Command::Agents(AgentsCommand::Import { .. })
            | Command::Permit { .. }
            | Command::Answer { .. }
            | Command::Mcp { .. }
            | Command::Profiles
            | Command::Ask { .. }
            | Command::Providers
            | Command::Models { .. }
            | Command::TestProvider { .. }
            | Command::Completions { .. }
            | Command::Man { .. } => None,
        }
    }
}

fn parse_mode(s: &str) -> Result<AgentMode, String> {
    AgentMode::parse(s).ok_or_else(|| format!("unknown mode {s:?} (chat, agent, acp)"))
}

fn main() {
    let cli = Cli::parse();
    // What is generated from the command definitions needs no daemon.
    match &cli.command {
        Command::Completions { shell } => std::process::exit(manual::completions(*shell).code()),
        Command::Man { dir } => std::process::exit(manual::man(dir.as_deref()).code()),
        _ => {}
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            std::process::exit(Exit::Error.code());
        }
    };
    let exit = runtime.block_on(run(cli));
    std::process::exit(exit.code());
}

async fn run(cli: Cli) -> Exit {
    let token = std::env::var("AGENTD_TOKEN").ok();
    let endpoint = match Endpoint::choose(
        cli.socket.clone(),
        cli.url.clone(),
        token,
        cli.ca_cert.clone(),
    ) {
        Ok(endpoint) => endpoint,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::Error;
        }
    };
    let client = match endpoint.connect().await {
        Ok(client) => client,
        Err(Refusal::Unreachable(e) | Refusal::Refused(e)) => {
            eprintln!("error: {e}");
            return Exit::Unreachable;
        }
    };
    let json = cli.json;
    let mut command = cli.command;
    if let Some(agent) = command.agent_mut() {
        match resolve::agent_id(&client, agent).await {
            Ok(id) => *agent = id,
            Err(e) => return exit::report(&e),
        }
    }
    let result = match command {
        Command::Agents(cmd) => agents::run(&client, cmd, json).await,
        Command::Messages { agent, limit } => agents::messages(&client, agent, limit, json).await,
        Command::Send {
            agent,
            text,
            yes,
            attach,
            queue,
            steer,
            provider,
            model,
            effort,
            output_schema,
        } => {
            let answering = if yes {
                send::Answering::Yes
            } else {
                send::Answering::Ask
            };
            let when_busy = if steer {
                WhenBusy::Steer
            } else if queue {
                WhenBusy::Queue
            } else {
                WhenBusy::Refuse
            };
            let turn = match send::TurnChoices::read(provider, model, effort, output_schema) {
                Ok(turn) => turn,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Exit::Error;
                }
            };
            let choices = send::Choices { turn, when_busy };
            return send::run(&client, agent, text, attach, json, answering, choices).await;
        }
        Command::Chat { agent, yes } => return chat::run(&client, agent, yes, json).await,
        Command::Permit {
            message,
            tool_call,
            answer,
            remember,
        } => agents::permit(&client, message, tool_call, answer == "allow", remember).await,
        Command::Answer {
            message,
            tool_call,
            answers,
            data,
            decline,
        } => questions::answer(&client, message, tool_call, answers, data, decline).await,
        Command::Plan { agent } => questions::plan(&client, agent, json).await,
        Command::Continue { agent } => agents::continue_loop(&client, agent).await,
        Command::Pause { agent } => agents::pause(&client, agent).await,
        Command::Resume { agent } => agents::resume(&client, agent).await,
        Command::Tools { agent } => agents::tools(&client, agent, json).await,
        Command::Watch { agent, since } => {
            return watch::run(client, &endpoint, agent, since, json).await;
        }
        Command::Cancel { agent } => agents::cancel(&client, agent).await,
        Command::Queue {
            agent,
            cancel,
            clear,
        } => agents::queue(&client, agent, cancel, clear, json).await,
        Command::Compact { agent, keep } => agents::compact(&client, agent, keep, json).await,
        Command::Session { agent } => agents::session(&client, agent, json).await,
        Command::Preview {
            agent,
            message,
            body,
        } => agents::preview(&client, agent, message, body, json).await,
        Command::Edge {
            agent,
            message,
            clear,
        } => agents::edge(&client, agent, message, clear).await,
        Command::Regenerate { agent, message } => agents::regenerate(&client, agent, message).await,
        Command::Diff { agent, message } => agents::diff(&client, agent, message, json).await,
        Command::Revert {
            agent,
            message,
            keep_files,
            keep_messages,
        } => agents::revert(&client, agent, message, !keep_files, !keep_messages, json).await,
        Command::Mcp { restart } => agents::mcp(&client, restart, json).await,
        Command::Profiles => agents::profiles(&client, json).await,
        Command::Ask {
            text,
            provider,
            model,
            system,
        } => questions::ask_model(&client, text, provider, model, system, json).await,
        Command::Providers => agents::providers(&client, json).await,
        Command::Models { provider, served } => {
            agents::models(&client, provider, served, json).await
        }
        Command::Usage { agent } => agents::usage(&client, agent, json).await,
        Command::Search {
            query,
            agent,
            limit,
        } => agents::search(&client, query, agent, limit, json).await,
        Command::TestProvider { provider, model } => {
            return agents::test_provider(&client, provider, model, json).await;
        }
        Command::Completions { .. } | Command::Man { .. } => Ok(()), // handled in main
    };
    match result {
        Ok(()) => Exit::Ok,
        Err(e) => exit::report(&e),
    }
}
