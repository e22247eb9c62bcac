//! The protocol described by itself: an OpenRPC document of every method (params, result,
//! error kinds) and a JSON Schema of the `event` notification's payload, both generated
//! from the wire types of this crate with schemars.
//!
//! The committed copies live in `agent-proto/schema/` (`openrpc.json`,
//! `event.schema.json`); a test fails when they differ from what the types generate, and
//! `UPDATE_SCHEMA=1 cargo test -p agent-proto --test schema` writes them again. The daemon
//! checks every request's params against [`methods`] before a method runs, so the schema
//! is the contract the daemon enforces, not a description beside it.
//!
//! Params are described as the daemon reads them (serde's deserialize contract, every
//! subschema inlined, unknown names refused); results and events as the daemon writes them
//! (the serialize contract, with named definitions under `components/schemas`).

use schemars::generate::{Contract, SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use crate::agent::Agent;
use crate::error::ErrorKind;
use crate::event::{Event, EventNotification};
use crate::mcp::{McpServerInfo, McpServerList};
use crate::methods::*;
use crate::params::*;
use crate::transfer::{AgentExport, ExportResult};

/// The OpenRPC version the document follows.
pub const OPENRPC_VERSION: &str = "1.3.2";

/// One method of the protocol, as the schema describes it.
#[derive(Debug, Clone)]
pub struct MethodSchema {
    pub name: &'static str,
    pub summary: &'static str,
    /// The params object: `{type: object, properties, required, additionalProperties:
    /// false}`, every subschema inlined (self-contained, ready to validate against).
    pub params: Value,
    /// The result, possibly a `$ref` into `#/components/schemas` of [`openrpc`].
    pub result: Value,
    /// Error kinds the method may answer besides `invalidParams`, `internal` and
    /// `overloaded` (which any method may).
    pub errors: &'static [ErrorKind],
}

impl MethodSchema {
    /// The names the params object may have.
    pub fn param_names(&self) -> Vec<&str> {
        self.params["properties"]
            .as_object()
            .map(|p| {
                // Sorted: the same order whether or not serde_json keeps insertion order.
                let mut names: Vec<&str> = p.keys().map(String::as_str).collect();
                names.sort_unstable();
                names
            })
            .unwrap_or_default()
    }
}

/// What a method needs to be described: generic over its params and result types.
struct Entry {
    name: &'static str,
    summary: &'static str,
    params: fn(&mut SchemaGenerator) -> Schema,
    result: fn(&mut SchemaGenerator) -> Schema,
    errors: &'static [ErrorKind],
}

fn entry<P: JsonSchema, R: JsonSchema>(
    name: &'static str,
    summary: &'static str,
    errors: &'static [ErrorKind],
) -> Entry {
    Entry {
        name,
        summary,
        params: |g| g.root_schema_for::<P>(),
        result: |g| g.subschema_for::<R>(),
        errors,
    }
}

/// Error kinds any method may answer; not repeated per method.
const ANY_METHOD: [ErrorKind; 3] = [
    ErrorKind::InvalidParams,
    ErrorKind::Internal,
    ErrorKind::Overloaded,
];

/// Every method, in the order of docs/protocol.md's method table.
fn entries() -> Vec<Entry> {
    use ErrorKind as E;
    vec![
        entry::<InitializeParams, InitializeResult>(
            "initialize",
            "Optional handshake: the server's version and capabilities.",
            &[E::NotSupported],
        ),
        entry::<CreateAgentParams, Agent>(
            "createAgent",
            "Creates an agent; absent fields take the daemon's defaults.",
            &[E::ProviderNotConfigured, E::NotSupported],
        ),
        entry::<AgentIdParams, Agent>(
            "getAgent",
            "One agent, with its live session status.",
            &[E::AgentNotFound],
        ),
        entry::<ListAgentsParams, AgentList>(
            "listAgents",
            "Agents, newest first; archived ones only with archived: true.",
            &[],
        ),
        entry::<UpdateAgentParams, Agent>(
            "updateAgent",
            "Changes the given fields; settings are merged into the stored ones.",
            &[E::AgentNotFound, E::ProviderNotConfigured],
        ),
        entry::<SetAgentModeParams, Agent>(
            "setAgentMode",
            "Switches the agent between chat and agent (a workspace is made when it has none).",
            &[E::AgentNotFound],
        ),
        entry::<AgentIdParams, DeleteAgentResult>(
            "deleteAgent",
            "Cancels the agent's run, then removes it with its messages and files.",
            &[E::AgentNotFound],
        ),
        entry::<ForkAgentParams, Agent>(
            "forkAgent",
            "A new agent with the settings of agentId and a copy of its history up to messageId.",
            &[E::AgentNotFound, E::MessageNotFound],
        ),
        entry::<ExportAgentParams, ExportResult>(
            "exportAgent",
            "The agent and its history as a markdown transcript or a JSON export.",
            &[E::AgentNotFound, E::InputTooLarge],
        ),
        entry::<ImportAgentParams, Agent>(
            "importAgent",
            "Creates a new agent from a JSON export.",
            &[E::InputTooLarge],
        ),
        entry::<ListMessagesParams, MessageList>(
            "listMessages",
            "One page of the agent's messages.",
            &[E::AgentNotFound],
        ),
        entry::<SendMessageParams, SendMessageResult>(
            "sendMessage",
            "Stores the user message and starts a run; the answer streams as events.",
            &[
                E::AgentNotFound,
                E::AgentBusy,
                E::InputTooLarge,
                E::InvalidState,
                E::NotSupported,
                E::ShuttingDown,
            ],
        ),
        entry::<AgentIdParams, CancelLoopResult>(
            "cancelLoop",
            "Cancels the agent's run (active or suspended); idempotent.",
            &[E::AgentNotFound],
        ),
        entry::<AgentIdParams, ContinueLoopResult>(
            "continueLoop",
            "Continues the agent's last answer in a new run on the same message.",
            &[
                E::AgentNotFound,
                E::AgentBusy,
                E::InvalidState,
                E::ShuttingDown,
            ],
        ),
        entry::<HandlePermissionResponseParams, PermissionResponseResult>(
            "handlePermissionResponse",
            "Answers a permissionRequested; the first answer wins and the run resumes.",
            &[E::MessageNotFound, E::PermissionNotPending, E::ShuttingDown],
        ),
        entry::<AnswerQuestionParams, AnswerQuestionResult>(
            "answerQuestion",
            "Answers (or declines) a questionRequested; the first answer wins and the run resumes.",
            &[E::MessageNotFound, E::QuestionNotPending, E::ShuttingDown],
        ),
        entry::<AgentIdParams, crate::Plan>(
            "getPlan",
            "The agent's plan as its last todo_write left it (empty when there was none).",
            &[E::AgentNotFound],
        ),
        entry::<AgentIdParams, SessionStatusResult>(
            "pauseSession",
            "Stops the active run at its next checkpoint.",
            &[E::AgentNotFound],
        ),
        entry::<AgentIdParams, SessionStatusResult>(
            "resumeSession",
            "Continues a paused run.",
            &[
                E::AgentNotFound,
                E::AgentBusy,
                E::InvalidState,
                E::ShuttingDown,
            ],
        ),
        entry::<AgentIdParams, SessionInfo>(
            "getSession",
            "The agent's runtime state: status, the run's message, pending prompts, last seq.",
            &[E::AgentNotFound],
        ),
        entry::<ListToolsParams, ToolList>(
            "listTools",
            "The tools there are, or those of one agent with enabled for it.",
            &[E::AgentNotFound],
        ),
        entry::<AgentMessageParams, RequestPreview>(
            "getMessageRequestPreview",
            "The exact request body of the agent's next model call (or of the first call of messageId).",
            &[
                E::AgentNotFound,
                E::MessageNotFound,
                E::ProviderNotConfigured,
            ],
        ),
        entry::<AgentMessageParams, Agent>(
            "setContextEdge",
            "Hides every message up to messageId from the model (null: shows everything again).",
            &[E::AgentNotFound, E::MessageNotFound],
        ),
        entry::<RegenerateParams, RegenerateResult>(
            "regenerate",
            "Runs the last step of the agent's latest answer again, as a new variant.",
            &[
                E::AgentNotFound,
                E::MessageNotFound,
                E::AgentBusy,
                E::InvalidState,
                E::ShuttingDown,
            ],
        ),
        entry::<crate::params::CompleteParams, crate::CompleteResult>(
            "complete",
            "One model call with no agent and no history, never stored.",
            &[E::ProviderNotConfigured, E::ProviderFailed, E::NotSupported],
        ),
        entry::<NoParams, crate::ProfileList>(
            "listProfiles",
            "The profiles agents can be given: the built-in ones and the config's.",
            &[],
        ),
        entry::<AgentIdParams, SkillList>(
            "listSkills",
            "The skills an agent has (workspace, config, user) and the SKILL.md files that could not be used.",
            &[E::AgentNotFound],
        ),
        entry::<NoParams, ProviderList>(
            "listProviders",
            "The configured providers (never their keys).",
            &[],
        ),
        entry::<ListModelsParams, ModelList>(
            "listModels",
            "The models of every provider, or of one.",
            &[E::ProviderNotConfigured],
        ),
        entry::<TestProviderParams, TestProviderResult>(
            "testProvider",
            "Sends one tiny request to a provider and reports the latency or its error text.",
            &[E::ProviderNotConfigured],
        ),
        entry::<NoParams, McpServerList>(
            "listMcpServers",
            "MCP servers with their status and tools.",
            &[],
        ),
        entry::<AddMcpServerParams, McpServerInfo>(
            "addMcpServer",
            "Adds (and, when enabled, starts) an MCP server; stored.",
            &[],
        ),
        entry::<UpdateMcpServerParams, McpServerInfo>(
            "updateMcpServer",
            "Changes a server added over RPC; it restarts with the changes.",
            &[E::McpServerNotFound, E::InvalidState],
        ),
        entry::<McpServerNameParams, RemovedResult>(
            "removeMcpServer",
            "Stops and forgets a server added over RPC.",
            &[E::McpServerNotFound, E::InvalidState],
        ),
        entry::<McpServerNameParams, McpServerInfo>(
            "restartMcpServer",
            "Restarts an MCP server now.",
            &[E::McpServerNotFound],
        ),
        entry::<SubscribeParams, SubscriptionId>(
            "subscribe",
            "Events of one agent (or of all) as event notifications (see x-notifications).",
            &[E::AgentNotFound, E::TooManySubscriptions],
        ),
        entry::<UnsubscribeParams, bool>(
            "unsubscribe",
            "Ends a subscription of this connection; false if it has none of that id.",
            &[],
        ),
    ]
}

fn params_generator() -> SchemaGenerator {
    SchemaGenerator::new(SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.contract = Contract::Deserialize;
        s.meta_schema = None;
    }))
}

fn results_generator() -> SchemaGenerator {
    SchemaGenerator::new(SchemaSettings::draft2020_12().with(|s| {
        s.definitions_path = "/components/schemas".into();
        s.contract = Contract::Serialize;
        s.meta_schema = None;
    }))
}

/// Every method with its params and result schemas (results refer to the definitions
/// of [`openrpc`]'s `components/schemas`).
pub fn methods() -> Vec<MethodSchema> {
    methods_with(&mut results_generator())
}

fn methods_with(results: &mut SchemaGenerator) -> Vec<MethodSchema> {
    let mut params = params_generator();
    entries()
        .into_iter()
        .map(|e| {
            let mut object = (e.params)(&mut params).to_value();
            if let Some(map) = object.as_object_mut() {
                map.remove("title");
                // A params object with no properties is still an object (never null).
                map.entry("properties").or_insert_with(|| json!({}));
            }
            bound_integers(&mut object);
            let mut result = (e.result)(results).to_value();
            bound_integers(&mut result);
            omitted_not_null(&mut result);
            MethodSchema {
                name: e.name,
                summary: e.summary,
                params: object,
                result,
                errors: e.errors,
            }
        })
        .collect()
}

/// The OpenRPC document of the protocol (`agent-proto/schema/openrpc.json`).
pub fn openrpc() -> Value {
    let mut results = results_generator();
    let methods = methods_with(&mut results);
    // Named here so clients have their types: the event, the notification around it,
    // and the export document `importAgent` takes.
    let event = results.subschema_for::<Event>().to_value();
    let notification = results.subschema_for::<EventNotification>().to_value();
    results.subschema_for::<AgentExport>();
    let mut schemas = results.take_definitions(true);
    for schema in schemas.values_mut() {
        bound_integers(schema);
        omitted_not_null(schema);
    }
    let (kinds, errors) = error_components();
    let methods: Vec<Value> = methods
        .iter()
        .map(|m| {
            let required: Vec<&str> = m.params["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut params: Vec<Value> = m.params["properties"]
                .as_object()
                .map(|props| {
                    props
                        .iter()
                        .map(|(name, schema)| {
                            let mut schema = schema.clone();
                            let description =
                                schema.as_object_mut().and_then(|s| s.remove("description"));
                            let mut param = json!({
                                "name": name,
                                "required": required.contains(&name.as_str()),
                                "schema": schema,
                            });
                            if let Some(d) = description {
                                param["description"] = d;
                            }
                            param
                        })
                        .collect()
                })
                .unwrap_or_default();
            // By name: the same order whether or not serde_json keeps insertion order (its
            // `preserve_order`, which agent-client-protocol turns on in workspace builds).
            params.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
            let errors: Vec<Value> = m
                .errors
                .iter()
                .chain(ANY_METHOD.iter())
                .map(|k| json!({"$ref": format!("#/components/errors/{}", k.as_str())}))
                .collect();
            json!({
                "name": m.name,
                "summary": m.summary,
                "paramStructure": "by-name",
                "params": params,
                "result": {"name": "result", "schema": m.result},
                "errors": errors,
            })
        })
        .collect();
    json!({
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": "agentd",
            "version": crate::PROTOCOL_VERSION.to_string(),
            "description": "JSON-RPC 2.0 over a Unix socket (newline-delimited JSON or Content-Length framing). Params are by name; optional params may be left out or be null; unknown param names are refused. Events arrive as `event` notifications on a subscription (see x-notifications and event.schema.json). Every error carries data.kind (components/errors). Reference: docs/protocol.md.",
        },
        "methods": methods,
        "components": {
            "schemas": schemas,
            "errors": errors,
        },
        "x-error-kinds": kinds,
        "x-notifications": [{
            "name": "event",
            "summary": "An event of a subscription: params {subscription, result: Event}.",
            "params": [
                {"name": "subscription", "required": true, "schema": {"$ref": "#/components/schemas/SubscriptionId"}},
                {"name": "result", "required": true, "schema": event},
            ],
            "schema": notification,
        }],
    })
}

/// The error kinds (`x-error-kinds`: the `data.kind` enum) and one OpenRPC error object
/// per kind, described by the `ErrorKind` docs.
fn error_components() -> (Value, Map<String, Value>) {
    let kinds = results_generator()
        .root_schema_for::<ErrorKind>()
        .to_value();
    let mut errors = Map::new();
    let variants = kinds["oneOf"].as_array().cloned().unwrap_or_default();
    for variant in variants {
        let Some(name) = variant["const"].as_str() else {
            continue;
        };
        let Some(kind) = ErrorKind::from_name(name) else {
            continue;
        };
        let description = variant["description"].as_str().unwrap_or(name);
        errors.insert(
            name.to_owned(),
            json!({
                "code": kind.code(),
                "message": description,
                "data": {"kind": name},
            }),
        );
    }
    let mut kinds = kinds;
    if let Some(map) = kinds.as_object_mut() {
        map.remove("title");
    }
    (kinds, errors)
}

/// The JSON Schema of the `event` notification's `result` (`agent-proto/schema/
/// event.schema.json`): every event type, discriminated by `type`.
pub fn event_schema() -> Value {
    let generator = SchemaGenerator::new(SchemaSettings::draft2020_12().with(|s| {
        s.contract = Contract::Serialize;
    }));
    let mut schema = generator.into_root_schema_for::<Event>().to_value();
    if let Some(map) = schema.as_object_mut() {
        map.insert(
            "description".into(),
            json!("An agentd event: the `result` of an `event` notification. Every event has seq, agentId, at and type; the other fields depend on type. Fields may be added: ignore those you do not know."),
        );
    }
    bound_integers(&mut schema);
    omitted_not_null(&mut schema);
    schema
}

/// Gives 32-bit unsigned integers their maximum (schemars states only the minimum), so a
/// value a `u32` cannot hold fails the schema check with its path, not deeper in serde.
fn bound_integers(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("format").and_then(Value::as_str) == Some("uint32") {
                map.insert("maximum".into(), json!(u32::MAX));
            }
            for v in map.values_mut() {
                bound_integers(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// In what the daemon sends, an optional field is left out when it has no value, never
/// `null` (`skip_serializing_if`): schemars still allows `null` for an `Option`; this says
/// what goes on the wire, so generated client types read `field?: T`, not `T | null`.
fn omitted_not_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(props)) = map.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        drop_null(prop);
                    }
                }
            }
            for v in map.values_mut() {
                omitted_not_null(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(omitted_not_null),
        _ => {}
    }
}

/// `schema` without its `null` alternative (and without a `null` default).
fn drop_null(schema: &mut Value) {
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        branches.retain(|b| b.get("type").and_then(Value::as_str) != Some("null"));
        if branches.len() == 1 {
            let only = branches.remove(0);
            map.remove("anyOf");
            if let Value::Object(only) = only {
                for (k, v) in only {
                    map.entry(k).or_insert(v);
                }
            }
        }
    }
}
