export { Client, connect, type ConnectOptions } from "./client.js";
export { checkSocketPath, Connection, type SubscriptionId } from "./connection.js";
export { AgentdError, ConnectionError, kindOfCode } from "./errors.js";
export { EventStream, type EventsOptions } from "./events.js";
export { LineDecoder, MAX_FRAME_BYTES } from "./framing.js";
export { SeqMerger, type Accepted } from "./merge.js";
export * from "./methods.js";
export { defaultSocketPath, effectiveUid, SOCKET_ENV } from "./paths.js";
export type {
  PermissionAnswer,
  PermissionHandler,
  QuestionHandler,
  QuestionReply,
  RunOptions,
} from "./run.js";
export * from "./types.js";
