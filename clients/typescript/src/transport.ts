import type * as net from "node:net";

import { LineDecoder } from "./framing.js";

/**
 * What a {@link Connection} needs of the wire: whole JSON-RPC messages (as text) out and
 * in. Two kinds: NDJSON over the Unix socket ({@link SocketTransport}) and one message per
 * text frame over the daemon's WebSocket listener (`websocket.ts`). Requests,
 * subscriptions and resume live above it and are the same on both.
 */
export interface Transport {
  /** Sends one message (JSON text, no line end). */
  send(text: string): void;
  /** Ends the connection; `onClose` follows. */
  close(): void;
}

/** What a transport reports to its connection. */
export interface TransportEvents {
  /** One whole message from the daemon (JSON text). */
  onText(text: string): void;
  /** The daemon sent something that is not the protocol: the connection is unusable. */
  onBadFrame(message: string): void;
  /** An error of the wire; `onClose` follows. */
  onError(error: Error): void;
  /** The connection ended (once). */
  onClose(): void;
}

/** NDJSON over a connected Unix socket: one message per line. */
export class SocketTransport implements Transport {
  readonly #socket: net.Socket;
  readonly #decoder = new LineDecoder();

  constructor(socket: net.Socket, events: TransportEvents) {
    this.#socket = socket;
    socket.on("data", (chunk: Buffer) => {
      let lines: string[];
      try {
        lines = this.#decoder.push(chunk);
      } catch (e) {
        events.onBadFrame(e instanceof Error ? e.message : String(e));
        return;
      }
      for (const line of lines) events.onText(line);
    });
    socket.on("error", (e) => events.onError(e));
    socket.on("close", () => events.onClose());
  }

  send(text: string): void {
    this.#socket.write(text + "\n");
  }

  close(): void {
    this.#socket.destroy();
  }
}
