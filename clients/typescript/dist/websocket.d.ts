import type { Transport, TransportEvents } from "./transport.js";
/** Environment variable naming the daemon's WebSocket listener (`ws://` or `wss://`). */
export declare const URL_ENV = "AGENTD_URL";
/** Environment variable holding the listener's token. */
export declare const TOKEN_ENV = "AGENTD_TOKEN";
/** Environment variable naming a CA certificate (PEM) to trust for `wss://`, as agentctl takes it. */
export declare const CA_CERT_ENV = "AGENTD_CA_CERT";
/** Whether `target` is a WebSocket URL rather than a socket path. */
export declare function isWebSocketUrl(target: string): boolean;
/** The part of a WebSocket this client uses: the WHATWG interface, which `ws` has too. */
export interface WebSocketLike {
    send(data: string): void;
    close(code?: number, reason?: string): void;
    addEventListener(type: "open" | "message" | "error" | "close", listener: (event: any) => void): void;
}
/**
 * A WebSocket class: the `ws` package's, or the global one (Node >= 22). It is called as
 * `new WebSocket(url, { headers })`, which both take (the headers are a Node extension).
 */
export type WebSocketConstructor = new (url: string, options: object) => WebSocketLike;
/**
 * The WebSocket class to use: the `ws` package when it is installed (it tells the upgrade's
 * HTTP status, so a refused token is told apart from a daemon that is not there), else the
 * global `WebSocket` (Node >= 22), else an error saying what to install.
 */
export declare function defaultWebSocket(needsCa?: boolean): Promise<WebSocketConstructor>;
/** The error for an upgrade the daemon answered with `status` instead of 101. */
export declare function refusedUpgrade(url: string, status: number, token: string | undefined): Error;
/**
 * One WebSocket connection to the daemon's listener: one JSON-RPC message per text frame
 * both ways, the token in `Authorization: Bearer` on the upgrade. A refused upgrade (401,
 * 403) rejects with a `ConnectionError` whose `reason` is `unauthorized` / `forbidden`
 * (never retried); a daemon that is not there rejects with `unreachable`.
 */
export declare function openWebSocket(url: string, token: string | undefined, events: TransportEvents, WebSocketClass?: WebSocketConstructor, ca?: Buffer): Promise<Transport>;
