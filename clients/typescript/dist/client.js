import * as fs from "node:fs";
import { Connection } from "./connection.js";
import { ConnectionError } from "./errors.js";
import { EventStream } from "./events.js";
import { defaultSocketPath } from "./paths.js";
import { followRun } from "./run.js";
import { CA_CERT_ENV, isWebSocketUrl, TOKEN_ENV, URL_ENV } from "./websocket.js";
/**
 * Connects to the daemon. Before anything is sent, checks that only this user can have
 * made the socket (see the README: Node cannot read the peer's uid, so the folder and the
 * socket file are checked instead).
 */
export async function connect(options = {}) {
    const client = new Client(options);
    await client.connection();
    return client;
}
/**
 * A client of agentd. Calls go over one connection; if it is lost, calls in flight fail
 * with a {@link ConnectionError} and the next call connects again. Event streams reconnect
 * by themselves and resume where they were.
 */
export class Client {
    /** The socket path, or the listener's URL over WebSocket. */
    socketPath;
    /** The listener's URL when the client talks WebSocket, else undefined. */
    url;
    #webSocket;
    reconnectTimeoutMs;
    #conn;
    #connecting;
    #closed = false;
    #streams = new Set();
    /** `env` is where `AGENTD_URL`, `AGENTD_TOKEN` and `AGENTD_SOCKET` are read (default: the process's). */
    constructor(options = {}, env = process.env) {
        const target = chooseTarget(options, env);
        this.url = target.url;
        this.socketPath = target.url ?? target.socketPath ?? defaultSocketPath(env);
        // The CA file is read now: a missing one fails here, not on every reconnect.
        const caCert = target.url?.startsWith("wss://") ? (options.caCert ?? (env[CA_CERT_ENV] || undefined)) : undefined;
        this.#webSocket =
            target.url === undefined
                ? undefined
                : {
                    url: target.url,
                    token: target.token,
                    WebSocket: options.WebSocket,
                    ca: caCert === undefined ? undefined : fs.readFileSync(caCert),
                };
        this.reconnectTimeoutMs = options.reconnectTimeoutMs ?? 30_000;
    }
    get isClosed() {
        return this.#closed;
    }
    /** @internal The live connection, opened if there is none (one attempt at a time). */
    connection() {
        if (this.#closed) {
            return Promise.reject(new ConnectionError("clientClosed", this.socketPath, "the client was closed"));
        }
        if (this.#conn !== undefined && !this.#conn.closed)
            return Promise.resolve(this.#conn);
        const ws = this.#webSocket;
        this.#connecting ??= (ws === undefined ? Connection.open(this.socketPath) : Connection.openWebSocket(ws)).then((conn) => {
            this.#connecting = undefined;
            if (this.#closed) {
                conn.close();
                throw new ConnectionError("clientClosed", this.socketPath, "the client was closed");
            }
            this.#conn = conn;
            conn.onClose(() => {
                if (this.#conn === conn)
                    this.#conn = undefined;
            });
            return conn;
        }, (error) => {
            this.#connecting = undefined;
            throw error;
        });
        return this.#connecting;
    }
    async call(method, params) {
        const conn = await this.connection();
        return conn.request(method, params ?? {});
    }
    /**
     * The events of one agent (`agentId`) or of all agents, as an async iterator that
     * reconnects and resumes without gaps or duplicates (see {@link EventStream}).
     */
    events(options = {}) {
        const stream = new EventStream(this, options);
        this.#streams.add(stream);
        return stream;
    }
    /**
     * Sends `content` to an agent and yields the events of that run until its
     * `loopFinished`, answering permission prompts and questions through the callbacks.
     */
    run(agentId, content, options = {}) {
        return followRun({
            openStream: (id) => this.events({ agentId: id }),
            call: (method, params) => this.call(method, params),
            reconnectTimeoutMs: this.reconnectTimeoutMs,
        }, agentId, content, options);
    }
    /**
     * Closes the connection: calls in flight fail with a `ConnectionError`, event streams
     * end (after the events already received), and later calls fail.
     */
    close() {
        if (this.#closed)
            return;
        this.#closed = true;
        for (const stream of this.#streams)
            stream.clientClosed();
        this.#streams.clear();
        this.#conn?.close();
        this.#conn = undefined;
    }
    /** @internal */
    forgetStream(stream) {
        this.#streams.delete(stream);
    }
    /** @internal */
    sessionOf(agentId) {
        return this.call("getSession", { agentId });
    }
    // The hand-written part of the surface: one method per RPC method, params by name as in
    // the protocol, types generated from the schema (ClientMethods).
    initialize(params = {}) {
        return this.call("initialize", params);
    }
    createAgent(params = {}) {
        return this.call("createAgent", params);
    }
    getAgent(params) {
        return this.call("getAgent", params);
    }
    listAgents(params = {}) {
        return this.call("listAgents", params);
    }
    updateAgent(params) {
        return this.call("updateAgent", params);
    }
    deleteAgent(params) {
        return this.call("deleteAgent", params);
    }
    forkAgent(params) {
        return this.call("forkAgent", params);
    }
    exportAgent(params) {
        return this.call("exportAgent", params);
    }
    importAgent(params) {
        return this.call("importAgent", params);
    }
    listMessages(params) {
        return this.call("listMessages", params);
    }
    searchMessages(params) {
        return this.call("searchMessages", params);
    }
    getUsage(params = {}) {
        return this.call("getUsage", params);
    }
    sendMessage(params) {
        return this.call("sendMessage", params);
    }
    cancelLoop(params) {
        return this.call("cancelLoop", params);
    }
    cancelQueuedMessage(params) {
        return this.call("cancelQueuedMessage", params);
    }
    compactContext(params) {
        return this.call("compactContext", params);
    }
    continueLoop(params) {
        return this.call("continueLoop", params);
    }
    handlePermissionResponse(params) {
        return this.call("handlePermissionResponse", params);
    }
    answerQuestion(params) {
        return this.call("answerQuestion", params);
    }
    getPlan(params) {
        return this.call("getPlan", params);
    }
    pauseSession(params) {
        return this.call("pauseSession", params);
    }
    resumeSession(params) {
        return this.call("resumeSession", params);
    }
    getSession(params) {
        return this.call("getSession", params);
    }
    listTools(params = {}) {
        return this.call("listTools", params);
    }
    getMessageRequestPreview(params) {
        return this.call("getMessageRequestPreview", params);
    }
    setContextEdge(params) {
        return this.call("setContextEdge", params);
    }
    regenerate(params) {
        return this.call("regenerate", params);
    }
    getTurnDiff(params) {
        return this.call("getTurnDiff", params);
    }
    revertTo(params) {
        return this.call("revertTo", params);
    }
    complete(params = {}) {
        return this.call("complete", params);
    }
    listProfiles(params = {}) {
        return this.call("listProfiles", params);
    }
    /** Switches an agent between chat and agent mode. */
    setAgentMode(params) {
        return this.call("setAgentMode", params);
    }
    /** The skills an agent sees, and the malformed ones with why. */
    listSkills(params) {
        return this.call("listSkills", params);
    }
    listProviders(params = {}) {
        return this.call("listProviders", params);
    }
    listModels(params = {}) {
        return this.call("listModels", params);
    }
    testProvider(params = {}) {
        return this.call("testProvider", params);
    }
    listMcpServers(params = {}) {
        return this.call("listMcpServers", params);
    }
    addMcpServer(params) {
        return this.call("addMcpServer", params);
    }
    updateMcpServer(params) {
        return this.call("updateMcpServer", params);
    }
    removeMcpServer(params) {
        return this.call("removeMcpServer", params);
    }
    restartMcpServer(params) {
        return this.call("restartMcpServer", params);
    }
}
/**
 * Where a client connects: an explicit `url` (or a ws URL as `socketPath`), else an
 * explicit `socketPath`, else `$AGENTD_URL`, else the default socket (all undefined). The
 * token is `token`, else `$AGENTD_TOKEN`.
 */
export function chooseTarget(options, env = process.env) {
    let { socketPath, url } = options;
    if (url !== undefined && socketPath !== undefined) {
        throw new TypeError("give a socketPath or a url, not both");
    }
    if (url === undefined && socketPath !== undefined && isWebSocketUrl(socketPath)) {
        url = socketPath;
        socketPath = undefined;
    }
    if (url === undefined && socketPath === undefined && env[URL_ENV])
        url = env[URL_ENV];
    if (url === undefined)
        return socketPath === undefined ? {} : { socketPath };
    if (!isWebSocketUrl(url))
        throw new TypeError(`${url} is not a ws:// or wss:// URL`);
    const token = options.token ?? (env[TOKEN_ENV] || undefined);
    return token === undefined ? { url } : { url, token };
}
