import { Connection } from "./connection.js";
import { ConnectionError } from "./errors.js";
import { EventStream, type EventsOptions, type StreamHost } from "./events.js";
import type {
  AddMcpServerParams,
  AgentIdParams,
  AnswerQuestionParams,
  CreateAgentParams,
  ExportAgentParams,
  ForkAgentParams,
  HandlePermissionResponseParams,
  ImportAgentParams,
  InitializeParams,
  ListAgentsParams,
  ListMessagesParams,
  ListModelsParams,
  ListToolsParams,
  McpServerNameParams,
  MessageRequestPreviewParams,
  MethodName,
  ParamsOf,
  RegenerateParams,
  ResultOf,
  SendMessageParams,
  SetContextEdgeParams,
  TestProviderParams,
  UpdateAgentParams,
  UpdateMcpServerParams,
} from "./methods.js";
import { defaultSocketPath } from "./paths.js";
import { followRun, type RunOptions } from "./run.js";
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
export class Client implements StreamHost {
  readonly socketPath: string;
  readonly reconnectTimeoutMs: number;
  #conn: Connection | undefined;
  #connecting: Promise<Connection> | undefined;
  #closed = false;
  readonly #streams = new Set<EventStream>();

  constructor(options: ConnectOptions = {}) {
    this.socketPath = options.socketPath ?? defaultSocketPath();
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
    this.#connecting ??= Connection.open(this.socketPath).then(
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

  // One method per RPC method, params by name as in the protocol.

  initialize(params: InitializeParams = {}) {
    return this.call("initialize", params);
  }
  createAgent(params: CreateAgentParams = {}) {
    return this.call("createAgent", params);
  }
  getAgent(params: AgentIdParams) {
    return this.call("getAgent", params);
  }
  listAgents(params: ListAgentsParams = {}) {
    return this.call("listAgents", params);
  }
  updateAgent(params: UpdateAgentParams) {
    return this.call("updateAgent", params);
  }
  deleteAgent(params: AgentIdParams) {
    return this.call("deleteAgent", params);
  }
  forkAgent(params: ForkAgentParams) {
    return this.call("forkAgent", params);
  }
  exportAgent(params: ExportAgentParams) {
    return this.call("exportAgent", params);
  }
  importAgent(params: ImportAgentParams) {
    return this.call("importAgent", params);
  }
  listMessages(params: ListMessagesParams) {
    return this.call("listMessages", params);
  }
  sendMessage(params: SendMessageParams) {
    return this.call("sendMessage", params);
  }
  cancelLoop(params: AgentIdParams) {
    return this.call("cancelLoop", params);
  }
  continueLoop(params: AgentIdParams) {
    return this.call("continueLoop", params);
  }
  handlePermissionResponse(params: HandlePermissionResponseParams) {
    return this.call("handlePermissionResponse", params);
  }
  answerQuestion(params: AnswerQuestionParams) {
    return this.call("answerQuestion", params);
  }
  getPlan(params: AgentIdParams) {
    return this.call("getPlan", params);
  }
  pauseSession(params: AgentIdParams) {
    return this.call("pauseSession", params);
  }
  resumeSession(params: AgentIdParams) {
    return this.call("resumeSession", params);
  }
  listTools(params: ListToolsParams = {}) {
    return this.call("listTools", params);
  }
  getMessageRequestPreview(params: MessageRequestPreviewParams) {
    return this.call("getMessageRequestPreview", params);
  }
  setContextEdge(params: SetContextEdgeParams) {
    return this.call("setContextEdge", params);
  }
  regenerate(params: RegenerateParams) {
    return this.call("regenerate", params);
  }
  listMcpServers() {
    return this.call("listMcpServers", {});
  }
  addMcpServer(params: AddMcpServerParams) {
    return this.call("addMcpServer", params);
  }
  updateMcpServer(params: UpdateMcpServerParams) {
    return this.call("updateMcpServer", params);
  }
  removeMcpServer(params: McpServerNameParams) {
    return this.call("removeMcpServer", params);
  }
  restartMcpServer(params: McpServerNameParams) {
    return this.call("restartMcpServer", params);
  }
  getSession(params: AgentIdParams) {
    return this.call("getSession", params);
  }
  listProviders() {
    return this.call("listProviders", {});
  }
  listModels(params: ListModelsParams = {}) {
    return this.call("listModels", params);
  }
  testProvider(params: TestProviderParams = {}) {
    return this.call("testProvider", params);
  }
}
