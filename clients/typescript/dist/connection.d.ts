import type { SubscriptionId } from "./generated/schema.js";
import type { AgentEvent } from "./types.js";
import { type WebSocketConstructor } from "./websocket.js";
/** A subscription id as the daemon gave it (opaque; passed back as received). */
/** A subscription id as `subscribe` answered it (the generated type). */
export type { SubscriptionId };
type EventHandler = (event: AgentEvent) => void;
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
export declare function checkSocketPath(socketPath: string): Promise<string>;
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
export declare class Connection {
    #private;
    /** The socket path, or the URL over WebSocket. */
    readonly socketPath: string;
    private constructor();
    /** Checks the socket (see {@link checkSocketPath}) and connects. */
    static open(socketPath: string): Promise<Connection>;
    /** Connects to the daemon's WebSocket listener (see `openWebSocket`). */
    static openWebSocket(target: WebSocketTarget): Promise<Connection>;
    get closed(): boolean;
    /** Calls `method`; resolves to its result, rejects with an {@link AgentdError}. */
    request(method: string, params?: unknown, onResult?: (result: unknown) => void): Promise<unknown>;
    /**
     * Subscribes; `handler` gets the subscription's events from the first one on (it is
     * registered as the response is read, before any later frame).
     */
    subscribe(params: object, handler: EventHandler): Promise<SubscriptionId>;
    /** Ends a subscription; its handler gets nothing more. */
    unsubscribe(id: SubscriptionId): Promise<boolean>;
    /** Runs `callback` once the connection has ended (at once if it has). */
    onClose(callback: () => void): void;
    /** Closes the connection; calls in flight fail with a {@link ConnectionError}. */
    close(): void;
}
