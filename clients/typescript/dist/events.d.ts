import type { Connection } from "./connection.js";
import type { AgentEvent, SessionInfo } from "./types.js";
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
export declare class EventStream implements AsyncIterableIterator<AgentEvent> {
    #private;
    constructor(host: StreamHost, options?: EventsOptions);
    /**
     * Subscribes now (iterating does it on the first `next()` otherwise). Resolves once the
     * subscription is made: every event from then on will be delivered.
     */
    start(): Promise<void>;
    /** The last seq delivered for this agent (or the one the stream started after). */
    lastSeq(agentId: string): number | undefined;
    [Symbol.asyncIterator](): AsyncIterableIterator<AgentEvent>;
    next(): Promise<IteratorResult<AgentEvent, undefined>>;
    /** Ends the stream and its subscriptions (what `break` in `for await` calls). */
    return(): Promise<IteratorResult<AgentEvent, undefined>>;
    /** Same as `return()`. */
    close(): Promise<void>;
    /** The client was closed: the stream ends after the events already received. */
    clientClosed(): void;
}
