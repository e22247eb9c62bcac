import type { ErrorKind } from "./types.js";
/** An error the daemon answered a call with (a JSON-RPC error object). */
export declare class AgentdError extends Error {
    /** The JSON-RPC error code (stable; -32001 agentNotFound, ...). */
    readonly code: number;
    /**
     * The stable kind (`data.kind`): match on this. A daemon newer than this client may send
     * kinds not listed in {@link ErrorKind}.
     */
    readonly kind: ErrorKind | (string & {});
    /** The error's whole `data` member (holds `kind`, and whatever a newer daemon adds). */
    readonly data: unknown;
    /** The method that failed. */
    readonly method: string | undefined;
    constructor(code: number, message: string, data: unknown, method?: string);
}
/**
 * The connection to the daemon failed or was closed: no daemon at the path, a socket this
 * client refuses to use (see `reason`), a WebSocket listener that refused the token, a
 * connection lost with calls in flight, or a client that was closed.
 */
export declare class ConnectionError extends Error {
    /**
     * `unreachable`, `untrusted`, `closed` (the connection ended), `clientClosed`, or over
     * WebSocket `unauthorized` (401: the token is missing or wrong) and `forbidden` (403:
     * the request's Origin is not the listener's own). Only `unreachable` and `closed` are
     * worth trying again.
     */
    readonly reason: "unreachable" | "untrusted" | "closed" | "clientClosed" | "unauthorized" | "forbidden";
    /** The socket path, or the listener's URL over WebSocket. */
    readonly socketPath: string;
    constructor(reason: ConnectionError["reason"], socketPath: string, message: string, options?: {
        cause?: unknown;
    });
}
/** The kind of a JSON-RPC error code, for an error without `data.kind`; "unknown" if none. */
export declare function kindOfCode(code: number): ErrorKind | "unknown";
