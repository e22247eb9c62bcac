import { Connection } from "./connection.js";
import { EventStream, type EventsOptions, type StreamHost } from "./events.js";
import type { MethodName, ParamsOf, ResultOf, WrappedMethodName } from "./methods.js";
import { type RunOptions } from "./run.js";
import type { AgentEvent, MessageContent, SessionInfo } from "./types.js";
import { type WebSocketConstructor } from "./websocket.js";
/**
 * One method per RPC method (but `subscribe`/`unsubscribe`: see `Client.events`), taking
 * the method's generated params and resolving to its generated result. `Client`
 * implements it, so a method of the schema without a wrapper fails to compile.
 */
export type ClientMethods = {
    [M in WrappedMethodName]: (params: ParamsOf<M>) => Promise<ResultOf<M>>;
};
export interface ConnectOptions {
    /**
     * The daemon's socket; default: `$AGENTD_URL` if set (see `url`), else found as the
     * daemon finds it ({@link defaultSocketPath}). A `ws://` / `wss://` URL here is a `url`.
     */
    socketPath?: string;
    /**
     * The daemon's WebSocket listener (`ws://127.0.0.1:7800`, `wss://...`), instead of its
     * socket; default `$AGENTD_URL` when no `socketPath` is given. Needs the `ws` package on
     * Node < 22 (`npm install ws`).
     */
    url?: string;
    /** The listener's token (sent as `Authorization: Bearer`); default `$AGENTD_TOKEN`. */
    token?: string;
    /** The WebSocket class to use; default: the `ws` package if installed, else the global one. */
    WebSocket?: WebSocketConstructor;
    /**
     * `wss://`: a CA certificate file (PEM) to trust instead of the system's, as for a
     * listener with its own certificate; default `$AGENTD_CA_CERT`. Needs the `ws` package.
     */
    caCert?: string;
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
export declare class Client implements StreamHost, ClientMethods {
    #private;
    /** The socket path, or the listener's URL over WebSocket. */
    readonly socketPath: string;
    /** The listener's URL when the client talks WebSocket, else undefined. */
    readonly url: string | undefined;
    readonly reconnectTimeoutMs: number;
    /** `env` is where `AGENTD_URL`, `AGENTD_TOKEN` and `AGENTD_SOCKET` are read (default: the process's). */
    constructor(options?: ConnectOptions, env?: Record<string, string | undefined>);
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
    initialize(params?: ParamsOf<"initialize">): Promise<ResultOf<"initialize">>;
    createAgent(params?: ParamsOf<"createAgent">): Promise<ResultOf<"createAgent">>;
    getAgent(params: ParamsOf<"getAgent">): Promise<ResultOf<"getAgent">>;
    listAgents(params?: ParamsOf<"listAgents">): Promise<ResultOf<"listAgents">>;
    updateAgent(params: ParamsOf<"updateAgent">): Promise<ResultOf<"updateAgent">>;
    deleteAgent(params: ParamsOf<"deleteAgent">): Promise<ResultOf<"deleteAgent">>;
    forkAgent(params: ParamsOf<"forkAgent">): Promise<ResultOf<"forkAgent">>;
    exportAgent(params: ParamsOf<"exportAgent">): Promise<ResultOf<"exportAgent">>;
    importAgent(params: ParamsOf<"importAgent">): Promise<ResultOf<"importAgent">>;
    listMessages(params: ParamsOf<"listMessages">): Promise<ResultOf<"listMessages">>;
    searchMessages(params: ParamsOf<"searchMessages">): Promise<ResultOf<"searchMessages">>;
    getUsage(params?: ParamsOf<"getUsage">): Promise<ResultOf<"getUsage">>;
    sendMessage(params: ParamsOf<"sendMessage">): Promise<ResultOf<"sendMessage">>;
    cancelLoop(params: ParamsOf<"cancelLoop">): Promise<ResultOf<"cancelLoop">>;
    cancelQueuedMessage(params: ParamsOf<"cancelQueuedMessage">): Promise<ResultOf<"cancelQueuedMessage">>;
    compactContext(params: ParamsOf<"compactContext">): Promise<ResultOf<"compactContext">>;
    continueLoop(params: ParamsOf<"continueLoop">): Promise<ResultOf<"continueLoop">>;
    handlePermissionResponse(params: ParamsOf<"handlePermissionResponse">): Promise<ResultOf<"handlePermissionResponse">>;
    answerQuestion(params: ParamsOf<"answerQuestion">): Promise<ResultOf<"answerQuestion">>;
    getPlan(params: ParamsOf<"getPlan">): Promise<ResultOf<"getPlan">>;
    pauseSession(params: ParamsOf<"pauseSession">): Promise<ResultOf<"pauseSession">>;
    resumeSession(params: ParamsOf<"resumeSession">): Promise<ResultOf<"resumeSession">>;
    getSession(params: ParamsOf<"getSession">): Promise<ResultOf<"getSession">>;
    listTools(params?: ParamsOf<"listTools">): Promise<ResultOf<"listTools">>;
    getMessageRequestPreview(params: ParamsOf<"getMessageRequestPreview">): Promise<ResultOf<"getMessageRequestPreview">>;
    setContextEdge(params: ParamsOf<"setContextEdge">): Promise<ResultOf<"setContextEdge">>;
    regenerate(params: ParamsOf<"regenerate">): Promise<ResultOf<"regenerate">>;
    getTurnDiff(params: ParamsOf<"getTurnDiff">): Promise<ResultOf<"getTurnDiff">>;
    revertTo(params: ParamsOf<"revertTo">): Promise<ResultOf<"revertTo">>;
    complete(params?: ParamsOf<"complete">): Promise<ResultOf<"complete">>;
    listProfiles(params?: ParamsOf<"listProfiles">): Promise<ResultOf<"listProfiles">>;
    /** Switches an agent between chat and agent mode. */
    setAgentMode(params: ParamsOf<"setAgentMode">): Promise<ResultOf<"setAgentMode">>;
    /** The skills an agent sees, and the malformed ones with why. */
    listSkills(params: ParamsOf<"listSkills">): Promise<ResultOf<"listSkills">>;
    listProviders(params?: ParamsOf<"listProviders">): Promise<ResultOf<"listProviders">>;
    listModels(params?: ParamsOf<"listModels">): Promise<ResultOf<"listModels">>;
    testProvider(params?: ParamsOf<"testProvider">): Promise<ResultOf<"testProvider">>;
    listMcpServers(params?: ParamsOf<"listMcpServers">): Promise<ResultOf<"listMcpServers">>;
    addMcpServer(params: ParamsOf<"addMcpServer">): Promise<ResultOf<"addMcpServer">>;
    updateMcpServer(params: ParamsOf<"updateMcpServer">): Promise<ResultOf<"updateMcpServer">>;
    removeMcpServer(params: ParamsOf<"removeMcpServer">): Promise<ResultOf<"removeMcpServer">>;
    restartMcpServer(params: ParamsOf<"restartMcpServer">): Promise<ResultOf<"restartMcpServer">>;
}
/**
 * Where a client connects: an explicit `url` (or a ws URL as `socketPath`), else an
 * explicit `socketPath`, else `$AGENTD_URL`, else the default socket (all undefined). The
 * token is `token`, else `$AGENTD_TOKEN`.
 */
export declare function chooseTarget(options: Pick<ConnectOptions, "socketPath" | "url" | "token">, env?: Record<string, string | undefined>): {
    socketPath?: string;
    url?: string;
    token?: string;
};
