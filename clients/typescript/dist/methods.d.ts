import type { Agent, AgentList, AgentMode, AgentSettings, CancelLoopResult, ContinueLoopResult, EmptyResult, ExportFormat, ExportResult, InitializeResult, ListOrder, McpServerInfo, McpServerList, McpServerSpec, MessageContent, MessageList, ModelList, PermissionLevel, Plan, ProviderList, QuestionAnswer, RegenerateResult, Remember, RequestPreview, SendMessageResult, SessionInfo, SessionStatusResult, TestProviderResult, ToolList } from "./types.js";
export interface InitializeParams {
    clientName?: string;
    clientVersion?: string;
    protocolVersion?: number;
}
export interface CreateAgentParams {
    title?: string;
    mode?: AgentMode;
    provider?: string;
    model?: string;
    systemPrompt?: string;
    /** An existing absolute folder; absent: a new folder of the agent's own. */
    workspace?: string;
    profile?: string;
    settings?: AgentSettings;
}
export interface AgentIdParams {
    agentId: string;
}
export interface ListAgentsParams {
    cursor?: string;
    limit?: number;
    search?: string;
    pinned?: boolean;
    archived?: boolean;
}
export interface UpdateAgentParams {
    agentId: string;
    title?: string;
    pinned?: boolean;
    archived?: boolean;
    provider?: string;
    model?: string;
    systemPrompt?: string;
    /** Merged into the stored settings (JSON merge patch: `null` removes a field). */
    settings?: {
        [K in keyof AgentSettings]?: AgentSettings[K] | null;
    };
}
export interface ForkAgentParams {
    agentId: string;
    messageId?: string;
}
export interface ExportAgentParams {
    agentId: string;
    format: ExportFormat;
}
export interface ImportAgentParams {
    /** The export object, or its text as `exportAgent` returned it in `content`. */
    data: unknown;
    workspace?: string;
    keepWorkspace?: boolean;
}
export interface ListMessagesParams {
    agentId: string;
    cursor?: string;
    limit?: number;
    order?: ListOrder;
}
export interface SendMessageParams {
    agentId: string;
    content: MessageContent;
    /** Makes a retry of the same send return the same ids. */
    clientRequestId?: string;
}
export interface HandlePermissionResponseParams {
    messageId: string;
    toolCallId: string;
    granted: boolean;
    permissionType?: PermissionLevel;
    remember?: Remember;
}
export interface AnswerQuestionParams {
    messageId: string;
    toolCallId: string;
    /** One answer per question, in order. */
    answers?: QuestionAnswer[];
    declined?: boolean;
}
export interface ListToolsParams {
    agentId?: string;
}
export interface MessageRequestPreviewParams {
    agentId: string;
    messageId?: string;
}
export interface SetContextEdgeParams {
    agentId: string;
    /** `null` shows everything to the model again. */
    messageId: string | null;
}
export interface RegenerateParams {
    agentId: string;
    messageId: string;
}
export interface AddMcpServerParams {
    spec: McpServerSpec;
}
export interface UpdateMcpServerParams {
    name: string;
    /** The spec fields to replace (not `name`). */
    changes: Partial<Omit<McpServerSpec, "name">>;
}
export interface McpServerNameParams {
    name: string;
}
export interface ListModelsParams {
    provider?: string;
}
export interface TestProviderParams {
    provider?: string;
    model?: string;
}
export interface SubscribeParams {
    agentId?: string;
    sinceSeq?: number;
}
/** Every method with its params and result. */
export interface Methods {
    initialize: {
        params: InitializeParams;
        result: InitializeResult;
    };
    createAgent: {
        params: CreateAgentParams;
        result: Agent;
    };
    getAgent: {
        params: AgentIdParams;
        result: Agent;
    };
    listAgents: {
        params: ListAgentsParams;
        result: AgentList;
    };
    updateAgent: {
        params: UpdateAgentParams;
        result: Agent;
    };
    deleteAgent: {
        params: AgentIdParams;
        result: EmptyResult;
    };
    forkAgent: {
        params: ForkAgentParams;
        result: Agent;
    };
    exportAgent: {
        params: ExportAgentParams;
        result: ExportResult;
    };
    importAgent: {
        params: ImportAgentParams;
        result: Agent;
    };
    listMessages: {
        params: ListMessagesParams;
        result: MessageList;
    };
    sendMessage: {
        params: SendMessageParams;
        result: SendMessageResult;
    };
    cancelLoop: {
        params: AgentIdParams;
        result: CancelLoopResult;
    };
    continueLoop: {
        params: AgentIdParams;
        result: ContinueLoopResult;
    };
    handlePermissionResponse: {
        params: HandlePermissionResponseParams;
        result: EmptyResult;
    };
    answerQuestion: {
        params: AnswerQuestionParams;
        result: EmptyResult;
    };
    getPlan: {
        params: AgentIdParams;
        result: Plan;
    };
    pauseSession: {
        params: AgentIdParams;
        result: SessionStatusResult;
    };
    resumeSession: {
        params: AgentIdParams;
        result: SessionStatusResult;
    };
    listTools: {
        params: ListToolsParams;
        result: ToolList;
    };
    getMessageRequestPreview: {
        params: MessageRequestPreviewParams;
        result: RequestPreview;
    };
    setContextEdge: {
        params: SetContextEdgeParams;
        result: Agent;
    };
    regenerate: {
        params: RegenerateParams;
        result: RegenerateResult;
    };
    listMcpServers: {
        params: Record<string, never>;
        result: McpServerList;
    };
    addMcpServer: {
        params: AddMcpServerParams;
        result: McpServerInfo;
    };
    updateMcpServer: {
        params: UpdateMcpServerParams;
        result: McpServerInfo;
    };
    removeMcpServer: {
        params: McpServerNameParams;
        result: EmptyResult;
    };
    restartMcpServer: {
        params: McpServerNameParams;
        result: McpServerInfo;
    };
    getSession: {
        params: AgentIdParams;
        result: SessionInfo;
    };
    listProviders: {
        params: Record<string, never>;
        result: ProviderList;
    };
    listModels: {
        params: ListModelsParams;
        result: ModelList;
    };
    testProvider: {
        params: TestProviderParams;
        result: TestProviderResult;
    };
}
export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M]["params"];
export type ResultOf<M extends MethodName> = Methods[M]["result"];
/** Every method name this client knows (`subscribe`/`unsubscribe` are `Client.events`). */
export declare const METHOD_NAMES: readonly MethodName[];
