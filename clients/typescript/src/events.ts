import type { Connection, SubscriptionId } from "./connection.js";
import { AgentdError, ConnectionError } from "./errors.js";
import { SeqMerger } from "./merge.js";
import type { AgentEvent, ResyncRequiredEvent, SessionInfo } from "./types.js";

/** What an event stream needs of its client. */
export interface StreamHost {
  /** The client's live connection, opened if there is none. */
  connection(): Promise<Connection>;
  sessionOf(agentId: string): Promise<SessionInfo>;
  readonly isClosed: boolean;
  readonly reconnectTimeoutMs: number;
  forgetStream(stream: EventStream): void;
}

export interface EventsOptions {
  /** Only this agent's events; absent: every agent's. */
  agentId?: string;
  /**
   * With `agentId`: start after this seq (the events after it are replayed first). Absent:
   * from the agent's current last seq (`getSession`), so nothing is missed from the moment
   * the stream starts.
   */
  sinceSeq?: number;
}

/**
 * Most agents an all-agents stream resumes one by one after a reconnect (the daemon allows
 * 1000 subscriptions per connection); the least recently active beyond it get a
 * `resyncRequired`.
 */
const MAX_CATCH_UP = 500;
const FIRST_RETRY_DELAY_MS = 50;
const MAX_RETRY_DELAY_MS = 1000;

/**
 * The events of one agent, or of all agents, as an async iterator that survives lost
 * connections: when the connection ends (the daemon restarted, the socket broke), it
 * reconnects and subscribes again with `sinceSeq` = the last seq it delivered, so the
 * events in between are replayed, each once, in order. Where the daemon can no longer
 * replay them (they are older than its replay ring, as after a restart) a `resyncRequired`
 * comes instead, as the protocol sends it: reload, and go on from its seq.
 *
 * An all-agents stream resumes every agent it has seen the same way (one catch-up
 * subscription each, merged with the new all-agents subscription). Events of agents it
 * had never seen, sent while it was disconnected, are not replayed.
 *
 * It ends (`done`) when the client is closed, when `return()` is called (a `break` out of
 * `for await`), or after the `agentDeleted` of its agent. It throws when it cannot
 * reconnect within the client's `reconnectTimeoutMs`, or when the daemon refuses the
 * subscription (e.g. `agentNotFound`).
 */
export class EventStream implements AsyncIterableIterator<AgentEvent> {
  readonly #host: StreamHost;
  readonly #agentId: string | undefined;
  readonly #sinceSeq: number | undefined;
  readonly #merger = new SeqMerger();
  #queue: AgentEvent[] = [];
  #head = 0;
  #wake: (() => void) | undefined;
  #error: unknown;
  #ended = false;
  #started: Promise<void> | undefined;
  #conn: Connection | undefined;
  #resuming = false;
  /** Subscriptions on `#conn`: "" is the main one, else an agent's catch-up. */
  readonly #subs = new Map<string, SubscriptionId>();

  constructor(host: StreamHost, options: EventsOptions = {}) {
    this.#host = host;
    this.#agentId = options.agentId;
    this.#sinceSeq = options.sinceSeq;
  }

  /**
   * Subscribes now (iterating does it on the first `next()` otherwise). Resolves once the
   * subscription is made: every event from then on will be delivered.
   */
  start(): Promise<void> {
    this.#started ??= this.#open();
    return this.#started;
  }

  /** The last seq delivered for this agent (or the one the stream started after). */
  lastSeq(agentId: string): number | undefined {
    return this.#merger.lastSeq(agentId);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<AgentEvent> {
    return this;
  }

  async next(): Promise<IteratorResult<AgentEvent, undefined>> {
    try {
      await this.start();
    } catch (e) {
      this.#end();
      throw e;
    }
    for (;;) {
      if (this.#head < this.#queue.length) {
        const value = this.#queue[this.#head++]!;
        if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
          this.#queue = this.#queue.slice(this.#head);
          this.#head = 0;
        }
        return { value, done: false };
      }
      if (this.#error !== undefined) {
        const error = this.#error;
        this.#error = undefined;
        this.#end();
        throw error;
      }
      if (this.#ended) return { value: undefined, done: true };
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  /** Ends the stream and its subscriptions (what `break` in `for await` calls). */
  async return(): Promise<IteratorResult<AgentEvent, undefined>> {
    const conn = this.#conn;
    const subs = [...this.#subs.values()];
    this.#end();
    if (conn !== undefined && !conn.closed) {
      await Promise.all(subs.map((id) => conn.unsubscribe(id).catch(() => false)));
    }
    return { value: undefined, done: true };
  }

  /** Same as `return()`. */
  async close(): Promise<void> {
    await this.return();
  }

  /** The client was closed: the stream ends after the events already received. */
  clientClosed(): void {
    this.#ended = true;
    this.#conn = undefined;
    this.#subs.clear();
    this.#notify();
  }

  #end(): void {
    this.#ended = true;
    this.#queue = [];
    this.#head = 0;
    this.#conn = undefined;
    this.#subs.clear();
    this.#host.forgetStream(this);
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #fail(error: unknown): void {
    if (this.#ended) return;
    this.#error = error;
    this.#conn = undefined;
    this.#notify();
  }

  async #open(): Promise<void> {
    if (this.#agentId !== undefined) {
      const since =
        this.#sinceSeq ?? (await this.#host.sessionOf(this.#agentId)).lastSeq;
      this.#merger.setLastSeq(this.#agentId, since);
    } else if (this.#sinceSeq !== undefined) {
      throw new AgentdError(-32602, "sinceSeq needs agentId: seqs are per agent", {
        kind: "invalidParams",
      });
    }
    const conn = await this.#host.connection();
    await this.#subscribeOn(conn);
  }

  async #subscribeOn(conn: Connection): Promise<void> {
    this.#conn = conn;
    this.#subs.clear();
    conn.onClose(() => this.#lost(conn));
    if (this.#agentId !== undefined) {
      const agentId = this.#agentId;
      const params = { agentId, sinceSeq: this.#merger.lastSeq(agentId) };
      const id = await conn.subscribe(params, (e) => this.#deliver(conn, e, undefined));
      this.#subs.set("", id);
      return;
    }
    // All agents: hold each known agent's live events until its replay has caught up.
    let known = this.#merger.knownAgents();
    if (known.length > MAX_CATCH_UP) {
      const dropped = known.slice(0, known.length - MAX_CATCH_UP);
      known = known.slice(known.length - MAX_CATCH_UP);
      for (const [agentId, seq] of dropped) {
        this.#merger.forget(agentId);
        this.#push([resyncNotice(agentId, seq)]);
      }
    }
    for (const [agentId] of known) this.#merger.beginCatchUp(agentId);
    const main = await conn.subscribe({}, (e) => this.#deliver(conn, e, undefined));
    this.#subs.set("", main);
    await Promise.all(
      known.map(async ([agentId, seq]) => {
        try {
          const id = await conn.subscribe({ agentId, sinceSeq: seq }, (e) =>
            this.#deliver(conn, e, agentId),
          );
          if (this.#merger.isCatchingUp(agentId)) {
            this.#subs.set(agentId, id);
          } else {
            void conn.unsubscribe(id).catch(() => false);
          }
        } catch (e) {
          if (e instanceof AgentdError && e.kind === "agentNotFound") {
            this.#push(this.#merger.abandonCatchUp(agentId));
            this.#merger.forget(agentId);
          } else {
            throw e;
          }
        }
      }),
    );
  }

  #deliver(conn: Connection, event: AgentEvent, catchUpOf: string | undefined): void {
    if (this.#ended || conn !== this.#conn) return;
    const { emit, caughtUp } = this.#merger.accept(event, catchUpOf);
    this.#push(emit);
    for (const agentId of caughtUp) {
      const id = this.#subs.get(agentId);
      this.#subs.delete(agentId);
      if (id !== undefined) void conn.unsubscribe(id).catch(() => false);
    }
    if (
      this.#agentId !== undefined &&
      emit.some((e) => e.type === "agentDeleted" && e.agentId === this.#agentId)
    ) {
      // The daemon ends the subscription after the agent's last event.
      this.#ended = true;
      this.#conn = undefined;
      this.#subs.clear();
      this.#host.forgetStream(this);
      this.#notify();
    }
  }

  #push(events: AgentEvent[]): void {
    if (events.length === 0) return;
    this.#queue.push(...events);
    this.#notify();
  }

  #lost(conn: Connection): void {
    if (this.#ended || conn !== this.#conn || this.#resuming) return;
    this.#conn = undefined;
    this.#subs.clear();
    if (this.#host.isClosed) {
      this.clientClosed();
      return;
    }
    void this.#resume();
  }

  async #resume(): Promise<void> {
    this.#resuming = true;
    const deadline = Date.now() + this.#host.reconnectTimeoutMs;
    let delay = FIRST_RETRY_DELAY_MS;
    let conn: Connection | undefined;
    for (;;) {
      if (this.#ended || this.#host.isClosed) {
        this.#resuming = false;
        if (!this.#ended) this.clientClosed();
        return;
      }
      try {
        conn = await this.#host.connection();
        await this.#subscribeOn(conn);
        break;
      } catch (e) {
        const transient =
          e instanceof ConnectionError
            ? e.reason === "unreachable" || e.reason === "closed"
            : e instanceof AgentdError && (e.kind === "overloaded" || e.kind === "shuttingDown");
        if (!transient || Date.now() >= deadline) {
          this.#resuming = false;
          this.#fail(e);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
      }
    }
    this.#resuming = false;
    // The new connection may have ended while the stream subscribed on it.
    if (conn.closed) this.#lost(conn);
  }
}

function resyncNotice(agentId: string, seq: number): ResyncRequiredEvent {
  return {
    type: "resyncRequired",
    agentId,
    seq,
    at: Date.now(),
    reason: `the client could not resume this agent's events after reconnecting (more than ${MAX_CATCH_UP} agents to resume); reload with getAgent and listMessages`,
  };
}
