// Params and results of every method, by name: the generated `GeneratedMethods` map
// (src/generated/schema.ts, from agent-proto/schema/openrpc.json). Params are by name; an
// optional param may be left out (or given as `null`, which means the same).
/**
 * Every method of the schema except `subscribe`/`unsubscribe` (those are
 * `Client.events`): each has a method of the same name on `Client`. The `satisfies`
 * check below fails to compile when the schema has a method this list lacks.
 */
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
    "getSession",
    "listTools",
    "getMessageRequestPreview",
    "setContextEdge",
    "regenerate",
    "complete",
    "listProfiles",
    "listSkills",
    "setAgentMode",
    "listProviders",
    "listModels",
    "testProvider",
    "listMcpServers",
    "addMcpServer",
    "updateMcpServer",
    "removeMcpServer",
    "restartMcpServer",
];
const everyMethodListed = true;
void everyMethodListed;
