//! What the table says of one method, as data: the descriptors in [`super::METHODS`] that
//! the schema, the clients' generators and the docs check read. Plain `const` data, no
//! runtime: available without any feature.

use schemars::{Schema, SchemaGenerator};

use crate::error::ErrorKind;

/// One method of the protocol, as the table declares it.
#[derive(Debug, Clone, Copy)]
pub struct MethodDescriptor {
    /// The wire name (`getAgent`).
    pub name: &'static str,
    /// The method of the `AgentRpc` trait (`get_agent`); none for an unsubscribe, which
    /// jsonrpsee makes from its subscription.
    pub rust_name: Option<&'static str>,
    pub kind: MethodKind,
    /// The doc comment, one entry per line as rustdoc keeps it (each with its leading
    /// space): read it with [`MethodDescriptor::doc`] and [`MethodDescriptor::summary`].
    pub doc_lines: &'static [&'static str],
    /// The params, in the order declared (the trait's argument order).
    pub params: &'static [ParamDescriptor],
    /// The name of the generated params struct (`GetAgentParams`).
    pub params_type: &'static str,
    /// The params object's schema (the generated struct's), read as the daemon reads it.
    pub params_schema: fn(&mut SchemaGenerator) -> Schema,
    /// The result's schema, as the daemon writes it.
    pub result_schema: fn(&mut SchemaGenerator) -> Schema,
    /// Error kinds the method may answer besides those any method may
    /// ([`ANY_METHOD_ERRORS`]).
    pub errors: &'static [ErrorKind],
}

/// Error kinds any method may answer; not repeated per method.
pub const ANY_METHOD_ERRORS: [ErrorKind; 3] = [
    ErrorKind::InvalidParams,
    ErrorKind::Internal,
    ErrorKind::Overloaded,
];

/// How a method is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// A request and its response.
    Call,
    /// Answers a subscription id, then sends `notification`s on it until `unsubscribe`
    /// (the name of another method of the table) ends it.
    Subscribe {
        notification: &'static str,
        unsubscribe: &'static str,
    },
    /// Ends a subscription.
    Unsubscribe,
}

/// One named param of a method.
#[derive(Debug, Clone, Copy)]
pub struct ParamDescriptor {
    /// The wire name (camelCase: `agentId`).
    pub name: &'static str,
    /// The trait's argument and the params struct's field (snake_case: `agent_id`).
    pub rust_name: &'static str,
    pub presence: Presence,
    /// The doc comment, lines as in [`MethodDescriptor::doc_lines`] (empty when none).
    pub doc_lines: &'static [&'static str],
}

/// Whether a param must be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A call without it is refused (`invalidParams`).
    Required,
    /// May be left out, or be `null`, which means the same.
    Optional,
    /// May be left out (which means `null`), but `null` says something of its own:
    /// `setContextEdge`'s `messageId: null` shows every message again. Clients should
    /// have their user give it, `null` included, as they do a required one. The OpenRPC
    /// document marks it `x-explicitNull: true` (it is not `required`).
    ExplicitNull,
}

impl MethodDescriptor {
    /// The doc comment as text (lines joined, the one leading space of each removed).
    pub fn doc(&self) -> String {
        doc_text(self.doc_lines)
    }

    /// The doc's first paragraph, on one line: the OpenRPC `summary`.
    pub fn summary(&self) -> String {
        self.doc_lines
            .iter()
            .map(|l| l.trim())
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The param of that wire name.
    pub fn param(&self, name: &str) -> Option<&ParamDescriptor> {
        self.params.iter().find(|p| p.name == name)
    }
}

impl ParamDescriptor {
    /// The doc comment as text.
    pub fn doc(&self) -> String {
        doc_text(self.doc_lines)
    }
}

/// Lines of a doc comment as text: `/// text` is kept by rustdoc as `" text"`.
fn doc_text(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// The camelCase form of a snake_case name (`agent_id` -> `agentId`): the rename every
/// wire name follows.
pub fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}
