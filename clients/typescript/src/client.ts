import * as fs from "node:fs";

import { Connection, type WebSocketTarget } from "./connection.js";
import { ConnectionError } from "./errors.js";
import { EventStream, type EventsOptions, type StreamHost } from "./events.js";
import type { MethodName, ParamsOf, ResultOf, WrappedMethodName } from "./methods.js";
import { defaultSocketPath } from "./paths.js";
import { followRun, type RunOptions } from "./run.js";
import type { AgentEvent, MessageContent, SessionInfo } from "./types.js";
import { CA_CERT_ENV, isWebSocketUrl, TOKEN_ENV, URL_ENV, type WebSocketConstructor } from "./websocket.js";

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
export async function connect(options: ConnectOptions = {}): Promise<Client> {
  const client = new Client(options);
  await client.connection();
  return client;
}

/**
 * A client of agentd. Calls go over one connection; if it is lost, calls in flight fail
 * with a {@link ConnectionError} and the next call connects again. Event streams reconnect
 * by themselves and resume where they were.
 */
export class Client implements StreamHost, ClientMethods {
  /** The socket path, or the listener's URL over WebSocket. */
  readonly socketPath: string;
  /** The listener's URL when the client talks WebSocket, else undefined. */
  readonly url: string | undefined;
  readonly #webSocket: WebSocketTarget | undefined;
  readonly reconnectTimeoutMs: number;
  #conn: Connection | undefined;
  #connecting: Promise<Connection> | undefined;
  #closed = false;
  readonly #streams = new Set<EventStream>();

  /** `env` is where `AGENTD_URL`, `AGENTD_TOKEN` and `AGENTD_SOCKET` are read (default: the process's). */
  constructor(options: ConnectOptions = {}, env: Record<string, string | undefined> = process.env) {
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

  get isClosed(): boolean {
    return this.#closed;
  }

  /** @internal The live connection, opened if there is none (one attempt at a time). */
  connection(): Promise<Connection> {
    if (this.#closed) {
      return Promise.reject(
        new ConnectionError("clientClosed", this.socketPath, "the client was closed"),
      );
    }
    if (this.#conn !== undefined && !this.#conn.closed) return Promise.resolve(this.#conn);
    const ws = this.#webSocket;
    this.#connecting ??= (ws === undefined ? Connection.open(this.socketPath) : Connection.openWebSocket(ws)).then(
      (conn) => {
        this.#connecting = undefined;
        if (this.#closed) {
          conn.close();
          throw new ConnectionError("clientClosed", this.socketPath, "the client was closed");
        }
        this.#conn = conn;
        conn.onClose(() => {
          if (this.#conn === conn) this.#conn = undefined;
        });
        return conn;
      },
      (error: unknown) => {
        this.#connecting = undefined;
        throw error;
      },
    );
    return this.#connecting;
  }

  /**
   * Calls any method by name. Resolves to its result; rejects with an `AgentdError` (the
   * daemon's answer) or a `ConnectionError`.
   */
  call<M extends MethodName>(method: M, params?: ParamsOf<M>): Promise<ResultOf<M>>;
  call(method: string, params?: object): Promise<unknown>;
  async call(method: string, params?: object): Promise<unknown> {
    const conn = await this.connection();
    return conn.request(method, params ?? {});
  }

  /**
   * The events of one agent (`agentId`) or of all agents, as an async iterator that
   * reconnects and resumes without gaps or duplicates (see {@link EventStream}).
   */
  events(options: EventsOptions = {}): EventStream {
    const stream = new EventStream(this, options);
    this.#streams.add(stream);
    return stream;
  }

  /**
   * Sends `content` to an agent and yields the events of that run until its
   * `loopFinished`, answering permission prompts and questions through the callbacks.
   */
  run(agentId: string, content: MessageContent, options: RunOptions = {}): AsyncGenerator<AgentEvent, void, undefined> {
    return followRun(
      {
        openStream: (id) => this.events({ agentId: id }),
        call: (method, params) => this.call(method, params),
        reconnectTimeoutMs: this.reconnectTimeoutMs,
      },
      agentId,
      content,
      options,
    );
  }

  /**
   * Closes the connection: calls in flight fail with a `ConnectionError`, event streams
   * end (after the events already received), and later calls fail.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of this.#streams) stream.clientClosed();
    this.#streams.clear();
    this.#conn?.close();
    this.#conn = undefined;
  }

  /** @internal */
  forgetStream(stream: EventStream): void {
    this.#streams.delete(stream);
  }

  /** @internal */
  sessionOf(agentId: string): Promise<SessionInfo> {
    return this.call("getSession", { agentId });
  }

  // The hand-written part of the surface: one method per RPC method, params by name as in
  // the protocol, types generated from the schema (ClientMethods).

  initialize(params: ParamsOf<"initialize"> = {}): Promise<ResultOf<"initialize">> {
    return this.call("initialize", params);
  }
  createAgent(params: ParamsOf<"createAgent"> = {}): Promise<ResultOf<"createAgent">> {
    return this.call("createAgent", params);
  }
  getAgent(params: ParamsOf<"getAgent">): Promise<ResultOf<"getAgent">> {
    return this.call("getAgent", params);
  }
  listAgents(params: ParamsOf<"listAgents"> = {}): Promise<ResultOf<"listAgents">> {
    return this.call("listAgents", params);
  }
  updateAgent(params: ParamsOf<"updateAgent">): Promise<ResultOf<"updateAgent">> {
    return this.call("updateAgent", params);
  }
  deleteAgent(params: ParamsOf<"deleteAgent">): Promise<ResultOf<"deleteAgent">> {
    return this.call("deleteAgent", params);
  }
  forkAgent(params: ParamsOf<"forkAgent">): Promise<ResultOf<"forkAgent">> {
    return this.call("forkAgent", params);
  }
  exportAgent(params: ParamsOf<"exportAgent">): Promise<ResultOf<"exportAgent">> {
    return this.call("exportAgent", params);
  }
  importAgent(params: ParamsOf<"importAgent">): Promise<ResultOf<"importAgent">> {
    return this.call("importAgent", params);
  }
  listMessages(params: ParamsOf<"listMessages">): Promise<ResultOf<"listMessages">> {
    return this.call("listMessages", params);
  }
  searchMessages(params: ParamsOf<"searchMessages">): Promise<ResultOf<"searchMessages">> {
    return this.call("searchMessages", params);
  }
  getUsage(params: ParamsOf<"getUsage"> = {}): Promise<ResultOf<"getUsage">> {
    return this.call("getUsage", params);
  }
  sendMessage(params: ParamsOf<"sendMessage">): Promise<ResultOf<"sendMessage">> {
    return this.call("sendMessage", params);
  }
  cancelLoop(params: ParamsOf<"cancelLoop">): Promise<ResultOf<"cancelLoop">> {
    return this.call("cancelLoop", params);
  }
  cancelQueuedMessage(params: ParamsOf<"cancelQueuedMessage">): Promise<ResultOf<"cancelQueuedMessage">> {
    return this.call("cancelQueuedMessage", params);
  }
  compactContext(params: ParamsOf<"compactContext">): Promise<ResultOf<"compactContext">> {
    return this.call("compactContext", params);
  }
  continueLoop(params: ParamsOf<"continueLoop">): Promise<ResultOf<"continueLoop">> {
    return this.call("continueLoop", params);
  }
  handlePermissionResponse(params: ParamsOf<"handlePermissionResponse">): Promise<ResultOf<"handlePermissionResponse">> {
    return this.call("handlePermissionResponse", params);
  }
  answerQuestion(params: ParamsOf<"answerQuestion">): Promise<ResultOf<"answerQuestion">> {
    return this.call("answerQuestion", params);
  }
  getPlan(params: ParamsOf<"getPlan">): Promise<ResultOf<"getPlan">> {
    return this.call("getPlan", params);
  }
  pauseSession(params: ParamsOf<"pauseSession">): Promise<ResultOf<"pauseSession">> {
    return this.call("pauseSession", params);
  }
  resumeSession(params: ParamsOf<"resumeSession">): Promise<ResultOf<"resumeSession">> {
    return this.call("resumeSession", params);
  }
  getSession(params: ParamsOf<"getSession">): Promise<ResultOf<"getSession">> {
    return this.call("getSession", params);
  }
  listTools(params: ParamsOf<"listTools"> = {}): Promise<ResultOf<"listTools">> {
    return this.call("listTools", params);
  }
  getMessageRequestPreview(params: ParamsOf<"getMessageRequestPreview">): Promise<ResultOf<"getMessageRequestPreview">> {
    return this.call("getMessageRequestPreview", params);
  }
  setContextEdge(params: ParamsOf<"setContextEdge">): Promise<ResultOf<"setContextEdge">> {
    return this.call("setContextEdge", params);
  }
  regenerate(params: ParamsOf<"regenerate">): Promise<ResultOf<"regenerate">> {
    return this.call("regenerate", params);
  }
  getTurnDiff(params: ParamsOf<"getTurnDiff">): Promise<ResultOf<"getTurnDiff">> {
    return this.call("getTurnDiff", params);
  }
  revertTo(params: ParamsOf<"revertTo">): Promise<ResultOf<"revertTo">> {
    return this.call("revertTo", params);
  }
  complete(params: ParamsOf<"complete"> = {}): Promise<ResultOf<"complete">> {
    return this.call("complete", params);
  }
  listProfiles(params: ParamsOf<"listProfiles"> = {}): Promise<ResultOf<"listProfiles">> {
    return this.call("listProfiles", params);
  }

  /** Switches an agent between chat and agent mode. */
  setAgentMode(params: ParamsOf<"setAgentMode">): Promise<ResultOf<"setAgentMode">> {
    return this.call("setAgentMode", params);
  }

  /** The skills an agent sees, and the malformed ones with why. */
  listSkills(params: ParamsOf<"listSkills">): Promise<ResultOf<"listSkills">> {
    return this.call("listSkills", params);
  }
  listProviders(params: ParamsOf<"listProviders"> = {}): Promise<ResultOf<"listProviders">> {
    return this.call("listProviders", params);
  }
  listModels(params: ParamsOf<"listModels"> = {}): Promise<ResultOf<"listModels">> {
    return this.call("listModels", params);
  }
  testProvider(params: ParamsOf<"testProvider"> = {}): Promise<ResultOf<"testProvider">> {
    return this.call("testProvider", params);
  }
  listMcpServers(params: ParamsOf<"listMcpServers"> = {}): Promise<ResultOf<"listMcpServers">> {
    return this.call("listMcpServers", params);
  }
  addMcpServer(params: ParamsOf<"addMcpServer">): Promise<ResultOf<"addMcpServer">> {
    return this.call("addMcpServer", params);
  }
  updateMcpServer(params: ParamsOf<"updateMcpServer">): Promise<ResultOf<"updateMcpServer">> {
    return this.call("updateMcpServer", params);
  }
  removeMcpServer(params: ParamsOf<"removeMcpServer">): Promise<ResultOf<"removeMcpServer">> {
    return this.call("removeMcpServer", params);
  }
  restartMcpServer(params: ParamsOf<"restartMcpServer">): Promise<ResultOf<"restartMcpServer">> {
    return this.call("restartMcpServer", params);
  }
}

/**
 * Where a client connects: an explicit `url` (or a ws URL as `socketPath`), else an
 * explicit `socketPath`, else `$AGENTD_URL`, else the default socket (all undefined). The
 * token is `token`, else `$AGENTD_TOKEN`.
 */
export function chooseTarget(
  options: Pick<ConnectOptions, "socketPath" | "url" | "token">,
  env: Record<string, string | undefined> = process.env,
): { socketPath?: string; url?: string; token?: string } {
  let { socketPath, url } = options;
  if (url !== undefined && socketPath !== undefined) {
    throw new TypeError("give a socketPath or a url, not both");
  }
  if (url === undefined && socketPath !== undefined && isWebSocketUrl(socketPath)) {
    url = socketPath;
    socketPath = undefined;
  }
  if (url === undefined && socketPath === undefined && env[URL_ENV]) url = env[URL_ENV];
  if (url === undefined) return socketPath === undefined ? {} : { socketPath };
  if (!isWebSocketUrl(url)) throw new TypeError(`${url} is not a ws:// or wss:// URL`);
  const token = options.token ?? (env[TOKEN_ENV] || undefined);
  return token === undefined ? { url } : { url, token };
}
