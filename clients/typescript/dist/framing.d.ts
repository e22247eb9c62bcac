/** Largest frame the daemon sends or accepts (16 MiB), as `capabilities.maxFrameBytes`. */
export declare const MAX_FRAME_BYTES: number;
/**
 * Splits the daemon's NDJSON stream into lines: chunks may end anywhere, even inside a
 * UTF-8 sequence; `\r\n` and blank lines are fine. A line longer than `maxBytes` is an
 * error (the daemon never sends one; the connection is then unusable).
 */
export declare class LineDecoder {
    #private;
    constructor(maxBytes?: number);
    /** The complete lines this chunk finishes (without their line ends, blank ones left out). */
    push(chunk: Buffer): string[];
}
