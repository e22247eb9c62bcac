import { LineDecoder } from "./framing.js";
/** NDJSON over a connected Unix socket: one message per line. */
export class SocketTransport {
    #socket;
    #decoder = new LineDecoder();
    constructor(socket, events) {
        this.#socket = socket;
        socket.on("data", (chunk) => {
            let lines;
            try {
                lines = this.#decoder.push(chunk);
            }
            catch (e) {
                events.onBadFrame(e instanceof Error ? e.message : String(e));
                return;
            }
            for (const line of lines)
                events.onText(line);
        });
        socket.on("error", (e) => events.onError(e));
        socket.on("close", () => events.onClose());
    }
    send(text) {
        this.#socket.write(text + "\n");
    }
    close() {
        this.#socket.destroy();
    }
}
