/** What an agent can do: `chat` (no tools), `agent` (tools), `acp` (reserved). */
export type AgentMode = "chat" | "agent" | "acp";
/** Runtime status of an agent's session. */
export type SessionStatus = "idle" | "generating" | "waiting_permission" | "waiting_question" | "paused" | "error";
export type PermissionLevel = "read" | "write" | "execute" | "network";
export type PermissionRule = "allow" | "ask" | "deny";
/** How long an answer to a permission prompt is remembered. */
export type Remember = "once" | "session" | "always";
export type Role = "user" | "assistant";
export type MessageStatus = "pending" | "streaming" | "waiting" | "done" | "cancelled" | "error" | "interrupted";
export type ToolCallStatus = "streaming" | "ready" | "waitingPermission" | "waitingAnswer" | "approved" | "running" | "success" | "error" | "denied" | "cancelled" | "interrupted";
export type LoopFinishReason = "completed" | "cancelled" | "maxSteps" | "maxTokens" | "waitingPermission" | "waitingQuestion" | "paused" | "refused" | "error";
export type ListOrder = "asc" | "desc";
export type ExportFormat = "markdown" | "json";
export type PlanStatus = "pending" | "in_progress" | "completed";
export type McpTransport = "stdio" | "http";
export type McpSource = "config" | "rpc";
export type McpServerStatus = "starting" | "ready" | "failed" | "stopped";
/** The stable kinds of RPC errors (`error.data.kind`). */
export type ErrorKind = "parseError" | "invalidRequest" | "methodNotFound" | "invalidParams" | "internal" | "agentNotFound" | "agentBusy" | "messageNotFound" | "permissionNotPending" | "inputTooLarge" | "providerNotConfigured" | "overloaded" | "shuttingDown" | "notSupported" | "invalidState" | "mcpServerNotFound" | "tooManySubscriptions" | "questionNotPending";
export interface PermissionRules {
    read?: PermissionRule;
    write?: PermissionRule;
    execute?: PermissionRule;
    network?: PermissionRule;
}
/** Per-agent settings; an absent field means the daemon's default. */
export interface AgentSettings {
    temperature?: number;
    maxOutputTokens?: number;
    maxSteps?: number;
    permissions?: PermissionRules;
    enabledTools?: string[];
    enabledMcpTools?: string[];
    autoTitle?: boolean;
    autoSummarize?: boolean;
}
export interface Agent {
    id: string;
    title: string;
    mode: AgentMode;
    provider: string;
    model: string;
    systemPrompt?: string;
    workspace?: string;
    profile?: string;
    settings: AgentSettings;
    pinned: boolean;
    archived: boolean;
    status: SessionStatus;
    contextEdge?: string;
    parentAgentId?: string;
    subagentType?: string;
    parentToolCallId?: string;
    forkMessageId?: string;
    createdAt: number;
    updatedAt: number;
}
export interface Usage {
    inputTokens: number;
    outputTokens: number;
}
export interface ToolCallResult {
    content: string;
    isError: boolean;
    offloadPath?: string;
    durationMs?: number;
}
export interface PermissionPrompt {
    permissionType: PermissionLevel;
    description: string;
    command?: string;
    commandDisplay?: string;
    signature?: string[];
    paths?: string[];
    risk?: string;
    rememberable: boolean;
}
export interface PermissionResolution {
    granted: boolean;
    remember: Remember;
    cancelled?: boolean;
}
export interface QuestionOption {
    label: string;
    description?: string;
}
export interface Question {
    question: string;
    header?: string;
    options: QuestionOption[];
    multiSelect?: boolean;
}
/** The answer to one question: labels picked and/or free text. */
export interface QuestionAnswer {
    selected?: string[];
    text?: string;
}
export interface QuestionResolution {
    answers?: QuestionAnswer[];
    declined?: boolean;
    cancelled?: boolean;
}
export type Block = {
    type: "text";
    text: string;
} | {
    type: "reasoning";
    text: string;
    signature?: string;
    redacted?: string;
} | {
    type: "image";
    mimeType: string;
    path: string;
} | {
    type: "toolCall";
    toolCallId: string;
    name: string;
    arguments: unknown;
    rawArguments?: string;
    status: ToolCallStatus;
    result?: ToolCallResult;
    permissionPaths?: string[];
    prompt?: PermissionPrompt;
    resolution?: PermissionResolution;
    questions?: Question[];
    answer?: QuestionResolution;
    signature?: string;
    providerCallId?: string;
} | {
    type: "error";
    message: string;
    kind: string;
};
export interface Message {
    id: string;
    agentId: string;
    role: Role;
    blocks: Block[];
    status: MessageStatus;
    createdAt: number;
    updatedAt: number;
    usage?: Usage;
    variantOf?: string;
    superseded?: boolean;
}
/** One part of `sendMessage` content. */
export type ContentPart = {
    type: "text";
    text: string;
} | {
    type: "image";
    data?: string;
    path?: string;
    mimeType?: string;
} | {
    type: "file";
    path: string;
};
/** What `sendMessage` takes: plain text or a list of parts. */
export type MessageContent = string | ContentPart[];
export interface PlanItem {
    content: string;
    status: PlanStatus;
    activeForm?: string;
}
export interface Plan {
    agentId: string;
    items: PlanItem[];
    updatedAt?: number;
}
export interface Capabilities {
    methods: string[];
    events: string[];
    modes: AgentMode[];
    maxFrameBytes: number;
    maxUserTextChars: number;
    replayWindow: number;
}
export interface InitializeResult {
    serverVersion: string;
    protocolVersion: number;
    capabilities: Capabilities;
}
export interface AgentList {
    agents: Agent[];
    nextCursor?: string;
}
export interface MessageList {
    messages: Message[];
    nextCursor?: string;
}
export interface SendMessageResult {
    userMessageId: string;
    assistantMessageId: string;
}
export interface CancelLoopResult {
    cancelled: boolean;
}
export interface ContinueLoopResult {
    assistantMessageId: string;
}
export interface RegenerateResult {
    assistantMessageId: string;
}
export interface SessionStatusResult {
    status: SessionStatus;
}
export interface PendingPermission extends PermissionPrompt {
    messageId: string;
    toolCallId: string;
    toolName: string;
    arguments: unknown;
}
export interface PendingQuestion {
    messageId: string;
    toolCallId: string;
    questions: Question[];
}
export interface SessionInfo {
    agentId: string;
    status: SessionStatus;
    runMessageId?: string;
    pendingPermissions: PendingPermission[];
    pendingQuestions?: PendingQuestion[];
    step: number;
    /** The agent's latest event seq: subscribe with `sinceSeq` = this to get only new events. */
    lastSeq: number;
}
export interface ToolInfo {
    name: string;
    description: string;
    schema: unknown;
    source: string;
    permissionLevel: PermissionLevel;
    enabled: boolean;
    originalName?: string;
}
export interface ToolList {
    tools: ToolInfo[];
}
export interface ContextReport {
    contextWindow: number;
    budget: number;
    systemTokens: number;
    toolsTokens: number;
    messagesTokens: number;
    estimatedBefore: number;
    stubbedResults: number;
    droppedRounds: number;
    hiddenByEdge: number;
    summarizedMessages: number;
    overBudget: boolean;
}
export interface RequestPreview {
    provider: string;
    model: string;
    request: unknown;
    estimatedTokens: number;
    context: ContextReport;
}
export interface ProviderInfo {
    id: string;
    kind: string;
    baseUrl?: string;
    hasApiKey: boolean;
    apiKeyEnv?: string;
    defaultModel: string;
    source: string;
    isDefault: boolean;
}
export interface ProviderList {
    providers: ProviderInfo[];
}
export interface ModelInfo {
    provider: string;
    id: string;
    contextWindow: number;
    maxOutputTokens: number;
    tools: boolean;
    vision: boolean;
    reasoning: boolean;
}
export interface ModelList {
    models: ModelInfo[];
}
export interface TestProviderResult {
    provider: string;
    model: string;
    ok: boolean;
    latencyMs?: number;
    totalMs: number;
    reply?: string;
    error?: string;
    errorKind?: string;
    retries: number;
}
export interface McpServerSpec {
    name: string;
    transport?: McpTransport;
    command?: string;
    args?: string[];
    env?: Record<string, string>;
    cwd?: string;
    url?: string;
    headers?: Record<string, string>;
    enabled?: boolean;
    autoStart?: boolean;
    autoApprove?: string[];
    startupTimeoutSecs?: number;
    callTimeoutSecs?: number;
}
export interface McpToolName {
    name: string;
    exposedName: string;
}
export interface McpSkippedTool {
    name?: string;
    reason: string;
}
export interface McpServerInfo {
    spec: McpServerSpec;
    source: McpSource;
    status: McpServerStatus;
    lastError?: string;
    stderrTail?: string[];
    tools: McpToolName[];
    skippedTools?: McpSkippedTool[];
    restarts: number;
    retryDelayMs?: number;
}
export interface McpServerList {
    servers: McpServerInfo[];
}
export interface ExportResult {
    format: ExportFormat;
    content: string;
}
/** `{}`: results of methods whose success is the answer itself. */
export type EmptyResult = Record<string, never>;
/** Fields every event carries. */
export interface EventBase {
    /** Per-agent sequence number: each event of an agent is exactly one above the last. */
    seq: number;
    /** The agent; `""` on daemon-level events and on an all-agents `resyncRequired`. */
    agentId: string;
    /** Unix ms when the daemon emitted the event. */
    at: number;
}
export interface StatusChangedEvent extends EventBase {
    type: "statusChanged";
    status: SessionStatus;
}
export interface UserMessageEvent extends EventBase {
    type: "userMessage";
    message: Message;
}
export interface MessageStartedEvent extends EventBase {
    type: "messageStarted";
    messageId: string;
}
export interface TextDeltaEvent extends EventBase {
    type: "textDelta";
    messageId: string;
    delta: string;
}
export interface ReasoningDeltaEvent extends EventBase {
    type: "reasoningDelta";
    messageId: string;
    delta: string;
}
export interface UsageEvent extends EventBase {
    type: "usage";
    messageId: string;
    inputTokens: number;
    outputTokens: number;
}
export interface ToolCallStartedEvent extends EventBase {
    type: "toolCallStarted";
    messageId: string;
    toolCallId: string;
    name: string;
}
export interface ToolCallArgsDeltaEvent extends EventBase {
    type: "toolCallArgsDelta";
    messageId: string;
    toolCallId: string;
    delta: string;
}
export interface ToolCallReadyEvent extends EventBase {
    type: "toolCallReady";
    messageId: string;
    toolCallId: string;
    name: string;
    arguments: unknown;
}
export interface PermissionRequestedEvent extends EventBase, PermissionPrompt {
    type: "permissionRequested";
    messageId: string;
    toolCallId: string;
    toolName: string;
    arguments: unknown;
}
export interface PermissionResolvedEvent extends EventBase {
    type: "permissionResolved";
    messageId: string;
    toolCallId: string;
    granted: boolean;
    remember: Remember;
    cancelled?: boolean;
}
export interface ToolProgressEvent extends EventBase {
    type: "toolProgress";
    messageId: string;
    toolCallId: string;
    progress: number;
    total?: number;
    message?: string;
}
export interface ToolResultEvent extends EventBase {
    type: "toolResult";
    messageId: string;
    toolCallId: string;
    status: ToolCallStatus;
    content: string;
    offloadPath?: string;
    durationMs: number;
}
export interface SummarizedEvent extends EventBase {
    type: "summarized";
    messageId: string;
    beforeTokens: number;
    afterTokens: number;
    summarizedMessages: number;
    throughMessageId: string;
}
export interface MessageCompletedEvent extends EventBase {
    type: "messageCompleted";
    messageId: string;
    status: MessageStatus;
}
export interface LoopFinishedEvent extends EventBase {
    type: "loopFinished";
    reason: LoopFinishReason;
    error?: string;
    /** The answer the run wrote (sent by daemons newer than this branch). */
    messageId?: string;
}
export interface ErrorEvent extends EventBase {
    type: "error";
    messageId?: string;
    message: string;
    kind: string;
    retryable: boolean;
    /** On a retry notice (daemons newer than this branch): which retry, and the wait. */
    retry?: {
        attempt: number;
        max: number;
        delayMs: number;
    };
}
export interface AgentCreatedEvent extends EventBase {
    type: "agentCreated";
    agent: Agent;
}
export interface AgentUpdatedEvent extends EventBase {
    type: "agentUpdated";
    agent: Agent;
}
export interface AgentDeletedEvent extends EventBase {
    type: "agentDeleted";
}
/** Events were lost: reload with getAgent/listMessages; live events go on at `seq + 1`. */
export interface ResyncRequiredEvent extends EventBase {
    type: "resyncRequired";
    reason: string;
}
export interface PlanUpdatedEvent extends EventBase {
    type: "planUpdated";
    items: PlanItem[];
}
export interface QuestionRequestedEvent extends EventBase {
    type: "questionRequested";
    messageId: string;
    toolCallId: string;
    questions: Question[];
}
export interface QuestionResolvedEvent extends EventBase {
    type: "questionResolved";
    messageId: string;
    toolCallId: string;
    answers?: QuestionAnswer[];
    declined?: boolean;
    cancelled?: boolean;
}
export interface BackgroundTaskFinishedEvent extends EventBase {
    type: "backgroundTaskFinished";
    childAgentId: string;
    toolCallId: string;
    status: LoopFinishReason;
}
export interface McpServerStatusEvent extends EventBase {
    type: "mcpServerStatus";
    server: string;
    status: McpServerStatus;
    error?: string;
}
/**
 * An `event` notification's payload, discriminated by `type`. A newer daemon may send types
 * not listed here; they are passed through as they come.
 */
export type AgentEvent = StatusChangedEvent | UserMessageEvent | MessageStartedEvent | TextDeltaEvent | ReasoningDeltaEvent | UsageEvent | ToolCallStartedEvent | ToolCallArgsDeltaEvent | ToolCallReadyEvent | PermissionRequestedEvent | PermissionResolvedEvent | ToolProgressEvent | ToolResultEvent | SummarizedEvent | MessageCompletedEvent | LoopFinishedEvent | ErrorEvent | AgentCreatedEvent | AgentUpdatedEvent | AgentDeletedEvent | ResyncRequiredEvent | PlanUpdatedEvent | QuestionRequestedEvent | QuestionResolvedEvent | BackgroundTaskFinishedEvent | McpServerStatusEvent;
export type EventType = AgentEvent["type"];
