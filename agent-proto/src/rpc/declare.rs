//! `declare_methods!`: the one table of methods (in `super`) expanded into everything
//! that names a method in Rust. See the module doc of [`crate::rpc`] for the table's
//! grammar and why this is a `macro_rules!` macro.
//!
//! It reads the table one method at a time and, within a method, one param at a time (a
//! "tt muncher"), because jsonrpsee's `#[rpc]` attribute must see the trait whole, with
//! every optional argument spelled `Option<..>` (it decodes positional params by that
//! spelling), and a macro call cannot stand where an argument or a field is. What it
//! gathers:
//!
//! - the trait items (`#[method]`/`#[subscription]` with their `#[argument(rename)]`s),
//!   written out at the end under the attribute, name and receiver the table's header
//!   gives (feature `rpc`). Those three come from the table, not from this macro: a local
//!   name is hygienic, and jsonrpsee's generated bodies name `self` with the span of its
//!   attribute and their own locals with the spans of the method names, so the
//!   attribute, `self` and the method names must all be written in one place;
//! - one params struct per method (fields renamed to the wire names, optional ones
//!   `#[serde(default)] Option<..>`, their docs), written out at the end in `params`;
//! - one [`MethodDescriptor`](super::MethodDescriptor) per method, written out at the end
//!   as `METHODS`.
//!
//! The expansion nests one level per method and per param (about 250 for the whole
//! table), hence the crate's `recursion_limit`.

macro_rules! declare_methods {
    // ---- The end: everything gathered is written out.
    (@next [$($descriptors:tt)*]
        [
            { $hash:tt $rpc:tt $vis:vis trait $trait:ident(&$self:tt) }
            $({ [$($attr:tt)*] $fn:ident [$($arg:tt)*] [$($ret:tt)*] })*
        ]
        [$($structs:tt)*]
    ) => {
        /// Every method of the protocol, in the order of the table.
        pub const METHODS: &[$crate::rpc::MethodDescriptor] = &[$($descriptors)*];

        /// The params of every method, one struct each, as the wire has them: a JSON
        /// object of named params. Optional params may be left out or be `null`; names
        /// a method does not know are refused (`invalidParams` naming them). Generated
        /// from the table of [`crate::rpc`]; these are what the schema describes and
        /// what the daemon checks requests against before a method runs.
        pub mod params {
            #[allow(unused_imports)]
            use super::*;
            $($structs)*
        }

        /// Every method as a jsonrpsee trait, generated from the table: the daemon
        /// implements `AgentRpcServer`; Rust clients get `AgentRpcClient` on any jsonrpsee
        /// client. Params are by name; omitted optional params may be left out or be
        /// `null`.
        #[cfg(feature = "rpc")]
        $hash $rpc
        $vis trait $trait {
            $(
                $($attr)*
                async fn $fn(&$self, $($arg)*) $($ret)*;
            )*
        }
    };

    // ---- A method: a request and its response.
    (@next $descriptors:tt $items:tt $structs:tt
        $(#[doc = $doc:tt])*
        $(#[errors($($error:ident),* $(,)?)])?
        method $name:tt fn $fn:ident($params:ident) { $($param:tt)* } -> $result:ty;
        $($rest:tt)*
    ) => {
        declare_methods!(@param
            [call $name $fn $params [$($doc)*] [$($($error)*)?] [$result]]
            [] [] []
            { $($param)* }
            $descriptors $items $structs $($rest)*);
    };

    // ---- A subscription: answers an id, then notifications of `$item` until
    // `$unsubscribe` (a method of the table) ends it.
    (@next $descriptors:tt $items:tt $structs:tt
        $(#[doc = $doc:tt])*
        $(#[errors($($error:ident),* $(,)?)])?
        subscription $name:tt fn $fn:ident($params:ident) { $($param:tt)* } -> $result:ty,
            notification $notification:tt of $item:ty, unsubscribe $unsubscribe:tt;
        $($rest:tt)*
    ) => {
        declare_methods!(@param
            [subscribe $name $fn $params [$($doc)*] [$($($error)*)?] [$result]
                $notification [$item] $unsubscribe]
            [] [] []
            { $($param)* }
            $descriptors $items $structs $($rest)*);
    };

    // ---- The end of a subscription: jsonrpsee serves it from the subscription's
    // attribute, so it has no method of its own in the trait.
    (@next $descriptors:tt $items:tt $structs:tt
        $(#[doc = $doc:tt])*
        $(#[errors($($error:ident),* $(,)?)])?
        unsubscribe $name:tt ($params:ident) { $($param:tt)* } -> $result:ty;
        $($rest:tt)*
    ) => {
        declare_methods!(@param
            [unsubscribe $name $params [$($doc)*] [$($($error)*)?] [$result]]
            [] [] []
            { $($param)* }
            $descriptors $items $structs $($rest)*);
    };

    // ---- Params, one at a time: `req`, `opt` or `null`, the Rust name, the wire name,
    // the type the trait takes and, after `as`, the type the schema describes when it is
    // another one (`settings: Value as AgentSettings`: the daemon merges the JSON, the
    // schema checks its shape).
    (@param $method:tt [$($args:tt)*] [$($fields:tt)*] [$($described:tt)*]
        { $(#[doc = $doc:tt])* req $name:ident $wire:tt : $ty:ty as $schema:ty $(, $($more:tt)*)? }
        $($rest:tt)*
    ) => {
        declare_methods!(@param $method
            [$($args)* #[argument(rename = $wire)] $name: $ty,]
            [$($fields)* $(#[doc = $doc])* #[serde(rename = $wire)] pub $name: $schema,]
            [$($described)* $crate::rpc::ParamDescriptor {
                name: $wire,
                rust_name: stringify!($name),
                presence: $crate::rpc::Presence::Required,
                doc_lines: &[$($doc),*],
            },]
            { $($($more)*)? }
            $($rest)*);
    };
    // `opt` and `null`: the trait takes an `Option`, the struct's field may be left out;
    // they differ in what the descriptor says (`@presence`).
    (@param $method:tt [$($args:tt)*] [$($fields:tt)*] [$($described:tt)*]
        { $(#[doc = $doc:tt])* $kind:ident $name:ident $wire:tt : $ty:ty as $schema:ty $(, $($more:tt)*)? }
        $($rest:tt)*
    ) => {
        declare_methods!(@param $method
            [$($args)* #[argument(rename = $wire)] $name: Option<$ty>,]
            [$($fields)* $(#[doc = $doc])* #[serde(rename = $wire, default)] pub $name: Option<$schema>,]
            [$($described)* $crate::rpc::ParamDescriptor {
                name: $wire,
                rust_name: stringify!($name),
                presence: declare_methods!(@presence $kind),
                doc_lines: &[$($doc),*],
            },]
            { $($($more)*)? }
            $($rest)*);
    };
    // A param without `as`: the schema describes the type the trait takes.
    (@param $method:tt $args:tt $fields:tt $described:tt
        { $(#[doc = $doc:tt])* $presence:ident $name:ident $wire:tt : $ty:ty $(, $($more:tt)*)? }
        $($rest:tt)*
    ) => {
        declare_methods!(@param $method $args $fields $described
            { $(#[doc = $doc])* $presence $name $wire : $ty as $ty $(, $($more)*)? }
            $($rest)*);
    };

    // ---- A method's params are read: its struct, descriptor and trait item are added.
    (@param [call $name:tt $fn:ident $params:ident [$($doc:tt)*] [$($error:ident)*] [$result:ty]]
        [$($args:tt)*] $fields:tt $described:tt
        { }
        $descriptors:tt [$($items:tt)*] $structs:tt
        $($rest:tt)*
    ) => {
        declare_methods!(@add $name $params [$($doc)*] [$($error)*] [$result]
            [$crate::rpc::MethodKind::Call] [Some(stringify!($fn))] $fields $described
            $descriptors
            [$($items)* {
                [$(#[doc = $doc])* #[method(name = $name, param_kind = map)]]
                $fn [$($args)*] [-> ::jsonrpsee::core::RpcResult<$result>]
            }]
            $structs
            $($rest)*);
    };
    (@param [subscribe $name:tt $fn:ident $params:ident [$($doc:tt)*] [$($error:ident)*] [$result:ty]
            $notification:tt [$item:ty] $unsubscribe:tt]
        [$($args:tt)*] $fields:tt $described:tt
        { }
        $descriptors:tt [$($items:tt)*] $structs:tt
        $($rest:tt)*
    ) => {
        declare_methods!(@add $name $params [$($doc)*] [$($error)*] [$result]
            [$crate::rpc::MethodKind::Subscribe { notification: $notification, unsubscribe: $unsubscribe }]
            [Some(stringify!($fn))] $fields $described
            $descriptors
            [$($items)* {
                [
                    $(#[doc = $doc])*
                    #[subscription(name = $name => $notification, unsubscribe = $unsubscribe,
                        item = $item, param_kind = map)]
                ]
                $fn [$($args)*] [-> ::jsonrpsee::core::SubscriptionResult]
            }]
            $structs
            $($rest)*);
    };
    (@param [unsubscribe $name:tt $params:ident [$($doc:tt)*] [$($error:ident)*] [$result:ty]]
        $args:tt $fields:tt $described:tt
        { }
        $descriptors:tt $items:tt $structs:tt
        $($rest:tt)*
    ) => {
        declare_methods!(@add $name $params [$($doc)*] [$($error)*] [$result]
            [$crate::rpc::MethodKind::Unsubscribe] [None] $fields $described
            $descriptors $items $structs
            $($rest)*);
    };

    // A param that is none of the above.
    (@param $method:tt $args:tt $fields:tt $described:tt { $($param:tt)* } $($rest:tt)*) => {
        compile_error!(concat!(
            "a param is `req`, `opt` or `null`, then `rust_name \"wireName\": Type` ",
            "(and `as SchemaType`); not: ",
            stringify!($($param)*)
        ));
    };

    // The descriptor and the params struct of a method.
    (@add $name:tt $params:ident [$($doc:tt)*] [$($error:ident)*] [$result:ty]
        [$($kind:tt)*] [$($rust_name:tt)*] [$($fields:tt)*] [$($described:tt)*]
        [$($descriptors:tt)*] $items:tt [$($structs:tt)*]
        $($rest:tt)*
    ) => {
        declare_methods!(@next
            [$($descriptors)* $crate::rpc::MethodDescriptor {
                name: $name,
                rust_name: $($rust_name)*,
                kind: $($kind)*,
                doc_lines: &[$($doc),*],
                params: &[$($described)*],
                params_type: stringify!($params),
                params_schema: |g| g.root_schema_for::<params::$params>(),
                result_schema: |g| g.subschema_for::<$result>(),
                errors: &[$($crate::error::ErrorKind::$error),*],
            },]
            $items
            [$($structs)*
                #[doc = concat!("The params of `", $name, "`.")]
                #[derive(
                    Debug, Clone, PartialEq,
                    ::serde::Serialize, ::serde::Deserialize, ::schemars::JsonSchema,
                )]
                #[serde(deny_unknown_fields)]
                pub struct $params {
                    $($fields)*
                }
            ]
            $($rest)*);
    };

    // What an optional param's kind says of it.
    (@presence opt) => { $crate::rpc::Presence::Optional };
    (@presence null) => { $crate::rpc::Presence::ExplicitNull };
    (@presence $other:ident) => {
        compile_error!(concat!("a param is `req`, `opt` or `null`, not `", stringify!($other), "`"))
    };

    // Anything else that starts like the macro's own steps is a bug of this macro.
    (@ $($rest:tt)*) => {
        compile_error!(concat!("declare_methods!: cannot read ", stringify!($($rest)*)));
    };

    // ---- The table, as written: the trait's header, then the methods.
    (
        $hash:tt $rpc:tt $vis:vis trait $trait:ident(&$self:tt);
        $($table:tt)*
    ) => {
        declare_methods!(@next
            []
            [{ $hash $rpc $vis trait $trait(&$self) }]
            []
            $($table)*);
    };
}

pub(crate) use declare_methods;
