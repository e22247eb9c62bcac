export { Client, connect } from "./client.js";
export { checkSocketPath, Connection } from "./connection.js";
export { AgentdError, ConnectionError, kindOfCode } from "./errors.js";
export { EventStream } from "./events.js";
export { LineDecoder, MAX_FRAME_BYTES } from "./framing.js";
export { SeqMerger } from "./merge.js";
export * from "./methods.js";
export { defaultSocketPath, effectiveUid, SOCKET_ENV } from "./paths.js";
export * from "./types.js";
