// Params and results of every method, by name, written from agent-proto/src/rpc.rs (the
// authoritative method table). Params are by name; an optional param may be left out.
// Regenerate from agent-proto/schema/openrpc.json once it is on this branch
// (scripts/gen-types.mjs).
/** Every method name this client knows (`subscribe`/`unsubscribe` are `Client.events`). */
export const METHOD_NAMES = [
    "initialize",
    "createAgent",
    "getAgent",
    "listAgents",
    "updateAgent",
    "deleteAgent",
    "forkAgent",
    "exportAgent",
    "importAgent",
    "listMessages",
    "sendMessage",
    "cancelLoop",
    "continueLoop",
    "handlePermissionResponse",
    "answerQuestion",
    "getPlan",
    "pauseSession",
    "resumeSession",
    "listTools",
    "getMessageRequestPreview",
    "setContextEdge",
    "regenerate",
    "listMcpServers",
    "addMcpServer",
    "updateMcpServer",
    "removeMcpServer",
    "restartMcpServer",
    "getSession",
    "listProviders",
    "listModels",
    "testProvider",
];
