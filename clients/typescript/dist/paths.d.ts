/** Environment variable naming the daemon's socket. */
export declare const SOCKET_ENV = "AGENTD_SOCKET";
/**
 * The socket path the daemon uses when none is given, found as the daemon finds it:
 * `$AGENTD_SOCKET`, else `$XDG_RUNTIME_DIR/agentd/agentd.sock`, else
 * `${TMPDIR:-/tmp}/agentd-<uid>/agentd.sock` (empty variables count as unset).
 */
export declare function defaultSocketPath(env?: Record<string, string | undefined>, uid?: number): string;
/** This process's effective uid (the daemon names its folder after it). */
export declare function effectiveUid(): number;
