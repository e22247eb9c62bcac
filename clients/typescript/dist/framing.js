import { StringDecoder } from "node:string_decoder";
/** Largest frame the daemon sends or accepts (16 MiB), as `capabilities.maxFrameBytes`. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;
/**
 * Splits the daemon's NDJSON stream into lines: chunks may end anywhere, even inside a
 * UTF-8 sequence; `\r\n` and blank lines are fine. A line longer than `maxBytes` is an
 * error (the daemon never sends one; the connection is then unusable).
 */
export class LineDecoder {
    #decoder = new StringDecoder("utf8");
    #partial = "";
    #partialBytes = 0;
    #maxBytes;
    constructor(maxBytes = MAX_FRAME_BYTES + 1024) {
        this.#maxBytes = maxBytes;
    }
    /** The complete lines this chunk finishes (without their line ends, blank ones left out). */
    push(chunk) {
        const text = this.#decoder.write(chunk);
        const lines = [];
        let start = 0;
        for (;;) {
            const nl = text.indexOf("\n", start);
            if (nl < 0)
                break;
            const line = this.#partial + text.slice(start, nl);
            this.#partial = "";
            this.#partialBytes = 0;
            start = nl + 1;
            const trimmed = line.endsWith("\r") ? line.slice(0, -1) : line;
            if (trimmed.trim() !== "")
                lines.push(trimmed);
        }
        const rest = text.slice(start);
        if (rest !== "") {
            this.#partial += rest;
            this.#partialBytes += Buffer.byteLength(rest);
            if (this.#partialBytes > this.#maxBytes) {
                throw new Error(`a frame from the daemon is over ${this.#maxBytes} bytes`);
            }
        }
        return lines;
    }
}
