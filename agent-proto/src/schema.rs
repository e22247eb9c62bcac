//! The protocol described by itself: an OpenRPC document of every method (params, result,
//! error kinds, docs) and a JSON Schema of the `event` notification's payload, both
//! generated with schemars from the method table ([`crate::rpc::METHODS`]) and the wire
//! types of this crate.
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
use serde_json::{Map, Value, json};

use crate::error::ErrorKind;
use crate::event::{Event, EventNotification};
use crate::rpc::{ANY_METHOD_ERRORS, METHODS, MethodDescriptor, MethodKind, Presence};
use crate::transfer::AgentExport;

/// The OpenRPC version the document follows.
pub const OPENRPC_VERSION: &str = "1.3.2";

/// One method of the protocol, as the schema describes it.
#[derive(Debug, Clone)]
pub struct MethodSchema {
    pub name: &'static str,
    /// The doc's first paragraph.
    pub summary: String,
    /// What the table declares of the method (its doc, params in order, kind).
    pub method: &'static MethodDescriptor,
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
/// of [`openrpc`]'s `components/schemas`), in the order of the table.
pub fn methods() -> Vec<MethodSchema> {
    methods_with(&mut results_generator())
}

fn methods_with(results: &mut SchemaGenerator) -> Vec<MethodSchema> {
    let mut params = params_generator();
    METHODS
        .iter()
        .map(|e| {
            let mut object = (e.params_schema)(&mut params).to_value();
            if let Some(map) = object.as_object_mut() {
                map.remove("title");
                // A params object with no properties is still an object (never null).
                map.entry("properties").or_insert_with(|| json!({}));
            }
            bound_integers(&mut object);
            let mut result = (e.result_schema)(results).to_value();
            bound_integers(&mut result);
            omitted_not_null(&mut result);
            MethodSchema {
                name: e.name,
                summary: e.summary(),
                method: e,
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
    let methods: Vec<Value> = methods.iter().map(method_object).collect();
    json!({
        "openrpc": OPENRPC_VERSION,
        "info": {
            "title": "agentd",
            "version": crate::PROTOCOL_VERSION.to_string(),
            "description": "JSON-RPC 2.0 over a Unix socket (newline-delimited JSON or Content-Length framing). Params are by name; optional params may be left out or be null; unknown param names are refused. A param with x-explicitNull: true is optional, but its null says something of its own (setContextEdge's messageId: null shows every message): clients take it like a required one. Events arrive as `event` notifications on a subscription (see x-notifications and event.schema.json): the method with x-subscription opens one, the one with x-unsubscribes ends it. Every error carries data.kind (components/errors). Reference: docs/protocol.md.",
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

/// One method of the OpenRPC document: its params in the table's order, each `required`
/// as the table declares it, described by its doc; the method's summary and (when the doc
/// says more) description; its error kinds.
fn method_object(m: &MethodSchema) -> Value {
    let described = m.method;
    let params: Vec<Value> = described
        .params
        .iter()
        .map(|p| {
            let mut schema = m.params["properties"][p.name].clone();
            let description = schema.as_object_mut().and_then(|s| s.remove("description"));
            let mut param = json!({
                "name": p.name,
                "required": p.presence == Presence::Required,
                "schema": schema,
            });
            if let Some(d) = description {
                param["description"] = d;
            }
            if p.presence == Presence::ExplicitNull {
                param["x-explicitNull"] = json!(true);
            }
            param
        })
        .collect();
    let errors: Vec<Value> = m
        .errors
        .iter()
        .chain(ANY_METHOD_ERRORS.iter())
        .map(|k| json!({"$ref": format!("#/components/errors/{}", k.as_str())}))
        .collect();
    let mut method = json!({
        "name": m.name,
        "summary": m.summary,
        "paramStructure": "by-name",
        "params": params,
        "result": {"name": "result", "schema": m.result},
        "errors": errors,
    });
    let doc = described.doc();
    if doc.replace('\n', " ") != m.summary {
        method["description"] = json!(doc);
    }
    match described.kind {
        MethodKind::Call => {}
        MethodKind::Subscribe {
            notification,
            unsubscribe,
        } => {
            method["x-subscription"] =
                json!({"notification": notification, "unsubscribe": unsubscribe});
        }
        MethodKind::Unsubscribe => {
            let opener = METHODS.iter().find(|o| {
                matches!(o.kind, MethodKind::Subscribe { unsubscribe, .. } if unsubscribe == m.name)
            });
            method["x-unsubscribes"] = json!(opener.map(|o| o.name));
        }
    }
    method
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
                        without_null(prop);
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

/// `schema` without its `null` alternative: a `["T", "null"]` type, a `null` in an enum,
/// an `anyOf` branch of type `null` (the other branch merged in when one is left), and a
/// `null` default. For an optional field that is left out rather than sent as `null`:
/// the wire's results here, and the daemon's tool arguments (a model leaves such a field
/// out).
pub fn without_null(schema: &mut Value) {
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
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
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
