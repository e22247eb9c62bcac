/**
 * What an agent can do. `chat`: the model answers, no tools. `agent`: the model may call
 * tools. `acp`: an external agent (Zed's, Claude Code's, Gemini CLI's ACP adapter, ...) run
 * by the daemon and driven over the Agent Client Protocol; see [`AcpBackend`].
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AgentMode".
 */
export type AgentMode = "chat" | "agent" | "acp";
/**
 * The OS sandbox (Landlock and a seccomp filter) every `bash` command of an agent runs
 * in. Names as Codex's.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SandboxMode".
 */
export type SandboxMode = "workspace-write" | "read-only" | "off";
/**
 * When a hook runs.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "HookEvent".
 */
export type HookEvent = "beforeTool" | "afterTool" | "userMessage" | "runFinished";
/**
 * What happens to a tool call of a level: run it, ask a client, or refuse it.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PermissionRule".
 */
export type PermissionRule = "allow" | "ask" | "deny";
/**
 * Runtime status of an agent's session.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SessionStatus".
 */
export type SessionStatus = "idle" | "generating" | "waiting_permission" | "waiting_question" | "paused" | "error";
/**
 * One piece of a message.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Block".
 */
export type Block = {
    text: string;
    type: "text";
} | {
    /**
     * The structured reasoning a chat-completions provider returned with it
     * (OpenRouter's `reasoning_details`: a list of objects, merged per `index` as
     * they streamed), sent back as received on the same assistant message. Not for
     * display.
     */
    details?: unknown;
    /**
     * Reasoning the provider returned encrypted (Anthropic's `redacted_thinking`
     * data): `text` is empty and this is sent back as received. Not for display.
     */
    redacted?: string;
    /**
     * Opaque proof the provider attached to this reasoning (Anthropic's thinking
     * `signature`), sent back with it exactly as received. Not for display.
     */
    signature?: string;
    text: string;
    type: "reasoning";
} | {
    mimeType: string;
    path: string;
    type: "image";
} | {
    /**
     * `application/pdf`.
     */
    mimeType: string;
    /**
     * The attached file's name (`spec.pdf`), as the model is told it.
     */
    name: string;
    /**
     * The daemon's copy.
     */
    path: string;
    /**
     * Its size in bytes.
     */
    size: number;
    type: "document";
} | {
    answer?: QuestionResolution;
    /**
     * The arguments as parsed (and repaired if needed); `null` while they stream.
     */
    arguments: unknown;
    name: string;
    /**
     * The resolved paths the call's permission prompt was about (set when a call on
     * paths asks). The answer applies to exactly these: if the arguments resolve to
     * anything else when it runs (a file swapped for a symlink meanwhile), the call
     * fails, and a remembered grant is keyed by these paths.
     */
    permissionPaths?: string[];
    /**
     * Set when text or reasoning of the model call that made this call came after it
     * (Anthropic's interleaved thinking: thinking, call, thinking, call): how many of
     * the step's text and reasoning blocks (stored before its calls, docs/protocol.md
     * 4.6) came after this call, so the step goes back to the model in the order it
     * came. Absent: none.
     */
    piecesAfter?: number;
    prompt?: PermissionPrompt;
    /**
     * The id the provider gave the call, when an earlier call of this message had it
     * already (some providers number calls per answer) and `toolCallId` was made
     * unique; the provider is sent this id back.
     */
    providerCallId?: string;
    /**
     * On an `ask_user_question` call: the questions as `questionRequested` sent them.
     */
    questions?: Question[];
    /**
     * The arguments exactly as the model wrote them, when that is not `arguments`
     * (they needed repair, or could not be parsed at all).
     */
    rawArguments?: string;
    resolution?: PermissionResolution;
    result?: ToolCallResult;
    /**
     * Opaque proof the provider attached to the call (Gemini's `thoughtSignature`),
     * sent back with it exactly as received. Not for display.
     */
    signature?: string;
    status: ToolCallStatus;
    toolCallId: string;
    type: "toolCall";
} | {
    kind: string;
    message: string;
    type: "error";
} | {
    /**
     * The `userMessageId` the send answered.
     */
    id: string;
    text: string;
    type: "steer";
};
/**
 * What a tool call may do, which decides how it is permitted.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PermissionLevel".
 */
export type PermissionLevel = "read" | "write" | "execute" | "network";
/**
 * How long an answer to a permission prompt is remembered.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Remember".
 */
export type Remember = "once" | "session" | "always";
/**
 * Where a tool call is in its life.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ToolCallStatus".
 */
export type ToolCallStatus = ("running" | "success" | "cancelled") | "streaming" | "ready" | "waitingPermission" | "waitingAnswer" | "approved" | "error" | "denied" | "interrupted";
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Role".
 */
export type Role = "user" | "assistant";
/**
 * Lifecycle of a message. User messages are `done` when stored. An assistant message is
 * `pending` until the model's first byte, `streaming` while its run is active, `waiting`
 * while its run is suspended (a permission prompt, a question, a pause, or `maxSteps`: it
 * goes on with `handlePermissionResponse`, `answerQuestion`, `resumeSession` or
 * `continueLoop`), then ends as `done`,
 * `cancelled` (by a client), `error` (the provider failed; see its error block) or
 * `interrupted` (the daemon stopped or crashed mid-run; the partial text is kept).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "MessageStatus".
 */
export type MessageStatus = "pending" | "streaming" | "waiting" | "done" | "cancelled" | "error" | "interrupted";
/**
 * Where one item of the plan is.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PlanStatus".
 */
export type PlanStatus = "pending" | "in_progress" | "completed";
/**
 * What became of a sent message.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Delivery".
 */
export type Delivery = "started" | "queued" | "steered";
/**
 * An agentd event: the `result` of an `event` notification. Every event has seq, agentId, at and type; the other fields depend on type. Fields may be added: ignore those you do not know.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Event".
 */
export type Event = EventBase & ({
    status: SessionStatus;
    type: "statusChanged";
} | {
    message: Message;
    type: "userMessage";
} | {
    message?: Message;
    messageId: string;
    type: "messageStarted";
} | {
    delta: string;
    messageId: string;
    type: "textDelta";
} | {
    delta: string;
    messageId: string;
    type: "reasoningDelta";
} | {
    inputTokens: number;
    messageId: string;
    outputTokens: number;
    type: "usage";
} | {
    messageId: string;
    name: string;
    toolCallId: string;
    type: "toolCallStarted";
} | {
    delta: string;
    messageId: string;
    toolCallId: string;
    type: "toolCallArgsDelta";
} | {
    arguments: unknown;
    messageId: string;
    name: string;
    toolCallId: string;
    type: "toolCallReady";
} | {
    arguments: unknown;
    /**
     * The command exactly as it will run.
     */
    command?: string;
    /**
     * The command as a client should show it: control and invisible characters (`\r`,
     * ESC, bidirectional overrides, zero-width spaces) escaped, so what is shown is
     * what runs. `description` and `risk` are in this form already.
     */
    commandDisplay?: string;
    /**
     * What the call will do, in a sentence.
     */
    description: string;
    messageId: string;
    /**
     * A granted command gets the network in its sandbox (TCP, UDP, local sockets).
     */
    networkAccess?: boolean;
    /**
     * A granted command runs outside the OS sandbox, with the user's full rights
     * (never rememberable).
     */
    outsideSandbox?: boolean;
    /**
     * The paths outside the workspace (or all paths) the call touches.
     */
    paths?: string[];
    permissionType: PermissionLevel;
    /**
     * Whether `remember: session|always` would be honoured for this call.
     */
    rememberable: boolean;
    /**
     * Why the call is risky, if it is; a risky call is never covered by a remembered
     * grant.
     */
    risk?: string;
    /**
     * The command signatures a `session`/`always` answer would remember.
     */
    signature?: string[];
    toolCallId: string;
    toolName: string;
    type: "permissionRequested";
} | {
    cancelled?: boolean;
    granted: boolean;
    messageId: string;
    remember: Remember;
    toolCallId: string;
    type: "permissionResolved";
} | {
    /**
     * What the model gets (a stub when the output was offloaded).
     */
    content: string;
    durationMs: number;
    messageId: string;
    offloadPath?: string;
    status: ToolCallStatus;
    toolCallId: string;
    type: "toolResult";
} | {
    message?: string;
    messageId: string;
    output?: LiveOutput;
    progress: number;
    toolCallId: string;
    total?: number;
    type: "toolProgress";
} | {
    afterTokens: number;
    beforeTokens: number;
    messageId: string;
    /**
     * Messages the summary replaces, for the model.
     */
    summarizedMessages: number;
    /**
     * The last message it covers.
     */
    throughMessageId: string;
    type: "summarized";
} | {
    messageId: string;
    status: MessageStatus;
    /**
     * The final answer parsed, when the turn asked for `outputSchema` and the answer
     * was valid against it.
     */
    structuredOutput?: unknown;
    type: "messageCompleted";
} | {
    error?: string;
    /**
     * The assistant message the run wrote (the one its `messageStarted` named).
     */
    messageId: string;
    reason: LoopFinishReason;
    type: "loopFinished";
} | {
    kind: string;
    message: string;
    messageId?: string;
    retry?: RetryNotice;
    retryable: boolean;
    type: "error";
} | {
    agent: Agent;
    type: "agentCreated";
} | {
    agent: Agent;
    type: "agentUpdated";
} | {
    type: "agentDeleted";
} | {
    reason: string;
    type: "resyncRequired";
} | {
    message?: Message;
    status: SessionStatus;
    /**
     * With `message`: the index in its blocks where the current step begins. A delta
     * after the snapshot extends the last block only if that block is at or after
     * this index (docs/protocol.md 4.6); equal to the number of blocks when the next
     * piece begins a new step.
     */
    stepStart?: number;
    type: "snapshot";
} | {
    items: PlanItem[];
    type: "planUpdated";
} | {
    queue: QueuedMessage[];
    type: "queueUpdated";
} | {
    /**
     * The steer's `userMessageId`.
     */
    id: string;
    messageId: string;
    text: string;
    type: "steered";
} | {
    messageId: string;
    questions: Question[];
    toolCallId: string;
    type: "questionRequested";
} | {
    answers?: QuestionAnswer[];
    cancelled?: boolean;
    declined?: boolean;
    messageId: string;
    toolCallId: string;
    type: "questionResolved";
} | {
    childAgentId: string;
    status: LoopFinishReason;
    /**
     * The `task` call that started it.
     */
    toolCallId: string;
    type: "backgroundTaskFinished";
} | {
    /**
     * Paths left alone, with why (changed by someone else since, not kept).
     */
    conflicts: RevertConflict[];
    /**
     * The user message reverted to (gone from the history when `removedMessages > 0`).
     */
    messageId: string;
    /**
     * Messages removed from the conversation (that message and every later one).
     */
    removedMessages: number;
    /**
     * Workspace paths put back as they were before that message.
     */
    restored: string[];
    type: "reverted";
} | {
    error?: string;
    server: string;
    status: McpServerStatus;
    type: "mcpServerStatus";
});
/**
 * How much a reasoning model thinks, for one turn (`sendMessage` `reasoningEffort`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ReasoningEffort".
 */
export type ReasoningEffort = "low" | "medium" | "high";
/**
 * Which of a command's streams a [`LiveOutput`] comes from.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "OutputStream".
 */
export type OutputStream = "stdout" | "stderr";
/**
 * Why a run ended.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "LoopFinishReason".
 */
export type LoopFinishReason = ("maxSteps" | "waitingPermission" | "paused") | "completed" | "cancelled" | "maxTokens" | "waitingQuestion" | "refused" | "error";
/**
 * What `sendMessage` does when the agent is busy (a run active, waiting for a client or
 * paused).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "WhenBusy".
 */
export type WhenBusy = "refuse" | "queue" | "steer";
/**
 * A server's state.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpServerStatus".
 */
export type McpServerStatus = ("starting" | "ready") | "failed" | "stopped";
/**
 * What `exportAgent` produces.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportFormat".
 */
export type ExportFormat = "markdown" | "json";
/**
 * Where a server's configuration comes from.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpSource".
 */
export type McpSource = "config" | "rpc";
/**
 * How the daemon talks to a server.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpTransport".
 */
export type McpTransport = "stdio" | "http";
/**
 * Where a profile comes from.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ProfileSource".
 */
export type ProfileSource = "builtin" | "config";
/**
 * Where a skill was found. On a name clash the first wins: the workspace's, then the
 * config's folders (in their order), then the user's.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SkillSource".
 */
export type SkillSource = "workspace" | "config" | "user";
/**
 * A subscription id as `subscribe` answered it.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SubscriptionId".
 */
export type SubscriptionId = number | string;
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "TurnFileStatus".
 */
export type TurnFileStatus = "added" | "modified" | "deleted";
/**
 * The stable kind of an RPC error, sent as `data.kind`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ErrorKind".
 */
export type ErrorKind = "parseError" | "invalidRequest" | "methodNotFound" | "invalidParams" | "internal" | "agentNotFound" | "agentBusy" | "messageNotFound" | "permissionNotPending" | "inputTooLarge" | "providerNotConfigured" | "overloaded" | "shuttingDown" | "notSupported" | "invalidState" | "mcpServerNotFound" | "tooManySubscriptions" | "questionNotPending" | "providerFailed";
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "UnsubscribeResult".
 */
export type UnsubscribeResult = boolean;
/**
 * The external ACP agent behind an agent of mode `acp`: one of the config's
 * `[[acp_agents]]` by `name`, or a `command` of its own (not both).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AcpBackend".
 */
export interface AcpBackend {
    args?: string[];
    /**
     * The program to run (looked up in `PATH`), speaking ACP on its stdin/stdout.
     */
    command?: string;
    /**
     * Variables added to the environment it gets (the daemon's own environment minus
     * secrets, as MCP stdio servers get it). In answers, values are masked.
     */
    env?: {
        [k: string]: string | undefined;
    };
    /**
     * The name of an `[[acp_agents]]` entry of the config.
     */
    name?: string;
}
/**
 * A persistent, configured conversation.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Agent".
 */
export interface Agent {
    acp?: AcpBackend;
    archived: boolean;
    /**
     * The last message the model no longer sees (`setContextEdge`); absent: none.
     */
    contextEdge?: string;
    createdAt: number;
    /**
     * The source's message the fork's copied history ends with (absent when the source
     * had no messages).
     */
    forkMessageId?: string;
    id: string;
    mode: AgentMode;
    model: string;
    /**
     * The agent this one was forked from (`forkAgent`), or the agent whose `task` call
     * started it (a subagent: then `subagentType` is set too); absent otherwise.
     */
    parentAgentId?: string;
    /**
     * On a subagent: the parent's `task` call that started it.
     */
    parentToolCallId?: string;
    pinned: boolean;
    profile?: string;
    /**
     * Provider instance id (see `listProviders`).
     */
    provider: string;
    sandbox?: SandboxMode;
    settings: AgentSettings;
    status: SessionStatus;
    /**
     * On a subagent: its type (`explore`, `general`, or one from the config).
     */
    subagentType?: string;
    systemPrompt?: string;
    title: string;
    updatedAt: number;
    workspace?: string;
}
/**
 * Per-agent settings. Every field is optional: an absent field means "use the daemon's
 * default". `updateAgent` merges the given fields into the stored ones (JSON merge patch:
 * `null` removes a field). Unknown fields are rejected so a typo is an error, not a no-op.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AgentSettings".
 */
export interface AgentSettings {
    /**
     * Fold old rounds into a model-written summary when the context fills up (default on).
     */
    autoSummarize?: boolean;
    /**
     * After the first answer, let the model write a short title (replacing the one taken
     * from the first message). Default off.
     */
    autoTitle?: boolean;
    /**
     * MCP servers (`name`) or single MCP tools (`server/tool`) this agent may use; absent:
     * all of them.
     */
    enabledMcpTools?: string[];
    /**
     * When set, only these tools are offered to the model (names as in `listTools`).
     */
    enabledTools?: string[];
    /**
     * Commands run at points of this agent's runs, after the config's `[[hooks]]`.
     * Dropped by `importAgent` (an export never brings commands to run).
     */
    hooks?: HookSpec[];
    /**
     * Cap on the tokens the model may write in one call.
     */
    maxOutputTokens?: number;
    /**
     * Steps (model calls) one run may take before it stops with `maxSteps` (default 50).
     */
    maxSteps?: number;
    permissions?: PermissionRules;
    sandbox?: SandboxMode;
    /**
     * Sampling temperature passed to the model.
     */
    temperature?: number;
}
/**
 * A command run at an event, with the event as JSON on stdin, in the agent's workspace.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "HookSpec".
 */
export interface HookSpec {
    /**
     * Run with `bash -c`.
     */
    command: string;
    event: HookEvent;
    /**
     * Tool names it applies to (`beforeTool`/`afterTool`): `*` matches any run of
     * characters, `|` separates alternatives; absent: every tool.
     */
    matcher?: string;
    /**
     * Seconds before it is killed (default 30, at most 600).
     */
    timeoutSecs?: number;
}
/**
 * A rule per permission level; absent levels keep the daemon's rule.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PermissionRules".
 */
export interface PermissionRules {
    execute?: PermissionRule;
    network?: PermissionRule;
    read?: PermissionRule;
    write?: PermissionRule;
}
/**
 * The JSON export of one agent (`format: "agentd-export"`, `version: 1`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AgentExport".
 */
export interface AgentExport {
    agent: ExportedAgent;
    /**
     * The document files (PDFs), by the `path` their document blocks name.
     */
    documents?: {
        [k: string]: ExportedImage | undefined;
    };
    /**
     * Unix ms.
     */
    exportedAt: number;
    /**
     * Always [`EXPORT_FORMAT`].
     */
    format: string;
    /**
     * The image files, by the `path` their image blocks name.
     */
    images: {
        [k: string]: ExportedImage | undefined;
    };
    /**
     * Oldest first.
     */
    messages: ExportedMessage[];
    /**
     * Full text of each offloaded tool result, by `toolCallId` (the blocks hold only the
     * stub and the exporting daemon's `offloadPath`).
     */
    offloads: {
        [k: string]: string | undefined;
    };
    /**
     * The agent's plan (`todo_write`); absent when it has none.
     */
    plan?: PlanItem[];
    /**
     * Summaries the model wrote of earlier rounds, oldest first.
     */
    summaries: ExportedSummary[];
    /**
     * [`EXPORT_VERSION`]; a daemon refuses versions it does not know.
     */
    version: number;
}
/**
 * The agent of an export: the `Agent` shape without its runtime `status`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportedAgent".
 */
export interface ExportedAgent {
    archived: boolean;
    /**
     * A message id of this export.
     */
    contextEdge?: string;
    createdAt: number;
    forkMessageId?: string;
    /**
     * The id on the exporting daemon (an import gives a new one).
     */
    id?: string;
    mode: AgentMode;
    model: string;
    parentAgentId?: string;
    pinned: boolean;
    profile?: string;
    provider: string;
    settings: AgentSettings;
    systemPrompt?: string;
    title: string;
    updatedAt: number;
    /**
     * Present only for a workspace the agent was created with; the folder a daemon makes
     * for an agent itself is not exported (an import gets its own).
     */
    workspace?: string;
}
/**
 * An image or document file of an export.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportedImage".
 */
export interface ExportedImage {
    /**
     * The file's bytes, base64 (standard alphabet, padded).
     */
    data: string;
    mimeType: string;
}
/**
 * A message of an export: the `Message` shape without `agentId`, plus `parentId` (the
 * user message an assistant message answers).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportedMessage".
 */
export interface ExportedMessage {
    blocks: Block[];
    createdAt: number;
    id: string;
    parentId?: string;
    role: Role;
    status: MessageStatus;
    superseded?: boolean;
    updatedAt: number;
    usage?: Usage;
    variantOf?: string;
}
/**
 * How a question call was resolved: answered (one answer per question, in order),
 * declined by the user, or cancelled with its run.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "QuestionResolution".
 */
export interface QuestionResolution {
    answers?: QuestionAnswer[];
    cancelled?: boolean;
    declined?: boolean;
}
/**
 * The answer to one question: the labels picked, and/or free text.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "QuestionAnswer".
 */
export interface QuestionAnswer {
    /**
     * Labels of the options picked (at most one unless the question is multiSelect).
     */
    selected?: string[];
    /**
     * The user's own words.
     */
    text?: string;
}
/**
 * A permission prompt as it was sent (`permissionRequested`), kept with its call.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PermissionPrompt".
 */
export interface PermissionPrompt {
    /**
     * The command exactly as it will run.
     */
    command?: string;
    /**
     * The command in display form (control and invisible characters escaped).
     */
    commandDisplay?: string;
    /**
     * What the call will do, in a sentence (display form).
     */
    description: string;
    /**
     * A granted command gets network access in its sandbox (TCP, UDP and local sockets).
     */
    networkAccess?: boolean;
    /**
     * A granted command runs outside the OS sandbox, with the user's full rights (the
     * model asked with `outsideSandbox`, or the sandbox is not available). Never
     * rememberable.
     */
    outsideSandbox?: boolean;
    /**
     * The paths outside the workspace (or all paths) the call touches.
     */
    paths?: string[];
    permissionType: PermissionLevel;
    /**
     * Whether `remember: session|always` would be honoured.
     */
    rememberable: boolean;
    /**
     * Why the call is risky, or why it is asked every time.
     */
    risk?: string;
    /**
     * The command signatures a `session`/`always` answer would remember.
     */
    signature?: string[];
}
/**
 * One question. The user may always answer in their own words instead of (or besides)
 * picking options.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Question".
 */
export interface Question {
    /**
     * A short tag for the question (a few words), for a compact display.
     */
    header?: string;
    /**
     * Whether more than one option may be picked.
     */
    multiSelect?: boolean;
    options: QuestionOption[];
    question: string;
}
/**
 * One choice of a question.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "QuestionOption".
 */
export interface QuestionOption {
    /**
     * What the choice means, when the label is not enough.
     */
    description?: string;
    /**
     * What the user picks (short; also what an answer names).
     */
    label: string;
}
/**
 * How a permission prompt was answered.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PermissionResolution".
 */
export interface PermissionResolution {
    /**
     * Resolved by a cancel (of the run, or of the agent), not by an answer.
     */
    cancelled?: boolean;
    granted: boolean;
    remember: Remember;
}
/**
 * The result of a tool call as the model gets it.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ToolCallResult".
 */
export interface ToolCallResult {
    /**
     * The text the model sees (a stub when the full output was offloaded).
     */
    content: string;
    durationMs?: number;
    isError: boolean;
    /**
     * Absolute path of the full output when it was too large to inline.
     */
    offloadPath?: string;
}
/**
 * Token counts reported by the provider for one message.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Usage".
 */
export interface Usage {
    inputTokens: number;
    outputTokens: number;
}
/**
 * One item of an agent's plan.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PlanItem".
 */
export interface PlanItem {
    /**
     * The item while it is being done, in the present continuous ("Running the tests").
     */
    activeForm?: string;
    /**
     * What is to be done, in the imperative ("Run the tests").
     */
    content: string;
    status: PlanStatus;
}
/**
 * A summary of earlier rounds; the model sees it instead of every message up to and
 * including `throughMessageId`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportedSummary".
 */
export interface ExportedSummary {
    afterTokens: number;
    beforeTokens: number;
    createdAt: number;
    summarizedMessages: number;
    text: string;
    throughMessageId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AgentList".
 */
export interface AgentList {
    agents: Agent[];
    /**
     * Pass as `cursor` to get the next page; absent on the last page.
     */
    nextCursor?: string;
}
/**
 * The usage of one agent (`getUsage`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AgentUsage".
 */
export interface AgentUsage {
    agentId: string;
    answers: number;
    /**
     * USD over its priced models; absent when none of them has a price.
     */
    costUsd?: number;
    inputTokens: number;
    outputTokens: number;
}
/**
 * `answerQuestion`'s answer: `{}`. The answer was taken (it was the first; a later one gets
 * `questionNotPending`), saved with the call, and the run resumed.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AnswerQuestionResult".
 */
export interface AnswerQuestionResult {
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CancelLoopResult".
 */
export interface CancelLoopResult {
    /**
     * True if a run was active and is now cancelled; false if there was nothing to cancel.
     */
    cancelled: boolean;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CancelQueuedResult".
 */
export interface CancelQueuedResult {
    /**
     * How many queued messages were dropped (0: none matched; it had started or joined).
     */
    cancelled: number;
}
/**
 * What this daemon supports, so a client can adapt instead of probing.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Capabilities".
 */
export interface Capabilities {
    /**
     * Every event type the daemon may send.
     */
    events: string[];
    maxFrameBytes: number;
    maxUserTextChars: number;
    /**
     * Every method name the daemon answers.
     */
    methods: string[];
    /**
     * Agent modes `createAgent` accepts.
     */
    modes: AgentMode[];
    /**
     * How many recent events per agent `subscribe` can replay with `sinceSeq`.
     */
    replayWindow: number;
    sandbox: SandboxInfo;
}
/**
 * Whether this daemon can confine commands, and how it does by default.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SandboxInfo".
 */
export interface SandboxInfo {
    /**
     * The kernel's Landlock ABI (absent: no Landlock).
     */
    abi?: number;
    /**
     * The kernel offers what the sandbox needs (Landlock ABI 6 or later, seccomp), and a
     * probe at start-up confined a process with it.
     */
    available: boolean;
    /**
     * Commands of agents in the default mode run confined: `available` and the mode is not
     * `off`. When false and the mode is not `off`, every command asks (no grant or `allow`
     * level covers it) and its prompt says it would run unconfined.
     */
    enforced: boolean;
    mode: SandboxMode;
    /**
     * Why the sandbox is not available, when it is not.
     */
    reason?: string;
}
/**
 * A summary made by `compactContext`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CompactContextResult".
 */
export interface CompactContextResult {
    afterTokens: number;
    /**
     * Estimated tokens of the next request before and after.
     */
    beforeTokens: number;
    /**
     * Messages the summary replaces, for the model.
     */
    summarizedMessages: number;
    /**
     * The last message the summary covers.
     */
    throughMessageId: string;
}
/**
 * The answer of `complete`: a model call with no agent, never stored.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CompleteResult".
 */
export interface CompleteResult {
    /**
     * Why the model stopped (`stop`, `length`, ... as the provider said), when it said.
     */
    finishReason?: string;
    model: string;
    provider: string;
    text: string;
    usage?: Usage;
}
/**
 * How a request was fitted into the model's window.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ContextReport".
 */
export interface ContextReport {
    /**
     * Tokens the request may use: the window minus the output reserve.
     */
    budget: number;
    /**
     * The model's context window.
     */
    contextWindow: number;
    /**
     * Oldest whole rounds left out.
     */
    droppedRounds: number;
    /**
     * Estimated tokens before shrinking (after the edge and the summary).
     */
    estimatedBefore: number;
    /**
     * Messages before the context edge.
     */
    hiddenByEdge: number;
    messagesTokens: number;
    /**
     * Even the latest round alone does not fit: the request is sent over the budget.
     */
    overBudget: boolean;
    /**
     * Tool results of earlier rounds replaced by stubs.
     */
    stubbedResults: number;
    /**
     * Messages replaced by the stored summary.
     */
    summarizedMessages: number;
    /**
     * Estimated tokens by part, as sent.
     */
    systemTokens: number;
    toolsTokens: number;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ContinueLoopResult".
 */
export interface ContinueLoopResult {
    /**
     * The assistant message the run goes on writing.
     */
    assistantMessageId: string;
}
/**
 * `deleteAgent`'s answer: `{}` (success is the answer; a failure is an error).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "DeleteAgentResult".
 */
export interface DeleteAgentResult {
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "EventBase".
 */
export interface EventBase {
    /**
     * The agent the event is about. Empty only on a `resyncRequired` sent to a subscription
     * of all agents, which then concerns every agent.
     */
    agentId: string;
    /**
     * Unix ms when the daemon emitted the event.
     */
    at: number;
    seq: number;
}
/**
 * A stored message.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Message".
 */
export interface Message {
    agentId: string;
    blocks: Block[];
    createdAt: number;
    id: string;
    role: Role;
    status: MessageStatus;
    /**
     * On an answer asked for with `outputSchema`: its final answer parsed, once it was
     * valid against the schema.
     */
    structuredOutput?: unknown;
    /**
     * A newer variant replaced this answer: listed, but no longer sent to the model.
     */
    superseded?: boolean;
    turn?: TurnOptions;
    updatedAt: number;
    usage?: Usage;
    /**
     * On an answer made by `regenerate`: the id of the first answer to the same user
     * message (all variants of one answer share it).
     */
    variantOf?: string;
}
/**
 * The choices a `sendMessage` made for its turn alone, kept on the answer.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "TurnOptions".
 */
export interface TurnOptions {
    /**
     * The model that answers.
     */
    model?: string;
    /**
     * The JSON Schema the final answer must be valid against.
     */
    outputSchema?: unknown;
    /**
     * The provider that answers (the agent's own unless the send named another).
     */
    provider?: string;
    reasoningEffort?: ReasoningEffort;
}
/**
 * A piece of a running command's output, in a `toolProgress` event: the text one
 * stream wrote since the previous piece (whole characters; bytes that are not UTF-8
 * replaced by U+FFFD).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "LiveOutput".
 */
export interface LiveOutput {
    stream: OutputStream;
    text: string;
}
/**
 * What a retry notice says about the retry (`error` events with `retry`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RetryNotice".
 */
export interface RetryNotice {
    /**
     * This retry's number, from 1.
     */
    attempt: number;
    /**
     * The wait before the call is sent again, in milliseconds.
     */
    delayMs: number;
    /**
     * How many retries there may be.
     */
    max: number;
}
/**
 * A message waiting in an agent's queue: sent with `whenBusy` `queue`, or a steer not yet
 * joined to the running turn.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "QueuedMessage".
 */
export interface QueuedMessage {
    /**
     * The id its answer gets (a steer: the running answer's).
     */
    assistantMessageId: string;
    /**
     * The message as it will be stored.
     */
    content: Block[];
    /**
     * Unix ms.
     */
    createdAt: number;
    turn?: TurnOptions;
    /**
     * The id the user message gets (a steer: the id of its `steer` block).
     */
    userMessageId: string;
    whenBusy: WhenBusy;
}
/**
 * A workspace path `revertTo` left alone, and why.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RevertConflict".
 */
export interface RevertConflict {
    path: string;
    reason: string;
}
/**
 * The `params` of an `event` notification (jsonrpsee's subscription shape).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "EventNotification".
 */
export interface EventNotification {
    result: Event;
    subscription: unknown;
}
/**
 * Result of `exportAgent`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportResult".
 */
export interface ExportResult {
    /**
     * The markdown text, or the JSON export as text.
     */
    content: string;
    format: ExportFormat;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "InitializeResult".
 */
export interface InitializeResult {
    capabilities: Capabilities;
    protocolVersion: number;
    serverVersion: string;
}
/**
 * What `listMcpServers` shows of a server.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpServerInfo".
 */
export interface McpServerInfo {
    lastError?: string;
    /**
     * Starts after the first.
     */
    restarts: number;
    /**
     * While `failed`: the wait before the next start (it doubles while the server keeps
     * failing, and starts over once a server stayed up long enough).
     */
    retryDelayMs?: number;
    /**
     * Tools of its last listing that are left out, with the reason.
     */
    skippedTools?: McpSkippedTool[];
    source: McpSource;
    spec: McpServerSpec;
    status: McpServerStatus;
    /**
     * The last lines the server wrote to stderr (stdio servers).
     */
    stderrTail?: string[];
    /**
     * Its tools (the cached list while it is down).
     */
    tools: McpToolName[];
}
/**
 * A tool a server listed that is not offered to any model, and why (no name, no usable
 * input schema, a schema over the size limit, a name listed twice, ...).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpSkippedTool".
 */
export interface McpSkippedTool {
    /**
     * Its name, when it had one (cut to 200 characters).
     */
    name?: string;
    reason: string;
}
/**
 * An MCP server's configuration. The same shape in the config file (`[[mcp_servers]]`,
 * where snake_case names are accepted too) and in `addMcpServer`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpServerSpec".
 */
export interface McpServerSpec {
    /**
     * Only these agents (by id) are offered the server's tools; empty: every agent (as
     * their `enabledMcpTools` allow). `agentd acp` adds an editor's servers this way.
     */
    agents?: string[];
    args?: string[];
    /**
     * Tools (by the server's names; `*` for all) that run without a permission prompt.
     */
    autoApprove?: string[];
    /**
     * Start with the daemon (else when an agent with tools first runs).
     */
    autoStart: boolean;
    /**
     * Seconds one tool call may take (default 120).
     */
    callTimeoutSecs?: number;
    /**
     * stdio: the program to run.
     */
    command?: string;
    /**
     * stdio: working directory.
     */
    cwd?: string;
    enabled: boolean;
    /**
     * stdio: environment added to the daemon's.
     */
    env?: {
        [k: string]: string | undefined;
    };
    /**
     * http: headers sent with every request.
     */
    headers?: {
        [k: string]: string | undefined;
    };
    /**
     * Unique; letters, digits, `-` and `_` (it prefixes tool names on a clash).
     */
    name: string;
    /**
     * Seconds to start and list tools (default 10).
     */
    startupTimeoutSecs?: number;
    transport: McpTransport;
    /**
     * http: the endpoint, e.g. `http://127.0.0.1:3001/mcp`.
     */
    url?: string;
}
/**
 * One tool of a server.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpToolName".
 */
export interface McpToolName {
    /**
     * The name the model sees: letters, digits, `_` and `-`, at most 64, unique across
     * servers and builtins (`server__tool` when two servers share a name).
     */
    exposedName: string;
    /**
     * The server's name for it.
     */
    name: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "McpServerList".
 */
export interface McpServerList {
    servers: McpServerInfo[];
}
/**
 * A message whose text holds the query.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "MessageHit".
 */
export interface MessageHit {
    agentId: string;
    createdAt: number;
    messageId: string;
    role: Role;
    /**
     * The text around the first match (about 160 characters, `…` where it was cut).
     */
    snippet: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "MessageList".
 */
export interface MessageList {
    messages: Message[];
    /**
     * Pass as `cursor`, with the same `order`, to get the next page; absent on the last
     * page.
     */
    nextCursor?: string;
}
/**
 * What `searchMessages` found, newest first.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "MessageSearch".
 */
export interface MessageSearch {
    hits: MessageHit[];
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ModelInfo".
 */
export interface ModelInfo {
    contextWindow: number;
    /**
     * PDF documents go to the model natively; without it they are named by path.
     */
    documents: boolean;
    id: string;
    /**
     * USD per million input tokens, when the config gives a price (`getUsage` costs).
     */
    inputPrice?: number;
    maxOutputTokens: number;
    /**
     * USD per million output tokens, when the config gives a price.
     */
    outputPrice?: number;
    provider: string;
    reasoning: boolean;
    /**
     * With `listModels {served: true}`: whether the provider lists this model (a model it
     * lists that the config does not name is added with `served: true`).
     */
    served?: boolean;
    /**
     * Native function calling.
     */
    tools: boolean;
    vision: boolean;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ModelList".
 */
export interface ModelList {
    /**
     * With `served: true`: the providers that could not say what they serve.
     */
    errors?: ModelListError[];
    models: ModelInfo[];
}
/**
 * A provider that could not say which models it serves (`listModels {served: true}`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ModelListError".
 */
export interface ModelListError {
    /**
     * What went wrong, in the provider's words where it gave some.
     */
    error: string;
    provider: string;
}
/**
 * The usage of one provider's model (`getUsage`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ModelUsage".
 */
export interface ModelUsage {
    answers: number;
    /**
     * USD; absent when the config gives the model no price.
     */
    costUsd?: number;
    inputTokens: number;
    model: string;
    outputTokens: number;
    provider: string;
}
/**
 * A tool call waiting for a client's answer: the prompt exactly as `permissionRequested`
 * sent it.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PendingPermission".
 */
export interface PendingPermission {
    arguments: unknown;
    command?: string;
    commandDisplay?: string;
    description: string;
    messageId: string;
    /**
     * A granted command gets the network in its sandbox.
     */
    networkAccess?: boolean;
    /**
     * A granted command runs outside the OS sandbox.
     */
    outsideSandbox?: boolean;
    paths?: string[];
    permissionType: PermissionLevel;
    rememberable: boolean;
    risk?: string;
    signature?: string[];
    toolCallId: string;
    toolName: string;
}
/**
 * A question call waiting for its answer, as `getSession` lists it.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PendingQuestion".
 */
export interface PendingQuestion {
    messageId: string;
    questions: Question[];
    toolCallId: string;
}
/**
 * `handlePermissionResponse`'s answer: `{}`. The answer was taken (it was the first; a
 * later one gets `permissionNotPending`), saved with the call, and the run resumed.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PermissionResponseResult".
 */
export interface PermissionResponseResult {
}
/**
 * `getPlan`'s answer: the agent's plan (empty when it never wrote one).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "Plan".
 */
export interface Plan {
    agentId: string;
    items: PlanItem[];
    /**
     * Unix ms of the last `todo_write`; absent when there was none.
     */
    updatedAt?: number;
}
/**
 * A profile an agent can be given (`createAgent`/`updateAgent` `profile`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ProfileInfo".
 */
export interface ProfileInfo {
    description: string;
    maxOutputTokens?: number;
    /**
     * The MCP servers (`server`) or tools (`server/tool`) it offers; absent: all of them.
     */
    mcpTools?: string[];
    name: string;
    permissions?: PermissionRules;
    sandbox?: SandboxMode;
    source: ProfileSource;
    /**
     * Model settings used when the agent's settings name none.
     */
    temperature?: number;
    /**
     * The builtin tools it offers (names as in `listTools`). A name this daemon has no
     * tool for is listed but offered to no model.
     */
    tools: string[];
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ProfileList".
 */
export interface ProfileList {
    profiles: ProfileInfo[];
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ProviderInfo".
 */
export interface ProviderInfo {
    /**
     * The environment variable the key is read from, if any.
     */
    apiKeyEnv?: string;
    baseUrl?: string;
    /**
     * Model used when an agent names this provider but no model.
     */
    defaultModel: string;
    /**
     * Whether an API key is present. The key itself never leaves the daemon.
     */
    hasApiKey: boolean;
    id: string;
    /**
     * True for the provider new agents get when `createAgent` names none.
     */
    isDefault: boolean;
    kind: string;
    /**
     * Where this provider comes from: `builtin`, `preset` (an API key in the environment)
     * or `config`.
     */
    source: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ProviderList".
 */
export interface ProviderList {
    providers: ProviderInfo[];
}
/**
 * Result of `regenerate`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RegenerateResult".
 */
export interface RegenerateResult {
    /**
     * The new variant, being written.
     */
    assistantMessageId: string;
}
/**
 * Result of `removeMcpServer`: `{}`, sent once the server is stopped and forgotten.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RemovedResult".
 */
export interface RemovedResult {
}
/**
 * The exact body of a model call, for debugging.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RequestPreview".
 */
export interface RequestPreview {
    context: ContextReport;
    /**
     * Estimated tokens of the request as sent (a heuristic fitted against the o200k
     * tokenizer, corrected by what the provider reported for earlier calls).
     */
    estimatedTokens: number;
    model: string;
    provider: string;
    /**
     * The request body as the provider would receive it.
     */
    request: unknown;
}
/**
 * Result of `revertTo`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RevertResult".
 */
export interface RevertResult {
    /**
     * Paths the runs changed that were left alone: changed by someone else since the
     * agent's last step, not kept (over 4 MiB), or not safely writable (a link on the way).
     */
    conflicts: RevertConflict[];
    /**
     * Messages removed from the conversation (the user message and every later one; 0
     * with `conversation: false`).
     */
    removedMessages: number;
    /**
     * Workspace paths put back as they were before the message (rewritten, recreated,
     * or removed when the runs created them), in path order.
     */
    restored: string[];
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SendMessageResult".
 */
export interface SendMessageResult {
    /**
     * The answer's message: of a queued message, the id its answer will have; of a
     * steer, the running answer it joins.
     */
    assistantMessageId: string;
    delivery: Delivery;
    userMessageId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SessionInfo".
 */
export interface SessionInfo {
    agentId: string;
    /**
     * The agent's latest event seq: subscribe with `sinceSeq` = this to get only new events.
     */
    lastSeq: number;
    pendingPermissions: PendingPermission[];
    /**
     * Questions of the model waiting for the user (`answerQuestion`).
     */
    pendingQuestions: PendingQuestion[];
    /**
     * Messages queued behind the run and steers not yet joined, in the order they run.
     */
    queue: QueuedMessage[];
    /**
     * The assistant message of the active (or suspended) run.
     */
    runMessageId?: string;
    status: SessionStatus;
    /**
     * Steps taken by the current run (a step is one model call and its tool calls).
     */
    step: number;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SessionStatusResult".
 */
export interface SessionStatusResult {
    status: SessionStatus;
}
/**
 * A skill an agent can load with the `skill` tool: a folder with a `SKILL.md`.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SkillInfo".
 */
export interface SkillInfo {
    description: string;
    /**
     * From the front matter: `[a-z0-9-]{1,64}`, unique among the skills shown.
     */
    name: string;
    /**
     * The skill's folder (absolute), where the files beside `SKILL.md` are.
     */
    path: string;
    source: SkillSource;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SkillList".
 */
export interface SkillList {
    errors: SkillProblem[];
    /**
     * The skills the agent has, in the order its system prompt lists them.
     */
    skills: SkillInfo[];
}
/**
 * A `SKILL.md` (or a skill folder) that could not be used, and why. It is left out of
 * the system prompt and the `skill` tool; nothing else is affected.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SkillProblem".
 */
export interface SkillProblem {
    /**
     * The file or folder (absolute).
     */
    path: string;
    /**
     * What is wrong, e.g. `missing description`, `symlink: ...`, `too large: ...`.
     */
    reason: string;
}
/**
 * The outcome of `testProvider`: one tiny request to the provider.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "TestProviderResult".
 */
export interface TestProviderResult {
    /**
     * The provider's error text, when it failed.
     */
    error?: string;
    errorKind?: string;
    /**
     * Milliseconds until the first streamed piece arrived.
     */
    latencyMs?: number;
    model: string;
    /**
     * The provider answered (streamed an answer to its end).
     */
    ok: boolean;
    provider: string;
    /**
     * What the model answered (cut to 200 characters).
     */
    reply?: string;
    /**
     * How many times the request was retried.
     */
    retries: number;
    /**
     * Milliseconds until the answer ended (or failed).
     */
    totalMs: number;
}
/**
 * A tool an agent can be offered.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ToolInfo".
 */
export interface ToolInfo {
    description: string;
    /**
     * Offered to the agent's model (always true without `agentId`, unless the per-request
     * cap leaves the tool out).
     */
    enabled: boolean;
    name: string;
    /**
     * An MCP tool's name on its server, which `name` (what the model sees: letters,
     * digits, `_` and `-`, at most 64, unique) maps back to. Absent for builtins.
     */
    originalName?: string;
    permissionLevel: PermissionLevel;
    sandbox?: SandboxMode;
    /**
     * JSON Schema of the arguments.
     */
    schema: unknown;
    /**
     * `builtin` or `mcp:<server>`.
     */
    source: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ToolList".
 */
export interface ToolList {
    tools: ToolInfo[];
}
/**
 * Result of `getTurnDiff`: the workspace files one answer's tool calls changed, from
 * before its first call that could change files to after its last step.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "TurnDiff".
 */
export interface TurnDiff {
    /**
     * In path order; empty when the answer changed nothing (or ran no such call).
     */
    files: TurnFile[];
}
/**
 * One file (or symbolic link) an answer changed.
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "TurnFile".
 */
export interface TurnFile {
    /**
     * A unified diff with git's headers (`a/path`, `b/path`, `/dev/null`); a binary
     * file, or one not kept (over 4 MiB), is one line saying so; a link shows as
     * `symbolic link to <target>`.
     */
    diff: string;
    /**
     * Relative to the agent's workspace, `/`-separated.
     */
    path: string;
    status: TurnFileStatus;
}
/**
 * Tokens the answers used and what they cost (`getUsage`).
 *
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "UsageReport".
 */
export interface UsageReport {
    /**
     * Answers that reported their usage.
     */
    answers: number;
    byAgent: AgentUsage[];
    byModel: ModelUsage[];
    /**
     * USD, summed over the models the config gives a price; absent when none has one
     * (`unpriced` names the others).
     */
    costUsd?: number;
    inputTokens: number;
    outputTokens: number;
    /**
     * `provider/model` of the models used that have no price in the config.
     */
    unpriced: string[];
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "InitializeParams".
 */
export interface InitializeParams {
    /**
     * The client's name, for the daemon's log.
     */
    clientName?: string | null;
    clientVersion?: string | null;
    /**
     * The protocol version the client speaks; a newer one than the daemon's is refused
     * (`notSupported`).
     */
    protocolVersion?: number | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CreateAgentParams".
 */
export interface CreateAgentParams {
    /**
     * Default `"New agent"` (then the first message names it).
     */
    title?: string | null;
    /**
     * Default `chat`.
     */
    mode?: "chat" | "agent" | "acp" | null;
    /**
     * A provider id of `listProviders`; default: the daemon's default provider.
     */
    provider?: string | null;
    /**
     * Default: the provider's default model.
     */
    model?: string | null;
    systemPrompt?: string | null;
    /**
     * An existing absolute folder the agent's tools work in; default: a folder of its own.
     */
    workspace?: string | null;
    /**
     * Stored and returned, not used yet.
     */
    profile?: string | null;
    /**
     * Per-agent settings. Every field is optional: an absent field means "use the daemon's
     * default". `updateAgent` merges the given fields into the stored ones (JSON merge patch:
     * `null` removes a field). Unknown fields are rejected so a typo is an error, not a no-op.
     */
    settings?: {
        /**
         * Fold old rounds into a model-written summary when the context fills up (default on).
         */
        autoSummarize?: boolean | null;
        /**
         * After the first answer, let the model write a short title (replacing the one taken
         * from the first message). Default off.
         */
        autoTitle?: boolean | null;
        /**
         * MCP servers (`name`) or single MCP tools (`server/tool`) this agent may use; absent:
         * all of them.
         */
        enabledMcpTools?: string[] | null;
        /**
         * When set, only these tools are offered to the model (names as in `listTools`).
         */
        enabledTools?: string[] | null;
        /**
         * Commands run at points of this agent's runs, after the config's `[[hooks]]`.
         * Dropped by `importAgent` (an export never brings commands to run).
         */
        hooks?: {
            /**
             * Run with `bash -c`.
             */
            command: string;
            /**
             * When a hook runs.
             */
            event: "beforeTool" | "afterTool" | "userMessage" | "runFinished";
            /**
             * Tool names it applies to (`beforeTool`/`afterTool`): `*` matches any run of
             * characters, `|` separates alternatives; absent: every tool.
             */
            matcher?: string | null;
            /**
             * Seconds before it is killed (default 30, at most 600).
             */
            timeoutSecs?: number | null;
        }[] | null;
        /**
         * Cap on the tokens the model may write in one call.
         */
        maxOutputTokens?: number | null;
        /**
         * Steps (model calls) one run may take before it stops with `maxSteps` (default 50).
         */
        maxSteps?: number | null;
        /**
         * Per-level permission rules overriding the config file's.
         */
        permissions?: {
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            execute?: "allow" | "ask" | "deny" | null;
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            network?: "allow" | "ask" | "deny" | null;
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            read?: "allow" | "ask" | "deny" | null;
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            write?: "allow" | "ask" | "deny" | null;
        } | null;
        /**
         * The OS sandbox the agent's `bash` commands run in (over its profile's and the
         * config's `[sandbox] mode`).
         */
        sandbox?: ("workspace-write" | "read-only" | "off") | null;
        /**
         * Sampling temperature passed to the model.
         */
        temperature?: number | null;
    } | null;
    /**
     * With mode `acp` (and only then): the external agent that answers this one.
     */
    acp?: {
        args?: string[];
        /**
         * The program to run (looked up in `PATH`), speaking ACP on its stdin/stdout.
         */
        command?: string | null;
        /**
         * Variables added to the environment it gets (the daemon's own environment minus
         * secrets, as MCP stdio servers get it). In answers, values are masked.
         */
        env?: {
            [k: string]: string | undefined;
        };
        /**
         * The name of an `[[acp_agents]]` entry of the config.
         */
        name?: string | null;
    } | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "GetAgentParams".
 */
export interface GetAgentParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListAgentsParams".
 */
export interface ListAgentsParams {
    /**
     * `nextCursor` of the previous page.
     */
    cursor?: string | null;
    /**
     * Page size: default 50, at most 500 (more is cut to 500); 0 is refused.
     */
    limit?: number | null;
    /**
     * Only agents whose title contains this text.
     */
    search?: string | null;
    pinned?: boolean | null;
    /**
     * `true` lists archived agents (only them); default: unarchived ones.
     */
    archived?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "UpdateAgentParams".
 */
export interface UpdateAgentParams {
    agentId: string;
    title?: string | null;
    pinned?: boolean | null;
    archived?: boolean | null;
    provider?: string | null;
    model?: string | null;
    systemPrompt?: string | null;
    /**
     * A JSON merge patch of the settings: the given fields replace the stored ones,
     * `null` removes one.
     */
    settings?: {
        /**
         * Fold old rounds into a model-written summary when the context fills up (default on).
         */
        autoSummarize?: boolean | null;
        /**
         * After the first answer, let the model write a short title (replacing the one taken
         * from the first message). Default off.
         */
        autoTitle?: boolean | null;
        /**
         * MCP servers (`name`) or single MCP tools (`server/tool`) this agent may use; absent:
         * all of them.
         */
        enabledMcpTools?: string[] | null;
        /**
         * When set, only these tools are offered to the model (names as in `listTools`).
         */
        enabledTools?: string[] | null;
        /**
         * Commands run at points of this agent's runs, after the config's `[[hooks]]`.
         * Dropped by `importAgent` (an export never brings commands to run).
         */
        hooks?: {
            /**
             * Run with `bash -c`.
             */
            command: string;
            /**
             * When a hook runs.
             */
            event: "beforeTool" | "afterTool" | "userMessage" | "runFinished";
            /**
             * Tool names it applies to (`beforeTool`/`afterTool`): `*` matches any run of
             * characters, `|` separates alternatives; absent: every tool.
             */
            matcher?: string | null;
            /**
             * Seconds before it is killed (default 30, at most 600).
             */
            timeoutSecs?: number | null;
        }[] | null;
        /**
         * Cap on the tokens the model may write in one call.
         */
        maxOutputTokens?: number | null;
        /**
         * Steps (model calls) one run may take before it stops with `maxSteps` (default 50).
         */
        maxSteps?: number | null;
        /**
         * Per-level permission rules overriding the config file's.
         */
        permissions?: {
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            execute?: "allow" | "ask" | "deny" | null;
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            network?: "allow" | "ask" | "deny" | null;
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            read?: "allow" | "ask" | "deny" | null;
            /**
             * What happens to a tool call of a level: run it, ask a client, or refuse it.
             */
            write?: "allow" | "ask" | "deny" | null;
        } | null;
        /**
         * The OS sandbox the agent's `bash` commands run in (over its profile's and the
         * config's `[sandbox] mode`).
         */
        sandbox?: ("workspace-write" | "read-only" | "off") | null;
        /**
         * Sampling temperature passed to the model.
         */
        temperature?: number | null;
    } | null;
    /**
     * A profile by name (`listProfiles`); `""` removes the agent's profile.
     */
    profile?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SetAgentModeParams".
 */
export interface SetAgentModeParams {
    agentId: string;
    /**
     * `chat` or `agent` (`acp` is refused: an agent does not switch to or from it).
     */
    mode: "chat" | "agent" | "acp";
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "DeleteAgentParams".
 */
export interface DeleteAgentParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ForkAgentParams".
 */
export interface ForkAgentParams {
    agentId: string;
    /**
     * The last message the fork's history copies; default: all of them.
     */
    messageId?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ExportAgentParams".
 */
export interface ExportAgentParams {
    agentId: string;
    /**
     * What `exportAgent` produces.
     */
    format: "markdown" | "json";
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ImportAgentParams".
 */
export interface ImportAgentParams {
    /**
     * A JSON export (`AgentExport`), or its text as `exportAgent` returned it in
     * `content`.
     */
    data: unknown;
    /**
     * An existing absolute folder for the new agent to work in.
     */
    workspace?: string | null;
    /**
     * Keep the exported workspace (it must exist here).
     */
    keepWorkspace?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListMessagesParams".
 */
export interface ListMessagesParams {
    agentId: string;
    /**
     * `nextCursor` of the previous page, used with the same `order`.
     */
    cursor?: string | null;
    /**
     * Page size: default 50, at most 500; 0 is refused.
     */
    limit?: number | null;
    /**
     * Default `asc` (oldest first).
     */
    order?: "asc" | "desc" | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "GetUsageParams".
 */
export interface GetUsageParams {
    agentId?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SearchMessagesParams".
 */
export interface SearchMessagesParams {
    /**
     * At least one character that is not whitespace.
     */
    query: string;
    agentId?: string | null;
    /**
     * At most this many hits: default 50, at most 500; 0 is refused.
     */
    limit?: number | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SendMessageParams".
 */
export interface SendMessageParams {
    agentId: string;
    /**
     * What a client sends in `sendMessage`: plain text, or a list of parts.
     */
    content: string | ({
        text: string;
        type: "text";
    } | {
        data?: string | null;
        mimeType?: string | null;
        path?: string | null;
        type: "image";
        uri?: string | null;
    } | {
        path: string;
        type: "file";
    })[];
    /**
     * An idempotency key: the same key again returns the first send's ids and does
     * nothing else.
     */
    clientRequestId?: string | null;
    /**
     * Default `refuse`.
     */
    whenBusy?: ("refuse" | "queue" | "steer") | null;
    /**
     * This turn only: the provider that answers (its default model unless `model`
     * is given too); checked like `updateAgent`'s.
     */
    provider?: string | null;
    /**
     * This turn only: the model that answers.
     */
    model?: string | null;
    /**
     * This turn only: how much a reasoning model thinks (ignored for a model the
     * capability table marks as not reasoning).
     */
    reasoningEffort?: "low" | "medium" | "high" | null;
    /**
     * This turn only: a JSON Schema (an object, at most 64 KiB) the final answer must
     * be valid JSON against; one corrective retry, then the run ends in an error.
     */
    outputSchema?: {
        [k: string]: unknown | undefined;
    } | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CancelLoopParams".
 */
export interface CancelLoopParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CancelQueuedMessageParams".
 */
export interface CancelQueuedMessageParams {
    agentId: string;
    /**
     * The `userMessageId` `sendMessage` answered; absent: every queued message.
     */
    userMessageId?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CompactContextParams".
 */
export interface CompactContextParams {
    agentId: string;
    /**
     * Rounds kept word for word (a round starts at a user message); at least 1.
     */
    keepRounds?: number | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ContinueLoopParams".
 */
export interface ContinueLoopParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "HandlePermissionResponseParams".
 */
export interface HandlePermissionResponseParams {
    /**
     * From the prompt.
     */
    messageId: string;
    /**
     * From the prompt.
     */
    toolCallId: string;
    granted: boolean;
    /**
     * If given, must be the prompt's (a guard against answering the wrong prompt).
     */
    permissionType?: "read" | "write" | "execute" | "network" | null;
    /**
     * Default `once`.
     */
    remember?: ("once" | "session" | "always") | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AnswerQuestionParams".
 */
export interface AnswerQuestionParams {
    /**
     * From `questionRequested`.
     */
    messageId: string;
    /**
     * From `questionRequested`.
     */
    toolCallId: string;
    /**
     * One answer per question, in order (unless `declined`).
     */
    answers?: {
        /**
         * Labels of the options picked (at most one unless the question is multiSelect).
         */
        selected?: string[];
        /**
         * The user's own words.
         */
        text?: string | null;
    }[] | null;
    /**
     * The user declines to answer; the model is told so.
     */
    declined?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "GetPlanParams".
 */
export interface GetPlanParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "PauseSessionParams".
 */
export interface PauseSessionParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ResumeSessionParams".
 */
export interface ResumeSessionParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListToolsParams".
 */
export interface ListToolsParams {
    /**
     * With an agent, `enabled` says what its model is offered.
     */
    agentId?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "GetMessageRequestPreviewParams".
 */
export interface GetMessageRequestPreviewParams {
    agentId: string;
    messageId?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SetContextEdgeParams".
 */
export interface SetContextEdgeParams {
    agentId: string;
    messageId?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RegenerateParams".
 */
export interface RegenerateParams {
    agentId: string;
    /**
     * The agent's latest answer.
     */
    messageId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "GetTurnDiffParams".
 */
export interface GetTurnDiffParams {
    agentId: string;
    /**
     * An assistant message of the agent.
     */
    messageId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RevertToParams".
 */
export interface RevertToParams {
    agentId: string;
    /**
     * A user message of the agent.
     */
    messageId: string;
    /**
     * Put the workspace files back (default true).
     */
    files?: boolean | null;
    /**
     * Remove the message and every later one from the conversation (default true).
     */
    conversation?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListMcpServersParams".
 */
export interface ListMcpServersParams {
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "AddMcpServerParams".
 */
export interface AddMcpServerParams {
    /**
     * An MCP server's configuration. The same shape in the config file (`[[mcp_servers]]`,
     * where snake_case names are accepted too) and in `addMcpServer`.
     */
    spec: {
        /**
         * Only these agents (by id) are offered the server's tools; empty: every agent (as
         * their `enabledMcpTools` allow). `agentd acp` adds an editor's servers this way.
         */
        agents?: string[];
        args?: string[];
        /**
         * Tools (by the server's names; `*` for all) that run without a permission prompt.
         */
        autoApprove?: string[];
        /**
         * Start with the daemon (else when an agent with tools first runs).
         */
        autoStart?: boolean;
        /**
         * Seconds one tool call may take (default 120).
         */
        callTimeoutSecs?: number | null;
        /**
         * stdio: the program to run.
         */
        command?: string | null;
        /**
         * stdio: working directory.
         */
        cwd?: string | null;
        enabled?: boolean;
        /**
         * stdio: environment added to the daemon's.
         */
        env?: {
            [k: string]: string | undefined;
        };
        /**
         * http: headers sent with every request.
         */
        headers?: {
            [k: string]: string | undefined;
        };
        /**
         * Unique; letters, digits, `-` and `_` (it prefixes tool names on a clash).
         */
        name: string;
        /**
         * Seconds to start and list tools (default 10).
         */
        startupTimeoutSecs?: number | null;
        /**
         * How the daemon talks to a server.
         */
        transport?: "stdio" | "http";
        /**
         * http: the endpoint, e.g. `http://127.0.0.1:3001/mcp`.
         */
        url?: string | null;
    };
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "UpdateMcpServerParams".
 */
export interface UpdateMcpServerParams {
    name: string;
    /**
     * The spec fields to replace (any of `McpServerSpec`'s but `name`).
     */
    changes: {
        [k: string]: unknown | undefined;
    };
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RemoveMcpServerParams".
 */
export interface RemoveMcpServerParams {
    name: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "RestartMcpServerParams".
 */
export interface RestartMcpServerParams {
    name: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "GetSessionParams".
 */
export interface GetSessionParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListProfilesParams".
 */
export interface ListProfilesParams {
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListSkillsParams".
 */
export interface ListSkillsParams {
    agentId: string;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListProvidersParams".
 */
export interface ListProvidersParams {
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "ListModelsParams".
 */
export interface ListModelsParams {
    /**
     * Only this provider's models.
     */
    provider?: string | null;
    /**
     * Also ask each provider which models it serves (one request each, up to 10 s).
     */
    served?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "TestProviderParams".
 */
export interface TestProviderParams {
    /**
     * Default: the daemon's default provider.
     */
    provider?: string | null;
    /**
     * Default: the provider's default model.
     */
    model?: string | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "CompleteParams".
 */
export interface CompleteParams {
    /**
     * Default: the daemon's default provider.
     */
    provider?: string | null;
    /**
     * Default: the provider's default model.
     */
    model?: string | null;
    /**
     * The conversation (ending with a user message); or give `prompt`.
     */
    messages?: {
        content: string;
        role: "user" | "assistant";
    }[] | null;
    /**
     * One user message; or give `messages`.
     */
    prompt?: string | null;
    system?: string | null;
    maxTokens?: number | null;
    temperature?: number | null;
    /**
     * Also send the answer's pieces as they come, as `completionDelta` notifications
     * (`{requestId, delta}`) to the calling connection, before the response.
     */
    stream?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "SubscribeParams".
 */
export interface SubscribeParams {
    /**
     * One agent's events; absent: every agent's (and the daemon's own events).
     */
    agentId?: string | null;
    /**
     * Replay the agent's events after this seq first (needs `agentId`).
     */
    sinceSeq?: number | null;
    /**
     * Start with a `snapshot` event: the agent's latest message as of the agent's
     * latest seq, then the events after it (needs `agentId`; not with `sinceSeq`).
     */
    snapshot?: boolean | null;
}
/**
 * This interface was referenced by `AgentdSchema`'s JSON-Schema
 * via the `definition` "UnsubscribeParams".
 */
export interface UnsubscribeParams {
    /**
     * A subscription id as `subscribe` answered it.
     */
    subscription: number | string;
}
/** Every method of the schema with its params and result. */
export interface GeneratedMethods {
    "initialize": {
        params: InitializeParams;
        result: InitializeResult;
    };
    "createAgent": {
        params: CreateAgentParams;
        result: Agent;
    };
    "getAgent": {
        params: GetAgentParams;
        result: Agent;
    };
    "listAgents": {
        params: ListAgentsParams;
        result: AgentList;
    };
    "updateAgent": {
        params: UpdateAgentParams;
        result: Agent;
    };
    "setAgentMode": {
        params: SetAgentModeParams;
        result: Agent;
    };
    "deleteAgent": {
        params: DeleteAgentParams;
        result: DeleteAgentResult;
    };
    "forkAgent": {
        params: ForkAgentParams;
        result: Agent;
    };
    "exportAgent": {
        params: ExportAgentParams;
        result: ExportResult;
    };
    "importAgent": {
        params: ImportAgentParams;
        result: Agent;
    };
    "listMessages": {
        params: ListMessagesParams;
        result: MessageList;
    };
    "getUsage": {
        params: GetUsageParams;
        result: UsageReport;
    };
    "searchMessages": {
        params: SearchMessagesParams;
        result: MessageSearch;
    };
    "sendMessage": {
        params: SendMessageParams;
        result: SendMessageResult;
    };
    "cancelLoop": {
        params: CancelLoopParams;
        result: CancelLoopResult;
    };
    "cancelQueuedMessage": {
        params: CancelQueuedMessageParams;
        result: CancelQueuedResult;
    };
    "compactContext": {
        params: CompactContextParams;
        result: CompactContextResult;
    };
    "continueLoop": {
        params: ContinueLoopParams;
        result: ContinueLoopResult;
    };
    "handlePermissionResponse": {
        params: HandlePermissionResponseParams;
        result: PermissionResponseResult;
    };
    "answerQuestion": {
        params: AnswerQuestionParams;
        result: AnswerQuestionResult;
    };
    "getPlan": {
        params: GetPlanParams;
        result: Plan;
    };
    "pauseSession": {
        params: PauseSessionParams;
        result: SessionStatusResult;
    };
    "resumeSession": {
        params: ResumeSessionParams;
        result: SessionStatusResult;
    };
    "listTools": {
        params: ListToolsParams;
        result: ToolList;
    };
    "getMessageRequestPreview": {
        params: GetMessageRequestPreviewParams;
        result: RequestPreview;
    };
    "setContextEdge": {
        params: SetContextEdgeParams;
        result: Agent;
    };
    "regenerate": {
        params: RegenerateParams;
        result: RegenerateResult;
    };
    "getTurnDiff": {
        params: GetTurnDiffParams;
        result: TurnDiff;
    };
    "revertTo": {
        params: RevertToParams;
        result: RevertResult;
    };
    "listMcpServers": {
        params: ListMcpServersParams;
        result: McpServerList;
    };
    "addMcpServer": {
        params: AddMcpServerParams;
        result: McpServerInfo;
    };
    "updateMcpServer": {
        params: UpdateMcpServerParams;
        result: McpServerInfo;
    };
    "removeMcpServer": {
        params: RemoveMcpServerParams;
        result: RemovedResult;
    };
    "restartMcpServer": {
        params: RestartMcpServerParams;
        result: McpServerInfo;
    };
    "getSession": {
        params: GetSessionParams;
        result: SessionInfo;
    };
    "listProfiles": {
        params: ListProfilesParams;
        result: ProfileList;
    };
    "listSkills": {
        params: ListSkillsParams;
        result: SkillList;
    };
    "listProviders": {
        params: ListProvidersParams;
        result: ProviderList;
    };
    "listModels": {
        params: ListModelsParams;
        result: ModelList;
    };
    "testProvider": {
        params: TestProviderParams;
        result: TestProviderResult;
    };
    "complete": {
        params: CompleteParams;
        result: CompleteResult;
    };
    "subscribe": {
        params: SubscribeParams;
        result: SubscriptionId;
    };
    "unsubscribe": {
        params: UnsubscribeParams;
        result: UnsubscribeResult;
    };
}
/** Every method of the schema a client calls by name (all but the subscription's). */
export declare const GENERATED_METHOD_NAMES: readonly ["initialize", "createAgent", "getAgent", "listAgents", "updateAgent", "setAgentMode", "deleteAgent", "forkAgent", "exportAgent", "importAgent", "listMessages", "getUsage", "searchMessages", "sendMessage", "cancelLoop", "cancelQueuedMessage", "compactContext", "continueLoop", "handlePermissionResponse", "answerQuestion", "getPlan", "pauseSession", "resumeSession", "listTools", "getMessageRequestPreview", "setContextEdge", "regenerate", "getTurnDiff", "revertTo", "listMcpServers", "addMcpServer", "updateMcpServer", "removeMcpServer", "restartMcpServer", "getSession", "listProfiles", "listSkills", "listProviders", "listModels", "testProvider", "complete"];
