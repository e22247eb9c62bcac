import type { GeneratedMethods, GetAgentParams, GetMessageRequestPreviewParams, RemoveMcpServerParams } from "./generated/schema.js";
/** Every method with its params and result. */
export type Methods = GeneratedMethods;
export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M]["params"];
export type ResultOf<M extends MethodName> = Methods[M]["result"];
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
export declare const METHOD_NAMES: readonly ["initialize", "createAgent", "getAgent", "listAgents", "updateAgent", "setAgentMode", "deleteAgent", "forkAgent", "exportAgent", "importAgent", "listMessages", "getUsage", "searchMessages", "sendMessage", "cancelLoop", "cancelQueuedMessage", "compactContext", "continueLoop", "handlePermissionResponse", "answerQuestion", "getPlan", "pauseSession", "resumeSession", "listTools", "getMessageRequestPreview", "setContextEdge", "regenerate", "getTurnDiff", "revertTo", "listMcpServers", "addMcpServer", "updateMcpServer", "removeMcpServer", "restartMcpServer", "getSession", "listProfiles", "listSkills", "listProviders", "listModels", "testProvider", "complete"];
/** A method with a wrapper on `Client` (all but `subscribe`/`unsubscribe`). */
export type WrappedMethodName = (typeof METHOD_NAMES)[number];
