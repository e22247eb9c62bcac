import { ConnectionError } from "./errors.js";
import { MAX_FRAME_BYTES } from "./framing.js";
/** Environment variable naming the daemon's WebSocket listener (`ws://` or `wss://`). */
export const URL_ENV = "AGENTD_URL";
/** Environment variable holding the listener's token. */
export const TOKEN_ENV = "AGENTD_TOKEN";
/** Environment variable naming a CA certificate (PEM) to trust for `wss://`, as agentctl takes it. */
export const CA_CERT_ENV = "AGENTD_CA_CERT";
/** Whether `target` is a WebSocket URL rather than a socket path. */
export function isWebSocketUrl(target) {
    return target.startsWith("ws://") || target.startsWith("wss://");
}
/**
 * The WebSocket class to use: the `ws` package when it is installed (it tells the upgrade's
 * HTTP status, so a refused token is told apart from a daemon that is not there), else the
 * global `WebSocket` (Node >= 22), else an error saying what to install.
 */
export async function defaultWebSocket(needsCa = false) {
    try {
        const mod = (await import("ws"));
        return (mod.WebSocket ?? mod.default);
    }
    catch {
        if (needsCa) {
            throw new Error(`a CA certificate for wss:// (caCert, ${CA_CERT_ENV}) needs the ws package (npm install ws): the global WebSocket takes none`);
        }
        const global = globalThis.WebSocket;
        if (typeof global === "function")
            return global;
        throw new Error("a ws:// URL needs a WebSocket: this Node.js has no global WebSocket (Node >= 22 has), so install the ws package (npm install ws)");
    }
}
/** The error for an upgrade the daemon answered with `status` instead of 101. */
export function refusedUpgrade(url, status, token) {
    if (status === 401) {
        const why = token === undefined
            ? `no token was given (pass token, or set ${TOKEN_ENV}; the daemon writes it to <data dir>/listen.token)`
            : "the token is wrong (it must be the content of the daemon's [listen] token_file)";
        return new ConnectionError("unauthorized", url, `agentd at ${url} refused the connection (401): ${why}`);
    }
    if (status === 403) {
        return new ConnectionError("forbidden", url, `agentd at ${url} refused the connection (403): the request's Origin is not the listener's own`);
    }
    return new ConnectionError("unreachable", url, `${url} answered HTTP ${status} instead of a WebSocket upgrade; is it agentd?`);
}
/**
 * One WebSocket connection to the daemon's listener: one JSON-RPC message per text frame
 * both ways, the token in `Authorization: Bearer` on the upgrade. A refused upgrade (401,
 * 403) rejects with a `ConnectionError` whose `reason` is `unauthorized` / `forbidden`
 * (never retried); a daemon that is not there rejects with `unreachable`.
 */
export async function openWebSocket(url, token, events, WebSocketClass, ca) {
    const Impl = WebSocketClass ?? (await defaultWebSocket(ca !== undefined));
    const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
    const options = { headers, maxPayload: MAX_FRAME_BYTES + 1024, perMessageDeflate: false };
    if (ca !== undefined)
        options.ca = ca;
    const ws = new Impl(url, options);
    let status;
    const wsPackage = ws;
    // The `ws` package tells the status of a refused upgrade (the global WebSocket does not);
    // with this listener it leaves the ending to us: `terminate` then emits error and close.
    wsPackage.on?.("unexpected-response", (_req, res) => {
        status = res.statusCode;
        wsPackage.terminate?.();
    });
    await new Promise((resolve, reject) => {
        let settled = false;
        ws.addEventListener("open", () => {
            settled = true;
            resolve();
        });
        ws.addEventListener("error", (event) => {
            if (settled)
                return;
            settled = true;
            const message = event.error?.message ?? event.message ?? "the WebSocket upgrade failed";
            if (isCertificateError(event.error?.code)) {
                // A certificate this client does not trust: trying again will not change it.
                reject(new ConnectionError("untrusted", url, `refusing ${url}: its certificate is not trusted (${message}); for the listener's own certificate, trust it with caCert or ${CA_CERT_ENV}`, { cause: event.error }));
                return;
            }
            void failedUpgrade(url, token, status, message).then(reject);
        });
        ws.addEventListener("close", (event) => {
            if (settled)
                return;
            settled = true;
            void failedUpgrade(url, token, status, `closed with code ${event.code}`).then(reject);
        });
    });
    return new WebSocketTransport(ws, events);
}
/** Whether a Node TLS error code says the peer's certificate was not verified. */
function isCertificateError(code) {
    return typeof code === "string" && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS_CERT/.test(code);
}
/**
 * Why an upgrade failed. Without a status (the global WebSocket tells none), one `GET
 * /readyz` with the same token tells a refused token from a daemon that is not there.
 */
async function failedUpgrade(url, token, status, message) {
    if (status === undefined)
        status = await readyzStatus(url, token);
    if (status !== undefined && status !== 200)
        return refusedUpgrade(url, status, token);
    return new ConnectionError("unreachable", url, `cannot connect to ${url}: ${message}; is agentd listening there?`);
}
async function readyzStatus(url, token) {
    const fetchFn = globalThis.fetch;
    if (fetchFn === undefined)
        return undefined;
    const http = new URL(url);
    http.protocol = http.protocol === "wss:" ? "https:" : "http:";
    http.pathname = "/readyz";
    http.search = "";
    try {
        const headers = token === undefined ? {} : { Authorization: `Bearer ${token}` };
        const answer = await fetchFn(http.toString(), { headers, redirect: "manual" });
        return answer.status === 401 || answer.status === 403 ? answer.status : undefined;
    }
    catch {
        return undefined;
    }
}
class WebSocketTransport {
    #ws;
    #closed = false;
    constructor(ws, events) {
        this.#ws = ws;
        ws.addEventListener("message", (event) => {
            if (typeof event.data === "string") {
                events.onText(event.data);
            }
            else {
                events.onBadFrame("the daemon sent a binary WebSocket frame; agentd sends text frames");
            }
        });
        // An error ends the connection (a close event may not follow it on every WebSocket).
        ws.addEventListener("error", (event) => {
            events.onError(event.error ?? new Error(event.message ?? "WebSocket error"));
            this.#ended(events);
        });
        ws.addEventListener("close", () => this.#ended(events));
        this.#events = events;
    }
    #events;
    send(text) {
        this.#ws.send(text);
    }
    /** Starts the closing handshake; the connection counts as ended at once. */
    close() {
        this.#ws.close(1000, "the client closed the connection");
        queueMicrotask(() => this.#ended(this.#events));
    }
    #ended(events) {
        if (this.#closed)
            return;
        this.#closed = true;
        events.onClose();
    }
}
