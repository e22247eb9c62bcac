//! Typed arguments of the builtin tools. A tool declares its arguments once, as a struct
//! (`TypedTool::Args`, `#[derive(Deserialize, JsonSchema)]`, `deny_unknown_fields`); the
//! schema the model is offered is generated from it ([`schema_for`]), and the tool's
//! `access` and `run` get it parsed ([`parse`]). The blanket `impl BuiltinTool for T:
//! TypedTool` is the object-safe form the tool center keeps, which parses, repairs and
//! validates a call's arguments against that schema before `access` sees them.
//!
//! A field's doc comment (`///`) is its description for the model: write it for the model,
//! and leave it off (a `//` comment) where the model was never given one. A default the
//! tool applies is said in the description; the schema carries no `default`.
//!
//! It must not decide anything about a call: what the arguments mean (and what else is
//! wrong with them) is the tool's.

use std::borrow::Cow;
use std::time::Duration;

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use schemars::generate::{Contract, SchemaSettings};
use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::tools::{Access, BuiltinTool, ToolContext, ToolOutput};

/// A builtin tool written against its arguments' type. Every builtin implements this;
/// the tool center sees it as a [`BuiltinTool`] (whose docs say what each method means).
pub trait TypedTool: Send + Sync + std::fmt::Debug {
    /// The arguments, as the model writes them: the schema is generated from this type,
    /// and a call's arguments are parsed into it.
    type Args: DeserializeOwned + JsonSchema + Send;

    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    fn level(&self) -> PermissionLevel;
    fn offloadable(&self) -> bool {
        true
    }
    fn runs_commands(&self) -> bool {
        false
    }
    fn available(&self) -> bool {
        true
    }
    fn default_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
    /// What the call will touch; an `Err` becomes an error result without running it.
    fn access(&self, args: &Self::Args, ctx: &ToolContext) -> Result<Access, String>;
    /// Runs the call. Must return promptly once `ctx.cancel` is cancelled.
    fn run<'a>(&'a self, args: Self::Args, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}

/// A typed tool as the tool center keeps it. Arguments that do not parse as `T::Args`
/// (only possible where the schema check was skipped, or lets through what the type does
/// not: a number too large for it) are an error result naming the tool and what serde
/// found wrong, from `access` and from `run` alike.
impl<T: TypedTool> BuiltinTool for T {
    fn name(&self) -> &'static str {
        TypedTool::name(self)
    }

    fn description(&self) -> &'static str {
        TypedTool::description(self)
    }

    fn schema(&self) -> Value {
        schema_for::<T::Args>()
    }

    fn level(&self) -> PermissionLevel {
        TypedTool::level(self)
    }

    fn offloadable(&self) -> bool {
        TypedTool::offloadable(self)
    }

    fn runs_commands(&self) -> bool {
        TypedTool::runs_commands(self)
    }

    fn available(&self) -> bool {
        TypedTool::available(self)
    }

    fn default_timeout(&self) -> Duration {
        TypedTool::default_timeout(self)
    }

    fn access(&self, args: &Value, ctx: &ToolContext) -> Result<Access, String> {
        let args = parse_for::<T::Args>(TypedTool::name(self), args)?;
        TypedTool::access(self, &args, ctx)
    }

    fn run<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        match parse_for::<T::Args>(TypedTool::name(self), &args) {
            Ok(args) => TypedTool::run(self, args, ctx),
            Err(e) => Box::pin(async move { ToolOutput::error(e) }),
        }
    }
}

/// The JSON Schema a model is offered for arguments of type `A`: generated for
/// deserializing, every subschema inlined, then made plain for providers ([`ForModels`]);
/// the root has no description (the tool's own description is the model's).
pub fn schema_for<A: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.contract = Contract::Deserialize;
        s.meta_schema = None;
    });
    let mut schema = settings.into_generator().into_root_schema_for::<A>();
    ForModels.transform(&mut schema);
    schema.remove("description");
    schema.to_value()
}

/// Arguments parsed as an `A`. A whole number written with a decimal point (`2.0`) counts as an
/// integer, as it does for the schema check before it.
pub fn parse<A: DeserializeOwned>(args: &Value) -> Result<A, serde_json::Error> {
    match whole_numbers(args) {
        Cow::Borrowed(args) => A::deserialize(args),
        Cow::Owned(args) => A::deserialize(&args),
    }
}

/// [`parse`], failing with a result text for the model naming the tool.
fn parse_for<A: DeserializeOwned>(tool: &str, args: &Value) -> Result<A, String> {
    parse(args).map_err(|e| format!("invalid arguments for {tool}: {e}"))
}

/// `value` with every whole number written as a float (`2.0`) made an integer; borrowed
/// when there is none.
fn whole_numbers(value: &Value) -> Cow<'_, Value> {
    fn whole(n: &serde_json::Number) -> Option<Value> {
        let f = n.as_f64().filter(|_| n.is_f64())?;
        if f.fract() != 0.0 {
            return None;
        }
        // Within the range where an f64 holds every integer exactly.
        const EXACT: f64 = 9_007_199_254_740_992.0;
        if f.abs() > EXACT {
            return None;
        }
        Some(if f < 0.0 {
            Value::from(f as i64)
        } else {
            Value::from(f as u64)
        })
    }
    fn has_any(value: &Value) -> bool {
        match value {
            Value::Number(n) => whole(n).is_some(),
            Value::Array(items) => items.iter().any(has_any),
            Value::Object(map) => map.values().any(has_any),
            _ => false,
        }
    }
    fn fix(value: &mut Value) {
        match value {
            Value::Number(n) => {
                if let Some(int) = whole(n) {
                    *value = int;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(fix),
            Value::Object(map) => map.values_mut().for_each(fix),
            _ => {}
        }
    }
    if !has_any(value) {
        return Cow::Borrowed(value);
    }
    let mut owned = value.clone();
    fix(&mut owned);
    Cow::Owned(owned)
}

/// For `#[schemars(transform = ...)]` on a field whose type's own doc comment (an
/// `agent_proto` type's, written for clients) is not for the model.
pub fn without_description(schema: &mut Schema) {
    schema.remove("description");
}

/// Makes a generated schema what a model is offered, at every level: no `$schema`,
/// `title` or `default` (a default is said in the description), no Rust integer width
/// (`format: "uint64"`: providers reject formats they do not know), a description wrapped
/// in the source read as one line, and an optional field (`Option<T>`) a plain `T` that is
/// not required rather than `T | null` (a model leaves it out; `null` is refused, as
/// before). Keys come in the order a person writes them ([`KEY_ORDER`]), so the text a
/// model reads does not depend on how schemars built it.
#[derive(Debug, Clone, Copy)]
struct ForModels;

/// The order of a schema's keys; others follow.
const KEY_ORDER: &[&str] = &[
    "type",
    "enum",
    "properties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "items",
    "required",
    "additionalProperties",
    "description",
];

impl Transform for ForModels {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        for key in ["$schema", "title", "default"] {
            object.remove(key);
        }
        if object
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(is_number_width)
        {
            object.remove("format");
        }
        if let Some(Value::String(text)) = object.get_mut("description") {
            *text = one_line(text);
        }
        let required: Vec<String> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                if !required.contains(name) {
                    agent_proto::schema::without_null(property);
                    if let Some(merged) = property.as_object_mut() {
                        in_key_order(merged);
                    }
                }
            }
        }
        in_key_order(object);
    }
}

/// `object`'s keys in [`KEY_ORDER`].
fn in_key_order(object: &mut Map<String, Value>) {
    let mut keys: Vec<(String, Value)> = std::mem::take(object).into_iter().collect();
    keys.sort_by_key(|(key, _)| {
        KEY_ORDER
            .iter()
            .position(|k| k == key)
            .unwrap_or(KEY_ORDER.len())
    });
    object.extend(keys);
}

/// The formats schemars gives Rust's number types.
fn is_number_width(format: &str) -> bool {
    matches!(format, "int" | "uint" | "float" | "double")
        || ["int", "uint"].iter().any(|prefix| {
            format
                .strip_prefix(prefix)
                .is_some_and(|bits| !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// A doc comment's lines joined into paragraphs: single line breaks become spaces.
fn one_line(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests;
