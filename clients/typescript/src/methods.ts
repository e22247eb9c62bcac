// Params and results of every method, by name: the generated `GeneratedMethods` map
// (src/generated/schema.ts, from agent-proto/schema/openrpc.json). Params are by name; an
// optional param may be left out (or given as `null`, which means the same).

import { GENERATED_METHOD_NAMES } from "./generated/schema.js";
import type {
  GeneratedMethods,
  GetAgentParams,
  GetMessageRequestPreviewParams,
  RemoveMcpServerParams,
} from "./generated/schema.js";

/** Every method with its params and result. */
export type Methods = GeneratedMethods;
export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M]["params"];
export type ResultOf<M extends MethodName> = Methods[M]["result"];

// Names this package exported before the types were generated (same shapes).
/** `{agentId}`: the params of the methods that take only an agent. */
export type AgentIdParams = GetAgentParams;
/** `{name}`: the params of the methods that take only an MCP server's name. */
export type McpServerNameParams = RemoveMcpServerParams;
export type MessageRequestPreviewParams = GetMessageRequestPreviewParams;

/**
 * Every method of the schema except `subscribe`/`unsubscribe` (those are
 * `Client.events`): each has a method of the same name on `Client`. Generated from the
 * method table (agent-proto's `rpc.rs`, through the schema); the `satisfies` check makes
 * sure each is a method of `GeneratedMethods`.
 */
export const METHOD_NAMES = GENERATED_METHOD_NAMES satisfies readonly MethodName[];

/** A method with a wrapper on `Client` (all but `subscribe`/`unsubscribe`). */
export type WrappedMethodName = (typeof METHOD_NAMES)[number];

// Compile-time: every method of the schema is in METHOD_NAMES (or is a subscription).
type Missing = Exclude<MethodName, WrappedMethodName | "subscribe" | "unsubscribe">;
const everyMethodListed: [Missing] extends [never] ? true : { missing: Missing } = true;
void everyMethodListed;
