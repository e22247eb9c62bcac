/** An error the daemon answered a call with (a JSON-RPC error object). */
export class AgentdError extends Error {
    /** The JSON-RPC error code (stable; -32001 agentNotFound, ...). */
    code;
    /**
     * The stable kind (`data.kind`): match on this. A daemon newer than this client may send
     * kinds not listed in {@link ErrorKind}.
     */
    kind;
    /** The error's whole `data` member (holds `kind`, and whatever a newer daemon adds). */
    data;
    /** The method that failed. */
    method;
    constructor(code, message, data, method) {
        super(message);
        this.name = "AgentdError";
        this.code = code;
        this.data = data;
        this.method = method;
        const kind = data !== null && typeof data === "object" && typeof data.kind === "string"
            ? data.kind
            : kindOfCode(code);
        this.kind = kind;
    }
}
/**
 * The connection to the daemon failed or was closed: no daemon at the path, a socket this
 * client refuses to use (see `reason`), a WebSocket listener that refused the token, a
 * connection lost with calls in flight, or a client that was closed.
 */
export class ConnectionError extends Error {
    /**
     * `unreachable`, `untrusted`, `closed` (the connection ended), `clientClosed`, or over
     * WebSocket `unauthorized` (401: the token is missing or wrong) and `forbidden` (403:
     * the request's Origin is not the listener's own). Only `unreachable` and `closed` are
     * worth trying again.
     */
    reason;
    /** The socket path, or the listener's URL over WebSocket. */
    socketPath;
    constructor(reason, socketPath, message, options) {
        super(message, options);
        this.name = "ConnectionError";
        this.reason = reason;
        this.socketPath = socketPath;
    }
}
const KINDS = {
    [-32700]: "parseError",
    [-32600]: "invalidRequest",
    [-32601]: "methodNotFound",
    [-32602]: "invalidParams",
    [-32603]: "internal",
    [-32001]: "agentNotFound",
    [-32002]: "agentBusy",
    [-32003]: "messageNotFound",
    [-32004]: "permissionNotPending",
    [-32005]: "inputTooLarge",
    [-32006]: "providerNotConfigured",
    [-32007]: "overloaded",
    [-32008]: "shuttingDown",
    [-32009]: "notSupported",
    [-32010]: "invalidState",
    [-32011]: "mcpServerNotFound",
    [-32012]: "tooManySubscriptions",
    [-32013]: "questionNotPending",
};
/** The kind of a JSON-RPC error code, for an error without `data.kind`; "unknown" if none. */
export function kindOfCode(code) {
    return KINDS[code] ?? "unknown";
}
