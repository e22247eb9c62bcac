import * as os from "node:os";
import * as path from "node:path";

/** Environment variable naming the daemon's socket. */
export const SOCKET_ENV = "AGENTD_SOCKET";

/**
 * The socket path the daemon uses when none is given, found as the daemon finds it:
 * `$AGENTD_SOCKET`, else `$XDG_RUNTIME_DIR/agentd/agentd.sock`, else
 * `${TMPDIR:-/tmp}/agentd-<uid>/agentd.sock` (empty variables count as unset).
 */
export function defaultSocketPath(
  env: Record<string, string | undefined> = process.env,
  uid: number = effectiveUid(),
): string {
  const get = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value === "" ? undefined : value;
  };
  const explicit = get(SOCKET_ENV);
  if (explicit !== undefined) return explicit;
  const runtime = get("XDG_RUNTIME_DIR");
  if (runtime !== undefined) return path.join(runtime, "agentd", "agentd.sock");
  const tmp = get("TMPDIR") ?? "/tmp";
  return path.join(tmp, `agentd-${uid}`, "agentd.sock");
}

/** This process's effective uid (the daemon names its folder after it). */
export function effectiveUid(): number {
  if (typeof process.geteuid === "function") return process.geteuid();
  return os.userInfo().uid;
}
