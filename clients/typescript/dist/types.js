// The protocol's shapes. Every one is generated from the schema (src/generated/schema.ts,
// made by `npm run gen-types` from agent-proto/schema, which the Rust types generate; test.sh
// fails when it is not what the schema gives). This file re-exports them and adds, by hand,
// only names the schema has no definition for: one type per event (picked out of the
// generated `Event` union), the parts of `sendMessage` content, `ListOrder`, `EmptyResult`.
//
// Conventions of the wire: camelCase names (session statuses and plan statuses are
// snake_case), optional fields left out, unix-ms timestamps. The daemon may add fields to
// any shape, and event types, without a version bump: the generated interfaces list what
// the schema knows, and nothing in this client rejects a field or an event it does not know.
export {};
