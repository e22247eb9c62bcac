"""The RPC methods as data: name, params (in the order of agent-proto/src/rpc.rs) and what
they do. `scripts/gen_api.py` writes the typed methods of both clients (`_api.py`) from it;
the tests check it against the daemon's `initialize` and against
agent-proto/schema/openrpc.json when that file is there.

A param is (wire name, Python type, kind): kind ``req`` (positional, always sent),
``opt`` (keyword-only, left out when ``None``) or ``null`` (positional, sent even when
``None``, where null means something: `setContextEdge`'s messageId).
`subscribe`/`unsubscribe` are not here: `events()` wraps them.
"""

from typing import List, NamedTuple, Tuple

Param = Tuple[str, str, str]


class Method(NamedTuple):
    name: str
    params: List[Param]
    doc: str


_S = "str"
_OS = "Optional[str]"
_I = "Optional[int]"
_B = "Optional[bool]"
_OBJ = "Optional[Dict[str, Any]]"

METHODS: List[Method] = [
    Method("initialize", [("clientName", _OS, "opt"), ("clientVersion", _OS, "opt"), ("protocolVersion", _I, "opt")],
           "Optional handshake: the server's version and capabilities (methods, events, limits)."),
    Method("createAgent", [("title", _OS, "opt"), ("mode", _OS, "opt"), ("provider", _OS, "opt"), ("model", _OS, "opt"),
                           ("systemPrompt", _OS, "opt"), ("workspace", _OS, "opt"), ("profile", _OS, "opt"),
                           ("settings", _OBJ, "opt"), ("acp", _OBJ, "opt")],
           "Creates an agent; absent fields take the daemon's defaults. Returns the Agent. With "
           "``mode='acp'``, ``acp`` names the external ACP agent that answers it."),
    Method("getAgent", [("agentId", _S, "req")], "The Agent."),
    Method("listAgents", [("cursor", _OS, "opt"), ("limit", _I, "opt"), ("search", _OS, "opt"), ("pinned", _B, "opt"),
                          ("archived", _B, "opt")],
           "Agents, newest first: ``{agents, nextCursor?}``. Archived ones only with ``archived=True``."),
    Method("updateAgent", [("agentId", _S, "req"), ("title", _OS, "opt"), ("pinned", _B, "opt"), ("archived", _B, "opt"),
                           ("provider", _OS, "opt"), ("model", _OS, "opt"), ("systemPrompt", _OS, "opt"),
                           ("settings", _OBJ, "opt"), ("profile", _OS, "opt")],
           "Changes the given fields (`settings` is merged into the stored ones; ``profile=\"\"``\n"
           "removes the profile). Returns the Agent."),
    Method("setAgentMode", [("agentId", _S, "req"), ("mode", _S, "req")],
           "Switches an agent between ``chat`` and ``agent`` mode (an agent without a workspace\n"
           "gets a folder of its own). Returns the Agent."),
    Method("deleteAgent", [("agentId", _S, "req")], "Cancels the agent's run, then removes it with its messages."),
    Method("forkAgent", [("agentId", _S, "req"), ("messageId", _OS, "opt")],
           "A new agent with a copy of the history up to and including `message_id` (all when absent)."),
    Method("exportAgent", [("agentId", _S, "req"), ("format", _S, "req")],
           "The agent as a ``markdown`` transcript or a ``json`` export: ``{format, content}``."),
    Method("importAgent", [("data", "Any", "req"), ("workspace", _OS, "opt"), ("keepWorkspace", _B, "opt")],
           "A new agent from a JSON export (the object, or its text). Returns the Agent."),
    Method("listMessages", [("agentId", _S, "req"), ("cursor", _OS, "opt"), ("limit", _I, "opt"), ("order", _OS, "opt")],
           "The agent's messages: ``{messages, nextCursor?}`` (``order`` ``asc`` or ``desc``)."),
    Method("sendMessage", [("agentId", _S, "req"), ("content", "Union[str, List[Dict[str, Any]]]", "req"),
                           ("clientRequestId", _OS, "opt")],
           "Stores the user message and starts a run; returns ``{userMessageId, assistantMessageId}``\n"
           "at once, the answer streams as events (see `run`). ``client_request_id`` makes a retry\n"
           "of the same send return the same ids."),
    Method("cancelLoop", [("agentId", _S, "req")], "Cancels the agent's active run (idempotent): ``{cancelled}``."),
    Method("continueLoop", [("agentId", _S, "req")],
           "Continues the last run (after maxSteps, a pause, an error or an interruption) on the same\n"
           "message: ``{assistantMessageId}``."),
    Method("handlePermissionResponse", [("messageId", _S, "req"), ("toolCallId", _S, "req"), ("granted", "bool", "req"),
                                        ("permissionType", _OS, "opt"), ("remember", _OS, "opt")],
           "Answers a ``permissionRequested`` (the first answer wins); the run resumes on the same message.\n"
           "``remember``: ``once`` (default), ``session`` or ``always``."),
    Method("answerQuestion", [("messageId", _S, "req"), ("toolCallId", _S, "req"),
                              ("answers", "Optional[List[Dict[str, Any]]]", "opt"), ("declined", _B, "opt")],
           "Answers a ``questionRequested``: one answer per question (``{selected?, text?}``), or\n"
           "``declined=True``. The first answer wins; the run resumes on the same message."),
    Method("getPlan", [("agentId", _S, "req")], "The agent's plan, as its last ``todo_write`` left it."),
    Method("pauseSession", [("agentId", _S, "req")], "Stops the active run at its next checkpoint: ``{status}``."),
    Method("resumeSession", [("agentId", _S, "req")], "Continues a paused run: ``{status}``."),
    Method("listTools", [("agentId", _OS, "opt")], "The tools there are, or those of one agent with ``enabled``."),
    Method("getMessageRequestPreview", [("agentId", _S, "req"), ("messageId", _OS, "opt")],
           "The exact request body of the agent's next model call (or of a message's first call)."),
    Method("setContextEdge", [("agentId", _S, "req"), ("messageId", _OS, "null")],
           "Hides every message up to and including `message_id` from the model (``None`` shows all\n"
           "again). Returns the Agent."),
    Method("regenerate", [("agentId", _S, "req"), ("messageId", _S, "req")],
           "Runs the last step of the agent's latest answer again, as a new variant: ``{assistantMessageId}``."),
    Method("listMcpServers", [], "MCP servers with their status and tools: ``{servers}``."),
    Method("addMcpServer", [("spec", "Dict[str, Any]", "req")], "Adds (and starts) an MCP server; stored across restarts."),
    Method("updateMcpServer", [("name", _S, "req"), ("changes", "Dict[str, Any]", "req")],
           "Replaces spec fields of a server added over RPC; it restarts with them."),
    Method("removeMcpServer", [("name", _S, "req")], "Stops and forgets a server added over RPC."),
    Method("restartMcpServer", [("name", _S, "req")], "Restarts an MCP server now."),
    Method("getSession", [("agentId", _S, "req")],
           "``{agentId, status, runMessageId?, pendingPermissions, pendingQuestions, step, lastSeq}``."),
    Method("listProfiles", [], "The profiles agents can be given: ``{profiles}``."),
    Method("listSkills", [("agentId", _S, "req")],
           "The skills the agent sees, and the malformed ones with why: ``{skills, errors}``."),
    Method("listProviders", [], "The configured providers: ``{providers}``."),
    Method("listModels", [("provider", _OS, "opt")], "The models of a provider (the default one when absent): ``{models}``."),
    Method("testProvider", [("provider", _OS, "opt"), ("model", _OS, "opt")],
           "Sends one tiny request to a provider and reports the latency or the error."),
    Method("complete", [("provider", _OS, "opt"), ("model", _OS, "opt"),
                        ("messages", "Optional[List[Dict[str, Any]]]", "opt"), ("prompt", _OS, "opt"),
                        ("system", _OS, "opt"), ("maxTokens", "Optional[int]", "opt"),
                        ("temperature", "Optional[float]", "opt"), ("stream", _B, "opt")],
           "One model call with no agent and nothing stored: ``messages`` (ending with a user\n"
           "message) or ``prompt``. Returns ``{provider, model, text, finishReason?, usage?}``."),
]


def snake(name: str) -> str:
    """``handlePermissionResponse`` -> ``handle_permission_response``."""
    out = []
    for ch in name:
        if ch.isupper():
            out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)
