// The protocol's shapes, written by hand from agent-proto/src (rpc.rs, methods.rs, event.rs,
// message.rs, agent.rs, ...) while the machine-readable schema is not on this branch.
// `npm run gen-types` generates them from agent-proto/schema/*.json once it is (see
// scripts/gen-types.mjs); these hand-written ones must then give way to the generated ones.
//
// Conventions of the wire: camelCase names (session statuses and plan statuses are
// snake_case), optional fields left out (never null), unix-ms timestamps. The daemon may add
// fields to any shape without a version bump: nothing here rejects a field it does not know.
export {};
