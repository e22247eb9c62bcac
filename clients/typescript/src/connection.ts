import * as fs from "node:fs/promises";
import * as net from "node:net";
import * as path from "node:path";

import { AgentdError, ConnectionError } from "./errors.js";
import { MAX_FRAME_BYTES } from "./framing.js";
import { effectiveUid } from "./paths.js";
import type { SubscriptionId } from "./generated/schema.js";
import { SocketTransport, type Transport, type TransportEvents } from "./transport.js";
import type { AgentEvent } from "./types.js";
import { openWebSocket, type WebSocketConstructor } from "./websocket.js";

/** A subscription id as the daemon gave it (opaque; passed back as received). */
/** A subscription id as `subscribe` answered it (the generated type). */
export type { SubscriptionId };

type EventHandler = (event: AgentEvent) => void;

interface Pending {
  method: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  /** Runs synchronously with the response, before any later frame is read. */
  onResult?: (result: unknown) => void;
}

/**
 * Checks, before anything is sent, that only this user can have put the socket where it is,
 * and answers the path to connect to.
 *
 * The daemon refuses to serve from a folder that is not its user's with mode 0700, and a
 * socket in such a folder can only have been made by that user (or root). Node cannot read
 * the peer's uid of a Unix socket (`SO_PEERCRED`), so this client checks the folder and the
 * socket file instead: the folder (symbolic links resolved) must belong to this user and be
 * closed to group and others, the socket must be a socket and belong to this user. Anything
 * else is refused and nothing is sent.
 */
export async function checkSocketPath(socketPath: string): Promise<string> {
  const uid = effectiveUid();
  const dir = path.dirname(path.resolve(socketPath));
  let realDir: string;
  try {
    realDir = await fs.realpath(dir);
  } catch (cause) {
    throw new ConnectionError(
      "unreachable",
      socketPath,
      `cannot connect to ${socketPath}: its folder ${dir} cannot be opened (${errText(cause)}); is agentd running?`,
      { cause },
    );
  }
  const dirStat = await fs.stat(realDir);
  if (dirStat.uid !== uid) {
    throw new ConnectionError(
      "untrusted",
      socketPath,
      `refusing ${socketPath}: its folder ${realDir} belongs to uid ${dirStat.uid}, not to this user (uid ${uid}); nothing was sent to it. Another user may have taken over the socket path: check who owns the folder, or use another socket`,
    );
  }
  if ((dirStat.mode & 0o077) !== 0) {
    const mode = (dirStat.mode & 0o777).toString(8).padStart(4, "0");
    throw new ConnectionError(
      "untrusted",
      socketPath,
      `refusing ${socketPath}: its folder ${realDir} has mode ${mode}, so others could have put a socket there; agentd serves only from a 0700 folder; nothing was sent to it`,
    );
  }
  const target = path.join(realDir, path.basename(socketPath));
  let sockStat;
  try {
    sockStat = await fs.lstat(target);
  } catch (cause) {
    throw new ConnectionError(
      "unreachable",
      socketPath,
      `cannot connect to ${socketPath}: ${errText(cause)}; is agentd running?`,
      { cause },
    );
  }
  if (!sockStat.isSocket()) {
    throw new ConnectionError(
      "unreachable",
      socketPath,
      `cannot connect to ${socketPath}: it is not a socket`,
    );
  }
  if (sockStat.uid !== uid) {
    throw new ConnectionError(
      "untrusted",
      socketPath,
      `refusing ${socketPath}: the socket belongs to uid ${sockStat.uid}, not to this user (uid ${uid}); nothing was sent to it`,
    );
  }
  return target;
}

function errText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** Where a connection goes over WebSocket: the listener's URL, its token, the class to use. */
export interface WebSocketTarget {
  url: string;
  token: string | undefined;
  WebSocket?: WebSocketConstructor | undefined;
  /** wss: the CA certificate(s) to trust instead of the system's (PEM). */
  ca?: Buffer | undefined;
}

/**
 * One connection to the daemon (its Unix socket, or its WebSocket listener): requests
 * matched to responses by id, `event` notifications routed to their subscription's
 * handler. It does not reconnect: the client opens a new one.
 */
export class Connection {
  /** The socket path, or the URL over WebSocket. */
  readonly socketPath: string;
  readonly #transport: Transport;
  readonly #pending = new Map<number, Pending>();
  readonly #subscriptions = new Map<string, EventHandler>();
  readonly #closeCallbacks: Array<() => void> = [];
  #nextId = 1;
  #closed = false;
  /** Why the connection ended, for calls made after that. */
  #closeError: Error | undefined;
  /** An error the daemon sent with `id: null` (e.g. too many connections) before closing. */
  #orphanError: AgentdError | undefined;
  #socketError: Error | undefined;
  #closingByUs = false;

  private constructor(socketPath: string, open: (events: TransportEvents) => Transport) {
    this.socketPath = socketPath;
    this.#transport = open({
      onText: (text) => this.#onText(text),
      onBadFrame: (message) => this.#fail(`bad frame from the daemon: ${message}`),
      onError: (e) => {
        this.#socketError = e;
      },
      onClose: () => this.#onClose(),
    });
  }

  /** Checks the socket (see {@link checkSocketPath}) and connects. */
  static async open(socketPath: string): Promise<Connection> {
    const target = await checkSocketPath(socketPath);
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.createConnection({ path: target });
      const onError = (cause: Error): void => {
        s.destroy();
        reject(
          new ConnectionError(
            "unreachable",
            socketPath,
            `cannot connect to ${socketPath}: ${cause.message}; is agentd running?`,
            { cause },
          ),
        );
      };
      s.once("error", onError);
      s.once("connect", () => {
        s.off("error", onError);
        resolve(s);
      });
    });
    socket.setNoDelay(true);
    return new Connection(socketPath, (events) => new SocketTransport(socket, events));
  }

  /** Connects to the daemon's WebSocket listener (see `openWebSocket`). */
  static async openWebSocket(target: WebSocketTarget): Promise<Connection> {
    let events: TransportEvents | undefined;
    // Frames that come before the connection is made are not lost: none can (the daemon
    // speaks only when spoken to), and the events go to the connection once it exists.
    const relay: TransportEvents = {
      onText: (text) => events?.onText(text),
      onBadFrame: (message) => events?.onBadFrame(message),
      onError: (e) => events?.onError(e),
      onClose: () => events?.onClose(),
    };
    const transport = await openWebSocket(target.url, target.token, relay, target.WebSocket, target.ca);
    return new Connection(target.url, (e) => {
      events = e;
      return transport;
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Calls `method`; resolves to its result, rejects with an {@link AgentdError}. */
  request(method: string, params?: unknown, onResult?: (result: unknown) => void): Promise<unknown> {
    if (this.#closed) return Promise.reject(this.#lostError());
    const id = this.#nextId++;
    const frame: Record<string, unknown> = { jsonrpc: "2.0", id, method };
    if (params !== undefined) frame.params = params;
    const text = JSON.stringify(frame);
    if (Buffer.byteLength(text) > MAX_FRAME_BYTES) {
      return Promise.reject(
        new AgentdError(
          -32005,
          `the ${method} request is over the daemon's 16 MiB frame limit; it was not sent`,
          { kind: "inputTooLarge" },
          method,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const pending: Pending = { method, resolve, reject };
      if (onResult !== undefined) pending.onResult = onResult;
      this.#pending.set(id, pending);
      this.#transport.send(text);
    });
  }

  /**
   * Subscribes; `handler` gets the subscription's events from the first one on (it is
   * registered as the response is read, before any later frame).
   */
  async subscribe(params: object, handler: EventHandler): Promise<SubscriptionId> {
    const id = await this.request("subscribe", params, (result) => {
      this.#subscriptions.set(String(result), handler);
    });
    return id as SubscriptionId;
  }

  /** Ends a subscription; its handler gets nothing more. */
  async unsubscribe(id: SubscriptionId): Promise<boolean> {
    this.#subscriptions.delete(String(id));
    if (this.#closed) return false;
    return (await this.request("unsubscribe", { subscription: id })) === true;
  }

  /** Runs `callback` once the connection has ended (at once if it has). */
  onClose(callback: () => void): void {
    if (this.#closed) queueMicrotask(callback);
    else this.#closeCallbacks.push(callback);
  }

  /** Closes the connection; calls in flight fail with a {@link ConnectionError}. */
  close(): void {
    if (this.#closed) return;
    this.#closingByUs = true;
    this.#transport.close();
  }

  #lostError(): Error {
    return (
      this.#closeError ??
      new ConnectionError("closed", this.socketPath, `the connection to ${this.socketPath} is closed`)
    );
  }

  #onText(text: string): void {
    // Nothing more is read from a connection found broken.
    if (this.#closed || this.#closeError !== undefined) return;
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch (e) {
      this.#fail(`bad frame from the daemon (not JSON: ${errText(e)})`);
      return;
    }
    if (Array.isArray(frame)) {
      for (const item of frame) this.#dispatch(item);
    } else {
      this.#dispatch(frame);
    }
  }

  #dispatch(frame: unknown): void {
    if (frame === null || typeof frame !== "object") return;
    const f = frame as {
      id?: unknown;
      method?: unknown;
      params?: { subscription?: unknown; result?: unknown };
      result?: unknown;
      error?: { code?: unknown; message?: unknown; data?: unknown };
    };
    if (f.method === "event" && f.id === undefined) {
      const sub = f.params?.subscription;
      const event = f.params?.result;
      if (sub === undefined || event === null || typeof event !== "object") return;
      const handler = this.#subscriptions.get(String(sub));
      if (handler !== undefined) handler(event as AgentEvent);
      return;
    }
    if (typeof f.id !== "number") {
      if (f.id === null && f.error !== undefined) this.#orphanError = toAgentdError(f.error, undefined);
      return;
    }
    const pending = this.#pending.get(f.id);
    if (pending === undefined) return;
    this.#pending.delete(f.id);
    if (f.error !== undefined && f.error !== null) {
      pending.reject(toAgentdError(f.error, pending.method));
      return;
    }
    pending.onResult?.(f.result);
    pending.resolve(f.result);
  }

  #fail(message: string): void {
    this.#closeError = new ConnectionError("closed", this.socketPath, message);
    this.#transport.close();
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#closeError === undefined) {
      if (this.#closingByUs) {
        this.#closeError = new ConnectionError(
          "clientClosed",
          this.socketPath,
          "the client was closed",
        );
      } else if (this.#orphanError !== undefined) {
        this.#closeError = this.#orphanError;
      } else {
        const why = this.#socketError ? `: ${this.#socketError.message}` : "";
        this.#closeError = new ConnectionError(
          "closed",
          this.socketPath,
          `the daemon closed the connection${why}`,
          { cause: this.#socketError },
        );
      }
    }
    const error = this.#closeError;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
    this.#subscriptions.clear();
    for (const callback of this.#closeCallbacks.splice(0)) callback();
  }
}

function toAgentdError(
  error: { code?: unknown; message?: unknown; data?: unknown },
  method: string | undefined,
): AgentdError {
  const code = typeof error.code === "number" ? error.code : -32603;
  const message = typeof error.message === "string" ? error.message : "the daemon answered an error";
  return new AgentdError(code, message, error.data, method);
}
