import * as fs from "node:fs/promises";
import * as net from "node:net";
import * as path from "node:path";
import { AgentdError, ConnectionError } from "./errors.js";
import { MAX_FRAME_BYTES } from "./framing.js";
import { effectiveUid } from "./paths.js";
import { SocketTransport } from "./transport.js";
import { openWebSocket } from "./websocket.js";
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
export async function checkSocketPath(socketPath) {
    const uid = effectiveUid();
    const dir = path.dirname(path.resolve(socketPath));
    let realDir;
    try {
        realDir = await fs.realpath(dir);
    }
    catch (cause) {
        throw new ConnectionError("unreachable", socketPath, `cannot connect to ${socketPath}: its folder ${dir} cannot be opened (${errText(cause)}); is agentd running?`, { cause });
    }
    const dirStat = await fs.stat(realDir);
    if (dirStat.uid !== uid) {
        throw new ConnectionError("untrusted", socketPath, `refusing ${socketPath}: its folder ${realDir} belongs to uid ${dirStat.uid}, not to this user (uid ${uid}); nothing was sent to it. Another user may have taken over the socket path: check who owns the folder, or use another socket`);
    }
    if ((dirStat.mode & 0o077) !== 0) {
        const mode = (dirStat.mode & 0o777).toString(8).padStart(4, "0");
        throw new ConnectionError("untrusted", socketPath, `refusing ${socketPath}: its folder ${realDir} has mode ${mode}, so others could have put a socket there; agentd serves only from a 0700 folder; nothing was sent to it`);
    }
    const target = path.join(realDir, path.basename(socketPath));
    let sockStat;
    try {
        sockStat = await fs.lstat(target);
    }
    catch (cause) {
        throw new ConnectionError("unreachable", socketPath, `cannot connect to ${socketPath}: ${errText(cause)}; is agentd running?`, { cause });
    }
    if (!sockStat.isSocket()) {
        throw new ConnectionError("unreachable", socketPath, `cannot connect to ${socketPath}: it is not a socket`);
    }
    if (sockStat.uid !== uid) {
        throw new ConnectionError("untrusted", socketPath, `refusing ${socketPath}: the socket belongs to uid ${sockStat.uid}, not to this user (uid ${uid}); nothing was sent to it`);
    }
    return target;
}
function errText(e) {
    return e instanceof Error ? e.message : String(e);
}
/**
 * One connection to the daemon (its Unix socket, or its WebSocket listener): requests
 * matched to responses by id, `event` notifications routed to their subscription's
 * handler. It does not reconnect: the client opens a new one.
 */
export class Connection {
    /** The socket path, or the URL over WebSocket. */
    socketPath;
    #transport;
    #pending = new Map();
    #subscriptions = new Map();
    #closeCallbacks = [];
    #nextId = 1;
    #closed = false;
    /** Why the connection ended, for calls made after that. */
    #closeError;
    /** An error the daemon sent with `id: null` (e.g. too many connections) before closing. */
    #orphanError;
    #socketError;
    #closingByUs = false;
    constructor(socketPath, open) {
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
    static async open(socketPath) {
        const target = await checkSocketPath(socketPath);
        const socket = await new Promise((resolve, reject) => {
            const s = net.createConnection({ path: target });
            const onError = (cause) => {
                s.destroy();
                reject(new ConnectionError("unreachable", socketPath, `cannot connect to ${socketPath}: ${cause.message}; is agentd running?`, { cause }));
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
    static async openWebSocket(target) {
        let events;
        // Frames that come before the connection is made are not lost: none can (the daemon
        // speaks only when spoken to), and the events go to the connection once it exists.
        const relay = {
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
    get closed() {
        return this.#closed;
    }
    /** Calls `method`; resolves to its result, rejects with an {@link AgentdError}. */
    request(method, params, onResult) {
        if (this.#closed)
            return Promise.reject(this.#lostError());
        const id = this.#nextId++;
        const frame = { jsonrpc: "2.0", id, method };
        if (params !== undefined)
            frame.params = params;
        const text = JSON.stringify(frame);
        if (Buffer.byteLength(text) > MAX_FRAME_BYTES) {
            return Promise.reject(new AgentdError(-32005, `the ${method} request is over the daemon's 16 MiB frame limit; it was not sent`, { kind: "inputTooLarge" }, method));
        }
        return new Promise((resolve, reject) => {
            const pending = { method, resolve, reject };
            if (onResult !== undefined)
                pending.onResult = onResult;
            this.#pending.set(id, pending);
            this.#transport.send(text);
        });
    }
    /**
     * Subscribes; `handler` gets the subscription's events from the first one on (it is
     * registered as the response is read, before any later frame).
     */
    async subscribe(params, handler) {
        const id = await this.request("subscribe", params, (result) => {
            this.#subscriptions.set(String(result), handler);
        });
        return id;
    }
    /** Ends a subscription; its handler gets nothing more. */
    async unsubscribe(id) {
        this.#subscriptions.delete(String(id));
        if (this.#closed)
            return false;
        return (await this.request("unsubscribe", { subscription: id })) === true;
    }
    /** Runs `callback` once the connection has ended (at once if it has). */
    onClose(callback) {
        if (this.#closed)
            queueMicrotask(callback);
        else
            this.#closeCallbacks.push(callback);
    }
    /** Closes the connection; calls in flight fail with a {@link ConnectionError}. */
    close() {
        if (this.#closed)
            return;
        this.#closingByUs = true;
        this.#transport.close();
    }
    #lostError() {
        return (this.#closeError ??
            new ConnectionError("closed", this.socketPath, `the connection to ${this.socketPath} is closed`));
    }
    #onText(text) {
        // Nothing more is read from a connection found broken.
        if (this.#closed || this.#closeError !== undefined)
            return;
        let frame;
        try {
            frame = JSON.parse(text);
        }
        catch (e) {
            this.#fail(`bad frame from the daemon (not JSON: ${errText(e)})`);
            return;
        }
        if (Array.isArray(frame)) {
            for (const item of frame)
                this.#dispatch(item);
        }
        else {
            this.#dispatch(frame);
        }
    }
    #dispatch(frame) {
        if (frame === null || typeof frame !== "object")
            return;
        const f = frame;
        if (f.method === "event" && f.id === undefined) {
            const sub = f.params?.subscription;
            const event = f.params?.result;
            if (sub === undefined || event === null || typeof event !== "object")
                return;
            const handler = this.#subscriptions.get(String(sub));
            if (handler !== undefined)
                handler(event);
            return;
        }
        if (typeof f.id !== "number") {
            if (f.id === null && f.error !== undefined)
                this.#orphanError = toAgentdError(f.error, undefined);
            return;
        }
        const pending = this.#pending.get(f.id);
        if (pending === undefined)
            return;
        this.#pending.delete(f.id);
        if (f.error !== undefined && f.error !== null) {
            pending.reject(toAgentdError(f.error, pending.method));
            return;
        }
        pending.onResult?.(f.result);
        pending.resolve(f.result);
    }
    #fail(message) {
        this.#closeError = new ConnectionError("closed", this.socketPath, message);
        this.#transport.close();
    }
    #onClose() {
        if (this.#closed)
            return;
        this.#closed = true;
        if (this.#closeError === undefined) {
            if (this.#closingByUs) {
                this.#closeError = new ConnectionError("clientClosed", this.socketPath, "the client was closed");
            }
            else if (this.#orphanError !== undefined) {
                this.#closeError = this.#orphanError;
            }
            else {
                const why = this.#socketError ? `: ${this.#socketError.message}` : "";
                this.#closeError = new ConnectionError("closed", this.socketPath, `the daemon closed the connection${why}`, { cause: this.#socketError });
            }
        }
        const error = this.#closeError;
        for (const pending of this.#pending.values())
            pending.reject(error);
        this.#pending.clear();
        this.#subscriptions.clear();
        for (const callback of this.#closeCallbacks.splice(0))
            callback();
    }
}
function toAgentdError(error, method) {
    const code = typeof error.code === "number" ? error.code : -32603;
    const message = typeof error.message === "string" ? error.message : "the daemon answered an error";
    return new AgentdError(code, message, error.data, method);
}
