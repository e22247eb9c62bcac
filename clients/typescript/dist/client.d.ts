import { Connection } from "./connection.js";
import { EventStream, type EventsOptions, type StreamHost } from "./events.js";
import type { AddMcpServerParams, AgentIdParams, AnswerQuestionParams, CreateAgentParams, ExportAgentParams, ForkAgentParams, HandlePermissionResponseParams, ImportAgentParams, InitializeParams, ListAgentsParams, ListMessagesParams, ListModelsParams, ListToolsParams, McpServerNameParams, MessageRequestPreviewParams, MethodName, ParamsOf, RegenerateParams, ResultOf, SendMessageParams, SetContextEdgeParams, TestProviderParams, UpdateAgentParams, UpdateMcpServerParams } from "./methods.js";
import { type RunOptions } from "./run.js";
import type { AgentEvent, MessageContent, SessionInfo } from "./types.js";
export interface ConnectOptions {
    /** The daemon's socket; default: found as the daemon finds it ({@link defaultSocketPath}). */
    socketPath?: string;
    /**
     * How long an event stream (and `run`) keeps trying to reconnect after the connection
     * is lost before it throws, in ms. Default 30,000.
     */
    reconnectTimeoutMs?: number;
}
/**
 * Connects to the daemon. Before anything is sent, checks that only this user can have
 * made the socket (see the README: Node cannot read the peer's uid, so the folder and the
 * socket file are checked instead).
 */
export declare function connect(options?: ConnectOptions): Promise<Client>;
/**
 * A client of agentd. Calls go over one connection; if it is lost, calls in flight fail
 * with a {@link ConnectionError} and the next call connects again. Event streams reconnect
 * by themselves and resume where they were.
 */
export declare class Client implements StreamHost {
    #private;
    readonly socketPath: string;
    readonly reconnectTimeoutMs: number;
    constructor(options?: ConnectOptions);
    get isClosed(): boolean;
    /** @internal The live connection, opened if there is none (one attempt at a time). */
    connection(): Promise<Connection>;
    /**
     * Calls any method by name. Resolves to its result; rejects with an `AgentdError` (the
     * daemon's answer) or a `ConnectionError`.
     */
    call<M extends MethodName>(method: M, params?: ParamsOf<M>): Promise<ResultOf<M>>;
    call(method: string, params?: object): Promise<unknown>;
    /**
     * The events of one agent (`agentId`) or of all agents, as an async iterator that
     * reconnects and resumes without gaps or duplicates (see {@link EventStream}).
     */
    events(options?: EventsOptions): EventStream;
    /**
     * Sends `content` to an agent and yields the events of that run until its
     * `loopFinished`, answering permission prompts and questions through the callbacks.
     */
    run(agentId: string, content: MessageContent, options?: RunOptions): AsyncGenerator<AgentEvent, void, undefined>;
    /**
     * Closes the connection: calls in flight fail with a `ConnectionError`, event streams
     * end (after the events already received), and later calls fail.
     */
    close(): void;
    /** @internal */
    forgetStream(stream: EventStream): void;
    /** @internal */
    sessionOf(agentId: string): Promise<SessionInfo>;
    initialize(params?: InitializeParams): Promise<import("./types.js").InitializeResult>;
    createAgent(params?: CreateAgentParams): Promise<import("./types.js").Agent>;
    getAgent(params: AgentIdParams): Promise<import("./types.js").Agent>;
    listAgents(params?: ListAgentsParams): Promise<import("./types.js").AgentList>;
    updateAgent(params: UpdateAgentParams): Promise<import("./types.js").Agent>;
    deleteAgent(params: AgentIdParams): Promise<import("./types.js").EmptyResult>;
    forkAgent(params: ForkAgentParams): Promise<import("./types.js").Agent>;
    exportAgent(params: ExportAgentParams): Promise<import("./types.js").ExportResult>;
    importAgent(params: ImportAgentParams): Promise<import("./types.js").Agent>;
    listMessages(params: ListMessagesParams): Promise<import("./types.js").MessageList>;
    sendMessage(params: SendMessageParams): Promise<import("./types.js").SendMessageResult>;
    cancelLoop(params: AgentIdParams): Promise<import("./types.js").CancelLoopResult>;
    continueLoop(params: AgentIdParams): Promise<import("./types.js").ContinueLoopResult>;
    handlePermissionResponse(params: HandlePermissionResponseParams): Promise<import("./types.js").EmptyResult>;
    answerQuestion(params: AnswerQuestionParams): Promise<import("./types.js").EmptyResult>;
    getPlan(params: AgentIdParams): Promise<import("./types.js").Plan>;
    pauseSession(params: AgentIdParams): Promise<import("./types.js").SessionStatusResult>;
    resumeSession(params: AgentIdParams): Promise<import("./types.js").SessionStatusResult>;
    listTools(params?: ListToolsParams): Promise<import("./types.js").ToolList>;
    getMessageRequestPreview(params: MessageRequestPreviewParams): Promise<import("./types.js").RequestPreview>;
    setContextEdge(params: SetContextEdgeParams): Promise<import("./types.js").Agent>;
    regenerate(params: RegenerateParams): Promise<import("./types.js").RegenerateResult>;
    listMcpServers(): Promise<import("./types.js").McpServerList>;
    addMcpServer(params: AddMcpServerParams): Promise<import("./types.js").McpServerInfo>;
    updateMcpServer(params: UpdateMcpServerParams): Promise<import("./types.js").McpServerInfo>;
    removeMcpServer(params: McpServerNameParams): Promise<import("./types.js").EmptyResult>;
    restartMcpServer(params: McpServerNameParams): Promise<import("./types.js").McpServerInfo>;
    getSession(params: AgentIdParams): Promise<SessionInfo>;
    listProviders(): Promise<import("./types.js").ProviderList>;
    listModels(params?: ListModelsParams): Promise<import("./types.js").ModelList>;
    testProvider(params?: TestProviderParams): Promise<import("./types.js").TestProviderResult>;
}
